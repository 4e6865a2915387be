//! Gemini function declarations: `{name, description, parameters}`, the parameters in
//! Gemini's `Schema`, an OpenAPI 3.0 subset, as published at
//! <https://ai.google.dev/api/caching#Schema> and
//! <https://ai.google.dev/api/caching#FunctionDeclaration>:
//! - `type` is one of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT (upper case), one per
//!   schema; a nullable one says `nullable: true`; alternatives are `anyOf`;
//! - the only other fields: format (STRING: enum, date-time; NUMBER: float, double; INTEGER:
//!   int32, int64), title, description, nullable, enum (strings only), minItems, maxItems,
//!   properties, required, minProperties, maxProperties, minLength, maxLength, pattern,
//!   example, anyOf, propertyOrdering, default, items, minimum, maximum;
//! - an OBJECT has properties (an empty one is refused); no `$ref`, `additionalProperties`,
//!   `oneOf`, `allOf`, `const`, exclusive bounds.
//!
//! References are inlined; a reference back into itself (recursion) is cut there: an optional
//! property that recurses is left out, a required one leaves the tool out. Keywords Gemini
//! lacks are rewritten (`oneOf` as `anyOf`, `const` as a one-value enum, a tuple as an array
//! of any of its parts) or said in the description, each with a note.

use serde_json::{Map, Value, json};

use super::shape::{Notes, append, describe, in_words, inline_refs, merge_all_of, required_of, types_of};

/// Where a reference led back into itself (replaced during inlining, cut by the walk).
const CYCLE: &str = "$switchboard_cycle";

const KEEP: &[&str] = &[
    "title",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "default",
    "minimum",
    "maximum",
];

/// The `parameters` of a tool's declaration (`None`: it takes no arguments).
pub(crate) fn parameters(input: &Map<String, Value>, notes: &mut Notes) -> Result<Option<Value>, String> {
    let on_cycle = |_: &str, reference: &str| Ok(json!({ CYCLE: reference }));
    let inlined = inline_refs(&Value::Object(input.clone()), &on_cycle)?;
    let mut walk = Walk { notes };
    match walk.node(&inlined, "")? {
        Some(Value::Object(o)) if o.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) => {
            Ok(Some(Value::Object(o)))
        }
        Some(_) => Ok(None),
        None => Err("its input schema cannot be given in Gemini's schema".into()),
    }
}

struct Walk<'n> {
    notes: &'n mut Notes,
}

fn gemini_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "string" => "STRING",
        "number" => "NUMBER",
        "integer" => "INTEGER",
        "boolean" => "BOOLEAN",
        "array" => "ARRAY",
        "object" => "OBJECT",
        _ => return None,
    })
}

impl Walk<'_> {
    /// `None`: this part has no Gemini form (its parent leaves it out or fails).
    fn node(&mut self, node: &Value, path: &str) -> Result<Option<Value>, String> {
        let shown = if path.is_empty() { "the root" } else { path };
        let Some(o) = node.as_object() else {
            self.notes.add(format!("`{shown}` takes any value, which Gemini's schema cannot say: left out"));
            return Ok(None);
        };
        if let Some(reference) = o.get(CYCLE) {
            self.notes.add(format!(
                "`{shown}` refers back to {reference} (recursion, which Gemini cannot express): left out"
            ));
            return Ok(None);
        }
        if let Some(Value::Array(parts)) = o.get("allOf") {
            let Some(merged) = merge_all_of(o, parts) else {
                self.notes.add(format!("`{shown}` has an `allOf` of non-objects: left out"));
                return Ok(None);
            };
            return self.node(&Value::Object(merged), path);
        }
        let mut description = o.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut said: Vec<String> = Vec::new();
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = o.get(key) else { continue };
            if key == "oneOf" {
                self.notes.add(format!("`{shown}`: `oneOf` given as `anyOf`"));
                said.push("exactly one of the alternatives".into());
            }
            let nulls = branches.iter().filter(|b| b.get("type") == Some(&json!("null"))).count();
            let mut walked = Vec::new();
            for (i, b) in branches.iter().enumerate().filter(|(_, b)| b.get("type") != Some(&json!("null"))) {
                if let Some(w) = self.node(b, &format!("{path}/{key}/{i}"))? {
                    walked.push(w);
                }
            }
            let mut out = match walked.len() {
                0 => return Ok(None),
                1 => walked.pop().unwrap_or_default(),
                _ => json!({"anyOf": walked}),
            };
            if let Value::Object(m) = &mut out {
                if nulls > 0 {
                    m.insert("nullable".into(), json!(true));
                }
                if !said.is_empty() || !description.is_empty() {
                    let inner = m.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
                    let mut d = std::mem::take(&mut description);
                    append(&mut d, &inner);
                    describe(m, d, said);
                }
            }
            return Ok(Some(out));
        }
        let mut types = types_of(o);
        types.dedup();
        let nullable = types.iter().any(|t| t == "null");
        types.retain(|t| t != "null");
        if types.is_empty() {
            self.notes.add(format!("`{shown}` says no type, which Gemini needs: left out"));
            return Ok(None);
        }
        if types.len() > 1 {
            let branches: Vec<Value> = types
                .iter()
                .map(|t| {
                    let mut b = o.clone();
                    b.insert("type".into(), json!(t));
                    b.remove("description");
                    Value::Object(b)
                })
                .collect();
            let mut alt = Map::new();
            alt.insert("anyOf".into(), Value::Array(branches));
            if let Some(d) = o.get("description") {
                alt.insert("description".into(), d.clone());
            }
            let mut out = self.node(&Value::Object(alt), path)?;
            if nullable && let Some(Value::Object(m)) = &mut out {
                m.insert("nullable".into(), json!(true));
            }
            return Ok(out);
        }
        let ty = types[0].as_str();
        let Some(gemini) = gemini_type(ty) else {
            self.notes.add(format!("`{shown}` has type `{ty}`, which Gemini lacks: left out"));
            return Ok(None);
        };
        let mut out = Map::new();
        out.insert("type".into(), json!(gemini));
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        for (k, v) in o {
            match k.as_str() {
                "type" | "description" | "properties" | "required" | "items" | "prefixItems" | "$schema" | "$id"
                | "$comment" | "deprecated" | "readOnly" | "writeOnly" => {}
                "enum" | "const" => {
                    let values: Vec<Value> =
                        if k == "const" { vec![v.clone()] } else { v.as_array().cloned().unwrap_or_default() };
                    if ty == "string" && values.iter().all(Value::is_string) {
                        out.insert("enum".into(), Value::Array(values));
                        out.insert("format".into(), json!("enum"));
                    } else {
                        said.push(in_words("enum", &Value::Array(values)));
                    }
                }
                "format" => {
                    let fits = matches!(
                        (ty, v.as_str().unwrap_or_default()),
                        ("string", "date-time") | ("number", "float" | "double") | ("integer", "int32" | "int64")
                    );
                    if fits {
                        out.entry("format").or_insert_with(|| v.clone());
                    } else {
                        said.push(in_words(k, v));
                    }
                }
                "examples" => {
                    if let Some(first) = v.as_array().and_then(|a| a.first()) {
                        out.insert("example".into(), first.clone());
                    }
                }
                "example" => {
                    out.insert("example".into(), v.clone());
                }
                "additionalProperties" | "patternProperties" => {
                    if v != &Value::Bool(false) {
                        said.push("other keys may be given too".into());
                    }
                }
                k if KEEP.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                _ => said.push(in_words(k, v)),
            }
        }
        let formed = match ty {
            "object" => self.object(o, &mut out, path)?,
            "array" => self.array(o, &mut out, &mut said, path)?,
            _ => true,
        };
        if !formed {
            if ty == "object" && path.is_empty() {
                // The root of a tool without arguments: no `parameters`.
                out.remove("properties");
            } else {
                let what =
                    if ty == "object" { "an object of free-form keys" } else { "an array of items it cannot say" };
                self.notes.add(format!("`{shown}` is {what}, which Gemini's schema cannot give: left out"));
                return Ok(None);
            }
        }
        if !said.is_empty() {
            self.notes.add(format!("`{shown}`: {} said in its description", said.join(", ")));
        }
        describe(&mut out, description, said);
        Ok(Some(Value::Object(out)))
    }

    /// The properties, those without a Gemini form left out (a required one fails the tool).
    /// `false` when no property is left.
    fn object(&mut self, o: &Map<String, Value>, out: &mut Map<String, Value>, path: &str) -> Result<bool, String> {
        let required = required_of(o);
        let mut props = Map::new();
        for (name, p) in o.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let at = format!("{path}/properties/{name}");
            match self.node(p, &at)? {
                Some(w) => {
                    props.insert(name.clone(), w);
                }
                None if required.contains(name) => {
                    return Err(format!("its required `{at}` cannot be given in Gemini's schema"));
                }
                None => {}
            }
        }
        if props.is_empty() {
            return Ok(false);
        }
        let required: Vec<Value> = required.into_iter().filter(|r| props.contains_key(r)).map(Value::String).collect();
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        out.insert("properties".into(), Value::Object(props));
        Ok(true)
    }

    /// `false` when the array's items have no Gemini form.
    fn array(
        &mut self,
        o: &Map<String, Value>,
        out: &mut Map<String, Value>,
        said: &mut Vec<String>,
        path: &str,
    ) -> Result<bool, String> {
        let tuple = match (o.get("prefixItems"), o.get("items")) {
            (Some(Value::Array(t)), _) | (None, Some(Value::Array(t))) => Some(t.clone()),
            _ => None,
        };
        let items = match (tuple, o.get("items")) {
            (Some(parts), _) => {
                out.insert("minItems".into(), json!(parts.len()));
                out.insert("maxItems".into(), json!(parts.len()));
                said.push(format!("a tuple of {} items, in the order of the alternatives", parts.len()));
                self.notes.add(format!("`{path}`: a tuple given as an array of its parts"));
                self.node(&json!({"anyOf": parts}), &format!("{path}/prefixItems"))?
            }
            (None, Some(items)) => self.node(items, &format!("{path}/items"))?,
            (None, None) => return Ok(true),
        };
        match items {
            Some(items) => {
                out.insert("items".into(), items);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

//! OpenAI's strict mode (Structured Outputs for function calling): the subset of JSON Schema
//! it takes, as published at
//! <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>:
//! - types string, number, integer, boolean, object, array, null, `enum`, `anyOf`, `$ref` to
//!   `$defs` (recursion included); the root is an object, not an `anyOf`;
//! - every object has `additionalProperties: false` and lists every property in `required`:
//!   an optional property becomes required and nullable (`["string", "null"]`);
//! - kept keywords: strings `pattern`, `format` (date-time, time, date, duration, email,
//!   hostname, ipv4, ipv6, uuid); numbers `multipleOf`, `minimum`, `maximum`,
//!   `exclusiveMinimum`, `exclusiveMaximum`; arrays `minItems`, `maxItems`;
//! - at most 5,000 properties, 10 levels of nesting, 1,000 enum values.
//!
//! Anything else is removed and said in the property's description ("at least 3 characters");
//! what has no strict form at all (an object of free-form keys, a value of any type, an `allOf`
//! of non-objects) leaves the tool out of a `--strict` export, with the reason.
//!
//! A model in strict mode sends `null` for an optional property it leaves out: pass its
//! arguments through [`super::strict_arguments`] before the call, which takes those out.

use serde_json::{Map, Value, json};

use super::shape::{Notes, describe, in_words, json_type, merge_all_of, types_of};

const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
const MAX_PROPERTIES: usize = 5_000;
const MAX_DEPTH: usize = 10;
const MAX_ENUM: usize = 1_000;

struct Walk<'n> {
    notes: &'n mut Notes,
    properties: usize,
    enums: usize,
}

/// The strict form of a tool's input schema (an object at the root, already flattened).
pub(crate) fn schema(input: &Map<String, Value>, notes: &mut Notes) -> Result<Map<String, Value>, String> {
    let mut walk = Walk { notes, properties: 0, enums: 0 };
    let mut out = match walk.node(&Value::Object(input.clone()), "", 0)? {
        Value::Object(o) => o,
        _ => return Err("its input schema is not an object".into()),
    };
    // Only the definitions a `$ref` reaches: one nothing uses (Notion's servers carry a few)
    // says nothing of what the model sends, and must not leave the tool out.
    let used = reachable(input);
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = input.get(key) {
            let mut walked = Map::new();
            for (name, def) in defs.iter().filter(|(name, _)| used.contains(&(key, name.as_str()))) {
                walked.insert(name.clone(), walk.node(def, &format!("/{key}/{name}"), 1)?);
            }
            if !walked.is_empty() {
                out.insert(key.to_string(), Value::Object(walked));
            }
        }
    }
    if walk.properties > MAX_PROPERTIES {
        return Err(format!("it has {} properties; strict mode takes {MAX_PROPERTIES}", walk.properties));
    }
    if walk.enums > MAX_ENUM {
        return Err(format!("it has {} enum values; strict mode takes {MAX_ENUM}", walk.enums));
    }
    Ok(out)
}

/// The definitions (`("$defs" | "definitions", name)`) that local `$ref`s reach from the
/// schema outside them, and from those definitions in turn.
fn reachable(input: &Map<String, Value>) -> std::collections::HashSet<(&'static str, &str)> {
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(o) => {
                for (k, child) in o {
                    match (k.as_str(), child) {
                        ("$ref", Value::String(r)) => out.push(r),
                        _ => refs(child, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    // `#/$defs/NAME...` → the definition it names (JSON-pointer escapes undone).
    let target = |r: &str| -> Option<(&'static str, String)> {
        let (key, rest) = if let Some(rest) = r.strip_prefix("#/$defs/") {
            ("$defs", rest)
        } else {
            ("definitions", r.strip_prefix("#/definitions/")?)
        };
        let name = rest.split('/').next()?.replace("~1", "/").replace("~0", "~");
        Some((key, name))
    };
    let mut found = Vec::new();
    for (k, v) in input {
        if k != "$defs" && k != "definitions" {
            refs(v, &mut found);
        }
    }
    let mut used: std::collections::HashSet<(&'static str, &str)> = std::collections::HashSet::new();
    while let Some(r) = found.pop() {
        let Some((key, name)) = target(r) else { continue };
        let Some((name, def)) = input.get(key).and_then(Value::as_object).and_then(|d| d.get_key_value(&name)) else {
            continue;
        };
        if used.insert((key, name.as_str())) {
            refs(def, &mut found);
        }
    }
    used
}

/// A schema that also takes `null`.
pub(crate) fn nullable(mut v: Value) -> Value {
    let Value::Object(o) = &mut v else { return v };
    if o.contains_key("$ref") || o.contains_key("anyOf") {
        return json!({"anyOf": [v, {"type": "null"}]});
    }
    match o.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            o.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| t == "null") => ts.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(e)) = o.get_mut("enum")
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
    v
}

impl Walk<'_> {
    fn node(&mut self, node: &Value, path: &str, depth: usize) -> Result<Value, String> {
        let shown = if path.is_empty() { "the root" } else { path };
        let o = match node {
            Value::Object(o) => o,
            Value::Bool(true) => return Err(format!("`{shown}` takes any value; strict mode needs a type")),
            _ => return Err(format!("`{shown}` is not a schema")),
        };
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels, strict mode's limit"));
        }
        let mut description = o.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut said: Vec<String> = Vec::new();
        if let Some(r) = o.get("$ref") {
            if o.keys().any(|k| k != "$ref" && k != "description") {
                self.notes.add(format!("`{shown}`: keywords beside `$ref` dropped"));
            }
            return Ok(json!({"$ref": r}));
        }
        if let Some(Value::Array(parts)) = o.get("allOf") {
            let merged = merge_all_of(o, parts).ok_or_else(|| format!("`{shown}` has an `allOf` of non-objects"))?;
            return self.node(&Value::Object(merged), path, depth);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = o.get(key) {
                if key == "oneOf" {
                    self.notes.add(format!("`{shown}`: `oneOf` given as `anyOf`"));
                    said.push("exactly one of the alternatives".into());
                }
                let walked = branches
                    .iter()
                    .enumerate()
                    .map(|(i, b)| self.node(b, &format!("{path}/{key}/{i}"), depth))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut out = Map::new();
                out.insert("anyOf".into(), Value::Array(walked));
                describe(&mut out, description, said);
                return Ok(Value::Object(out));
            }
        }
        let types = types_of(o);
        let real: Vec<&String> = types.iter().filter(|t| t.as_str() != "null").collect();
        if real.is_empty() && !types.is_empty() {
            return Ok(json!({"type": "null"}));
        }
        if real.is_empty() {
            return Err(format!("`{shown}` takes any value; strict mode needs a type"));
        }
        if real.len() > 1 {
            // Each type a branch of its own, with the keywords that apply to it.
            let branches = real
                .iter()
                .map(|t| {
                    let mut b = o.clone();
                    b.insert("type".into(), json!(t));
                    b.remove("description");
                    self.node(&Value::Object(b), path, depth)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut out = json!({"anyOf": branches});
            if types.iter().any(|t| t == "null") {
                out = nullable(out);
            }
            if let Value::Object(m) = &mut out {
                describe(m, description, said);
            }
            return Ok(out);
        }
        let ty = real[0].as_str();
        let mut out = Map::new();
        out.insert("type".into(), if types.len() > 1 { json!([ty, "null"]) } else { json!(ty) });
        let keep: &[&str] = match ty {
            "string" => &["pattern", "format"],
            "number" | "integer" => &["multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
            "array" => &["minItems", "maxItems"],
            _ => &[],
        };
        for (k, v) in o {
            match k.as_str() {
                "type"
                | "description"
                | "properties"
                | "required"
                | "items"
                | "prefixItems"
                | "additionalProperties"
                | "patternProperties"
                | "$schema"
                | "$id"
                | "$comment"
                | "$defs"
                | "definitions"
                | "title" => {}
                "enum" => {
                    let values = v.as_array().cloned().unwrap_or_default();
                    self.enums += values.len();
                    let mut values: Vec<Value> =
                        values.into_iter().filter(|x| json_type(x) == ty || x.is_null()).collect();
                    if types.len() > 1 && !values.contains(&Value::Null) {
                        values.push(Value::Null);
                    }
                    out.insert("enum".into(), Value::Array(values));
                }
                "const" => {
                    self.enums += 1;
                    out.insert("enum".into(), json!([v]));
                }
                "format" if !v.as_str().is_some_and(|f| FORMATS.contains(&f)) => said.push(in_words(k, v)),
                k if keep.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                // Numbers and flags said in words; annotations (examples, deprecated) dropped.
                "examples" | "deprecated" | "readOnly" | "writeOnly" | "contentMediaType" | "contentEncoding" => {}
                _ => said.push(in_words(k, v)),
            }
        }
        match ty {
            "object" => self.object(o, &mut out, &mut said, path, depth)?,
            "array" => self.array(o, &mut out, &mut said, path, depth)?,
            _ => {}
        }
        if !said.is_empty() {
            self.notes.add(format!(
                "`{shown}`: {} said in its description (strict mode does not take them)",
                said.join(", ")
            ));
        }
        describe(&mut out, std::mem::take(&mut description), said);
        Ok(Value::Object(out))
    }

    fn object(
        &mut self,
        o: &Map<String, Value>,
        out: &mut Map<String, Value>,
        said: &mut Vec<String>,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        let shown = if path.is_empty() { "the root" } else { path };
        let props = o.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let free = matches!(o.get("additionalProperties"), Some(Value::Bool(true) | Value::Object(_)))
            || o.contains_key("patternProperties");
        // An object that names no keys is a map (`{"type": "object"}` means any keys).
        if props.is_empty() && (free || !path.is_empty()) {
            return Err(format!("`{shown}` is an object of free-form keys, which strict mode cannot express"));
        }
        if free {
            said.push("no keys but these".into());
        }
        let required = o.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut walked = Map::new();
        for (name, p) in &props {
            self.properties += 1;
            let mut v = self.node(p, &format!("{path}/properties/{name}"), depth + 1)?;
            if !required.iter().any(|r| r == name) {
                v = nullable(v);
            }
            walked.insert(name.clone(), v);
        }
        out.insert("required".into(), Value::Array(props.keys().map(|k| json!(k)).collect()));
        out.insert("properties".into(), Value::Object(walked));
        out.insert("additionalProperties".into(), json!(false));
        Ok(())
    }

    fn array(
        &mut self,
        o: &Map<String, Value>,
        out: &mut Map<String, Value>,
        said: &mut Vec<String>,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        let shown = if path.is_empty() { "the root" } else { path };
        let tuple = match (o.get("prefixItems"), o.get("items")) {
            (Some(Value::Array(t)), _) | (None, Some(Value::Array(t))) => Some(t),
            _ => None,
        };
        let items = match (tuple, o.get("items")) {
            (Some(parts), _) => {
                // A tuple: items of any of its parts, the count fixed, the order said.
                let walked = parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| self.node(p, &format!("{path}/prefixItems/{i}"), depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                out.insert("minItems".into(), json!(parts.len()));
                out.insert("maxItems".into(), json!(parts.len()));
                said.push(format!("a tuple of {} items, in the order of the alternatives", parts.len()));
                json!({"anyOf": walked})
            }
            (None, Some(items)) => self.node(items, &format!("{path}/items"), depth + 1)?,
            (None, None) => return Err(format!("`{shown}` is an array of any values; strict mode needs an item type")),
        };
        out.insert("items".into(), items);
        Ok(())
    }
}

//! Schema rewrites every provider export shares: local `$ref`s inlined (cycles decided by the
//! caller), a root `anyOf`/`oneOf`/`allOf` flattened into one object (as Claude Code does), a
//! description cut to a cap, and constraints a provider drops said in words instead.
//!
//! A rewrite never guesses: what it cannot carry is either said in the description and in a
//! note, or the tool is left out of that export with the reason (`Err(String)`).

use serde_json::{Map, Value, json};

/// Most nodes a schema may grow to when its references are inlined (a reference used many
/// times inside others grows it geometrically).
const MAX_NODES: usize = 100_000;
/// Deepest a schema may nest once its references are inlined (a chain of references, each
/// inside the last, would otherwise recurse until the stack ran out).
const MAX_DEPTH: usize = 256;

/// The notes of one tool's rewrite, for the export's `notes`.
#[derive(Debug, Default)]
pub(crate) struct Notes(pub(crate) Vec<String>);

impl Notes {
    pub(crate) fn add(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.0.contains(&note) {
            self.0.push(note);
        }
    }
}

/// The target of a local reference (`#`, `#/$defs/X`, `#/definitions/X`, any JSON pointer).
pub(crate) fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// What to put where a reference leads back into itself.
pub(crate) type OnCycle<'f> = &'f dyn Fn(&str, &str) -> Result<Value, String>;

/// `schema` with every local `$ref` replaced by its target (sibling keywords kept beside it),
/// `$defs` and `definitions` removed. `on_cycle(path, reference)` gives what stands where a
/// reference appears inside its own expansion.
pub(crate) fn inline_refs(schema: &Value, on_cycle: OnCycle<'_>) -> Result<Value, String> {
    let mut nodes = 0;
    let mut out = inline(schema, schema, &mut Vec::new(), "", on_cycle, &mut nodes, 0)?;
    if let Value::Object(o) = &mut out {
        o.remove("$defs");
        o.remove("definitions");
    }
    Ok(out)
}

fn inline(
    node: &Value,
    root: &Value,
    stack: &mut Vec<String>,
    path: &str,
    on_cycle: OnCycle<'_>,
    nodes: &mut usize,
    depth: usize,
) -> Result<Value, String> {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return Err(format!("its schema grows past {MAX_NODES} nodes when its references are inlined"));
    }
    if depth > MAX_DEPTH {
        return Err(format!("its schema nests deeper than {MAX_DEPTH} levels when its references are inlined"));
    }
    match node {
        Value::Object(o) => {
            if let Some(reference) = o.get("$ref").and_then(Value::as_str) {
                if stack.iter().any(|r| r == reference) {
                    return on_cycle(path, reference);
                }
                let target = resolve(root, reference)
                    .ok_or_else(|| format!("`{path}` refers to `{reference}`, which is not in the schema"))?;
                stack.push(reference.to_string());
                let mut expanded = inline(target, root, stack, path, on_cycle, nodes, depth + 1)?;
                stack.pop();
                // Keywords beside the reference (a description, say) apply too.
                if let Value::Object(e) = &mut expanded {
                    for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "$ref") {
                        let v = inline(v, root, stack, &format!("{path}/{k}"), on_cycle, nodes, depth + 1)?;
                        e.insert(k.clone(), v);
                    }
                    e.remove("$defs");
                    e.remove("definitions");
                }
                return Ok(expanded);
            }
            let mut out = Map::new();
            for (k, v) in o {
                // Definitions are read from the original; their places are emptied.
                if k == "$defs" || k == "definitions" {
                    continue;
                }
                out.insert(k.clone(), inline(v, root, stack, &format!("{path}/{k}"), on_cycle, nodes, depth + 1)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, v)| inline(v, root, stack, &format!("{path}/{i}"), on_cycle, nodes, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// A branch of a root combinator as an object schema (a `$ref` followed).
fn branch<'a>(root: &'a Value, b: &'a Value) -> Option<&'a Map<String, Value>> {
    let mut b = b;
    for _ in 0..8 {
        match b.get("$ref").and_then(Value::as_str) {
            Some(r) => b = resolve(root, r)?,
            None => break,
        }
    }
    let o = b.as_object()?;
    let objectish = o.get("type").is_none_or(|t| t == "object") && !o.contains_key("anyOf") && !o.contains_key("oneOf");
    objectish.then_some(o)
}

/// The names a schema lists in `required`.
pub(crate) fn required_of(o: &Map<String, Value>) -> Vec<String> {
    o.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Flattens `anyOf`/`oneOf`/`allOf` at the root into one object: every branch's properties,
/// required what every alternative (or any `allOf` part) requires, and the alternatives said
/// in the description. `Err` when a branch is not an object schema.
pub(crate) fn flatten_root(
    schema: &mut Map<String, Value>,
    description: &mut String,
    notes: &mut Notes,
) -> Result<(), String> {
    let root = Value::Object(schema.clone());
    for key in ["allOf", "anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = schema.remove(key) else { continue };
        let mut properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut required = required_of(schema);
        let mut alternatives: Vec<String> = Vec::new();
        let mut common: Option<Vec<String>> = None;
        for (i, b) in branches.iter().enumerate() {
            let o = branch(&root, b)
                .ok_or_else(|| format!("`{key}` at the root has a branch ({i}) that is not an object"))?;
            let props = o.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let req = required_of(o);
            for (name, p) in &props {
                match properties.get(name) {
                    None => {
                        properties.insert(name.clone(), p.clone());
                    }
                    Some(existing) if existing != p => {
                        notes.add(format!("`{name}` differs between the root `{key}` branches: the first is kept"));
                    }
                    Some(_) => {}
                }
            }
            if key == "allOf" {
                required.extend(req);
            } else {
                let names: Vec<String> =
                    props.keys().map(|n| if req.contains(n) { format!("{n} (required)") } else { n.clone() }).collect();
                alternatives.push(format!(
                    "({}) {}",
                    i + 1,
                    if names.is_empty() { "nothing".into() } else { names.join(", ") }
                ));
                common = Some(match common {
                    None => req,
                    Some(c) => c.into_iter().filter(|n| req.contains(n)).collect(),
                });
            }
        }
        required.extend(common.unwrap_or_default());
        let mut seen = std::collections::HashSet::new();
        required.retain(|n| seen.insert(n.clone()) && properties.contains_key(n));
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if required.is_empty() {
            schema.remove("required");
        } else {
            schema.insert("required".into(), json!(required));
        }
        if key != "allOf" {
            let exclusive = if key == "oneOf" { "exactly one" } else { "one or more" };
            append(description, &format!("Give {exclusive} of these sets of arguments: {}.", alternatives.join("; ")));
            notes.add(format!(
                "the root `{key}` was flattened into one object; its alternatives are in the description"
            ));
        }
    }
    Ok(())
}

/// `text` added to a description as a new sentence.
pub(crate) fn append(description: &mut String, text: &str) {
    if !description.is_empty() {
        description.push_str(if description.ends_with('\n') { "" } else { " " });
    }
    description.push_str(text);
}

/// A description cut to `cap` characters, with a mark at the cut (and a note).
pub(crate) fn cap_description(description: &str, cap: usize, notes: &mut Notes) -> String {
    let total = description.chars().count();
    if total <= cap {
        return description.to_string();
    }
    const MARK: &str = " […]";
    let keep = cap.saturating_sub(MARK.chars().count());
    let cut: String = description.chars().take(keep).collect();
    notes.add(format!("description cut to {cap} of its {total} characters"));
    format!("{}{MARK}", cut.trim_end())
}

/// A constraint said in words (for a keyword the provider does not take).
pub(crate) fn in_words(keyword: &str, value: &Value) -> String {
    let v = match value {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    };
    let v = crate::text::excerpt(&v, 200);
    match keyword {
        "minLength" => format!("at least {v} characters"),
        "maxLength" => format!("at most {v} characters"),
        "minimum" => format!("at least {v}"),
        "maximum" => format!("at most {v}"),
        "exclusiveMinimum" => format!("more than {v}"),
        "exclusiveMaximum" => format!("less than {v}"),
        "multipleOf" => format!("a multiple of {v}"),
        "minItems" => format!("at least {v} items"),
        "maxItems" => format!("at most {v} items"),
        "uniqueItems" if value == &Value::Bool(true) => "items unique".to_string(),
        "minProperties" => format!("at least {v} keys"),
        "maxProperties" => format!("at most {v} keys"),
        "pattern" => format!("matching the pattern {v}"),
        "format" => format!("format {v}"),
        "default" => format!("default {v}"),
        "const" => format!("always {v}"),
        "examples" | "example" => format!("for example {v}"),
        "enum" => format!("one of {v}"),
        other => format!("{other}: {v}"),
    }
}

/// `allOf` parts (and the schema beside them) merged into one object, when every part is one.
pub(crate) fn merge_all_of(beside: &Map<String, Value>, parts: &[Value]) -> Option<Map<String, Value>> {
    let mut merged = beside.clone();
    merged.remove("allOf");
    let mut props = merged.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut required: Vec<Value> = merged.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for part in parts {
        let p = part.as_object()?;
        if p.get("type").is_some_and(|t| t != "object") || p.contains_key("$ref") {
            return None;
        }
        for (k, v) in p.get("properties").and_then(Value::as_object).into_iter().flatten() {
            props.entry(k.clone()).or_insert_with(|| v.clone());
        }
        required.extend(p.get("required").and_then(Value::as_array).cloned().unwrap_or_default());
        if let Some(d) = p.get("description") {
            merged.entry("description").or_insert_with(|| d.clone());
        }
    }
    required.dedup();
    merged.insert("type".into(), json!("object"));
    merged.insert("properties".into(), Value::Object(props));
    merged.insert("required".into(), Value::Array(required));
    Some(merged)
}

/// `description` with the constraints `said` in words added, set on `out` (none: no key).
pub(crate) fn describe(out: &mut Map<String, Value>, mut description: String, said: Vec<String>) {
    if !said.is_empty() {
        let mut text = said.join("; ");
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + text.get(1..).unwrap_or_default();
        }
        append(&mut description, &format!("{text}."));
    }
    if !description.is_empty() {
        out.insert("description".into(), json!(description));
    }
}

/// The JSON type of a value, for `const` and `enum`.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The types a schema declares or implies (empty: it does not say).
pub(crate) fn types_of(o: &Map<String, Value>) -> Vec<String> {
    match o.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ if o.contains_key("properties") => vec!["object".into()],
        _ if o.contains_key("items") || o.contains_key("prefixItems") => vec!["array".into()],
        _ => {
            let values: Vec<&Value> = match (o.get("const"), o.get("enum")) {
                (Some(c), _) => vec![c],
                (None, Some(Value::Array(e))) => e.iter().collect(),
                _ => Vec::new(),
            };
            let mut seen = std::collections::HashSet::new();
            values.iter().map(|v| json_type(v).to_string()).filter(|t| seen.insert(t.clone())).collect()
        }
    }
}

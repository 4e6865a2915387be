//! A call's arguments against the tool's input schema, before anything is sent.
//!
//! Schemas are compiled once per catalog snapshot ([`Checker`]), with the draft the schema
//! names (`$schema`; 2020-12 without one). `format` is an annotation (2020-12), unknown
//! keywords are ignored, and nothing outside the schema is fetched or read: a `$ref` to a URL
//! or a file makes the schema one the validator cannot compile, which is reported once and the
//! call goes through. A failure lists each error by JSON pointer.

use std::sync::OnceLock;

use rmcp::model::JsonObject;
use serde_json::Value;

/// At most this many errors are listed.
const MAX_ERRORS: usize = 10;

/// One tool's compiled input schema (made on first use).
#[derive(Default)]
pub struct Checker {
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker").field("compiled", &self.compiled.get().map(|r| r.is_ok())).finish()
    }
}

/// What checking found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Checked {
    /// The arguments match.
    Valid,
    /// They do not: one line per error, `/pointer: message`.
    Invalid(Vec<String>),
    /// The schema could not be compiled (said here the first time only): not checked.
    Uncompiled(Option<String>),
}

impl Checker {
    /// Checks `arguments` (absent: `{}`) against `schema`, compiling it the first time.
    pub fn check(&self, schema: &JsonObject, arguments: &mut Option<JsonObject>) -> Checked {
        let mut first = false;
        let compiled = self.compiled.get_or_init(|| {
            first = true;
            compile(schema)
        });
        let validator = match compiled {
            Ok(v) => v,
            Err(e) => return Checked::Uncompiled(first.then(|| e.clone())),
        };
        let given = arguments.is_some();
        let instance = Value::Object(arguments.take().unwrap_or_default());
        // The common case first: valid, found without making any error.
        let errors: Vec<String> = if validator.is_valid(&instance) {
            Vec::new()
        } else {
            validator
                .iter_errors(&instance)
                .take(MAX_ERRORS + 1)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    let at = if at.is_empty() { "/".to_string() } else { at };
                    format!("{at}: {}", crate::text::excerpt(&e.to_string(), 200))
                })
                .collect()
        };
        if let Value::Object(m) = instance
            && given
        {
            // Put back what was taken: `{}` stays `{}`, absent stays absent (servers tell them
            // apart: a zod schema refuses a missing object).
            *arguments = Some(m);
        }
        if errors.is_empty() {
            return Checked::Valid;
        }
        let mut errors = errors;
        if errors.len() > MAX_ERRORS {
            errors.truncate(MAX_ERRORS);
            errors.push("(more errors not shown)".into());
        }
        Checked::Invalid(errors)
    }
}

fn compile(schema: &JsonObject) -> Result<jsonschema::Validator, String> {
    let value = Value::Object(schema.clone());
    jsonschema::options().should_validate_formats(false).build(&value).map_err(|e| e.to_string())
}

/// A `--arg key=value` value, typed by the schema's property `key`: a string property takes
/// the text as it is (`message=42` is `"42"`); numbers, integers, booleans, arrays, objects
/// and null are parsed as JSON and must be of that type; a property of several types or none
/// takes JSON when it parses, else the text.
pub fn typed_argument(schema: &JsonObject, key: &str, text: &str) -> Result<Value, String> {
    let prop = schema.get("properties").and_then(|p| p.get(key));
    let types: Vec<&str> = match prop.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let parsed = serde_json::from_str::<Value>(text).ok();
    let fits = |v: &Value, t: &str| match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    };
    if types == ["string"] {
        return Ok(Value::String(text.to_string()));
    }
    if types.is_empty() {
        return Ok(parsed.unwrap_or_else(|| Value::String(text.to_string())));
    }
    if let Some(v) = parsed.filter(|v| types.iter().any(|t| fits(v, t))) {
        return Ok(v);
    }
    if types.contains(&"string") {
        return Ok(Value::String(text.to_string()));
    }
    Err(format!("`{key}` takes {}, not `{}`", types.join(" or "), crate::text::excerpt(text, 60)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn errors_are_listed_by_pointer_and_arguments_are_kept() {
        let schema = obj(serde_json::json!({
            "type": "object",
            "properties": {"message": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["message"],
            "x-unknown-keyword": true,
        }));
        let checker = Checker::default();
        let mut args = Some(obj(serde_json::json!({"message": 42, "n": 0})));
        let Checked::Invalid(errors) = checker.check(&schema, &mut args) else { panic!("should fail") };
        assert!(errors.iter().any(|e| e.starts_with("/message: ") && e.contains("string")), "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("/n: ")), "{errors:?}");
        assert_eq!(args.as_ref().and_then(|a| a.get("n")), Some(&serde_json::json!(0)), "arguments are given back");
        let mut none = None;
        let Checked::Invalid(errors) = checker.check(&schema, &mut none) else { panic!("required") };
        assert!(errors[0].starts_with("/: "), "{errors:?}");
        assert!(none.is_none());
        let mut ok = Some(obj(serde_json::json!({"message": "hi"})));
        assert_eq!(checker.check(&schema, &mut ok), Checked::Valid);
        let open = obj(serde_json::json!({"type": "object"}));
        let mut empty = Some(JsonObject::new());
        assert_eq!(Checker::default().check(&open, &mut empty), Checked::Valid);
        assert_eq!(empty, Some(JsonObject::new()), "an empty object stays an empty object");
    }

    #[test]
    fn drafts_and_schemas_that_do_not_compile() {
        let draft7 = obj(serde_json::json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"a": {"type": "number", "exclusiveMinimum": 0}},
            "definitions": {"x": {"type": "string"}},
        }));
        let mut args = Some(obj(serde_json::json!({"a": 0})));
        assert!(matches!(Checker::default().check(&draft7, &mut args), Checked::Invalid(_)));
        // A reference outside the schema is never fetched: reported once, then not checked.
        let remote = obj(serde_json::json!({"$ref": "https://example.com/schema.json"}));
        let checker = Checker::default();
        let mut args = Some(obj(serde_json::json!({"a": 1})));
        assert!(matches!(checker.check(&remote, &mut args), Checked::Uncompiled(Some(_))));
        assert_eq!(checker.check(&remote, &mut args), Checked::Uncompiled(None));
    }

    #[test]
    fn cli_values_take_their_type_from_the_schema() {
        let schema = obj(serde_json::json!({"properties": {
            "s": {"type": "string"}, "n": {"type": "number"}, "b": {"type": "boolean"},
            "a": {"type": "array"}, "either": {"type": ["integer", "string"]}, "any": {}
        }}));
        assert_eq!(typed_argument(&schema, "s", "42"), Ok(serde_json::json!("42")));
        assert_eq!(typed_argument(&schema, "n", "4.5"), Ok(serde_json::json!(4.5)));
        assert!(typed_argument(&schema, "n", "four").is_err());
        assert_eq!(typed_argument(&schema, "b", "true"), Ok(serde_json::json!(true)));
        assert_eq!(typed_argument(&schema, "a", "[1,2]"), Ok(serde_json::json!([1, 2])));
        assert_eq!(typed_argument(&schema, "either", "7"), Ok(serde_json::json!(7)));
        assert_eq!(typed_argument(&schema, "either", "seven"), Ok(serde_json::json!("seven")));
        assert_eq!(typed_argument(&schema, "any", "{\"k\":1}"), Ok(serde_json::json!({"k": 1})));
        assert_eq!(typed_argument(&schema, "unknown", "x y"), Ok(serde_json::json!("x y")));
    }
}

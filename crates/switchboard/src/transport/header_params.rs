//! SEP-2243 (2026-07-28): a tool parameter marked `"x-mcp-header": "Region"` is mirrored
//! into an `Mcp-Param-Region` request header, so gateways and load balancers can route on it.
//! rmcp's Streamable HTTP client does the mirroring and leaves out of a `tools/list` answer
//! every tool whose declarations are invalid (such a tool cannot be called as its server
//! expects); it says so only in a log line. This module states the same rules, so the host can
//! say which tools were left out and why, on the server's status.
//!
//! A declaration is valid when it is a non-empty RFC 9110 token, unique among the tool's
//! declarations (case-insensitively), on a property of type `string`, `integer` or `boolean`
//! reached from the root through `properties` alone, and nowhere else in the schema.

use rmcp::model::JsonObject;
use serde_json::Value;

/// The key.
const KEY: &str = "x-mcp-header";

/// Why the `x-mcp-header` declarations of `schema` are invalid, if they are.
pub(crate) fn problem(schema: &JsonObject) -> Option<String> {
    if schema.contains_key(KEY) {
        return Some(format!("{KEY} must annotate a property, not the schema root"));
    }
    if off_chain(schema, true) {
        return Some(format!("{KEY} must sit on a property reached from the root through `properties` alone"));
    }
    let mut found = Vec::new();
    annotations(schema.get("properties"), &mut Vec::new(), &mut found);
    let mut seen = std::collections::HashSet::new();
    for (path, property, header) in found {
        let prop = path.join(".");
        let Value::String(header) = header else {
            return Some(format!("property `{prop}`: {KEY} must be a string"));
        };
        if header.is_empty() {
            return Some(format!("property `{prop}`: {KEY} must not be empty"));
        }
        if !header.chars().all(is_tchar) {
            return Some(format!(
                "property `{prop}`: {KEY} `{}` is not an HTTP token",
                crate::text::excerpt(&crate::text::for_terminal(header), 40)
            ));
        }
        if !seen.insert(header.to_ascii_lowercase()) {
            return Some(format!("property `{prop}`: {KEY} `{header}` is declared twice (names ignore case)"));
        }
        match property.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Some(format!(
                    "property `{prop}`: {KEY} needs a string, integer or boolean property, not {}",
                    other.map_or_else(|| "one without a single type".to_string(), |t| format!("`{t}`"))
                ));
            }
        }
    }
    None
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

type Found<'a> = Vec<(Vec<&'a str>, &'a Value, &'a Value)>;

/// Every declaration on a `properties` chain: its path, the property's schema, the value.
fn annotations<'a>(properties: Option<&'a Value>, path: &mut Vec<&'a str>, out: &mut Found<'a>) {
    let Some(Value::Object(properties)) = properties else { return };
    for (name, property) in properties {
        path.push(name);
        if let Some(header) = property.get(KEY) {
            out.push((path.clone(), property, header));
        }
        annotations(property.get("properties"), path, out);
        path.pop();
    }
}

/// Whether a declaration sits off the `properties` chain (`on_chain`: `schema` is the root or
/// a property reached through `properties` alone).
fn off_chain(schema: &JsonObject, on_chain: bool) -> bool {
    schema.iter().any(|(key, value)| match key.as_str() {
        KEY => !on_chain,
        "properties" => map_off_chain(value, on_chain),
        "$defs" | "definitions" | "dependencies" | "dependentSchemas" | "patternProperties" => {
            map_off_chain(value, false)
        }
        // Instance data and property names, not subschemas.
        "default" | "const" | "enum" | "examples" | "dependentRequired" => false,
        _ => sub_off_chain(value),
    })
}

fn map_off_chain(map: &Value, on_chain: bool) -> bool {
    map.as_object().is_some_and(|m| {
        m.values().any(|s| match s {
            Value::Object(s) => off_chain(s, on_chain),
            other => sub_off_chain(other),
        })
    })
}

fn sub_off_chain(value: &Value) -> bool {
    match value {
        Value::Object(s) => off_chain(s, false),
        Value::Array(items) => items.iter().any(sub_off_chain),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::problem;

    fn check(schema: serde_json::Value) -> Option<String> {
        problem(schema.as_object().cloned().as_ref().unwrap_or(&Default::default()))
    }

    fn with(property: serde_json::Value) -> Option<String> {
        check(json!({"type": "object", "properties": {"value": property}}))
    }

    #[test]
    fn valid_declarations_and_schemas_without_any_pass() {
        assert_eq!(check(json!({"type": "object", "properties": {"q": {"type": "string"}}})), None);
        assert_eq!(
            check(json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "Priority"},
                "opts": {"type": "object", "properties": {"debug": {"type": "boolean", "x-mcp-header": "Debug"}}},
                "note": {"type": "string", "default": {"x-mcp-header": "data, not a declaration"}},
            }})),
            None
        );
    }

    #[test]
    fn each_rule_of_the_conformance_suite_refuses_its_tool() {
        let refused = |p: serde_json::Value, why: &str| {
            let got = with(p.clone()).unwrap_or_else(|| panic!("{p} passed"));
            assert!(got.contains(why), "{p}: {got}");
        };
        refused(json!({"type": "string", "x-mcp-header": ""}), "must not be empty");
        refused(json!({"type": "object", "x-mcp-header": "Obj"}), "not `object`");
        refused(json!({"type": "array", "x-mcp-header": "Arr"}), "not `array`");
        refused(json!({"type": "null", "x-mcp-header": "N"}), "not `null`");
        refused(json!({"type": "number", "x-mcp-header": "F"}), "not `number`");
        refused(json!({"type": "string", "x-mcp-header": "My Region"}), "not an HTTP token");
        refused(json!({"type": "string", "x-mcp-header": "Region:Primary"}), "not an HTTP token");
        refused(json!({"type": "string", "x-mcp-header": "Région"}), "not an HTTP token");
        refused(json!({"type": "string", "x-mcp-header": "Region\t1"}), "not an HTTP token");
        refused(json!({"type": "string", "x-mcp-header": 7}), "must be a string");
        let twice = check(json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"},
        }}));
        assert!(twice.is_some_and(|w| w.contains("declared twice")));
        assert!(check(json!({"type": "object", "x-mcp-header": "Root"})).is_some_and(|w| w.contains("root")));
        let nested_off_chain = check(json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
        }}));
        assert!(nested_off_chain.is_some_and(|w| w.contains("through `properties` alone")));
        let in_defs = check(json!({"type": "object", "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}}));
        assert!(in_defs.is_some());
    }
}

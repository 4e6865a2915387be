//! Every tool of real servers (the recorded catalog of `tests/search/`: server-everything,
//! -filesystem, -memory, -github, Playwright, and the Python servers time, fetch and git),
//! and the hard cases, exported to each provider's format and checked against that provider's
//! published rules, written down here as checks:
//! - OpenAI function calling: <https://platform.openai.com/docs/guides/function-calling>
//!   (name `^[a-zA-Z0-9_-]{1,64}$`, parameters an object; descriptions of at most 1,024
//!   characters, the API's `string_above_max_length`), strict mode:
//!   <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>;
//! - Anthropic: <https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use>
//!   (name `^[a-zA-Z0-9_-]{1,64}$`, `input_schema` of type object, no `oneOf`/`anyOf`/`allOf`
//!   at its root);
//! - Gemini: <https://ai.google.dev/api/caching#FunctionDeclaration> and
//!   <https://ai.google.dev/api/caching#Schema>.
//!
//! A tool a format cannot take must be skipped with a reason; one that is exported must pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::{Value, json};
use switchboard::catalog::export::{ExportOptions, ToolFormat, ToolsJson};
use switchboard::catalog::{Catalog, CompiledFilter, ServerLists};
use switchboard::config::ToolFilter;

fn catalog(servers: Vec<(String, Vec<Value>)>) -> Catalog {
    let lists: Vec<(String, ServerLists)> = servers
        .into_iter()
        .map(|(name, tools)| {
            let mut l = ServerLists::default();
            l.tools = tools.into_iter().map(|t| serde_json::from_value(t).unwrap()).collect();
            (name, l)
        })
        .collect();
    let all = CompiledFilter::new(&ToolFilter::default());
    Catalog::build(lists.iter().map(|(n, l)| (n.as_str(), l, &all)))
}

fn recorded() -> Catalog {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/search/catalog.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    catalog(
        v["servers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, s)| (n.clone(), s["tools"].as_array().unwrap().clone()))
            .collect(),
    )
}

fn hard_cases() -> Catalog {
    let t = |name: &str, schema: Value| json!({"name": name, "description": "Hard case.", "inputSchema": schema});
    catalog(vec![(
        "hard".into(),
        vec![
            t(
                "cycle",
                json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "$defs": {"node": {"type": "object",
                "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}}}),
            ),
            t(
                "root_cycle",
                json!({"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}}, "required": ["name"]}),
            ),
            t(
                "root_any_of",
                json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "number"}}, "required": ["b"]}]}),
            ),
            t(
                "root_one_of_refs",
                json!({"type": "object", "oneOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/y"}],
                "$defs": {"x": {"type": "object", "properties": {"x": {"type": "string"}}}, "y": {"type": "object", "properties": {"y": {"type": "string"}}}}}),
            ),
            t(
                "pattern_properties",
                json!({"type": "object", "properties": {"env": {"type": "object", "patternProperties": {"^[A-Z_]+$": {"type": "string"}}}}}),
            ),
            t(
                "tuple",
                json!({"type": "object", "properties": {"at": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
                "old": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}, "required": ["at"]}),
            ),
            t(
                "consts",
                json!({"type": "object", "properties": {"v": {"const": 2}, "s": {"const": "x"}, "b": {"const": true}}}),
            ),
            t(
                "nullable_unions",
                json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "c": {"type": ["string", "integer", "null"]}, "d": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}}, "required": ["a"]}),
            ),
            t(
                "all_of",
                json!({"type": "object", "properties": {"p": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}}}),
            ),
            t(
                "free_form",
                json!({"type": "object", "properties": {"args": {"type": "object"}, "any": {}}, "required": ["args"]}),
            ),
            t("no_args", json!({"type": "object"})),
            t(
                "keywords",
                json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 1, "maxLength": 9, "format": "uri",
                "examples": ["x"], "default": "y"}, "n": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
                "o": {"type": "object", "properties": {"k": {"type": "string"}}, "additionalProperties": true, "minProperties": 1}}}),
            ),
        ],
    )])
}

fn name_rule(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// OpenAI strict mode's subset, as its documentation lists it.
fn strict_rule(node: &Value, path: &str, depth: usize, errors: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    ];
    const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
    const TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];
    let Some(o) = node.as_object() else { return errors.push(format!("{path}: not a schema")) };
    if depth > 11 {
        errors.push(format!("{path}: deeper than 10 levels"));
    }
    for k in o.keys() {
        if !KEYS.contains(&k.as_str()) {
            errors.push(format!("{path}: keyword `{k}`"));
        }
    }
    if !(o.contains_key("type") || o.contains_key("anyOf") || o.contains_key("$ref") || o.contains_key("enum")) {
        errors.push(format!("{path}: no type"));
    }
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    for t in &types {
        if !TYPES.contains(t) {
            errors.push(format!("{path}: type `{t}`"));
        }
    }
    if let Some(f) = o.get("format").and_then(Value::as_str).filter(|f| !FORMATS.contains(f)) {
        errors.push(format!("{path}: format `{f}`"));
    }
    if types.contains(&"object") {
        if o.get("additionalProperties") != Some(&json!(false)) {
            errors.push(format!("{path}: additionalProperties is not false"));
        }
        let props: Vec<&String> =
            o.get("properties").and_then(Value::as_object).map(|p| p.keys().collect()).unwrap_or_default();
        let required: Vec<&str> =
            o.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        if props.len() != required.len() || !props.iter().all(|p| required.contains(&p.as_str())) {
            errors.push(format!("{path}: not every property is required"));
        }
    }
    for (k, v) in o {
        match k.as_str() {
            "properties" | "$defs" | "definitions" => {
                for (name, p) in v.as_object().into_iter().flatten() {
                    strict_rule(p, &format!("{path}/{k}/{name}"), depth + 1, errors);
                }
            }
            "items" => strict_rule(v, &format!("{path}/items"), depth + 1, errors),
            "anyOf" => {
                for (i, b) in v.as_array().into_iter().flatten().enumerate() {
                    strict_rule(b, &format!("{path}/anyOf/{i}"), depth, errors);
                }
            }
            _ => {}
        }
    }
}

fn openai_rule(v: &Value, strict: bool) -> Vec<String> {
    let mut errors = Vec::new();
    let f = &v["function"];
    if v["type"] != "function" || !name_rule(f["name"].as_str().unwrap_or_default()) {
        errors.push("type or name".into());
    }
    if f["description"].as_str().unwrap_or_default().chars().count() > 1024 {
        errors.push("description over 1,024 characters".into());
    }
    let p = &f["parameters"];
    if p["type"] != "object" || p.get("anyOf").is_some() || p.get("oneOf").is_some() || p.get("allOf").is_some() {
        errors.push("parameters are not an object".into());
    }
    if strict {
        if f["strict"] != true {
            errors.push("strict not set".into());
        }
        strict_rule(p, "", 0, &mut errors);
    }
    errors
}

fn anthropic_rule(v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    if !name_rule(v["name"].as_str().unwrap_or_default()) {
        errors.push("name".into());
    }
    let s = &v["input_schema"];
    if s["type"] != "object" || ["oneOf", "anyOf", "allOf"].iter().any(|k| s.get(k).is_some()) {
        errors.push("input_schema is not a plain object".into());
    }
    if v["description"].as_str().unwrap_or_default().chars().count() > 2048 {
        errors.push("description over the cap".into());
    }
    errors
}

/// Gemini's `Schema` fields and types.
fn gemini_schema_rule(node: &Value, path: &str, errors: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    ];
    const TYPES: &[&str] = &["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"];
    let Some(o) = node.as_object() else { return errors.push(format!("{path}: not a schema")) };
    for k in o.keys() {
        if !KEYS.contains(&k.as_str()) {
            errors.push(format!("{path}: field `{k}`"));
        }
    }
    let ty = o.get("type").and_then(Value::as_str);
    match ty {
        Some(t) if TYPES.contains(&t) => {}
        None if o.contains_key("anyOf") => {}
        other => errors.push(format!("{path}: type {other:?}")),
    }
    if let Some(e) = o.get("enum")
        && (ty != Some("STRING") || !e.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
    {
        errors.push(format!("{path}: enum on a non-string"));
    }
    if ty == Some("OBJECT") && o.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty()) {
        errors.push(format!("{path}: an OBJECT without properties"));
    }
    if let Some(f) = o.get("format").and_then(Value::as_str) {
        let fits = matches!(
            (ty, f),
            (Some("STRING"), "enum" | "date-time")
                | (Some("NUMBER"), "float" | "double")
                | (Some("INTEGER"), "int32" | "int64")
        );
        if !fits {
            errors.push(format!("{path}: format `{f}` on {ty:?}"));
        }
    }
    for (name, p) in o.get("properties").and_then(Value::as_object).into_iter().flatten() {
        gemini_schema_rule(p, &format!("{path}/properties/{name}"), errors);
    }
    if let Some(items) = o.get("items") {
        gemini_schema_rule(items, &format!("{path}/items"), errors);
    }
    for (i, b) in o.get("anyOf").and_then(Value::as_array).into_iter().flatten().enumerate() {
        gemini_schema_rule(b, &format!("{path}/anyOf/{i}"), errors);
    }
}

fn gemini_rule(v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let name = v["name"].as_str().unwrap_or_default();
    let fits = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    if !fits {
        errors.push("name".into());
    }
    for k in v.as_object().unwrap().keys() {
        if !["name", "description", "parameters"].contains(&k.as_str()) {
            errors.push(format!("field `{k}`"));
        }
    }
    if let Some(p) = v.get("parameters") {
        if p["type"] != "OBJECT" {
            errors.push("parameters are not an OBJECT".into());
        }
        gemini_schema_rule(p, "", &mut errors);
    }
    errors
}

/// Exports `cat` and checks each definition; returns (exported, skipped names).
fn check(
    cat: &Catalog,
    format: ToolFormat,
    options: ExportOptions,
    rule: impl Fn(&Value) -> Vec<String>,
) -> (usize, Vec<String>) {
    let export = ToolsJson::with_options(cat.tools(), format, options);
    let out = serde_json::to_value(&export).unwrap();
    let mut failures = Vec::new();
    for v in out.as_array().unwrap() {
        let errors = rule(v);
        if !errors.is_empty() {
            failures.push(format!("{v}\n  breaks: {errors:?}"));
        }
    }
    assert!(failures.is_empty(), "{} in {format:?}:\n{}", failures.len(), failures.join("\n"));
    let skipped = export.skipped();
    for s in &skipped {
        assert!(!s.reason.is_empty(), "{s:?}");
    }
    assert_eq!(out.as_array().unwrap().len() + skipped.len(), cat.tools().len());
    (out.as_array().unwrap().len(), skipped.iter().map(|s| format!("{}: {}", s.name, s.reason)).collect())
}

#[test]
fn real_servers_tools_meet_each_providers_rules() {
    let cat = recorded();
    let n = cat.tools().len();
    // Nothing of these real servers is beyond OpenAI or Anthropic.
    assert_eq!(check(&cat, ToolFormat::OpenAi, ExportOptions::new(), |v| openai_rule(v, false)), (n, vec![]));
    assert_eq!(check(&cat, ToolFormat::Anthropic, ExportOptions::new(), anthropic_rule), (n, vec![]));
    // Gemini's schema has no map of any keys: the one tool that requires one is left out, said why.
    let (gemini, skipped) = check(&cat, ToolFormat::Gemini, ExportOptions::new(), gemini_rule);
    assert_eq!(
        (gemini, skipped),
        (
            n - 1,
            vec!["mcp__firecrawl__firecrawl_monitor_update: its required `/properties/body` cannot be given in Gemini's schema".to_string()]
        )
    );
    // Strict mode: each tool exported meets it; those it cannot take are said.
    let (strict, skipped) =
        check(&cat, ToolFormat::OpenAi, ExportOptions::new().strict(true), |v| openai_rule(v, true));
    println!("strict: {strict} of {n}; left out:\n{}", skipped.join("\n"));
    assert!(strict >= n * 9 / 10, "{skipped:?}");
}

#[test]
fn hard_cases_meet_the_rules_or_are_left_out_with_the_reason() {
    let cat = hard_cases();
    let (_, skipped) = check(&cat, ToolFormat::OpenAi, ExportOptions::new(), |v| openai_rule(v, false));
    assert!(skipped.is_empty(), "{skipped:?}");
    let (_, skipped) = check(&cat, ToolFormat::Anthropic, ExportOptions::new(), anthropic_rule);
    assert!(skipped.is_empty(), "{skipped:?}");
    let (_, skipped) = check(&cat, ToolFormat::OpenAi, ExportOptions::new().strict(true), |v| openai_rule(v, true));
    let left: Vec<&str> = skipped.iter().map(|s| s.split(':').next().unwrap()).collect();
    assert_eq!(left, ["mcp__hard__free_form", "mcp__hard__pattern_properties"], "{skipped:#?}");
    let (_, skipped) = check(&cat, ToolFormat::Gemini, ExportOptions::new(), gemini_rule);
    let left: Vec<&str> = skipped.iter().map(|s| s.split(':').next().unwrap()).collect();
    // `free_form` requires an object of any keys.
    assert_eq!(left, ["mcp__hard__free_form"], "{skipped:#?}");
}

#[test]
fn the_mcp_format_is_exactly_as_served() {
    let cat = recorded();
    let v = serde_json::to_value(ToolsJson::new(cat.tools(), ToolFormat::Mcp)).unwrap();
    for (exported, entry) in v.as_array().unwrap().iter().zip(cat.tools()) {
        let mut served = serde_json::to_value(&entry.tool).unwrap();
        served["name"] = json!(entry.name);
        assert_eq!(exported, &served);
    }
}

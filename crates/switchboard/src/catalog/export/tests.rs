//! The hard cases of each provider's rules: `$ref` cycles, a root `anyOf`, `patternProperties`,
//! tuples, `const`, nullable unions, free-form objects, long descriptions.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Value, json};

use super::*;
use crate::catalog::{Catalog, CompiledFilter, ServerLists};
use crate::config::ToolFilter;

fn entry(schema: Value, description: &str) -> ToolEntry {
    let tool: Tool = serde_json::from_value(json!({"name": "t", "description": description, "inputSchema": schema}))
        .unwrap_or_else(|_| Tool::new("t", "", Arc::default()));
    let lists = ServerLists { tools: vec![tool], ..ServerLists::default() };
    let cat = Catalog::build([("s", &lists, &CompiledFilter::new(&ToolFilter::default()))]);
    cat.tools().first().cloned().unwrap_or_else(|| panic!("no tool"))
}

fn export(schema: Value, format: ToolFormat, options: &ExportOptions) -> Result<(Value, Vec<String>), String> {
    convert(&entry(schema, "A tool."), format, options)
}

fn strict() -> ExportOptions {
    ExportOptions::new().strict(true)
}

#[test]
fn a_root_any_of_is_flattened_for_openai_and_anthropic() {
    let schema = json!({"type": "object", "anyOf": [
        {"properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}}, "required": ["path"]},
        {"properties": {"id": {"type": "integer"}}, "required": ["id"]},
    ]});
    let (v, notes) = export(schema.clone(), ToolFormat::Anthropic, &ExportOptions::new()).unwrap_or_default();
    let s = &v["input_schema"];
    assert!(s.get("anyOf").is_none(), "{v}");
    assert_eq!(s["properties"].as_object().map(|p| p.len()), Some(3));
    // Nothing is required by every alternative.
    assert!(s.get("required").is_none(), "{v}");
    let d = v["description"].as_str().unwrap_or_default();
    assert!(
        d.starts_with(
            "A tool. Give one or more of these sets of arguments: (1) path (required), recursive; (2) id (required)."
        ),
        "{d}"
    );
    assert!(notes.iter().any(|n| n.contains("flattened")), "{notes:?}");
    let (v, _) = export(schema, ToolFormat::OpenAi, &ExportOptions::new()).unwrap_or_default();
    assert!(v["function"]["parameters"].get("anyOf").is_none(), "{v}");
}

#[test]
fn strict_requires_every_property_and_makes_optional_ones_nullable() {
    let schema = json!({"type": "object", "properties": {
        "q": {"type": "string", "minLength": 3, "format": "uri"},
        "n": {"type": "integer", "minimum": 1, "default": 5},
        "mode": {"const": "fast"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "when": {"type": ["string", "null"], "format": "date-time"},
    }, "required": ["q"]});
    let (v, notes) = export(schema, ToolFormat::OpenAi, &strict()).unwrap_or_default();
    let f = &v["function"];
    assert_eq!(f["strict"], true);
    let p = &f["parameters"];
    assert_eq!(p["additionalProperties"], false);
    assert_eq!(p["required"], json!(["q", "n", "mode", "tags", "when"]));
    assert_eq!(p["properties"]["q"]["type"], "string");
    assert_eq!(p["properties"]["q"]["description"], "At least 3 characters; format \"uri\".");
    assert_eq!(p["properties"]["n"]["type"], json!(["integer", "null"]));
    assert_eq!(p["properties"]["n"]["minimum"], 1);
    assert_eq!(p["properties"]["n"]["description"], "Default 5.");
    assert_eq!(p["properties"]["mode"]["enum"], json!(["fast", null]));
    assert_eq!(p["properties"]["when"]["type"], json!(["string", "null"]));
    assert_eq!(p["properties"]["when"]["format"], "date-time");
    assert!(!notes.is_empty());
}

#[test]
fn strict_leaves_out_what_it_cannot_say() {
    let free = json!({"type": "object", "properties": {"headers": {"type": "object", "additionalProperties": {"type": "string"}}}});
    let e = export(free.clone(), ToolFormat::OpenAi, &strict()).err().unwrap_or_default();
    assert!(e.contains("`/properties/headers` is an object of free-form keys"), "{e}");
    // Not strict, it goes as it is.
    assert!(export(free, ToolFormat::OpenAi, &ExportOptions::new()).is_ok());
    let any = json!({"type": "object", "properties": {"value": {}}});
    assert!(export(any, ToolFormat::OpenAi, &strict()).err().unwrap_or_default().contains("takes any value"));
    let pattern = json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}}});
    assert!(export(pattern, ToolFormat::OpenAi, &strict()).is_err());
}

#[test]
fn strict_keeps_recursion_as_references() {
    let schema = json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "required": ["tree"],
        "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name", "children"]}}});
    let (v, _) = export(schema, ToolFormat::OpenAi, &strict()).unwrap_or_default();
    let p = &v["function"]["parameters"];
    assert_eq!(p["properties"]["tree"], json!({"$ref": "#/$defs/node"}));
    assert_eq!(p["$defs"]["node"]["additionalProperties"], false);
    assert_eq!(p["$defs"]["node"]["properties"]["children"]["items"], json!({"$ref": "#/$defs/node"}));
}

#[test]
fn strict_keeps_only_the_definitions_a_reference_reaches() {
    // `unused` (a map of any keys, which strict mode cannot say) is reached by nothing: the
    // tool is kept; `a` reaches `b~1c` (a name with a slash) through `a`'s own reference.
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"],
        "$defs": {"a": {"type": "object", "properties": {"y": {"$ref": "#/$defs/b~1c"}}, "required": ["y"]},
                  "b/c": {"type": "string"},
                  "unused": {"type": "object", "additionalProperties": true}}});
    let (v, _) = export(schema, ToolFormat::OpenAi, &strict()).expect("kept");
    let defs = v["function"]["parameters"]["$defs"].as_object().cloned().unwrap_or_default();
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["a", "b/c"]);
    // Reached, the same definition leaves the tool out, saying why.
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/unused"}}, "required": ["x"],
        "$defs": {"unused": {"type": "object", "additionalProperties": true}}});
    let refused = export(schema, ToolFormat::OpenAi, &strict()).expect_err("left out");
    assert!(refused.contains("free-form keys"), "{refused}");
}

#[test]
fn tuples_become_arrays_of_their_parts() {
    let schema = json!({"type": "object", "properties": {"point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]}}, "required": ["point"]});
    let (v, _) = export(schema.clone(), ToolFormat::OpenAi, &strict()).unwrap_or_default();
    let point = &v["function"]["parameters"]["properties"]["point"];
    assert_eq!(point["items"], json!({"anyOf": [{"type": "number"}, {"type": "string"}]}));
    assert_eq!((point["minItems"].clone(), point["maxItems"].clone()), (json!(2), json!(2)));
    let (v, _) = export(schema, ToolFormat::Gemini, &ExportOptions::new()).unwrap_or_default();
    let point = &v["parameters"]["properties"]["point"];
    assert_eq!(point["type"], "ARRAY");
    assert_eq!(point["items"]["anyOf"], json!([{"type": "NUMBER"}, {"type": "STRING"}]));
}

#[test]
fn gemini_inlines_references_and_cuts_recursion() {
    let schema = json!({"type": "object", "properties": {
        "owner": {"$ref": "#/definitions/person"},
        "tree": {"$ref": "#/definitions/node"},
    }, "required": ["owner"], "definitions": {
        "person": {"type": "object", "properties": {"name": {"type": "string"}}},
        "node": {"type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}},
    }});
    let (v, notes) = export(schema, ToolFormat::Gemini, &ExportOptions::new()).unwrap_or_default();
    let p = &v["parameters"];
    assert_eq!(p["type"], "OBJECT");
    assert_eq!(p["properties"]["owner"]["properties"]["name"]["type"], "STRING");
    // The recursive `kids` is left out; the rest of `tree` stays.
    assert_eq!(p["properties"]["tree"]["properties"].as_object().map(|o| o.len()), Some(1));
    assert!(notes.iter().any(|n| n.contains("recursion")), "{notes:?}");
    assert!(!v.to_string().contains("$ref") && !v.to_string().contains("definitions"), "{v}");
    // A required property that recurses has no Gemini form.
    let required = json!({"type": "object", "properties": {"tree": {"$ref": "#"}}, "required": ["tree"]});
    assert!(export(required, ToolFormat::Gemini, &ExportOptions::new()).is_err());
}

#[test]
fn gemini_rewrites_what_its_schema_lacks() {
    let schema = json!({"type": "object", "properties": {
        "kind": {"const": "a"},
        "level": {"enum": [1, 2, 3]},
        "maybe": {"type": ["string", "null"]},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "count": {"type": "integer", "exclusiveMinimum": 0, "format": "int32"},
        "meta": {"type": "object"},
        "map": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    }, "additionalProperties": false});
    let (v, _) = export(schema, ToolFormat::Gemini, &ExportOptions::new()).unwrap_or_default();
    let p = &v["parameters"]["properties"];
    assert_eq!(p["kind"], json!({"type": "STRING", "enum": ["a"], "format": "enum"}));
    assert_eq!(p["level"]["type"], "INTEGER");
    assert!(p["level"].get("enum").is_none() && p["level"]["description"] == "One of [1,2,3].", "{}", p["level"]);
    assert_eq!(p["maybe"], json!({"type": "STRING", "nullable": true}));
    assert_eq!(p["either"]["anyOf"], json!([{"type": "STRING"}, {"type": "INTEGER"}]));
    assert_eq!(p["count"]["format"], "int32");
    assert_eq!(p["count"]["description"], "More than 0.");
    assert!(p.get("meta").is_none(), "an object of any keys has no Gemini form: left out");
    assert_eq!(p["map"]["description"], "Other keys may be given too.");
    assert!(v["parameters"].get("additionalProperties").is_none());
    // No arguments at all: no `parameters`.
    let (v, _) = export(json!({"type": "object"}), ToolFormat::Gemini, &ExportOptions::new()).unwrap_or_default();
    assert!(v.get("parameters").is_none(), "{v}");
}

#[test]
fn descriptions_are_cut_at_the_cap_with_a_note_but_not_for_mcp() {
    let long = "word ".repeat(1000);
    let e = entry(json!({"type": "object"}), &long);
    let (v, notes) = convert(&e, ToolFormat::Anthropic, &ExportOptions::new()).unwrap_or_default();
    let d = v["description"].as_str().unwrap_or_default();
    assert_eq!(d.chars().count(), 2048);
    assert!(d.ends_with(" […]") && notes.iter().any(|n| n == "description cut to 2048 of its 5000 characters"));
    let (v, _) = convert(&e, ToolFormat::OpenAi, &ExportOptions::new()).unwrap_or_default();
    assert!(v["function"]["description"].as_str().unwrap_or_default().chars().count() <= 1024);
    let (v, _) = convert(&e, ToolFormat::Anthropic, &ExportOptions::new().description_cap(100)).unwrap_or_default();
    assert!(v["description"].as_str().unwrap_or_default().chars().count() <= 100);
    let (v, notes) = convert(&e, ToolFormat::Mcp, &ExportOptions::new()).unwrap_or_default();
    assert_eq!(v["description"].as_str().map(str::len), Some(5000));
    assert!(notes.is_empty());
}

#[test]
fn deferred_anthropic_tools_and_the_search_tool() {
    let e = entry(json!({"type": "object"}), "A tool.");
    let out =
        ToolsJson::with_options([&e], ToolFormat::Anthropic, ExportOptions::new().defer(true, Default::default()));
    let v = serde_json::to_value(&out).unwrap_or_default();
    assert_eq!(v[0], anthropic_tool_search());
    assert_eq!(v[1]["defer_loading"], true);
    let always = ExportOptions::new().defer(true, ["s".to_string()].into());
    let v = serde_json::to_value(ToolsJson::with_options([&e], ToolFormat::Anthropic, always)).unwrap_or_default();
    assert!(v[1].get("defer_loading").is_none(), "{v}");
}

#[test]
fn names_follow_each_providers_rule() {
    assert!(name_fits("mcp__a__b-c", ToolFormat::OpenAi) && name_fits("mcp__a__b-c", ToolFormat::Gemini));
    assert!(!name_fits("a.b", ToolFormat::OpenAi) && name_fits("a.b", ToolFormat::Gemini));
    assert!(!name_fits("1abc", ToolFormat::Gemini) && name_fits("1abc", ToolFormat::Anthropic));
    assert!(!name_fits(&"x".repeat(65), ToolFormat::Anthropic) && !name_fits("", ToolFormat::OpenAi));
}

#[test]
fn strict_arguments_drop_the_nulls_of_optional_properties() {
    let e = entry(
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]},
            "o": {"type": "object", "properties": {"x": {"type": "integer"}}}}, "required": ["a"]}),
        "",
    );
    let args = json!({"a": "1", "b": null, "o": {"x": null}}).as_object().cloned().unwrap_or_default();
    // `b` takes null as the server wrote it: kept; `x` does not: taken out.
    assert_eq!(Value::Object(strict_arguments(&e, args)), json!({"a": "1", "b": null, "o": {}}));
    let args = json!({"o": null}).as_object().cloned().unwrap_or_default();
    assert_eq!(Value::Object(strict_arguments(&e, args)), json!({}));
}

#[test]
fn a_report_says_what_was_left_out_after_the_tools() {
    let ok = entry(json!({"type": "object", "properties": {"a": {"type": "string"}}}), "Fine.");
    let map = entry(json!({"type": "object", "properties": {"m": {"type": "object"}}, "required": ["m"]}), "A map.");
    let export = ToolsJson::with_options([&ok, &map], ToolFormat::OpenAi, strict());
    let v = serde_json::to_value(export.report()).unwrap_or_default();
    assert_eq!(v["tools"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        v["skipped"][0]["reason"],
        "`/properties/m` is an object of free-form keys, which strict mode cannot express"
    );
    // Written again, the lists are those of this writing, not added to.
    let v = serde_json::to_value(export.report()).unwrap_or_default();
    assert_eq!(v["skipped"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_chain_of_references_too_deep_is_refused_not_followed_until_the_stack_ends() {
    // 400 definitions, each one's property a reference to the next: no cycle, but deep.
    let mut defs = serde_json::Map::new();
    for i in 0..400 {
        let next = if i < 399 { json!({"$ref": format!("#/$defs/d{}", i + 1)}) } else { json!({"type": "string"}) };
        defs.insert(format!("d{i}"), json!({"type": "object", "properties": {"x": next}}));
    }
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs});
    let e = export(schema, ToolFormat::Gemini, &ExportOptions::new()).err().unwrap_or_default();
    assert!(e.contains("nests deeper than 256 levels"), "{e}");
}

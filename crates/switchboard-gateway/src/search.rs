//! `--tool-search`: a big catalog behind three tools, so a client's context holds a few
//! hundred tokens of definitions instead of tens of thousands.
//!
//! With search on, `tools/list` gives `search_tools` (ranked search over the client's view:
//! words, `select:NAME`, `/REGEX/`), `describe_tools` (full definitions by name) and
//! `call_tool` (a call by name), plus every tool that must always load: its server's
//! `always_load` or the tool's own `_meta["anthropic/alwaysLoad"]`. `auto` turns search on
//! only when the view's definitions exceed a token threshold (o200k_base estimate, counted
//! once per catalog snapshot and stopped as soon as it is passed).
//!
//! A call through `call_tool` is the same call as a direct one: resolved in the client's view
//! (a profile's hidden tools stay hidden), then the same path through the hub's policy,
//! argument validation, approvals and audit. Tools not listed can still be called by name.
//! While search is on, the three names belong to it: an upstream tool exposed as
//! `search_tools` (bare names) is reached through `call_tool`.

use std::str::FromStr;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

use crate::view::View;

/// The search tool's name.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The tool that gives full definitions.
pub const DESCRIBE_TOOLS: &str = "describe_tools";
/// The tool that calls another by name.
pub const CALL_TOOL: &str = "call_tool";

/// Most tools one search gives.
const MAX_LIMIT: usize = 50;
const DEFAULT_LIMIT: usize = 5;
/// Most definitions one `describe_tools` gives.
const MAX_DESCRIBE: usize = 50;

/// Whether tool definitions are deferred behind search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolSearch {
    /// Every tool listed in full.
    #[default]
    Off,
    /// The three search tools (and always-load tools) only.
    On,
    /// On when the view's definitions exceed this many tokens.
    Auto(usize),
}

/// `auto` alone: a tenth of a 200,000-token context, as Claude Code's `auto`.
pub const AUTO_TOKENS: usize = 20_000;

impl FromStr for ToolSearch {
    type Err = String;
    fn from_str(s: &str) -> Result<ToolSearch, String> {
        match s {
            "on" | "true" => Ok(ToolSearch::On),
            "off" | "false" => Ok(ToolSearch::Off),
            "auto" => Ok(ToolSearch::Auto(AUTO_TOKENS)),
            other => match other.strip_prefix("auto:").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(ToolSearch::Auto(n)),
                _ => Err(format!("`{other}`: use on, off, auto or auto:TOKENS (auto:{AUTO_TOKENS} is auto)")),
            },
        }
    }
}

fn schema(v: Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// The three tools, as listed.
pub(crate) fn meta_tools(total: usize) -> Vec<Tool> {
    let mut search = Tool::new(
        SEARCH_TOOLS,
        format!(
            "Find tools among the {total} this server offers (their definitions are not listed, to save context). \
             Give words saying what you want to do (\"create an issue\"), `select:NAME[,NAME]` for exact names, \
             or `/REGEX/` over names and descriptions. Returns names with one-line descriptions, best first; \
             then get full definitions with {DESCRIBE_TOOLS} and call with {CALL_TOOL}."
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words, `select:NAME[,NAME]` or `/REGEX/`."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                          "description": "Most tools to return."}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    );
    search.output_schema = Some(schema(json!({
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"},
                "server": {"type": "string"}}, "required": ["name", "description", "server"]}},
            "total": {"type": "integer"}
        },
        "required": ["tools", "total"]
    })));
    let mut describe = Tool::new(
        DESCRIBE_TOOLS,
        format!("Full definitions (description, input schema) of tools found with {SEARCH_TOOLS}, by name."),
        schema(json!({
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE}},
            "required": ["names"],
            "additionalProperties": false
        })),
    );
    describe.output_schema = Some(schema(json!({
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"type": "object"}}, "unknown": {"type": "array", "items": {"type": "string"}}},
        "required": ["tools", "unknown"]
    })));
    let call = Tool::new(
        CALL_TOOL,
        format!(
            "Call a tool found with {SEARCH_TOOLS} by its name, with arguments that follow the input schema \
             {DESCRIBE_TOOLS} gave. Returns that tool's result."
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    );
    vec![search, describe, call]
}

/// Whether a tool is listed in full even with search on.
pub(crate) fn always_loads(tool: &Tool, server_always: bool) -> bool {
    server_always || tool.meta.as_ref().is_some_and(|m| m.0.get("anthropic/alwaysLoad") == Some(&Value::Bool(true)))
}

/// One line of a description (the first sentence or line, at most 200 characters).
fn one_line(description: Option<&str>) -> String {
    let d = description.unwrap_or("").trim();
    let line = d.lines().next().unwrap_or("");
    let cut = line.find(". ").map_or(line, |i| &line[..=i]);
    switchboard::text::excerpt(cut, 200)
}

/// A meta tool's arguments were wrong: said as an error result the model can read.
fn refused(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// `search_tools {query, limit}` over `view`.
pub(crate) fn search(view: &View, catalog: &switchboard::catalog::Catalog, args: &JsonObject) -> CallToolResult {
    let Some(query) = args.get("query").and_then(Value::as_str) else {
        return refused("`query` is required: words, `select:NAME[,NAME]` or `/REGEX/`");
    };
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n @ 1..=MAX_LIMIT) => n,
            _ => return refused(format!("`limit` must be an integer from 1 to {MAX_LIMIT}")),
        },
    };
    let hits = match catalog.search_in(query, limit, |e| view.exposed_name(&e.name).is_some()) {
        Ok(hits) => hits,
        Err(e) => return refused(e.to_string()),
    };
    let found: Vec<Value> = hits
        .iter()
        .filter_map(|h| {
            let exposed = view.exposed_name(&h.tool.name)?;
            let mut v = json!({"name": exposed, "description": one_line(h.tool.tool.description.as_deref()),
                               "server": h.tool.server});
            if let Some(t) = &h.tool.tool.title {
                v["title"] = json!(t);
            }
            Some(v)
        })
        .collect();
    let nearest_only = !hits.is_empty() && hits.iter().all(|h| !h.close);
    let mut text = if found.is_empty() {
        format!("No tool matches `{}`. Try other words, or `/REGEX/`.", switchboard::text::excerpt(query, 100))
    } else if nearest_only {
        format!(
            "No tool matches `{}` by its words or a near meaning; the closest:\n",
            switchboard::text::excerpt(query, 100)
        )
    } else {
        String::new()
    };
    for t in &found {
        text.push_str(&format!(
            "{} ({}): {}\n",
            t["name"].as_str().unwrap_or_default(),
            t["server"].as_str().unwrap_or_default(),
            t["description"].as_str().unwrap_or_default()
        ));
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    let mut structured = json!({"tools": found, "total": view.tools.len()});
    if nearest_only {
        structured["nearest_only"] = json!(true);
    }
    result.structured_content = Some(structured);
    result
}

/// `describe_tools {names}`: the definitions as the view exposes them.
pub(crate) fn describe(view: &View, args: &JsonObject) -> CallToolResult {
    let Some(names) = args.get("names").and_then(Value::as_array) else {
        return refused("`names` is required: the tool names search_tools gave");
    };
    if names.is_empty() || names.len() > MAX_DESCRIBE {
        return refused(format!("give 1 to {MAX_DESCRIBE} names"));
    }
    let (mut tools, mut unknown) = (Vec::new(), Vec::new());
    for name in names {
        let name = name.as_str().unwrap_or_default();
        match view.tool(name) {
            Some(t) => tools.push(serde_json::to_value(&t.tool).unwrap_or_default()),
            None => unknown.push(json!(name)),
        }
    }
    let out = json!({"tools": tools, "unknown": unknown});
    let mut result =
        CallToolResult::success(vec![ContentBlock::text(serde_json::to_string_pretty(&out).unwrap_or_default())]);
    result.structured_content = Some(out);
    result
}

/// `call_tool {name, arguments}`: the tool's name in the view and its arguments.
pub(crate) fn call_target(args: Option<&JsonObject>) -> Result<(String, Option<JsonObject>), String> {
    let args = args.ok_or("`name` is required")?;
    let name = args.get("name").and_then(Value::as_str).ok_or("`name` is required: a tool name from search_tools")?;
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o.clone()),
        Some(_) => return Err("`arguments` must be an object".into()),
    };
    Ok((name.to_string(), arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!("on".parse(), Ok(ToolSearch::On));
        assert_eq!("off".parse(), Ok(ToolSearch::Off));
        assert_eq!("auto".parse(), Ok(ToolSearch::Auto(AUTO_TOKENS)));
        assert_eq!("auto:500".parse(), Ok(ToolSearch::Auto(500)));
        assert!("auto:lots".parse::<ToolSearch>().is_err());
        assert!("sometimes".parse::<ToolSearch>().is_err());
    }

    #[test]
    fn always_load_by_server_or_by_the_tools_meta() {
        let mut tool = Tool::new("t", "", schema(json!({"type": "object"})));
        assert!(!always_loads(&tool, false));
        assert!(always_loads(&tool, true));
        tool.meta = serde_json::from_value(json!({"anthropic/alwaysLoad": true})).ok();
        assert!(always_loads(&tool, false));
        tool.meta = serde_json::from_value(json!({"anthropic/alwaysLoad": "yes"})).ok();
        assert!(!always_loads(&tool, false));
    }

    #[test]
    fn one_line_descriptions() {
        assert_eq!(one_line(Some("Reads a file. Then more.\nAnd more")), "Reads a file.");
        assert_eq!(one_line(Some("  line one\nline two")), "line one");
        assert_eq!(one_line(None), "");
    }

    #[test]
    fn call_targets() {
        let args = |v: Value| v.as_object().cloned();
        assert_eq!(call_target(args(json!({"name": "x"})).as_ref()), Ok(("x".into(), None)));
        let (_, a) = call_target(args(json!({"name": "x", "arguments": {"a": 1}})).as_ref()).unwrap_or_default();
        assert_eq!(a.and_then(|a| a.get("a").cloned()), Some(json!(1)));
        assert!(call_target(args(json!({"arguments": {}})).as_ref()).is_err());
        assert!(call_target(args(json!({"name": "x", "arguments": [1]})).as_ref()).is_err());
    }
}

//! Tool definitions in the shapes model providers take.

use serde_json::{Value, json};

use super::ToolEntry;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolFormat {
    /// MCP `Tool` objects with the model-visible name.
    Mcp,
    /// OpenAI function tools (`{"type": "function", "function": {...}}`).
    OpenAi,
    /// Anthropic tools (`{"name", "description", "input_schema"}`).
    Anthropic,
}

impl std::str::FromStr for ToolFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mcp" => Ok(ToolFormat::Mcp),
            "openai" => Ok(ToolFormat::OpenAi),
            "anthropic" => Ok(ToolFormat::Anthropic),
            other => Err(format!("unknown format `{other}`: use mcp, openai or anthropic")),
        }
    }
}

/// One tool in `format`.
pub fn tool_json(entry: &ToolEntry, format: ToolFormat) -> Value {
    let description = entry.tool.description.as_deref().unwrap_or("");
    let schema = Value::Object((*entry.input_schema).clone());
    match format {
        ToolFormat::Mcp => {
            let mut v = serde_json::to_value(&entry.tool).unwrap_or_else(|_| json!({}));
            v["name"] = json!(entry.name);
            v["inputSchema"] = schema;
            v
        }
        ToolFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": entry.name, "description": description, "parameters": schema},
        }),
        ToolFormat::Anthropic => json!({"name": entry.name, "description": description, "input_schema": schema}),
    }
}

/// Every tool in `format`, as a JSON array.
pub fn tools_json<'a>(entries: impl IntoIterator<Item = &'a ToolEntry>, format: ToolFormat) -> Value {
    Value::Array(entries.into_iter().map(|e| tool_json(e, format)).collect())
}

/// Every tool in `format`, serialised one at a time as it is written (a catalog of 50000 tools
/// is not copied whole into JSON values first): for output of any size.
pub struct ToolsJson<'a> {
    entries: Vec<&'a ToolEntry>,
    format: ToolFormat,
}

impl<'a> ToolsJson<'a> {
    /// The tools to write, in `format`.
    pub fn new(entries: impl IntoIterator<Item = &'a ToolEntry>, format: ToolFormat) -> Self {
        ToolsJson { entries: entries.into_iter().collect(), format }
    }
}

impl serde::Serialize for ToolsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.entries.len()))?;
        for entry in &self.entries {
            seq.serialize_element(&tool_json(entry, self.format))?;
        }
        seq.end()
    }
}

//! One catalog of every connected server's tools, resources, resource templates and prompts.
//!
//! The catalog is an immutable snapshot, rebuilt whole whenever one server's lists change
//! (10,000 tools take a few milliseconds) and swapped in atomically, so readers never see a
//! half-updated catalog and never hold a lock. Raw MCP names are kept for the protocol call;
//! the model sees the names from [`naming`].

mod embed;
pub mod export;
pub mod naming;
pub mod search;
#[cfg(feature = "tokens")]
pub mod tokens;

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Prompt, Resource, ResourceTemplate, Tool};
use serde::Serialize;
use serde_json::Value;

use crate::config::ToolFilter;
use crate::glob::GlobList;

/// What one server offers, as listed (all pages).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ServerLists {
    /// `tools/list`.
    pub tools: Vec<Tool>,
    /// `resources/list`.
    pub resources: Vec<Resource>,
    /// `resources/templates/list`.
    pub resource_templates: Vec<ResourceTemplate>,
    /// `prompts/list`.
    pub prompts: Vec<Prompt>,
}

/// A tool in the catalog.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The model-visible name, unique in the catalog.
    pub name: String,
    /// The server that owns it.
    pub server: String,
    /// The tool as the server described it (raw name, annotations, output schema...).
    pub tool: Tool,
    /// The input schema, normalised to `{"type": "object", "properties": {...}}`.
    pub input_schema: Arc<JsonObject>,
}

/// A resource in the catalog.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ResourceEntry {
    /// The server that owns it.
    pub server: String,
    /// The resource.
    pub resource: Resource,
}

/// A resource template in the catalog.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TemplateEntry {
    /// The server that owns it.
    pub server: String,
    /// The template.
    pub template: ResourceTemplate,
}

/// A prompt in the catalog.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PromptEntry {
    /// The server that owns it.
    pub server: String,
    /// The prompt.
    pub prompt: Prompt,
}

/// The merged catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolEntry>,
    by_name: HashMap<String, usize>,
    resources: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    prompts: Vec<PromptEntry>,
    /// The word index for [`Catalog::search`], built on the first search of this snapshot.
    index: Arc<std::sync::OnceLock<search::Index>>,
}

/// Compiled allow/deny globs.
#[derive(Debug, Clone)]
pub struct CompiledFilter {
    allow: Option<GlobList>,
    deny: Option<GlobList>,
}

impl CompiledFilter {
    /// Compiles `filter` (globs were validated when the config loaded; a bad one matches
    /// nothing).
    pub fn new(filter: &ToolFilter) -> Self {
        CompiledFilter { allow: GlobList::filter(&filter.allow), deny: GlobList::filter(&filter.deny) }
    }

    /// Whether a tool of this raw name is kept.
    pub fn allows(&self, tool: &str) -> bool {
        self.allow.as_ref().is_none_or(|a| a.is_match(tool)) && !self.deny.as_ref().is_some_and(|d| d.is_match(tool))
    }
}

/// Normalises a tool input schema to an object schema with `properties`.
pub fn normalize_schema(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let ok_type = schema.get("type").and_then(Value::as_str) == Some("object");
    let ok_props = schema.get("properties").is_some_and(Value::is_object);
    if ok_type && ok_props {
        return schema.clone();
    }
    let mut s: JsonObject = (**schema).clone();
    s.insert("type".into(), Value::String("object".into()));
    if !ok_props {
        s.insert("properties".into(), Value::Object(Default::default()));
    }
    Arc::new(s)
}

impl Catalog {
    /// Builds the catalog from each server's lists and tool filter.
    pub fn build<'a>(servers: impl IntoIterator<Item = (&'a str, &'a ServerLists, &'a CompiledFilter)>) -> Catalog {
        let mut cat = Catalog::default();
        let mut kept: Vec<(&str, &Tool)> = Vec::new();
        for (server, lists, filter) in servers {
            kept.extend(lists.tools.iter().filter(|t| filter.allows(&t.name)).map(|t| (server, t)));
            cat.resources
                .extend(lists.resources.iter().map(|r| ResourceEntry { server: server.into(), resource: r.clone() }));
            cat.templates.extend(
                lists.resource_templates.iter().map(|t| TemplateEntry { server: server.into(), template: t.clone() }),
            );
            cat.prompts.extend(lists.prompts.iter().map(|p| PromptEntry { server: server.into(), prompt: p.clone() }));
        }
        let names = naming::assign(kept.iter().map(|(s, t)| (*s, t.name.as_ref())));
        cat.tools = kept
            .into_iter()
            .zip(names)
            .filter(|(_, name)| !name.is_empty())
            .map(|((server, tool), name)| ToolEntry {
                name,
                server: server.to_string(),
                input_schema: normalize_schema(&tool.input_schema),
                tool: tool.clone(),
            })
            .collect();
        cat.tools.sort_by(|a, b| a.name.cmp(&b.name));
        cat.by_name = cat.tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        cat
    }

    /// Every tool, sorted by model-visible name.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// A tool by model-visible name, by `server/tool` (raw names), or by `server__tool` (the
    /// gateway's short names).
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        if let Some(&i) = self.by_name.get(name) {
            return self.tools.get(i);
        }
        if let Some((server, raw)) = name.split_once('/')
            && let Some(t) = self.tools.iter().find(|t| t.server == server && t.tool.name == raw)
        {
            return Some(t);
        }
        // The gateway's short spelling, `<server>__<tool>`.
        name.contains("__")
            .then(|| self.tools.iter().find(|t| naming::short_base(&t.server, &t.tool.name) == name))
            .flatten()
    }

    /// The tools of one server.
    pub fn tools_of<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a ToolEntry> + 'a {
        self.tools.iter().filter(move |t| t.server == server)
    }

    /// Every resource.
    pub fn resources(&self) -> &[ResourceEntry] {
        &self.resources
    }

    /// Every resource template.
    pub fn resource_templates(&self) -> &[TemplateEntry] {
        &self.templates
    }

    /// Every prompt.
    pub fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": schema}))
            .unwrap_or_else(|_| Tool::new(name.to_string(), "", Arc::new(JsonObject::new())))
    }

    #[test]
    fn filters_names_and_normalises() {
        let lists = ServerLists {
            tools: vec![
                tool("read", serde_json::json!({})),
                tool("write", serde_json::json!({"type": "object", "properties": {"a": {}}})),
                tool("delete", serde_json::json!({})),
            ],
            ..ServerLists::default()
        };
        let filter = CompiledFilter::new(&ToolFilter { allow: vec![], deny: vec!["del*".into()] });
        let cat = Catalog::build([("fs", &lists, &filter)]);
        let names: Vec<&str> = cat.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mcp__fs__read", "mcp__fs__write"]);
        let read = cat.tool("mcp__fs__read").map(|t| t.input_schema.clone()).unwrap_or_default();
        assert_eq!(read.get("type"), Some(&Value::String("object".into())));
        assert!(read.get("properties").is_some_and(Value::is_object));
        assert_eq!(cat.tool("fs/write").map(|t| t.name.as_str()), Some("mcp__fs__write"));
        let allow = CompiledFilter::new(&ToolFilter { allow: vec!["read".into()], deny: vec![] });
        assert_eq!(Catalog::build([("fs", &lists, &allow)]).tools().len(), 1);
    }
}

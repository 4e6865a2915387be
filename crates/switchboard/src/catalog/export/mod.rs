//! Tool definitions in the shapes model providers take, each checked against that provider's
//! published rules: a tool that cannot be expressed for a provider is left out of that export
//! with the reason ([`Skipped`]), never sent broken.
//!
//! - **MCP**: exactly as served, under the model-visible name, description whole.
//! - **OpenAI** function tools: the root `anyOf`/`oneOf`/`allOf` flattened into one object
//!   (the API wants an object at the root); descriptions cut to 1,024 characters (the API
//!   refuses longer ones: "string_above_max_length"), or the cap if lower. With
//!   [`ExportOptions::strict`], the strict-mode subset (`strict.rs`).
//! - **Anthropic** tools (<https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use>):
//!   `input_schema` an object with no combinator at its root (flattened, as Claude Code does,
//!   with the alternatives said in the description); descriptions cut at the cap. With
//!   [`ExportOptions::defer`], `defer_loading: true` and the BM25 tool-search tool declared, so
//!   the Messages API searches the catalog server-side.
//! - **Gemini** function declarations (`gemini.rs`).
//!
//! Names are the catalog's (`[A-Za-z0-9_-]`, at most 64 bytes: [`super::naming`]), checked
//! against each provider's rule all the same.

mod gemini;
mod shape;
mod strict;

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::ToolEntry;
use shape::Notes;

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
    /// Gemini function declarations (`{"name", "description", "parameters"}`).
    Gemini,
}

impl std::str::FromStr for ToolFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mcp" => Ok(ToolFormat::Mcp),
            "openai" => Ok(ToolFormat::OpenAi),
            "anthropic" => Ok(ToolFormat::Anthropic),
            "gemini" => Ok(ToolFormat::Gemini),
            other => Err(format!("unknown format `{other}`: use mcp, openai, anthropic or gemini")),
        }
    }
}

impl ToolFormat {
    /// Its name, as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::Mcp => "mcp",
            ToolFormat::OpenAi => "openai",
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::Gemini => "gemini",
        }
    }
}

/// Descriptions longer than this are cut in provider exports (Claude Code's cap).
pub const DESCRIPTION_CAP: usize = 2_048;
/// OpenAI refuses function descriptions longer than this.
pub const OPENAI_DESCRIPTION_MAX: usize = 1_024;

/// How an export is made.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Descriptions longer than this many characters are cut, with a note (provider formats
    /// only: MCP passes them whole). Default [`DESCRIPTION_CAP`].
    pub description_cap: usize,
    /// OpenAI: the strict-mode subset, `strict: true`.
    pub strict: bool,
    /// Anthropic: `defer_loading: true` on each tool (but those of `always_load`), and the
    /// tool-search tool declared first.
    pub defer: bool,
    /// Servers whose tools always load (`"always_load": true`), for `defer`.
    pub always_load: BTreeSet<String>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions { description_cap: DESCRIPTION_CAP, strict: false, defer: false, always_load: BTreeSet::new() }
    }
}

impl ExportOptions {
    /// The defaults: cap 2,048, not strict, not deferred.
    pub fn new() -> Self {
        Self::default()
    }
    /// With this description cap.
    pub fn description_cap(mut self, cap: usize) -> Self {
        self.description_cap = cap;
        self
    }
    /// OpenAI strict mode.
    pub fn strict(mut self, on: bool) -> Self {
        self.strict = on;
        self
    }
    /// Anthropic deferred loading, these servers' tools excepted.
    pub fn defer(mut self, on: bool, always_load: BTreeSet<String>) -> Self {
        self.defer = on;
        self.always_load = always_load;
        self
    }
}

/// A tool left out of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Skipped {
    /// Its model-visible name.
    pub name: String,
    /// Why it cannot be given in this format.
    pub reason: String,
}

/// What an export changed in a tool to fit the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Changed {
    /// Its model-visible name.
    pub name: String,
    /// Each change.
    pub notes: Vec<String>,
}

/// The Anthropic tool-search tool (BM25 variant) declared ahead of deferred tools.
pub fn anthropic_tool_search() -> Value {
    json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
}

/// Whether `name` follows the provider's rule for tool names.
pub fn name_fits(name: &str, format: ToolFormat) -> bool {
    let len = name.chars().count();
    if !(1..=64).contains(&len) {
        return false;
    }
    match format {
        ToolFormat::Mcp => true,
        ToolFormat::OpenAi | ToolFormat::Anthropic => {
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }
        // Starts with a letter or an underscore; letters, digits, `_`, `.`, `:`, `-`.
        ToolFormat::Gemini => {
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        }
    }
}

/// One tool in `format`, with what was changed to fit it; `Err(reason)` when it cannot be.
pub fn convert(entry: &ToolEntry, format: ToolFormat, options: &ExportOptions) -> Result<(Value, Vec<String>), String> {
    if !name_fits(&entry.name, format) {
        return Err(format!("its name does not follow {}'s rule for tool names", format.name()));
    }
    let mut notes = Notes::default();
    let raw_description = entry.tool.description.as_deref().unwrap_or("");
    if format == ToolFormat::Mcp {
        let mut v = serde_json::to_value(&entry.tool).map_err(|e| e.to_string())?;
        v["name"] = json!(entry.name);
        v["inputSchema"] = Value::Object((*entry.input_schema).clone());
        return Ok((v, notes.0));
    }
    let mut schema: Map<String, Value> = (*entry.input_schema).clone();
    let mut description = raw_description.to_string();
    if format != ToolFormat::Gemini {
        shape::flatten_root(&mut schema, &mut description, &mut notes)?;
    }
    let cap = match format {
        ToolFormat::OpenAi => options.description_cap.min(OPENAI_DESCRIPTION_MAX),
        _ => options.description_cap,
    };
    let definition = match format {
        ToolFormat::OpenAi => {
            let mut function = json!({"name": entry.name});
            let parameters = if options.strict { strict::schema(&schema, &mut notes)? } else { schema };
            function["description"] = json!(shape::cap_description(&description, cap, &mut notes));
            function["parameters"] = Value::Object(parameters);
            if options.strict {
                function["strict"] = json!(true);
            }
            json!({"type": "function", "function": function})
        }
        ToolFormat::Anthropic => {
            let mut tool = json!({"name": entry.name, "description": shape::cap_description(&description, cap, &mut notes),
                                  "input_schema": schema});
            if options.defer && !always_loads(entry, options) {
                tool["defer_loading"] = json!(true);
            }
            tool
        }
        ToolFormat::Gemini | ToolFormat::Mcp => {
            let mut decl =
                json!({"name": entry.name, "description": shape::cap_description(&description, cap, &mut notes)});
            if let Some(parameters) = gemini::parameters(&schema, &mut notes)? {
                decl["parameters"] = parameters;
            }
            decl
        }
    };
    Ok((definition, notes.0))
}

fn always_loads(entry: &ToolEntry, options: &ExportOptions) -> bool {
    options.always_load.contains(&entry.server)
        || entry.tool.meta.as_ref().is_some_and(|m| m.0.get("anthropic/alwaysLoad") == Some(&Value::Bool(true)))
}

/// One tool in `format` with the default options (`Value::Null` if it cannot be given).
pub fn tool_json(entry: &ToolEntry, format: ToolFormat) -> Value {
    convert(entry, format, &ExportOptions::default()).map(|(v, _)| v).unwrap_or(Value::Null)
}

/// Every tool in `format` that can be given in it, as a JSON array (default options).
pub fn tools_json<'a>(entries: impl IntoIterator<Item = &'a ToolEntry>, format: ToolFormat) -> Value {
    let export = ToolsJson::new(entries, format);
    serde_json::to_value(&export).unwrap_or(Value::Array(Vec::new()))
}

/// Every tool in `format`, serialised one at a time as it is written (a catalog of 50,000
/// tools is not copied whole into JSON values first): for output of any size. What was left
/// out and what was changed are known once it is written ([`ToolsJson::skipped`],
/// [`ToolsJson::changed`]).
pub struct ToolsJson<'a> {
    entries: Vec<&'a ToolEntry>,
    format: ToolFormat,
    options: ExportOptions,
    skipped: RefCell<Vec<Skipped>>,
    changed: RefCell<Vec<Changed>>,
    /// Left out before writing ([`ToolsJson::leave_out`]): the start of `skipped`.
    left_out: Vec<Skipped>,
}

impl<'a> ToolsJson<'a> {
    /// The tools to write, in `format`, default options.
    pub fn new(entries: impl IntoIterator<Item = &'a ToolEntry>, format: ToolFormat) -> Self {
        Self::with_options(entries, format, ExportOptions::default())
    }

    /// The tools to write, in `format`, with `options`.
    pub fn with_options(
        entries: impl IntoIterator<Item = &'a ToolEntry>,
        format: ToolFormat,
        options: ExportOptions,
    ) -> Self {
        ToolsJson {
            entries: entries.into_iter().collect(),
            format,
            options,
            skipped: RefCell::default(),
            changed: RefCell::default(),
            left_out: Vec::new(),
        }
    }

    /// Leaves out the tools named in `denied` (name, why), and lists them with the others left
    /// out: a tool the policy denies is not given to a model.
    pub fn leave_out(mut self, denied: Vec<(String, String)>) -> Self {
        self.entries.retain(|e| !denied.iter().any(|(name, _)| name == &e.name));
        self.left_out.extend(denied.into_iter().map(|(name, reason)| Skipped { name, reason }));
        *self.skipped.get_mut() = self.left_out.clone();
        self
    }

    /// The tools left out, with why (after writing).
    pub fn skipped(&self) -> Vec<Skipped> {
        self.skipped.borrow().clone()
    }

    /// What was changed in the tools written (after writing).
    pub fn changed(&self) -> Vec<Changed> {
        self.changed.borrow().clone()
    }
}

/// `{"tools": [...], "skipped": [...], "changed": [...]}`: the tools written as they go, then
/// what writing them left out and changed ([`ToolsJson::report`]).
pub struct Report<'r, 'a>(&'r ToolsJson<'a>);

impl<'a> ToolsJson<'a> {
    /// The tools with what was left out and changed, as one JSON object.
    pub fn report(&self) -> Report<'_, 'a> {
        Report(self)
    }
}

impl Serialize for Report<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("Report", 3)?;
        out.serialize_field("tools", self.0)?;
        // Known now that the tools are written.
        out.serialize_field("skipped", &self.0.skipped())?;
        out.serialize_field("changed", &self.0.changed())?;
        out.end()
    }
}

impl Serialize for ToolsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        // Written again, it says the same: what was left out before writing, then what this
        // writing could not give.
        *self.skipped.borrow_mut() = self.left_out.clone();
        self.changed.borrow_mut().clear();
        let mut seq = s.serialize_seq(None)?;
        if self.format == ToolFormat::Anthropic && self.options.defer {
            seq.serialize_element(&anthropic_tool_search())?;
        }
        for entry in &self.entries {
            match convert(entry, self.format, &self.options) {
                Ok((v, notes)) => {
                    seq.serialize_element(&v)?;
                    if !notes.is_empty() {
                        self.changed.borrow_mut().push(Changed { name: entry.name.clone(), notes });
                    }
                }
                Err(reason) => self.skipped.borrow_mut().push(Skipped { name: entry.name.clone(), reason }),
            }
        }
        seq.end()
    }
}

/// A strict-mode model's arguments made ready for the server: the `null`s it sends for
/// optional properties it left out are taken out (the server never declared them nullable).
pub fn strict_arguments(entry: &ToolEntry, arguments: Map<String, Value>) -> Map<String, Value> {
    let schema = Value::Object((*entry.input_schema).clone());
    match strip_nulls(Value::Object(arguments), &schema, &schema) {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

fn strip_nulls(value: Value, schema: &Value, root: &Value) -> Value {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => shape::resolve(root, r).unwrap_or(schema),
        None => schema,
    };
    match value {
        Value::Object(o) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required = schema.as_object().map(shape::required_of).unwrap_or_default();
            let takes_null = |p: &Value| match p.get("type") {
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
                _ => p
                    .get("anyOf")
                    .and_then(Value::as_array)
                    .is_some_and(|bs| bs.iter().any(|b| b.get("type") == Some(&json!("null")))),
            };
            o.into_iter()
                .filter_map(|(k, v)| {
                    let p = props.and_then(|ps| ps.get(&k));
                    if v.is_null() && !required.contains(&k) && !p.is_some_and(takes_null) {
                        return None;
                    }
                    let v = match p {
                        Some(p) => strip_nulls(v, p, root),
                        None => v,
                    };
                    Some((k, v))
                })
                .collect::<Map<String, Value>>()
                .into()
        }
        Value::Array(a) => {
            let items = schema.get("items").filter(|i| i.is_object());
            Value::Array(
                a.into_iter()
                    .map(|v| match items {
                        Some(i) => strip_nulls(v, i, root),
                        None => v,
                    })
                    .collect(),
            )
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;

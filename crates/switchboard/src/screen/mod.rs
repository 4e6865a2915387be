//! What servers say, screened before it reaches a model. Everything a server sends is
//! untrusted input: its lists (tool, prompt and resource titles and descriptions, schema
//! descriptions), its instructions, and what it answers (tool results: text, structured
//! content and `_meta` strings; prompt messages; resource text). Hidden characters
//! ([`hidden`]) are removed from all of it on the way in, so no front (CLI, API, gateway, a
//! program embedding the hub) can pass them on; each removal is a [`Finding`] that shows the
//! person what was hidden (decoded), never the model.
//!
//! Names are not changed (a server is called by its own names): a name with hidden
//! characters is a finding, and the catalog's names keep only `[A-Za-z0-9_-]` anyway.

pub(crate) mod compiled;
pub mod hidden;
mod scan;
pub mod secrets;

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock, GetPromptResult, JsonObject, ReadResourceResult, ResourceContents};
use serde::Serialize;
use serde_json::Value;

pub use hidden::{Hidden, HiddenKind, strip};
pub use scan::{Scanner, ToolNames};

use crate::catalog::ServerLists;

/// What the hub does with the hidden characters of what servers say ([`HubOptions::screening`](crate::HubOptions::screening)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Screening {
    /// Removed on the way in, so no front can pass them on (the default).
    #[default]
    Remove,
    /// Found and shown to the person (findings, `switchboard scan`, the audit log, the
    /// dashboard) but left in what is passed on: for a transparent gateway whose person asked
    /// for servers' text as they sent it. The text checks and `policy.findings` still apply.
    Keep,
}

impl Screening {
    /// Screens `value` with `screen`: in place when hidden characters are removed, else a
    /// copy (what was found is told either way).
    pub fn apply<T: Clone>(self, value: &mut T, screen: impl FnOnce(&mut T) -> Option<Hidden>) -> Option<Hidden> {
        match self {
            Screening::Remove => screen(value),
            Screening::Keep => screen(&mut value.clone()),
        }
    }
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Severity {
    /// Worth knowing; nothing suggests intent.
    Low,
    /// Text a person does not see but a model reads.
    Medium,
    /// Hidden instructions or data: the known ways a server turns a model against its person.
    High,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// Characters a person does not see but a model reads (removed).
    HiddenCharacters,
    /// Words aimed at the model rather than the person: set aside earlier instructions, keep
    /// something from the person, call this first.
    InstructionsToModel,
    /// Asks for the person's secrets or credentials to be read.
    SecretAccess,
    /// Tells the model to send data away (to an address, into a parameter).
    Exfiltration,
    /// Names another server's tools, or rules for them.
    Shadowing,
    /// A tool's definition changed since the person approved it "always" (the "rug pull").
    DefinitionChanged,
}

/// Where in a server's definitions a finding is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Target {
    /// The server's `instructions`.
    Instructions,
    /// A tool (its own name).
    Tool(String),
    /// A prompt.
    Prompt(String),
    /// A resource (its URI).
    Resource(String),
    /// A resource template (its URI template).
    Template(String),
}

/// One thing a check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Finding {
    /// The check.
    pub rule: Rule,
    /// How much it matters.
    pub severity: Severity,
    /// The server.
    pub server: String,
    /// What in it.
    pub target: Target,
    /// The field (`description`, `title`, `name`, `inputSchema.properties.path.description`…).
    pub field: String,
    /// Why, for the person: what was removed and what it said (never given to a model).
    pub why: String,
    /// What was removed, decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Hidden>,
    /// The words that raised it, with some around them (a text check's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl Finding {
    fn hidden(server: &str, target: Target, field: String, hidden: Hidden) -> Finding {
        Finding {
            rule: Rule::HiddenCharacters,
            severity: severity(&hidden),
            server: server.to_string(),
            target,
            why: hidden.summary(),
            field,
            hidden: Some(hidden),
            evidence: None,
        }
    }
}

/// Tags and smuggled bytes spell text; bidirectional controls change what is shown; zero-width
/// and fillers hide; a stray control or soft hyphen is most often an accident.
fn severity(hidden: &Hidden) -> Severity {
    if !hidden.tags.is_empty() || !hidden.selectors.is_empty() {
        Severity::High
    } else if hidden.kinds.iter().any(|k| matches!(k, HiddenKind::Bidi | HiddenKind::ZeroWidth | HiddenKind::Filler)) {
        Severity::Medium
    } else {
        Severity::Low
    }
}

/// Strips `text` in place; what was removed, if anything.
fn clean(text: &mut String) -> Option<Hidden> {
    let (out, hidden) = strip(text);
    if let Cow::Owned(o) = out {
        *text = o;
    }
    hidden
}

/// Strips an `Arc<str>`-like `Cow` field (rmcp keeps descriptions as `Cow<'static, str>`).
fn clean_cow(text: &mut Cow<'static, str>) -> Option<Hidden> {
    let (out, hidden) = strip(text);
    let owned = match out {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    if let Some(o) = owned {
        *text = Cow::Owned(o);
    }
    hidden
}

/// The findings of one server's lists, its hidden characters removed in place.
pub fn lists(server: &str, lists: &mut ServerLists) -> Vec<Finding> {
    let mut found = Vec::new();
    let mut note = |target: &dyn Fn() -> Target, field: &str, hidden: Option<Hidden>| {
        if let Some(h) = hidden {
            found.push(Finding::hidden(server, target(), field.to_string(), h));
        }
    };
    for tool in &mut lists.tools {
        let name = tool.name.to_string();
        let target = || Target::Tool(name.clone());
        note(&target, "name", strip(&tool.name).1);
        if let Some(t) = tool.title.as_mut() {
            note(&target, "title", clean(t));
        }
        if let Some(d) = tool.description.as_mut() {
            note(&target, "description", clean_cow(d));
        }
        if let Some(a) = tool.annotations.as_mut()
            && let Some(t) = a.title.as_mut()
        {
            note(&target, "annotations.title", clean(t));
        }
        if let Some(h) = schema(std::sync::Arc::make_mut(&mut tool.input_schema), "inputSchema", &mut Vec::new()) {
            for (field, hidden) in h {
                note(&target, &field, Some(hidden));
            }
        }
        if let Some(out) = tool.output_schema.as_mut()
            && let Some(h) = schema(std::sync::Arc::make_mut(out), "outputSchema", &mut Vec::new())
        {
            for (field, hidden) in h {
                note(&target, &field, Some(hidden));
            }
        }
    }
    for prompt in &mut lists.prompts {
        let name = prompt.name.clone();
        let target = || Target::Prompt(name.clone());
        note(&target, "name", strip(&prompt.name).1);
        if let Some(t) = prompt.title.as_mut() {
            note(&target, "title", clean(t));
        }
        if let Some(d) = prompt.description.as_mut() {
            note(&target, "description", clean(d));
        }
        for arg in prompt.arguments.iter_mut().flatten() {
            let field = format!("arguments.{}", crate::text::excerpt(&arg.name, 40));
            if let Some(t) = arg.title.as_mut() {
                note(&target, &format!("{field}.title"), clean(t));
            }
            if let Some(d) = arg.description.as_mut() {
                note(&target, &format!("{field}.description"), clean(d));
            }
        }
    }
    for resource in &mut lists.resources {
        let uri = resource.uri.clone();
        let target = || Target::Resource(uri.clone());
        note(&target, "name", clean(&mut resource.name));
        if let Some(t) = resource.title.as_mut() {
            note(&target, "title", clean(t));
        }
        if let Some(d) = resource.description.as_mut() {
            note(&target, "description", clean(d));
        }
    }
    for template in &mut lists.resource_templates {
        let uri = template.uri_template.clone();
        let target = || Target::Template(uri.clone());
        note(&target, "name", clean(&mut template.name));
        if let Some(t) = template.title.as_mut() {
            note(&target, "title", clean(t));
        }
        if let Some(d) = template.description.as_mut() {
            note(&target, "description", clean(d));
        }
    }
    found
}

/// The server's instructions, cleaned; the finding if something was removed.
pub fn instructions(server: &str, text: &mut String) -> Option<Finding> {
    clean(text).map(|h| Finding::hidden(server, Target::Instructions, "instructions".into(), h))
}

/// Strips the words of a JSON schema (`description`, `title`, `$comment`, at any depth; not
/// names, `enum`, `const`, `default` or `pattern`, whose change would change what is valid).
/// Each removal with its path.
fn schema(object: &mut JsonObject, path: &str, found: &mut Vec<(String, Hidden)>) -> Option<Vec<(String, Hidden)>> {
    fn walk(v: &mut Value, path: &str, found: &mut Vec<(String, Hidden)>) {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    let here = format!("{path}.{}", crate::text::excerpt(key, 40));
                    match (key.as_str(), value) {
                        ("description" | "title" | "$comment", Value::String(s)) => {
                            if let Some(h) = clean(s) {
                                found.push((here, h));
                            }
                        }
                        ("enum" | "const" | "default" | "pattern" | "examples", _) => {}
                        (_, value) => walk(value, &here, found),
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, path, found);
                }
            }
            _ => {}
        }
    }
    // Most schemas have nothing hidden: looked at as text first, walked only when needed.
    let any = object.values().any(value_has_hidden);
    if !any {
        return None;
    }
    let mut whole = Value::Object(std::mem::take(object));
    walk(&mut whole, path, found);
    if let Value::Object(back) = whole {
        *object = back;
    }
    Some(std::mem::take(found))
}

fn value_has_hidden(v: &Value) -> bool {
    match v {
        Value::String(s) => hidden::has_hidden(s),
        Value::Array(a) => a.iter().any(value_has_hidden),
        Value::Object(m) => m.iter().any(|(k, v)| hidden::has_hidden(k) || value_has_hidden(v)),
        _ => false,
    }
}

/// Every string value in `v` cleaned (keys kept); what was removed, merged.
fn strings(v: &mut Value, into: &mut Option<Hidden>) {
    match v {
        Value::String(s) => merge(into, clean(s)),
        Value::Array(a) => a.iter_mut().for_each(|x| strings(x, into)),
        Value::Object(m) => m.values_mut().for_each(|x| strings(x, into)),
        _ => {}
    }
}

fn merge(into: &mut Option<Hidden>, more: Option<Hidden>) {
    if let Some(m) = more {
        match into {
            Some(h) => h.merge(m),
            None => *into = Some(m),
        }
    }
}

fn content(block: &mut ContentBlock, into: &mut Option<Hidden>) {
    match block {
        ContentBlock::Text(t) => merge(into, clean(&mut t.text)),
        ContentBlock::Resource(r) => resource_contents(&mut r.resource, into),
        ContentBlock::ResourceLink(l) => {
            if let Some(d) = l.description.as_mut() {
                merge(into, clean(d));
            }
            if let Some(t) = l.title.as_mut() {
                merge(into, clean(t));
            }
        }
        _ => {}
    }
}

fn resource_contents(contents: &mut ResourceContents, into: &mut Option<Hidden>) {
    if let ResourceContents::TextResourceContents { text, .. } = contents {
        merge(into, clean(text));
    }
}

/// A tool result cleaned in place: its text blocks, embedded resources' text, structured
/// content and `_meta` strings. What was removed, if anything.
pub fn result(result: &mut CallToolResult) -> Option<Hidden> {
    let mut found = None;
    for block in &mut result.content {
        content(block, &mut found);
    }
    if let Some(s) = result.structured_content.as_mut()
        && value_has_hidden(s)
    {
        strings(s, &mut found);
    }
    if let Some(meta) = result.meta.as_mut() {
        let mut whole = Value::Object(std::mem::take(&mut meta.0));
        if value_has_hidden(&whole) {
            strings(&mut whole, &mut found);
        }
        if let Value::Object(back) = whole {
            meta.0 = back;
        }
    }
    found
}

/// A prompt's messages and description cleaned in place.
pub fn prompt(result: &mut GetPromptResult) -> Option<Hidden> {
    let mut found = None;
    if let Some(d) = result.description.as_mut() {
        merge(&mut found, clean(d));
    }
    for message in &mut result.messages {
        content(&mut message.content, &mut found);
    }
    found
}

/// A resource read's text contents cleaned in place.
pub fn read(result: &mut ReadResourceResult) -> Option<Hidden> {
    let mut found = None;
    for c in &mut result.contents {
        resource_contents(c, &mut found);
    }
    found
}

/// A server's question to the person (elicitation) cleaned in place: its message, and the
/// words of its schema (titles, descriptions). What was removed, if anything.
pub fn question(message: &mut String, schema: &mut Value) -> Option<Hidden> {
    let mut found = clean(message);
    if let Value::Object(object) = schema
        && let Some(h) = self::schema(object, "requestedSchema", &mut Vec::new())
    {
        for (_, hidden) in h {
            merge(&mut found, Some(hidden));
        }
    }
    found
}

/// A server's request for a completion (sampling) cleaned in place: its system prompt and
/// the text of its messages, which a model reads. What was removed, if anything. (Sampling is
/// deprecated by SEP-2577; servers of the eras that have it still send it.)
#[allow(deprecated)]
pub fn sampling(params: &mut rmcp::model::CreateMessageRequestParams) -> Option<Hidden> {
    use rmcp::model::{SamplingContent, SamplingMessageContentBlock};
    let mut found = params.system_prompt.as_mut().and_then(clean);
    for message in &mut params.messages {
        let blocks: Vec<&mut SamplingMessageContentBlock> = match &mut message.content {
            SamplingContent::Single(block) => vec![block],
            SamplingContent::Multiple(blocks) => blocks.iter_mut().collect(),
        };
        for block in blocks {
            if let SamplingMessageContentBlock::Text(t) = block {
                merge(&mut found, clean(&mut t.text));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{CallToolResult, ContentBlock, Tool};
    use serde_json::json;

    use super::*;

    fn object(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn schema_words_are_cleaned_but_not_what_decides_validity_and_names_are_only_found() {
        let schema = object(json!({"type": "object", "properties": {
            "mode": {"type": "string", "description": "Pick\u{200b} one.", "enum": ["a\u{200b}"], "default": "a\u{200b}"},
        }}));
        let mut listed = ServerLists {
            tools: vec![Tool::new("ev\u{202e}il".to_string(), "Fine.", Arc::new(schema))],
            ..ServerLists::default()
        };
        let found = lists("s", &mut listed);
        let mode = &listed.tools[0].input_schema["properties"]["mode"];
        assert_eq!(mode["description"], "Pick one.");
        assert_eq!(mode["enum"], json!(["a\u{200b}"]), "an enum value is what the server takes");
        assert_eq!(mode["default"], "a\u{200b}");
        assert_eq!(listed.tools[0].name, "ev\u{202e}il", "the server is called by its own name");
        let fields: Vec<&str> = found.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["name", "inputSchema.properties.mode.description"]);
        assert_eq!(found[0].severity, Severity::Medium);
        assert_eq!(found[0].target, Target::Tool("ev\u{202e}il".into()));
    }

    #[test]
    fn results_are_cleaned_in_text_structured_content_and_meta() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("ok\u{e0041}")]);
        r.structured_content = Some(json!({"k\u{200b}": ["v\u{200b}", 1]}));
        let mut meta = rmcp::model::MetaObject::new();
        meta.0.insert("note".into(), json!("hi\u{e0042}"));
        r.meta = Some(meta);
        let Some(h) = result(&mut r) else { panic!("nothing found") };
        assert_eq!(h.tags, "AB");
        assert_eq!(h.removed, 3);
        let ContentBlock::Text(t) = &r.content[0] else { panic!("not text") };
        assert_eq!(t.text, "ok");
        assert_eq!(r.structured_content, Some(json!({"k\u{200b}": ["v", 1]})), "values cleaned, keys kept");
        assert_eq!(r.meta.map(|m| m.0["note"].clone()), Some(json!("hi")));
        // A clean result is left alone.
        let mut clean = CallToolResult::success(vec![ContentBlock::text("plain")]);
        assert!(result(&mut clean).is_none());
    }
}

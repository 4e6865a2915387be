//! The text checks of a server's definitions, after hidden characters are taken out: words
//! aimed at the model rather than the person (override earlier instructions, hide things
//! from the user, call this first), reads of secrets, sending data away, and references to
//! other servers' tools (shadowing). Local and offline: a fixed rule set of regular
//! expressions, each with a severity, tuned on a corpus of real servers' definitions
//! (`crates/switchboard/tests/scan/`) so that benign ones raise nothing at `medium` or
//! above.

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

use super::{Finding, Rule, Severity, Target};
use crate::catalog::ServerLists;

/// One check: a pattern, what it means, how much.
struct Check {
    rule: Rule,
    severity: Severity,
    re: Regex,
    why: &'static str,
}

/// The tool names a server's text could name to shadow another server's tools, found in one
/// pass over a text whatever their number (made once per catalog).
#[derive(Debug, Default)]
pub struct ToolNames {
    searcher: Option<AhoCorasick>,
    /// Per name searched (in the searcher's pattern order): the name, the servers that have it.
    owners: Vec<(String, Vec<String>)>,
}

impl ToolNames {
    /// The names of `tools` (`(server, tool)`) worth looking for: five characters or more with a
    /// `_` or `-` (a tool's own name, not a word of English).
    pub fn new<S: AsRef<str>, T: AsRef<str>>(tools: impl IntoIterator<Item = (S, T)>) -> ToolNames {
        let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut owners: Vec<(String, Vec<String>)> = Vec::new();
        for (server, tool) in tools {
            let (server, tool) = (server.as_ref(), tool.as_ref());
            if tool.len() < 5 || !tool.contains(['_', '-']) {
                continue;
            }
            let at = *index.entry(tool.to_string()).or_insert_with(|| {
                owners.push((tool.to_string(), Vec::new()));
                owners.len() - 1
            });
            if !owners[at].1.iter().any(|s| s == server) {
                owners[at].1.push(server.to_string());
            }
        }
        let searcher = (!owners.is_empty())
            .then(|| AhoCorasick::builder().match_kind(MatchKind::Standard).build(owners.iter().map(|(t, _)| t)))
            .and_then(Result::ok);
        if searcher.is_none() && !owners.is_empty() {
            tracing::warn!("the tool names could not be compiled for the shadowing check; it is skipped");
        }
        ToolNames { searcher, owners }
    }

    /// Where each name stands first in `text` as a whole word: `(name's index, byte offset)`,
    /// in the order of the names.
    fn named_in(&self, text: &str) -> Vec<(usize, usize)> {
        let Some(searcher) = &self.searcher else { return Vec::new() };
        let mut first: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
        for m in searcher.find_overlapping_iter(text) {
            let name = m.pattern().as_usize();
            if !first.contains_key(&name) && whole_word(text, m.start(), m.end()) {
                first.insert(name, m.start());
            }
        }
        first.into_iter().collect()
    }
}

/// The compiled rule set (made once per hub).
pub struct Scanner {
    checks: Vec<Check>,
    /// Words that make a mention of another server's tool an instruction.
    directive: Option<Regex>,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner").field("checks", &self.checks.len()).finish()
    }
}

/// The rules: (rule, severity, pattern, why). Case-insensitive; `[^.\n]` keeps a match inside
/// one sentence.
const RULES: &[(Rule, Severity, &str, &str)] = &[
    (
        Rule::InstructionsToModel,
        Severity::High,
        r"\b(ignor|disregard|forget|overrid|bypass)\w*\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|other|system|safety|user'?s?)\b[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directions|constraints)\b",
        "tells the model to set aside its instructions",
    ),
    (
        Rule::InstructionsToModel,
        Severity::High,
        r"\b(do\s+not|don'?t|never|without)\b[^.\n]{0,30}\b(tell(ing)?|inform(ing)?|mention(ing)?|reveal(ing)?|show(ing)?|alert(ing)?|notify(ing)?|let(ting)?\s+\w+\s+know)\b[^.\n]{0,30}\b(the\s+)?(user|person|human)\b",
        "tells the model to keep something from the person",
    ),
    (
        Rule::InstructionsToModel,
        Severity::High,
        r"\b(hide|conceal)\b[^.\n]{0,40}\bfrom\s+(the\s+)?(user|person|human)\b",
        "tells the model to hide something from the person",
    ),
    (
        Rule::InstructionsToModel,
        Severity::High,
        r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin)\s*>",
        "a tag that dresses text up as instructions for the model",
    ),
    (
        Rule::InstructionsToModel,
        Severity::High,
        r"\b(you\s+are\s+now\b|new\s+instructions\s*:|system\s+prompt\s*:|developer\s+mode)",
        "tries to give the model a new role or instructions",
    ),
    (
        Rule::InstructionsToModel,
        Severity::Medium,
        r"\bbefore\s+(using|calling|running|invoking)\s+(any|every|all)\s+(other\s+)?tools?\b",
        "tells the model to call it before any other tool",
    ),
    (
        Rule::InstructionsToModel,
        Severity::Medium,
        r"\b(always|must)\s+(first\s+)?(call|use|run|invoke)\s+this\s+tool\s+(first|before)\b",
        "tells the model to call it first",
    ),
    (
        Rule::SecretAccess,
        Severity::High,
        r"(~|\$home|\bhome)\s*/\s*\.(ssh|aws|gnupg|kube|docker|netrc|npmrc|pypirc|git-credentials|config/gcloud|cursor|claude)\b",
        "names a folder or file that holds the person's secrets",
    ),
    (Rule::SecretAccess, Severity::High, r"\bid_(rsa|ed25519|ecdsa|dsa)\b", "names an SSH private key"),
    (
        Rule::SecretAccess,
        Severity::High,
        r"(\.aws/credentials|/etc/shadow\b|\bmcp\.json\b|\.env\s+file)",
        "names a file that holds credentials",
    ),
    (
        Rule::SecretAccess,
        Severity::Medium,
        r"\b(read|cat|open|load|extract|collect|gather|copy)\b[^.\n]{0,40}\b(private\s+keys?|ssh\s+keys?|api\s+keys?|credentials|passwords?|access\s+tokens?|secret\s+keys?|session\s+cookies?)\b",
        "asks for credentials to be read",
    ),
    (
        Rule::Exfiltration,
        Severity::High,
        r"\b(send|post|upload|forward|transmit|exfiltrate|leak)\b[^.\n]{0,60}\b(to|at)\s+(https?://|(the\s+)?(following\s+)?(url|webhook|endpoint)\b)",
        "tells the model to send data to an address",
    ),
    (
        Rule::Exfiltration,
        Severity::High,
        r"\b(include|put|pass|add|insert|embed|append|attach)\b[^.\n]{0,50}\b(contents?|history|conversation|keys?|tokens?|secrets?|passwords?)\b[^.\n]{0,50}\b(as|in|into|inside)\s+(the\s+)?(`?[\w-]+`?\s+)?(parameter|argument|field|param)\b",
        "tells the model to put data into a parameter",
    ),
    (
        Rule::Exfiltration,
        Severity::High,
        r"\bpass\s+(it|them|its\s+contents?|the\s+contents?)\s+as\s+[`'\x22][\w-]+[`'\x22]",
        "tells the model to pass data on as a parameter",
    ),
    (
        Rule::Exfiltration,
        Severity::High,
        r"https?://[^\s)]*(webhook|ngrok|requestbin|pipedream|burpcollaborator|interact\.sh|oast\.)",
        "names a collection endpoint",
    ),
    (
        Rule::Shadowing,
        Severity::High,
        r"\b(all|every|any)\s+(emails?|messages?|requests?|calls?)\b[^.\n]{0,40}\bmust\s+(also\s+)?be\s+(sent|forwarded|copied|cc'?d|bcc'?d|redirected)\b",
        "changes how every call of some tool must be made",
    ),
    (
        Rule::Shadowing,
        Severity::Medium,
        r"\b(when|whenever|if)\b[^.\n]{0,30}\b(the\s+)?`?[a-z][\w-]*`?\s+tool\s+is\s+(used|called|invoked)\b",
        "gives rules for another tool",
    ),
];

impl Default for Scanner {
    fn default() -> Self {
        Scanner::new()
    }
}

impl Scanner {
    /// Compiles the rule set.
    pub fn new() -> Scanner {
        let checks = RULES
            .iter()
            .filter_map(|(rule, severity, pattern, why)| {
                let re = Regex::new(&format!("(?i){pattern}")).ok()?;
                Some(Check { rule: *rule, severity: *severity, re, why })
            })
            .collect();
        let directive =
            Regex::new(r"(?i)\b(must|should|always|never|instead|whenever|do not|don't|before|after)\b").ok();
        Scanner { checks, directive }
    }

    /// The findings of `server`'s definitions (`lists`, `instructions`); `tools` are the hub's
    /// tool names, for shadowing (`server`'s own are passed over).
    pub fn scan(
        &self,
        server: &str,
        lists: &ServerLists,
        instructions: Option<&str>,
        tools: &ToolNames,
    ) -> Vec<Finding> {
        let mut found = Vec::new();
        for (target, field, text) in texts(lists, instructions) {
            for c in &self.checks {
                if let Some(m) = c.re.find(&text) {
                    found.push(finding(
                        server,
                        c.rule,
                        c.severity,
                        &target,
                        &field,
                        c.why.to_string(),
                        &text,
                        m.range(),
                    ));
                }
            }
            for (name, at) in tools.named_in(&text) {
                let (tool, owners) = &tools.owners[name];
                let range = at..at + tool.len();
                let around =
                    &text[floor(&text, at.saturating_sub(80))..ceil(&text, (at + tool.len() + 80).min(text.len()))];
                let directed = self.directive.as_ref().is_some_and(|d| d.is_match(around));
                let severity = if directed { Severity::High } else { Severity::Low };
                for other in owners.iter().filter(|o| *o != server) {
                    let why = format!("names `{tool}`, a tool of server `{other}`");
                    found.push(finding(server, Rule::Shadowing, severity, &target, &field, why, &text, range.clone()));
                }
            }
        }
        found
    }
}

#[allow(clippy::too_many_arguments)]
fn finding(
    server: &str,
    rule: Rule,
    severity: Severity,
    target: &Target,
    field: &str,
    why: String,
    text: &str,
    range: std::ops::Range<usize>,
) -> Finding {
    let start = floor(text, range.start.saturating_sub(60));
    let end = ceil(text, (range.end + 60).min(text.len()));
    let evidence = text[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
    Finding {
        rule,
        severity,
        server: server.to_string(),
        target: target.clone(),
        field: field.to_string(),
        why,
        hidden: None,
        evidence: Some(format!(
            "{}{}{}",
            if start > 0 { "…" } else { "" },
            evidence,
            if end < text.len() { "…" } else { "" }
        )),
    }
}

fn floor(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Whether `text[start..end]` is a whole name (not inside a longer one).
fn whole_word(text: &str, start: usize, end: usize) -> bool {
    let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let before = text[..start].chars().next_back().is_none_or(|c| !is_name(c));
    let after = text[end..].chars().next().is_none_or(|c| !is_name(c));
    before && after
}

/// Every text of the definitions a model reads: (target, field, text).
fn texts(lists: &ServerLists, instructions: Option<&str>) -> Vec<(Target, String, String)> {
    let mut out = Vec::new();
    if let Some(i) = instructions {
        out.push((Target::Instructions, "instructions".into(), i.to_string()));
    }
    for tool in &lists.tools {
        let target = Target::Tool(tool.name.to_string());
        if let Some(t) = &tool.title {
            out.push((target.clone(), "title".into(), t.to_string()));
        }
        if let Some(d) = &tool.description {
            out.push((target.clone(), "description".into(), d.to_string()));
        }
        schema_texts(&serde_json::Value::Object((*tool.input_schema).clone()), "inputSchema", &target, &mut out, 0);
    }
    for prompt in &lists.prompts {
        let target = Target::Prompt(prompt.name.clone());
        if let Some(d) = &prompt.description {
            out.push((target.clone(), "description".into(), d.clone()));
        }
        for arg in prompt.arguments.iter().flatten() {
            if let Some(d) = &arg.description {
                out.push((target.clone(), format!("arguments.{}.description", arg.name), d.clone()));
            }
        }
    }
    for resource in &lists.resources {
        if let Some(d) = &resource.description {
            out.push((Target::Resource(resource.uri.clone()), "description".into(), d.clone()));
        }
    }
    for template in &lists.resource_templates {
        if let Some(d) = &template.description {
            out.push((Target::Template(template.uri_template.clone()), "description".into(), d.clone()));
        }
    }
    out
}

/// The `description`s and `title`s of a schema, with where they are.
fn schema_texts(
    v: &serde_json::Value,
    at: &str,
    target: &Target,
    out: &mut Vec<(Target, String, String)>,
    depth: usize,
) {
    if depth > 16 {
        return;
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let here = format!("{at}.{k}");
                match (k.as_str(), v) {
                    ("description" | "title", serde_json::Value::String(s)) => {
                        out.push((target.clone(), here, s.clone()))
                    }
                    _ => schema_texts(v, &here, target, out, depth + 1),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                schema_texts(item, &format!("{at}[{i}]"), target, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn lists(description: &str) -> ServerLists {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "mine", "description": description, "inputSchema": {"type": "object"}
        }))
        .unwrap();
        ServerLists { tools: vec![tool], ..Default::default() }
    }

    fn shadowing(found: &[Finding]) -> Vec<(String, Severity)> {
        found.iter().filter(|f| f.rule == Rule::Shadowing).map(|f| (f.why.clone(), f.severity)).collect()
    }

    #[test]
    fn names_are_found_whole_once_per_owner_and_never_the_servers_own() {
        let names = ToolNames::new([
            ("git", "read_file"),
            ("fs", "read_file"),
            ("fs", "read_file_lines"),
            ("me", "send_mail"),
            ("x", "short"),
            ("x", "plainword"),
        ]);
        let scanner = Scanner::new();
        // `read_file` inside `read_files` is not a mention; the later whole one is, for each owner.
        let found = scanner.scan(
            "me",
            &lists("Unlike read_files, always call read_file first. plainword send_mail"),
            None,
            &names,
        );
        assert_eq!(
            shadowing(&found),
            vec![
                ("names `read_file`, a tool of server `git`".to_string(), Severity::High),
                ("names `read_file`, a tool of server `fs`".to_string(), Severity::High),
            ]
        );
        // Without words that direct the model, a mention is low.
        let found = scanner.scan("me", &lists("Same output format as read_file_lines."), None, &names);
        assert_eq!(
            shadowing(&found),
            vec![("names `read_file_lines`, a tool of server `fs`".to_string(), Severity::Low)]
        );
        assert!(shadowing(&scanner.scan("me", &lists("nothing here"), None, &ToolNames::default())).is_empty());
    }
}

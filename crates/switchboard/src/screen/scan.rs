//! The text checks of a server's definitions, after hidden characters are taken out: words
//! aimed at the model rather than the person (override earlier instructions, hide things
//! from the user, call this first), reads of secrets, sending data away, and references to
//! other servers' tools (shadowing). Local and offline: a fixed rule set of regular
//! expressions, each with a severity, tuned on a corpus of real servers' definitions
//! (`crates/switchboard-cli/tests/scan/`) so that benign ones raise nothing at `medium` or
//! above.

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

    /// The findings of `server`'s definitions (`lists`, `instructions`); `others` are the other
    /// servers' tools (`(server, tool)`), for shadowing.
    pub fn scan(
        &self,
        server: &str,
        lists: &ServerLists,
        instructions: Option<&str>,
        others: &[(String, String)],
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
            for (other, tool) in others {
                if other == server || tool.len() < 5 || !tool.contains(['_', '-']) {
                    continue;
                }
                let Some(at) = word_at(&text, tool) else { continue };
                let range = at..at + tool.len();
                let around =
                    &text[floor(&text, at.saturating_sub(80))..ceil(&text, (at + tool.len() + 80).min(text.len()))];
                let directed = self.directive.as_ref().is_some_and(|d| d.is_match(around));
                let severity = if directed { Severity::High } else { Severity::Low };
                let why = format!("names `{tool}`, a tool of server `{other}`");
                found.push(finding(server, Rule::Shadowing, severity, &target, &field, why, &text, range));
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

/// Where `word` stands in `text` as a whole word (not inside a longer name).
fn word_at(text: &str, word: &str) -> Option<usize> {
    let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back().is_none_or(|c| !is_name(c));
        let after = text[i + word.len()..].chars().next().is_none_or(|c| !is_name(c));
        before && after
    })
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

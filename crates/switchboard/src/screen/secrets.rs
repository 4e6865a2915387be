//! Secrets leaving through results: private keys, cloud and forge tokens, and the values of
//! the secrets switchboard gave the server (its env and header values), found in a tool
//! result before a model sees it, and redacted (`[redacted: …]`) or the result withheld
//! (`policy.secrets`: `redact`, the default, `block`, `off`). Each kind and count is in the
//! call's audit record, never the value.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a file's `policy.secrets` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SecretsMode {
    /// Results go through as they are.
    Off,
    /// Each secret is replaced by `[redacted: kind]` (the default).
    #[default]
    Redact,
    /// A result that carries one is withheld: the model gets an error saying why.
    Block,
}

/// A kind of secret found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SecretKind {
    /// A PEM private key (`-----BEGIN … PRIVATE KEY-----`).
    PrivateKey,
    /// An AWS access key id.
    AwsAccessKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// A GitLab token (`glpat-`).
    GitlabToken,
    /// A Slack token (`xoxb-`...).
    SlackToken,
    /// An OpenAI or Anthropic API key (`sk-`, `sk-ant-`).
    ModelApiKey,
    /// A Google API key (`AIza`).
    GoogleApiKey,
    /// A Stripe live key.
    StripeKey,
    /// An npm token.
    NpmToken,
    /// A value switchboard gave the server (its env or header values).
    ServerSecret,
}

impl SecretKind {
    fn as_str(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private key",
            SecretKind::AwsAccessKey => "AWS access key",
            SecretKind::GithubToken => "GitHub token",
            SecretKind::GitlabToken => "GitLab token",
            SecretKind::SlackToken => "Slack token",
            SecretKind::ModelApiKey => "model API key",
            SecretKind::GoogleApiKey => "Google API key",
            SecretKind::StripeKey => "Stripe key",
            SecretKind::NpmToken => "npm token",
            SecretKind::ServerSecret => "secret given to the server",
        }
    }
}

/// What was taken out of a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Redaction {
    /// The kind.
    pub kind: SecretKind,
    /// How many.
    pub count: u32,
}

/// The patterns: kind, regular expression, and the literals every match begins with (proved
/// from the pattern by a test), searched for first so that a pattern is compiled and run only
/// on a text that holds one of them.
const PATTERNS: &[(SecretKind, &str, &[&str])] = &[
    (
        SecretKind::PrivateKey,
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        &["-----BEGIN "],
    ),
    (SecretKind::AwsAccessKey, r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", &["AKIA", "ASIA"]),
    (
        SecretKind::GithubToken,
        r"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (SecretKind::GitlabToken, r"\bglpat-[A-Za-z0-9_-]{20,}", &["glpat-"]),
    (SecretKind::SlackToken, r"\bxox[abposr]-[A-Za-z0-9-]{10,}", &["xox"]),
    (SecretKind::ModelApiKey, r"\bsk-(ant-|proj-)?[A-Za-z0-9_-]{32,}", &["sk-"]),
    (SecretKind::GoogleApiKey, r"\bAIza[0-9A-Za-z_-]{35}\b", &["AIza"]),
    (SecretKind::StripeKey, r"\b(sk|rk)_live_[0-9A-Za-z]{24,}", &["sk_live_", "rk_live_"]),
    (SecretKind::NpmToken, r"\bnpm_[A-Za-z0-9]{36}\b", &["npm_"]),
];

// A pattern is a bit of `SecretFinder::candidates`.
const _: () = assert!(PATTERNS.len() <= 32);

/// The shortest value of the server's own secrets looked for (shorter ones are too common).
pub(crate) const MIN_KNOWN: usize = 8;

/// The patterns (one set per hub). Made in microseconds: each result's text is searched once
/// for every pattern's first literals, and a pattern is compiled (once) and run only on a text
/// that holds one of its own.
pub struct SecretFinder {
    /// Every pattern's first literals; `None` if they could not be built (every pattern runs).
    starts: Option<AhoCorasick>,
    /// Per literal (in the searcher's order): its pattern.
    start_of: Vec<usize>,
    each: Vec<OnceLock<Option<Regex>>>,
}

impl std::fmt::Debug for SecretFinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretFinder").field("patterns", &self.each.len()).finish()
    }
}

impl Default for SecretFinder {
    fn default() -> Self {
        SecretFinder::new()
    }
}

impl SecretFinder {
    /// The patterns, their first literals searchable (no regular expression compiled yet).
    pub fn new() -> SecretFinder {
        let mut words = Vec::new();
        let mut start_of = Vec::new();
        for (i, (_, _, starts)) in PATTERNS.iter().enumerate() {
            for w in *starts {
                words.push(*w);
                start_of.push(i);
            }
        }
        let starts = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .match_kind(MatchKind::Standard)
            .build(&words)
            .map_err(|e| tracing::warn!("the secret patterns' literals could not be built ({e}); every pattern runs"))
            .ok();
        SecretFinder { starts, start_of, each: PATTERNS.iter().map(|_| OnceLock::new()).collect() }
    }

    /// The pattern `i`, compiled the first time it is needed.
    fn regex(&self, i: usize) -> Option<&Regex> {
        let (_, pattern, _) = PATTERNS.get(i)?;
        self.each.get(i)?.get_or_init(|| Regex::new(pattern).ok()).as_ref()
    }

    /// The patterns that can match in `text`: bit `i` for pattern `i` (no allocation: this
    /// runs on every string of every result).
    fn candidates(&self, text: &str) -> u32 {
        let Some(starts) = &self.starts else { return u32::MAX };
        let mut hit = 0u32;
        for m in starts.find_overlapping_iter(text) {
            hit |= 1 << self.start_of[m.pattern().as_usize()];
        }
        hit
    }

    /// Takes the secrets out of `text` (`known`: the server's own secret values); what it took.
    pub fn redact_text(&self, text: &mut String, known: &[String], found: &mut Vec<Redaction>) {
        let hits_known = known.iter().any(|k| k.len() >= MIN_KNOWN && text.contains(k.as_str()));
        let candidates = self.candidates(text);
        if !hits_known && candidates == 0 {
            return;
        }
        for k in known.iter().filter(|k| k.len() >= MIN_KNOWN) {
            let n = text.matches(k.as_str()).count();
            if n > 0 {
                *text = text.replace(k.as_str(), "[redacted: secret given to the server]");
                add(found, SecretKind::ServerSecret, n);
            }
        }
        for i in (0..PATTERNS.len()).filter(|i| candidates & (1 << i) != 0) {
            let (Some(re), Some((kind, _, _))) = (self.regex(i), PATTERNS.get(i)) else { continue };
            let n = re.find_iter(text).count();
            if n > 0 {
                *text = re.replace_all(text, format!("[redacted: {}]", kind.as_str()).as_str()).into_owned();
                add(found, *kind, n);
            }
        }
    }

    /// Takes the secrets out of every string of `result` (text, embedded resources,
    /// structured content, `_meta`); what it took.
    pub fn redact(&self, result: &mut CallToolResult, known: &[String]) -> Vec<Redaction> {
        let mut found = Vec::new();
        for block in &mut result.content {
            self.content(block, known, &mut found);
        }
        if let Some(s) = result.structured_content.as_mut() {
            self.value(s, known, &mut found, 0);
        }
        if let Some(meta) = result.meta.as_mut() {
            for v in meta.0.values_mut() {
                self.value(v, known, &mut found, 0);
            }
        }
        found
    }

    fn content(&self, block: &mut ContentBlock, known: &[String], found: &mut Vec<Redaction>) {
        match block {
            ContentBlock::Text(t) => self.redact_text(&mut t.text, known, found),
            ContentBlock::Resource(r) => {
                if let ResourceContents::TextResourceContents { text, .. } = &mut r.resource {
                    self.redact_text(text, known, found);
                }
            }
            _ => {}
        }
    }

    fn value(&self, v: &mut Value, known: &[String], found: &mut Vec<Redaction>, depth: usize) {
        if depth > 64 {
            return;
        }
        match v {
            Value::String(s) => self.redact_text(s, known, found),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i, known, found, depth + 1)),
            Value::Object(m) => m.values_mut().for_each(|i| self.value(i, known, found, depth + 1)),
            _ => {}
        }
    }
}

fn add(found: &mut Vec<Redaction>, kind: SecretKind, n: usize) {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    match found.iter_mut().find(|r| r.kind == kind) {
        Some(r) => r.count = r.count.saturating_add(n),
        None => found.push(Redaction { kind, count: n }),
    }
}

/// What a model is told instead of a result that carried secrets (`policy.secrets: block`).
pub fn withheld(found: &[Redaction]) -> CallToolResult {
    let kinds: Vec<String> = found.iter().map(|r| format!("{} ({})", r.kind.as_str(), r.count)).collect();
    CallToolResult::error(vec![ContentBlock::text(format!(
        "switchboard withheld this result: it carried {} (`policy.secrets: block`)",
        kinds.join(", ")
    ))])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every literal a match can begin with holds one of its pattern's first literals (so a
    /// text without them cannot match): proved from the pattern (regex-syntax's extractor).
    #[test]
    fn the_first_literals_are_proved_from_the_patterns() {
        use regex_syntax::hir::literal::Extractor;
        for (_, pattern, starts) in PATTERNS {
            let seq = Extractor::new().extract(&regex_syntax::parse(pattern).unwrap());
            let literals = seq.literals().unwrap_or_else(|| panic!("{pattern}: no finite literals"));
            assert!(!literals.is_empty());
            for lit in literals {
                let text = String::from_utf8_lossy(lit.as_bytes());
                assert!(starts.iter().any(|s| text.contains(s)), "{pattern}: {text:?} holds none of {starts:?}");
            }
        }
        // Plain text compiles nothing.
        let f = SecretFinder::new();
        let mut plain = "Returns its text.".to_string();
        f.redact_text(&mut plain, &[], &mut Vec::new());
        assert!(f.each.iter().all(|r| r.get().is_none()));
    }

    #[test]
    fn keys_tokens_and_the_servers_own_secrets_are_redacted() {
        let f = SecretFinder::new();
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
        let mut text = format!(
            "key:\n{key}\naws AKIAIOSFODNN7EXAMPLE gh ghp_{} and mine s3cr3t-value-123 twice s3cr3t-value-123",
            "a".repeat(36)
        );
        let mut found = Vec::new();
        f.redact_text(&mut text, &["s3cr3t-value-123".into(), "short".into()], &mut found);
        assert!(!text.contains("BEGIN OPENSSH") && !text.contains("AKIAIOSFODNN7EXAMPLE") && !text.contains("ghp_"));
        assert!(!text.contains("s3cr3t-value-123"), "{text}");
        assert!(text.contains("[redacted: private key]") && text.contains("[redacted: GitHub token]"), "{text}");
        let kinds: Vec<(SecretKind, u32)> = found.iter().map(|r| (r.kind, r.count)).collect();
        assert!(
            kinds.contains(&(SecretKind::ServerSecret, 2)) && kinds.contains(&(SecretKind::PrivateKey, 1)),
            "{kinds:?}"
        );
        // Ordinary text is left alone (and costs one pass).
        let mut plain = "sk is a prefix; AKIA alone; the key is under ~/.ssh".to_string();
        let before = plain.clone();
        let mut none = Vec::new();
        f.redact_text(&mut plain, &["short".into()], &mut none);
        assert_eq!(plain, before);
        assert!(none.is_empty());
    }
}

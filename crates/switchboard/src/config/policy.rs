//! The policy parts of config files: `policy` (tool-call rules, in every file; a project file
//! may only add `ask` and `deny`), `audit` (the person's files and the managed file), and the
//! managed file (`/etc/switchboard/managed.json`, or `SWITCHBOARD_MANAGED_CONFIG`), which also
//! says which servers may start:
//!
//! ```json
//! {"policy": {"deny": ["mcp__*__delete_*"], "default": "ask"},
//!  "servers": {"allow": [{"name": "docs"}, {"command": "npx -y @modelcontextprotocol/*"},
//!                        {"url": "https://*.example.com/*"}],
//!              "deny": [{"command": "*curl*"}]},
//!  "audit": {"arguments": false}}
//! ```
//!
//! `servers.deny` always holds; with `servers.allow` present only servers matching one of its
//! entries start (an empty list: none). A command glob is matched against the command line
//! (program and arguments joined by spaces) as run and as written; a URL glob against the URL.
//! The rules are compiled and applied by [`crate::policy`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file::FileCtx;
use super::who::{ConditionalRule, conditional_rule};
use super::{Scope, ServerConfig, Severity, TransportConfig};
use crate::policy::Verdict;

/// Where a policy came from, most authoritative first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleSource {
    /// The managed file (`/etc/switchboard/managed.json` or `SWITCHBOARD_MANAGED_CONFIG`):
    /// users cannot loosen it, and a person's own `switchboard call` does not satisfy its `ask`.
    Managed,
    /// A `--config` file (counted with the user's own).
    Cli,
    /// The user file.
    User,
    /// A project file: only `ask` and `deny`.
    Project,
}

impl RuleSource {
    /// `managed`, `cli`, `user`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleSource::Managed => "managed",
            RuleSource::Cli => "cli",
            RuleSource::User => "user",
            RuleSource::Project => "project",
        }
    }

    pub(crate) fn group(self) -> usize {
        match self {
            RuleSource::Managed => 0,
            RuleSource::Cli | RuleSource::User => 1,
            RuleSource::Project => 2,
        }
    }
}

/// What a tool no rule matches gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DefaultRule {
    /// Allowed.
    Allow,
    /// Asked about.
    Ask,
    /// Refused.
    Deny,
    /// Decided from the tool's annotations, for trusted servers (others: ask).
    Annotations,
}

impl DefaultRule {
    /// The word in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            DefaultRule::Allow => "allow",
            DefaultRule::Ask => "ask",
            DefaultRule::Deny => "deny",
            DefaultRule::Annotations => "annotations",
        }
    }
}

/// One file's `policy` section, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PolicyRules {
    /// Globs allowed.
    pub allow: Vec<String>,
    /// Globs asked about.
    pub ask: Vec<String>,
    /// Globs denied.
    pub deny: Vec<String>,
    /// For tools no glob matches.
    pub default: Option<DefaultRule>,
    /// For tools whose server's definitions raised a finding (`findings`).
    pub findings: Option<FindingsRule>,
    /// What becomes of secrets in results (`secrets`).
    pub secrets: Option<crate::screen::secrets::SecretsMode>,
    /// Rules for some callers only (`{"tool": GLOB, "groups": […]}` in a list).
    pub conditional: Vec<ConditionalRule>,
    /// How often each caller may call a tool (`rate_limits`).
    pub rate_limits: Vec<super::rate::RateLimit>,
}

/// `policy.findings`: what a call gets when the tool's definition (or its server's
/// instructions) raised a finding at `at` or above: `"deny"`, or `{"action": "ask", "at":
/// "high"}` (`at` defaults to `medium`). Without it, findings only warn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FindingsRule {
    /// `ask` or `deny` (`warn`: shown, nothing more).
    pub action: crate::policy::Verdict,
    /// The least severity it takes.
    pub at: crate::screen::Severity,
}

/// One file's rules, with where they came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PolicyLayer {
    /// The kind of file.
    pub source: RuleSource,
    /// The file.
    pub file: PathBuf,
    /// Its rules.
    pub rules: PolicyRules,
}

impl PolicyLayer {
    /// The rules of `file`.
    pub fn new(source: RuleSource, file: PathBuf, rules: PolicyRules) -> Self {
        PolicyLayer { source, file, rules }
    }
}

/// One entry of the managed file's `servers.allow` / `servers.deny`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerMatch {
    /// A glob over the server's name.
    Name(String),
    /// A glob over its command line (program and arguments joined by spaces).
    Command(String),
    /// A glob over its URL.
    Url(String),
}

impl ServerMatch {
    fn glob(&self) -> &str {
        match self {
            ServerMatch::Name(g) | ServerMatch::Command(g) | ServerMatch::Url(g) => g,
        }
    }

    /// Whether `config` matches. `strict`: also against what is written in the file (for
    /// `deny`, so a `${VAR}` cannot hide what runs).
    fn matches(&self, config: &ServerConfig, strict: bool) -> bool {
        let Ok(glob) = globset::Glob::new(self.glob()) else { return false };
        let m = glob.compile_matcher();
        match (self, &config.transport) {
            (ServerMatch::Name(_), _) => m.is_match(&config.name),
            (ServerMatch::Command(_), TransportConfig::Stdio(s)) => {
                let run =
                    std::iter::once(s.command.as_str()).chain(s.args.iter().map(String::as_str)).collect::<Vec<_>>();
                m.is_match(run.join(" ")) || (strict && m.is_match(config.target()))
            }
            (ServerMatch::Url(_), TransportConfig::Http(h)) => {
                m.is_match(&h.url) || (strict && m.is_match(&h.url_as_written))
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for ServerMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerMatch::Name(g) => write!(f, "{{\"name\": {g:?}}}"),
            ServerMatch::Command(g) => write!(f, "{{\"command\": {g:?}}}"),
            ServerMatch::Url(g) => write!(f, "{{\"url\": {g:?}}}"),
        }
    }
}

/// The managed file's `servers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerRules {
    /// When present, only servers matching one of these start.
    pub allow: Option<Vec<ServerMatch>>,
    /// Servers matching one of these never start.
    pub deny: Vec<ServerMatch>,
}

impl ServerRules {
    /// Why `config` may not start, if it may not.
    pub fn refuses(&self, config: &ServerConfig) -> Option<String> {
        if let Some(m) = self.deny.iter().find(|m| m.matches(config, true)) {
            return Some(format!("`servers.deny` entry {m} matches it"));
        }
        match &self.allow {
            Some(allow) if !allow.iter().any(|m| m.matches(config, false)) => {
                Some("no entry of `servers.allow` matches it".to_string())
            }
            _ => None,
        }
    }
}

/// The managed file, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Managed {
    /// The file.
    pub file: PathBuf,
    /// Which servers may start.
    pub servers: ServerRules,
    /// It exists but could not be used: every server is refused and every call denied until
    /// it is fixed (a broken managed file must not loosen anything).
    pub error: Option<String>,
}

/// The `audit` section: every tool call through the hub is one JSON line in
/// `<data>/audit/YYYY-MM-DD.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuditConfig {
    /// Write the log (default true).
    pub enabled: bool,
    /// Keep the arguments too (values of keys that look like secrets redacted); default
    /// false: only their SHA-256.
    pub arguments: bool,
    /// Days beyond this many bytes in all are removed, oldest first (default 100 MB).
    pub max_bytes: u64,
    /// Refuse tool calls while the log cannot be written (a full disk...); default false:
    /// calls go on, records are held in memory and those that cannot be kept are counted as
    /// lost. `true` turns the log on.
    pub required: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { enabled: true, arguments: false, max_bytes: 100 * 1024 * 1024, required: false }
    }
}

impl From<Scope> for RuleSource {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Project => RuleSource::Project,
            Scope::User => RuleSource::User,
            Scope::Cli => RuleSource::Cli,
        }
    }
}

/// A rule list: its globs; the rules written as objects (for some callers) go to `conditional`.
fn globs(
    ctx: &mut FileCtx<'_>,
    field: &str,
    v: &Value,
    verdict: Verdict,
    conditional: &mut Vec<ConditionalRule>,
) -> Vec<String> {
    let Some(list) = v.as_array() else {
        ctx.diag(Severity::Error, None, Some(field), format!("`{field}` must be a list of globs"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in list {
        let glob = match item {
            Value::String(g) => g.as_str(),
            Value::Object(_) => {
                match conditional_rule(item, verdict) {
                    Ok(rule) => conditional.push(rule),
                    Err(message) => ctx.diag(Severity::Error, None, Some(field), message),
                }
                continue;
            }
            _ => {
                ctx.diag(
                    Severity::Error,
                    None,
                    Some(field),
                    format!("`{field}` must hold globs or {{\"tool\": GLOB, \"groups\": [...]}} rules"),
                );
                continue;
            }
        };
        match globset::Glob::new(glob) {
            Ok(_) => out.push(glob.to_string()),
            Err(e) => ctx.diag(
                Severity::Error,
                None,
                Some(field),
                format!("bad glob `{}`: {e}", crate::text::excerpt(glob, 80)),
            ),
        }
    }
    out
}

/// Reads a `policy` section of a file of `source`. A project's `allow` and loosening
/// `default` are refused with a diagnostic (a repository cannot allow its own tools).
pub(crate) fn parse_policy(value: &Value, source: RuleSource, ctx: &mut FileCtx<'_>) -> Option<PolicyRules> {
    let Some(obj) = value.as_object() else {
        ctx.diag(
            Severity::Error,
            None,
            Some("policy"),
            "`policy` must be an object with `allow`, `ask`, `deny`, `default`, `findings`, `secrets` and/or `rate_limits`".into(),
        );
        return None;
    };
    let mut rules = PolicyRules::default();
    for (key, v) in obj {
        let field = format!("policy.{key}");
        match key.as_str() {
            "allow" if source == RuleSource::Project => ctx.diag(
                Severity::Error,
                None,
                Some(&field),
                "a project file may only add `ask` and `deny` rules (a repository cannot allow its own tools): `allow` ignored; allow tools in your user file (`switchboard allow GLOB`)".into(),
            ),
            "allow" => rules.allow = globs(ctx, &field, v, Verdict::Allow, &mut rules.conditional),
            "ask" => rules.ask = globs(ctx, &field, v, Verdict::Ask, &mut rules.conditional),
            "deny" => rules.deny = globs(ctx, &field, v, Verdict::Deny, &mut rules.conditional),
            "secrets" => {
                use crate::screen::secrets::SecretsMode;
                match v.as_str() {
                    Some("off") if source == RuleSource::Project => ctx.diag(
                        Severity::Error,
                        None,
                        Some(&field),
                        "a project file may only tighten: `secrets: off` ignored".into(),
                    ),
                    Some("off") => rules.secrets = Some(SecretsMode::Off),
                    Some("redact") => rules.secrets = Some(SecretsMode::Redact),
                    Some("block") => rules.secrets = Some(SecretsMode::Block),
                    _ => ctx.diag(Severity::Error, None, Some(&field), "`secrets` must be \"redact\", \"block\" or \"off\"".into()),
                }
            }
            "rate_limits" => match super::rate::rate_limits(v) {
                Ok(limits) => rules.rate_limits = limits,
                Err(message) => ctx.diag(Severity::Error, None, Some(&field), message),
            },
            "findings" => match findings_rule(v) {
                Ok(rule) => rules.findings = rule,
                Err(message) => ctx.diag(Severity::Error, None, Some(&field), message),
            },
            "default" => {
                let parsed = v.as_str().and_then(|s| match s {
                    "allow" => Some(DefaultRule::Allow),
                    "ask" => Some(DefaultRule::Ask),
                    "deny" => Some(DefaultRule::Deny),
                    "annotations" => Some(DefaultRule::Annotations),
                    _ => None,
                });
                match parsed {
                    None => ctx.diag(Severity::Error, None, Some(&field), "`default` must be \"allow\", \"ask\", \"deny\" or \"annotations\"".into()),
                    Some(d @ (DefaultRule::Allow | DefaultRule::Annotations)) if source == RuleSource::Project => ctx.diag(
                        Severity::Error,
                        None,
                        Some(&field),
                        format!("a project file may only tighten: `default: {}` ignored (use \"ask\" or \"deny\")", d.as_str()),
                    ),
                    Some(d) => rules.default = Some(d),
                }
            }
            other => ctx.diag(
                Severity::Warning,
                None,
                Some(&field),
                format!("unknown field `{}` ignored: use `allow`, `ask`, `deny`, `default`, `findings`, `secrets` and `rate_limits`", crate::text::excerpt(other, 60)),
            ),
        }
    }
    Some(rules)
}

/// Reads `policy.findings` (`None`: `warn`).
fn findings_rule(v: &Value) -> Result<Option<FindingsRule>, String> {
    use crate::policy::Verdict;
    use crate::screen::Severity as S;
    let action = |s: &str| match s {
        "warn" => Ok(None),
        "ask" => Ok(Some(Verdict::Ask)),
        "deny" => Ok(Some(Verdict::Deny)),
        _ => Err(format!("`{}` is not an action: use \"warn\", \"ask\" or \"deny\"", crate::text::excerpt(s, 40))),
    };
    let (act, at) = match v {
        Value::String(s) => (action(s)?, S::Medium),
        Value::Object(m) => {
            if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "action" | "at")) {
                return Err(format!("unknown key `{}`: use `action` and `at`", crate::text::excerpt(k, 40)));
            }
            let act = action(
                m.get("action").and_then(Value::as_str).ok_or("needs `action`: \"warn\", \"ask\" or \"deny\"")?,
            )?;
            let at = match m.get("at").map(|a| a.as_str()) {
                None => S::Medium,
                Some(Some("low")) => S::Low,
                Some(Some("medium")) => S::Medium,
                Some(Some("high")) => S::High,
                Some(_) => return Err("`at` must be \"low\", \"medium\" or \"high\"".into()),
            };
            (act, at)
        }
        _ => return Err("must be \"warn\", \"ask\", \"deny\" or {\"action\", \"at\"}".into()),
    };
    Ok(act.map(|action| FindingsRule { action, at }))
}

/// Reads an `audit` section.
pub(crate) fn parse_audit(value: &Value, into: &mut AuditConfig, ctx: &mut FileCtx<'_>) {
    let Some(obj) = value.as_object() else {
        ctx.diag(
            Severity::Error,
            None,
            Some("audit"),
            "`audit` must be an object with `enabled`, `arguments`, `max_mb` and/or `required`".into(),
        );
        return;
    };
    for (key, v) in obj {
        let field = format!("audit.{key}");
        match (key.as_str(), v) {
            ("enabled", Value::Bool(b)) => into.enabled = *b,
            ("arguments", Value::Bool(b)) => into.arguments = *b,
            ("required", Value::Bool(b)) => {
                into.required = *b;
                into.enabled |= *b;
            }
            ("max_mb", Value::Number(n)) if n.as_u64().is_some_and(|m| (1..=1_000_000).contains(&m)) => {
                into.max_bytes = n.as_u64().unwrap_or(100) * 1024 * 1024
            }
            ("enabled" | "arguments" | "required", _) => {
                ctx.diag(Severity::Error, None, Some(&field), format!("`{key}` must be true or false"))
            }
            ("max_mb", _) => ctx.diag(
                Severity::Error,
                None,
                Some(&field),
                "`max_mb` must be a whole number from 1 to 1000000".into(),
            ),
            (other, _) => ctx.diag(
                Severity::Warning,
                None,
                Some(&field),
                format!(
                    "unknown field `{}` ignored: use `enabled`, `arguments`, `max_mb` and `required`",
                    crate::text::excerpt(other, 60)
                ),
            ),
        }
    }
}

fn parse_matchers(ctx: &mut FileCtx<'_>, field: &str, v: &Value) -> Vec<ServerMatch> {
    let Some(list) = v.as_array() else {
        ctx.diag(
            Severity::Error,
            None,
            Some(field),
            format!("`{field}` must be a list of {{\"name\"|\"command\"|\"url\": GLOB}}"),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in list {
        let one = item.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next());
        let parsed = match one {
            Some((k, Value::String(g))) if globset::Glob::new(g).is_ok() => match k.as_str() {
                "name" => Some(ServerMatch::Name(g.clone())),
                "command" => Some(ServerMatch::Command(g.clone())),
                "url" => Some(ServerMatch::Url(g.clone())),
                _ => None,
            },
            _ => None,
        };
        match parsed {
            Some(m) => out.push(m),
            None => ctx.diag(
                Severity::Error,
                None,
                Some(field),
                format!(
                    "`{}`: each entry is one of {{\"name\": GLOB}}, {{\"command\": GLOB}}, {{\"url\": GLOB}}",
                    crate::text::excerpt(&item.to_string(), 80)
                ),
            ),
        }
    }
    out
}

/// What the managed file holds.
pub(crate) struct ManagedFile {
    pub managed: Managed,
    pub policy: Option<PolicyRules>,
    pub audit: Option<Value>,
    pub identity: Option<crate::identity::IdentityConfig>,
    pub store: Option<crate::store::db::StoreConfig>,
}

/// Reads the managed file at `path` (`None` when there is none).
pub(crate) fn read_managed(path: &Path, diagnostics: &mut Vec<super::Diagnostic>) -> Option<ManagedFile> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(broken(path, format!("cannot read: {e}"), diagnostics)),
    };
    let value: Value = match serde_json::from_str(&super::jsonc::strip(&text)) {
        Ok(v) => v,
        Err(e) => return Some(broken(path, format!("line {}: not valid JSON: {e}", e.line()), diagnostics)),
    };
    let Some(obj) = value.as_object() else {
        return Some(broken(path, "the file must hold a JSON object".into(), diagnostics));
    };
    let env = std::collections::HashMap::new();
    let before = diagnostics.len();
    let mut ctx = FileCtx { path, text: &text, scope: Scope::User, env: &env, diagnostics };
    let mut file = ManagedFile {
        managed: Managed { file: path.to_path_buf(), ..Managed::default() },
        policy: None,
        audit: None,
        identity: None,
        store: None,
    };
    for (key, v) in obj {
        match key.as_str() {
            "$schema" => {}
            "policy" => file.policy = parse_policy(v, RuleSource::Managed, &mut ctx),
            "audit" => file.audit = Some(v.clone()),
            "identity" => file.identity = super::identity::parse(v, &mut ctx),
            "store" => file.store = super::store::parse(v, &mut ctx),
            "servers" => match v.as_object() {
                Some(m) => {
                    for (k, list) in m {
                        match k.as_str() {
                            "allow" => {
                                file.managed.servers.allow = Some(parse_matchers(&mut ctx, "servers.allow", list))
                            }
                            "deny" => file.managed.servers.deny = parse_matchers(&mut ctx, "servers.deny", list),
                            other => ctx.diag(
                                Severity::Error,
                                None,
                                Some("servers"),
                                format!("unknown field `{}`: use `allow` and `deny`", crate::text::excerpt(other, 60)),
                            ),
                        }
                    }
                }
                None => ctx.diag(
                    Severity::Error,
                    None,
                    Some("servers"),
                    "`servers` must be an object with `allow` and/or `deny`".into(),
                ),
            },
            other => ctx.diag(
                Severity::Error,
                None,
                Some(other),
                format!(
                    "unknown key `{}` in the managed file: it holds `policy`, `servers` and `audit`",
                    crate::text::excerpt(other, 60)
                ),
            ),
        }
    }
    // Any error in the managed file refuses everything: a rule the administrator wrote must
    // never be dropped silently (a mistyped `deny` would loosen).
    if let Some(first) = diagnostics[before..].iter().find(|d| d.severity == Severity::Error) {
        let message = match first.line {
            Some(l) => format!("line {l}: {}", first.message),
            None => first.message.clone(),
        };
        let summary = broken(path, message, diagnostics);
        file.managed.error = summary.managed.error;
    }
    Some(file)
}

fn broken(path: &Path, message: String, diagnostics: &mut Vec<super::Diagnostic>) -> ManagedFile {
    diagnostics.push(super::Diagnostic {
        severity: Severity::Error,
        file: path.to_path_buf(),
        line: None,
        column: None,
        server: None,
        field: None,
        message: format!("{message}; until the managed file is fixed no server starts and every tool call is denied"),
    });
    ManagedFile {
        managed: Managed { file: path.to_path_buf(), servers: ServerRules::default(), error: Some(message) },
        policy: None,
        audit: None,
        identity: None,
        store: None,
    }
}

//! Configuration: the files a person writes, read into validated [`ServerConfig`]s.
//!
//! Files are found (`discover.rs`), parsed in any of the shapes people already have
//! (`entry.rs`), expanded (`${VAR}`, `expand.rs`) and merged by server name with whole-entry
//! replacement. A broken file or entry never stops the rest: it becomes a [`Diagnostic`]
//! (file, line, server, field) and, for an entry, an [`InvalidServer`] that the hub reports as
//! `failed` / `config_invalid`.

mod discover;
mod edit;
mod entry;
pub mod expand;
mod file;
pub mod foreign;
mod identity;
mod import;
mod inputs;
pub mod jsonc;
mod oauth;
mod policy;
pub(crate) mod rate;
mod sandbox;
mod store;
mod values;
mod who;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use discover::{FileLook, LoadOptions, load, managed_file};
pub use edit::{
    EditError, NewServer, PolicyEdit, add_policy_rule, allow_in_sandbox, disable_server, enable_server, remove_server,
    write_server,
};
pub use foreign::{KnownFile, Note, SourceScope, Tool, known_files};
pub use import::{Action, Found, FoundServer, Planned, RenameReason, apply_import, plan_import, scan};
pub use inputs::{InputDecl, InputStore, InputsError, MissingInput};
pub use oauth::{AssertionSource, DEFAULT_CALLBACK_PORT, DpopMode, EnterpriseConfig, OAuthConfig, OAuthGrant};
pub use policy::{
    AuditConfig, DefaultRule, FindingsRule, Managed, PolicyLayer, PolicyRules, RuleSource, ServerMatch, ServerRules,
};
pub use rate::RateLimit;
pub use sandbox::{Limits, NetworkSpec, SandboxSpec};
pub use who::{ConditionalRule, Who};

/// Reads one server entry as it would stand in a file (`source`, of `scope`), expanding
/// `${VAR}` from `env`: for servers added at run time. Returns the entry (invalid ones keep
/// their reason) and the diagnostics (unknown fields...).
pub fn parse_server(
    name: &str,
    value: &serde_json::Value,
    scope: Scope,
    source: &std::path::Path,
    env: &HashMap<String, String>,
) -> (ServerEntry, Vec<Diagnostic>) {
    let text = serde_json::to_string_pretty(&serde_json::json!({"servers": {name: value}})).unwrap_or_default();
    let mut diagnostics = Vec::new();
    let mut ctx = file::FileCtx { path: source, text: &text, scope, env, diagnostics: &mut diagnostics };
    let entry = entry::parse_server_value(name, value, &mut ctx);
    (entry, diagnostics)
}

/// Default time a server has to start: spawn, `initialize`, and first listings.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Default time a tool call may go without a response or progress.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_millis(300_000);
/// Default time a server has to exit after its stdin closes, before SIGINT (then 250 ms to
/// SIGTERM, 750 ms to SIGKILL).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// The longest `startup_timeout_ms` and `tool_timeout_ms` may be (7 days).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Default largest message taken from a server (16 MiB, as rmcp's stdio framing).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The range `max_message_bytes` may take (1 KiB to 1 GiB).
pub const MESSAGE_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=1024 * 1024 * 1024;
/// How long a long-running hub keeps a server nobody uses (`idle_shutdown_ms`).
pub const DEFAULT_IDLE_SHUTDOWN: Duration = Duration::from_secs(600);
/// The longest `shutdown_grace_ms` may be (one minute).
pub const MAX_SHUTDOWN_GRACE: Duration = Duration::from_secs(60);

/// Where a server's definition came from; decides precedence and trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Scope {
    /// A project file (`switchboard.json`, `.switchboard/config.json`, `.mcp.json`): untrusted
    /// until the person trusts it.
    Project,
    /// The user's own file.
    User,
    /// A file given with `--config`.
    Cli,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Cli => "cli",
        })
    }
}

/// How a remote server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum HttpTransport {
    /// Streamable HTTP first, legacy SSE on 400/404/405.
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05) only.
    Sse,
}

/// A local server started as a child process.
///
/// `Serialize` and `Debug` never show a secret: the command, arguments and working directory
/// appear as written (variables unexpanded) and `env` values as `"<redacted>"`.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StdioConfig {
    /// Program to run (resolved on `PATH` when it has no `/`), variables expanded.
    #[serde(skip)]
    pub command: String,
    /// The program as written in the file (`${VAR}` unexpanded), for display.
    #[serde(rename = "command")]
    pub command_as_written: String,
    /// Arguments, passed as given (no shell), variables expanded.
    #[serde(skip)]
    pub args: Vec<String>,
    /// The arguments as written in the file, `${VAR}` references unexpanded: what people and
    /// `--json` output are shown, so a secret passed through a variable never appears.
    #[serde(rename = "args")]
    pub args_as_written: Vec<String>,
    /// Variables set for the server (values are secrets: never printed).
    #[serde(serialize_with = "ser_redacted")]
    pub env: BTreeMap<String, String>,
    /// Working directory, variables expanded; `None` means the project root.
    #[serde(skip)]
    pub cwd: Option<PathBuf>,
    /// The working directory as written (`${VAR}` unexpanded), for display.
    #[serde(rename = "cwd")]
    pub cwd_as_written: Option<String>,
    /// A dotenv file whose variables are set for the server (`envFile`, as VS Code and Cursor
    /// have it), read when the config is loaded; `env` wins over it.
    #[serde(skip)]
    pub env_file: Option<PathBuf>,
    /// The env file as written, for display.
    #[serde(rename = "env_file", skip_serializing_if = "Option::is_none")]
    pub env_file_as_written: Option<String>,
    /// Names of host variables passed through on top of the minimal default set.
    pub env_passthrough: Vec<String>,
    /// Pass the whole host environment.
    pub inherit_env: bool,
    /// Its sandbox: the entry's own `sandbox` block, and once the config is loaded, with the
    /// files' top-level block laid under it (`None` only for an entry read on its own, whose
    /// sandbox is then the default).
    pub sandbox: Option<SandboxSpec>,
}

/// A remote server reached over HTTP.
///
/// `Serialize` and `Debug` never show a secret: the URL appears as written (variables
/// unexpanded) and header values as `"<redacted>"`.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Endpoint URL, variables expanded.
    #[serde(skip)]
    pub url: String,
    /// The URL as written in the file (`${VAR}` unexpanded), for display.
    #[serde(rename = "url")]
    pub url_as_written: String,
    /// Static headers (values are secrets: never printed).
    #[serde(serialize_with = "ser_redacted")]
    pub headers: BTreeMap<String, String>,
    /// Which HTTP transport to use.
    pub transport: HttpTransport,
    /// A host variable whose value is sent as `Authorization: Bearer <value>`.
    pub bearer_token_env_var: Option<String>,
    /// How to authorise with OAuth when the server asks (the `oauth` block; defaults apply
    /// without one).
    pub oauth: OAuthConfig,
}

/// The transport part of a server definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio(StdioConfig),
    /// An HTTP endpoint.
    Http(HttpConfig),
}

/// Glob filters on a server's tool names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolFilter {
    /// If non-empty, only tools matching one of these globs are kept.
    pub allow: Vec<String>,
    /// Tools matching one of these globs are dropped (after `allow`).
    pub deny: Vec<String>,
}

/// A gateway profile: a narrower view of the same servers for one kind of client
/// (`"profiles": {"reader": {"servers": ["docs"], "tools": {"deny": ["*write*"]}}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Profile {
    /// Only these servers (all when absent).
    pub servers: Option<Vec<String>>,
    /// Tool globs over model-visible names and `server/tool` raw names.
    pub tools: ToolFilter,
    /// Bound to these groups (a gateway whose callers sign in): their members get it when
    /// they ask for no profile, and no one else may ask for it.
    pub groups: Vec<String>,
}

impl Profile {
    /// A profile of `servers` and `tools`.
    pub fn new(servers: Option<Vec<String>>, tools: ToolFilter) -> Profile {
        Profile { servers, tools, groups: Vec::new() }
    }
}

impl ToolFilter {
    /// A filter of `allow` and `deny` globs.
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> ToolFilter {
        ToolFilter { allow, deny }
    }
}

/// One validated, expanded server definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's name (the key in the file).
    pub name: String,
    /// A protocol version to insist on (`protocol_version`); `None` negotiates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How to reach it.
    pub transport: TransportConfig,
    /// `false` keeps it configured but not started.
    pub enabled: bool,
    /// Time allowed for start-up.
    #[serde(serialize_with = "ser_ms")]
    pub startup_timeout: Duration,
    /// Default time a tool call may go without response or progress.
    #[serde(serialize_with = "ser_ms")]
    pub tool_timeout: Duration,
    /// Time a stdio server has to exit after its stdin closes, before SIGINT.
    #[serde(serialize_with = "ser_ms")]
    pub shutdown_grace: Duration,
    /// The largest JSON-RPC message taken from the server (a line on stdio, a response body
    /// or event over HTTP); larger ones are refused, and said.
    pub max_message_bytes: usize,
    /// Tool name filters.
    pub tools: ToolFilter,
    /// Check a call's arguments against the tool's input schema before sending it
    /// (`validate_arguments`, default true).
    pub validate_arguments: bool,
    /// A long-running hub stops the server after this long unused (`idle_shutdown_ms`, for
    /// the server or for every server at the top of a file; default 10 minutes) and starts
    /// it again at the next call. `None`: never (`"keep_alive": true`).
    #[serde(serialize_with = "ser_opt_ms")]
    pub idle_shutdown: Option<Duration>,
    /// Where tool definitions are deferred behind a search (`gateway --tool-search`), this
    /// server's tools are listed in full anyway (`always_load`, `alwaysLoad`; default false).
    pub always_load: bool,
    /// Whether one connection serves every caller or each signed-in person gets their own
    /// (`sharing`); `None`: as [`ServerConfig::per_person`] decides by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Which kind of file it came from.
    pub scope: Scope,
    /// The file it came from.
    pub source: PathBuf,
}

/// Who a server's connection serves (`sharing`), where callers sign in ([`crate::identity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Sharing {
    /// One connection (one process, one login) for everyone: it sees no person's secrets.
    Shared,
    /// A connection of each person's own, made on their first use with their login and
    /// inputs, stopped when idle.
    PerPrincipal,
}

impl ServerConfig {
    /// Whether each signed-in person gets a connection of their own: never where no one signs
    /// in (`team` false: one person), else as `sharing` says, by default for a remote server
    /// (its login is a person's) and not for a local one.
    pub fn per_person(&self, team: bool) -> bool {
        team && match self.sharing {
            Some(sharing) => sharing == Sharing::PerPrincipal,
            None => matches!(self.transport, TransportConfig::Http(_)),
        }
    }
}

impl StdioConfig {
    /// The program, safe to show: as written when a variable went into it, else as run.
    pub fn command_shown(&self) -> &str {
        if self.command_as_written.contains("${") { &self.command_as_written } else { &self.command }
    }

    /// The working directory, safe to show (as [`StdioConfig::command_shown`]); `None`: the
    /// project root.
    pub fn cwd_shown(&self) -> Option<String> {
        match (&self.cwd_as_written, &self.cwd) {
            (Some(w), _) if w.contains("${") => Some(w.clone()),
            (_, Some(c)) => Some(c.display().to_string()),
            (Some(w), None) => Some(w.clone()),
            (None, None) => None,
        }
    }
}

impl ServerConfig {
    /// One line saying what this server is, safe to show: the program and its arguments as
    /// written (variables unexpanded), or the URL as written.
    pub fn target(&self) -> String {
        match &self.transport {
            TransportConfig::Stdio(s) => std::iter::once(s.command_shown().to_string())
                .chain(s.args_as_written.iter().map(|a| if a.contains(' ') { format!("{a:?}") } else { a.clone() }))
                .collect::<Vec<_>>()
                .join(" "),
            TransportConfig::Http(h) => h.url_as_written.clone(),
        }
    }
}

/// Names kept, values replaced.
struct Redacted<'a>(&'a BTreeMap<String, String>);

const REDACTED: &str = "<redacted>";

impl std::fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.keys().map(|k| (k, REDACTED))).finish()
    }
}

fn ser_redacted<S: serde::Serializer>(m: &BTreeMap<String, String>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.keys().map(|k| (k, REDACTED)))
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command_as_written)
            .field("args", &self.args_as_written)
            .field("env", &Redacted(&self.env))
            .field("cwd", &self.cwd_as_written)
            .field("env_passthrough", &self.env_passthrough)
            .field("inherit_env", &self.inherit_env)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &self.url_as_written)
            .field("headers", &Redacted(&self.headers))
            .field("transport", &self.transport)
            .field("bearer_token_env_var", &self.bearer_token_env_var)
            .field("oauth", &self.oauth)
            .finish()
    }
}

fn ser_opt_ms<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_ms(d, s),
        None => s.serialize_none(),
    }
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A server entry that did not validate: it is kept (so it shows as failed) but never started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InvalidServer {
    /// The server's name.
    pub name: String,
    /// Which kind of file it came from.
    pub scope: Scope,
    /// The file it came from.
    pub source: PathBuf,
    /// What is wrong, naming the field.
    pub message: String,
    /// Refused by the managed file (not a broken entry).
    pub denied: bool,
    /// Its `sharing`, when it said one that could be read.
    pub sharing: Option<Sharing>,
    /// Whether it names a URL (a remote server) rather than a command.
    pub remote: bool,
}

impl InvalidServer {
    /// Whether it is each signed-in person's own, as far as it says (a server that waits for a
    /// person's input is theirs).
    pub fn per_person(&self, team: bool) -> bool {
        team && !self.denied
            && match self.sharing {
                Some(sharing) => sharing == Sharing::PerPrincipal,
                None => self.remote,
            }
    }
}

/// A server as configured: valid, or invalid with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
// A config holds a handful of entries; boxing the common variant would only make matching on
// it clumsier for library users.
#[allow(clippy::large_enum_variant)]
pub enum ServerEntry {
    /// A definition that can be started.
    Valid(ServerConfig),
    /// A definition that failed validation or expansion.
    Invalid(InvalidServer),
}

impl ServerEntry {
    /// Whether each signed-in person gets a connection of their own
    /// ([`ServerConfig::per_person`]), for an invalid entry too (as far as it says: a server
    /// that waits for a person's input is theirs).
    pub fn per_person(&self, team: bool) -> bool {
        match self {
            ServerEntry::Valid(c) => c.per_person(team),
            ServerEntry::Invalid(i) => i.per_person(team),
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        match self {
            ServerEntry::Valid(c) => &c.name,
            ServerEntry::Invalid(i) => &i.name,
        }
    }
    /// The scope of the file it came from.
    pub fn scope(&self) -> Scope {
        match self {
            ServerEntry::Valid(c) => c.scope,
            ServerEntry::Invalid(i) => i.scope,
        }
    }
    /// The file it came from.
    pub fn source(&self) -> &Path {
        match self {
            ServerEntry::Valid(c) => &c.source,
            ServerEntry::Invalid(i) => &i.source,
        }
    }
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Severity {
    /// Nothing is wrong: what a reader of the config should know (a server of each person's
    /// own waits for each person's value, not the host's).
    Note,
    /// Something was ignored (an unknown field); everything else still works.
    Warning,
    /// A file or a server could not be used.
    Error,
}

/// One problem found while loading configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Warning or error.
    pub severity: Severity,
    /// The file concerned.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The server concerned, if any.
    pub server: Option<String>,
    /// The field concerned, if any.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{sev}: {}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(server) = &self.server {
            write!(f, ": server `{server}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Where the `identity` in force was read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentitySource {
    /// The file.
    pub file: PathBuf,
    /// It is the managed file (which a user or `--config` file does not override).
    pub is_managed: bool,
}

/// Everything loaded: the merged servers, every diagnostic, and the files looked at.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadedConfig {
    /// Servers by name, after precedence.
    pub servers: BTreeMap<String, ServerEntry>,
    /// Every warning and error, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// Each file looked at, found or not.
    pub files: Vec<FileLook>,
    /// The project root: the folder holding `.git` above the working directory (or the
    /// working directory itself).
    pub project_root: PathBuf,
    /// The user file (whether or not it exists).
    pub user_file: PathBuf,
    /// Values that must never be shown (env and header values, what `${VAR}` put into the
    /// rest), for hosts to take out of their logs.
    pub secrets: Vec<String>,
    /// Gateway profiles by name (a later file replaces a profile of the same name).
    pub profiles: BTreeMap<String, Profile>,
    /// Every file's `policy` section, the managed file's first, then in load order.
    pub policy: Vec<PolicyLayer>,
    /// The managed file, if there is one.
    pub managed: Option<Managed>,
    /// The audit log's settings (user and `--config` files, then the managed file).
    pub audit: AuditConfig,
    /// The file whose `features.mcp: false` turns MCP off as a whole (ZCode's switch; the file
    /// of highest precedence that sets it decides), if one does: every server is then listed
    /// as disabled and none starts.
    pub mcp_off: Option<PathBuf>,
    /// Inputs (`${input:ID}`) that servers need and that have no value yet: their servers
    /// are invalid until given ([`InputStore::set`], then load again).
    pub inputs_missing: Vec<MissingInput>,
    /// The top-level `idle_shutdown_ms` of the file of highest precedence that sets one:
    /// every server without its own (and not `keep_alive`) gets it.
    pub idle_shutdown: Option<Duration>,
    /// The top-level `sandbox` blocks of every file, laid over each other in load order (the
    /// default for every stdio server; already laid under each one's own).
    pub sandbox: SandboxSpec,
    /// Who may call a gateway or `serve` over HTTP (`identity`: the managed file's, else the
    /// user or `--config` file's of highest precedence); `None`: the local token.
    pub identity: Option<crate::identity::IdentityConfig>,
    /// The file `identity` came from.
    pub identity_source: Option<IdentitySource>,
    /// A team's store (`store`: the managed file's, else the user or `--config` file's of
    /// highest precedence); `None`: the data folder.
    pub store: Option<crate::store::db::StoreConfig>,
    /// The file `store` came from.
    pub store_source: Option<IdentitySource>,
}

impl LoadedConfig {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Reads the host environment into a map (the one place config looks at the process env).
pub fn host_env() -> HashMap<String, String> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

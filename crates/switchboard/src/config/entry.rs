//! One config file's servers: the shapes people already have, normalised.
//!
//! Shapes: `servers` (ours and VS Code's), `mcpServers` (Claude Desktop, Cursor, `.mcp.json`),
//! `mcp` (OpenCode: `type: local|remote`, `command` as an array, `environment`) and
//! `mcp.servers` (ZCode). Every entry goes through [`parse_entry`], which reads each field it
//! knows exactly once and reports the rest as unknown, so a field cannot be silently dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::expand::expand;
use super::file::FileCtx;
use super::values::{
    FieldError, as_bool, as_bytes, as_grace, as_ms, as_string, as_string_map, as_strings, err, kind, take,
};
use super::{
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SHUTDOWN_GRACE, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, HttpConfig,
    HttpTransport, InvalidServer, OAuthConfig, Scope, ServerConfig, ServerEntry, Severity, StdioConfig, ToolFilter,
    TransportConfig,
};

/// One entry of a file: a server, or an override that only turns on or off a server of the
/// same name from a file of lower precedence (`"fs": {"enabled": false}` in the user file
/// disables a repository's `fs` without touching the repository).
pub(crate) enum Parsed {
    Server(Box<ServerEntry>),
    Toggle {
        name: String,
        enabled: bool,
    },
    /// A gateway profile (`profiles.<name>`).
    Profile {
        name: String,
        profile: super::Profile,
    },
    /// The file's `policy` section.
    Policy(super::PolicyRules),
    /// The file's `audit` section, read by the loader (only some files may set it).
    Audit(Value),
    /// `features.mcp` (ZCode's switch for MCP as a whole).
    McpSwitch(bool),
    /// The file's `idle_shutdown_ms` for every server.
    IdleShutdown(Duration),
    /// The file's `sandbox` block for every stdio server.
    Sandbox(super::SandboxSpec),
    /// The file's `identity` block, read by the loader (only some files may set it).
    Identity(Value),
    /// The file's `store` block, read by the loader (only some files may set it).
    Store(Value),
}

/// The override an entry is, if it holds nothing but `enabled` (or its aliases).
fn toggle(value: &Value) -> Option<bool> {
    let obj = value.as_object()?;
    if obj.is_empty() || !obj.keys().all(|k| matches!(k.as_str(), "enabled" | "enable" | "disabled")) {
        return None;
    }
    match (obj.get("enabled").or(obj.get("enable")), obj.get("disabled")) {
        (Some(Value::Bool(e)), None) => Some(*e),
        (None, Some(Value::Bool(d))) => Some(!d),
        _ => None,
    }
}

/// Finds the server map(s) in a parsed file and parses every entry.
pub(crate) fn parse_file(root: &Value, ctx: &mut FileCtx<'_>) -> Vec<Parsed> {
    let Some(obj) = root.as_object() else {
        ctx.diag(Severity::Error, None, None, "the file must hold a JSON object".into());
        return Vec::new();
    };
    let mut maps: Vec<&Map<String, Value>> = Vec::new();
    let mut profiles = Vec::new();
    for (key, value) in obj {
        match key.as_str() {
            "servers" | "mcpServers" => match value.as_object() {
                Some(m) => maps.push(m),
                None => ctx.diag(Severity::Error, None, Some(key), format!("`{key}` must be an object of servers")),
            },
            "mcp" => match value.as_object() {
                // ZCode nests the map under `mcp.servers`; OpenCode puts servers right under `mcp`.
                Some(m) if is_zcode(m) => match m.get("servers").and_then(Value::as_object) {
                    Some(s) => maps.push(s),
                    None => {
                        ctx.diag(Severity::Error, None, Some("mcp.servers"), "`mcp.servers` must be an object".into())
                    }
                },
                Some(m) => maps.push(m),
                None => ctx.diag(Severity::Error, None, Some(key), "`mcp` must be an object of servers".into()),
            },
            // Read by the loader: other files to read first, and VS Code's inputs.
            "$schema" | "include" | "inputs" => {}
            "idle_shutdown_ms" => match super::values::as_ms(key, value.clone()) {
                Ok(d) => profiles.push(Parsed::IdleShutdown(d)),
                Err((field, message)) => ctx.diag(Severity::Error, None, field.as_deref(), message),
            },
            "policy" => {
                if let Some(rules) = super::policy::parse_policy(value, ctx.scope.into(), ctx) {
                    profiles.push(Parsed::Policy(rules));
                }
            }
            "audit" => profiles.push(Parsed::Audit(value.clone())),
            "identity" => profiles.push(Parsed::Identity(value.clone())),
            "store" => profiles.push(Parsed::Store(value.clone())),
            "sandbox" => {
                let env = ctx.env;
                let x = |f: &str, s: &str| expand(s, env).map_err(|e| (Some(f.to_string()), e.to_string()));
                match super::sandbox::parse(key, value.clone(), ctx.scope, &x) {
                    Ok(p) => {
                        super::sandbox::report(p.ignored, None, ctx);
                        profiles.push(Parsed::Sandbox(p.spec));
                    }
                    Err((field, message)) => ctx.diag(Severity::Error, None, field.as_deref(), message),
                }
            }
            // ZCode's feature switches: `mcp` turns MCP on or off as a whole; the others are
            // ZCode's own and not ours to read.
            "features" => match value.as_object().map(|f| f.get("mcp")) {
                Some(Some(Value::Bool(on))) => profiles.push(Parsed::McpSwitch(*on)),
                Some(Some(other)) => ctx.diag(
                    Severity::Error,
                    None,
                    Some("features.mcp"),
                    format!("must be true or false, found {}", kind(other)),
                ),
                Some(None) => {}
                None => ctx.diag(Severity::Error, None, Some(key), "`features` must be an object".into()),
            },
            "profiles" => match value.as_object() {
                Some(m) => {
                    for (name, v) in m {
                        match parse_profile(v.clone()) {
                            Ok(profile) => profiles.push(Parsed::Profile { name: name.clone(), profile }),
                            Err((field, message)) => {
                                let field = format!(
                                    "profiles.{name}{}",
                                    field.filter(|f| !f.is_empty()).map(|f| format!(".{f}")).unwrap_or_default()
                                );
                                ctx.diag(
                                    Severity::Error,
                                    None,
                                    Some(&field),
                                    format!("profile `{}`: {message}", crate::text::excerpt(name, 60)),
                                )
                            }
                        }
                    }
                }
                None => ctx.diag(Severity::Error, None, Some(key), "`profiles` must be an object of profiles".into()),
            },
            other => ctx.diag(
                Severity::Warning,
                None,
                Some(other),
                format!("unknown top-level key `{}` ignored", crate::text::excerpt(other, 60)),
            ),
        }
    }
    let mut out = profiles;
    for map in maps {
        for (name, value) in map {
            match toggle(value) {
                Some(enabled) => out.push(Parsed::Toggle { name: name.clone(), enabled }),
                None => out.push(Parsed::Server(Box::new(parse_named(name, value, ctx)))),
            }
        }
    }
    out
}

/// Whether an `mcp` object is ZCode's (`mcp.servers` holds the map) rather than OpenCode's.
pub(crate) fn is_zcode(m: &Map<String, Value>) -> bool {
    match m.get("servers").and_then(Value::as_object) {
        Some(inner) => !["command", "url", "type"].iter().any(|k| inner.contains_key(*k)),
        None => false,
    }
}

/// One named entry (for [`super::parse_server`]).
pub(crate) fn parse_server_value(name: &str, value: &Value, ctx: &mut FileCtx<'_>) -> ServerEntry {
    parse_named(name, value, ctx)
}

fn parse_named(name: &str, value: &Value, ctx: &mut FileCtx<'_>) -> ServerEntry {
    let (scope, source) = (ctx.scope, ctx.path.to_path_buf());
    // What an invalid entry still says of whom it serves.
    let sharing = value.get("sharing").cloned().and_then(|v| as_sharing("sharing", v).ok());
    let remote = value.get("url").is_some();
    let invalid = |message: String| {
        ServerEntry::Invalid(InvalidServer {
            name: name.to_string(),
            scope,
            source: source.clone(),
            message,
            denied: false,
            sharing,
            remote,
        })
    };
    if let Err(msg) = validate_name(name) {
        ctx.diag(Severity::Error, Some(name), None, msg.clone());
        return invalid(msg);
    }
    match parse_entry(name, value, ctx) {
        Ok(config) => ServerEntry::Valid(config),
        Err((field, msg)) => {
            ctx.diag(Severity::Error, Some(name), field.as_deref(), msg.clone());
            let message = match field {
                Some(f) => format!("field `{f}`: {msg}"),
                None => msg,
            };
            invalid(message)
        }
    }
}

/// Server names are used in tool names and on command lines: keep them to a safe alphabet.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server name may not be empty".into());
    }
    if name.len() > 64 {
        return Err("a server name may be at most 64 characters".into());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        let shown = crate::text::for_terminal(&crate::text::excerpt(name, 40)).into_owned();
        let c = crate::text::for_terminal(&c.to_string()).into_owned();
        return Err(format!("server name `{shown}` has `{c}`: use letters, digits, `_`, `-` and `.`"));
    }
    Ok(())
}

/// Parses one entry. Every known field (and alias) is taken out exactly once; what is left is
/// reported as unknown.
/// Every field a server entry takes, in every spelling read (for "did you mean" on an
/// unknown one).
const SERVER_FIELDS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "environment",
    "cwd",
    "envFile",
    "env_file",
    "url",
    "headers",
    "http_headers",
    "transport",
    "bearer_token_env_var",
    "oauth",
    "protocol_version",
    "protocolVersion",
    "enabled",
    "enable",
    "disabled",
    "startup_timeout_ms",
    "timeout",
    "timeoutMs",
    "tool_timeout_ms",
    "shutdown_grace_ms",
    "max_message_bytes",
    "validate_arguments",
    "idle_shutdown_ms",
    "keep_alive",
    "always_load",
    "alwaysLoad",
    "sharing",
    "env_passthrough",
    "inherit_env",
    "sandbox",
    "tools",
    "description",
    "name",
    "title",
];

fn parse_entry(name: &str, value: &Value, ctx: &mut FileCtx<'_>) -> Result<ServerConfig, FieldError> {
    let Some(obj) = value.as_object() else {
        return Err((None, format!("a server entry must be an object, found {}", kind(value))));
    };
    let mut obj = obj.clone();
    let env_vars = ctx.env;
    let x = |field: &str, s: &str| expand(s, env_vars).map_err(|e| (Some(field.to_string()), e.to_string()));

    let ty = take(&mut obj, &["type"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let command = take(&mut obj, &["command"])?;
    let args = take(&mut obj, &["args"])?.map(|(f, v)| as_strings(&f, v)).transpose()?;
    let env = take(&mut obj, &["env", "environment"])?.map(|(f, v)| as_string_map(&f, v)).transpose()?;
    let cwd = take(&mut obj, &["cwd"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let env_file = take(&mut obj, &["envFile", "env_file"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let url = take(&mut obj, &["url"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let headers = take(&mut obj, &["headers", "http_headers"])?.map(|(f, v)| as_string_map(&f, v)).transpose()?;
    let transport = take(&mut obj, &["transport"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let bearer_var = take(&mut obj, &["bearer_token_env_var"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let oauth = take(&mut obj, &["oauth"])?.map(|(_, v)| v);
    // ZCode writes `protocolVersion`.
    let protocol_version =
        take(&mut obj, &["protocol_version", "protocolVersion"])?.map(|(f, v)| as_string(&f, v)).transpose()?;
    let enabled = take(&mut obj, &["enabled", "enable"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let disabled = take(&mut obj, &["disabled"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let startup =
        take(&mut obj, &["startup_timeout_ms", "timeout", "timeoutMs"])?.map(|(f, v)| as_ms(&f, v)).transpose()?;
    let tool_timeout = take(&mut obj, &["tool_timeout_ms"])?.map(|(f, v)| as_ms(&f, v)).transpose()?;
    let shutdown_grace = take(&mut obj, &["shutdown_grace_ms"])?.map(|(f, v)| as_grace(&f, v)).transpose()?;
    let max_message = take(&mut obj, &["max_message_bytes"])?.map(|(f, v)| as_bytes(&f, v)).transpose()?;
    let validate = take(&mut obj, &["validate_arguments"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let idle = take(&mut obj, &["idle_shutdown_ms"])?.map(|(f, v)| as_ms(&f, v)).transpose()?;
    let keep_alive = take(&mut obj, &["keep_alive"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let always_load = take(&mut obj, &["always_load", "alwaysLoad"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let sharing = take(&mut obj, &["sharing"])?.map(|(f, v)| as_sharing(&f, v)).transpose()?;
    if idle.is_some() && keep_alive == Some(true) {
        return err("keep_alive", "contradicts `idle_shutdown_ms`; keep one");
    }
    let passthrough = take(&mut obj, &["env_passthrough"])?.map(|(f, v)| as_strings(&f, v)).transpose()?;
    let inherit_env = take(&mut obj, &["inherit_env"])?.map(|(f, v)| as_bool(&f, v)).transpose()?;
    let sandbox =
        take(&mut obj, &["sandbox"])?.map(|(f, v)| super::sandbox::parse(&f, v, ctx.scope, &x)).transpose()?;
    let tools = take(&mut obj, &["tools"])?.map(|(_, v)| parse_filter(v)).transpose()?;
    for descriptive in ["description", "name", "title"] {
        obj.remove(descriptive);
    }
    for (field, _) in &obj {
        let meant = crate::text::closest(field, SERVER_FIELDS.iter().copied())
            .map(|m| format!("; did you mean `{m}`?"))
            .unwrap_or_default();
        ctx.diag(
            Severity::Warning,
            Some(name),
            Some(field),
            format!("unknown field `{}` ignored{meant}", crate::text::excerpt(field, 60)),
        );
    }

    let enabled = match (enabled, disabled) {
        (Some(_), Some(_)) => return err("disabled", "both `enabled` and `disabled` are set; keep one"),
        (Some(e), None) => e,
        (None, Some(d)) => !d,
        (None, None) => true,
    };

    // `command` may be a string or (OpenCode) an array whose head is the program.
    let (program, mut leading_args) = match command {
        None => (None, Vec::new()),
        Some((f, Value::Array(items))) => {
            let mut parts = as_strings(&f, Value::Array(items))?;
            if parts.is_empty() {
                return err(&f, "must not be empty");
            }
            let head = parts.remove(0);
            (Some(head), parts)
        }
        Some((f, v)) => (Some(as_string(&f, v)?), Vec::new()),
    };

    let kind = match ty.as_deref() {
        Some("stdio" | "local") => Kind::Stdio,
        // `url`: the spelling of seed 000's configs (a remote server by its URL).
        Some("http" | "remote" | "url" | "streamable-http" | "streamableHttp" | "streamable_http") => Kind::Http,
        Some("sse") => Kind::Sse,
        Some(other) => {
            return err("type", format!("unknown type `{other}`: use stdio, local, http, remote, url or sse"));
        }
        None => match (&program, &url) {
            (Some(_), None) => Kind::Stdio,
            (None, Some(_)) => Kind::Http,
            (Some(_), Some(_)) => {
                return Err((None, "both `command` and `url` are set; set `type` or keep one".into()));
            }
            (None, None) => return Err((None, "needs `command` (a local server) or `url` (a remote one)".into())),
        },
    };

    let transport_config = match kind {
        Kind::Stdio => {
            for (field, set) in [
                ("url", url.is_some()),
                ("headers", headers.is_some()),
                ("transport", transport.is_some()),
                ("bearer_token_env_var", bearer_var.is_some()),
                ("oauth", oauth.is_some()),
            ] {
                if set {
                    return err(field, "does not apply to a stdio server");
                }
            }
            let Some(program) = program else {
                return err("command", "a stdio server needs `command`");
            };
            let command_as_written = program.clone();
            let program = x("command", &program)?;
            if program.trim().is_empty() {
                return err("command", "must not be empty");
            }
            leading_args.extend(args.unwrap_or_default());
            let args_as_written = leading_args.clone();
            let args = leading_args
                .iter()
                .enumerate()
                .map(|(i, a)| x(&format!("args[{i}]"), a))
                .collect::<Result<Vec<_>, _>>()?;
            let base = ctx.path.parent().unwrap_or(Path::new("."));
            let env_file_as_written = env_file.clone();
            let env_file = env_file.map(|p| x("envFile", &p).map(|p| base.join(p))).transpose()?;
            let mut all_env = match &env_file {
                Some(file) => read_env_file(file)?,
                None => BTreeMap::new(),
            };
            for (k, v) in env.unwrap_or_default() {
                let value = x(&format!("env.{k}"), &v)?;
                all_env.insert(k, value);
            }
            let env = all_env;
            let cwd_as_written = cwd.clone();
            // A relative `cwd` in a project's file (or a `--config` one) is taken from that
            // file's folder; in the person's own file, from the workspace the host runs in (as
            // ZCode does): the same entry then serves each project it is used in.
            let cwd_base = match ctx.scope {
                Scope::User => ctx.env.get("workspaceFolder").map(Path::new).unwrap_or(base),
                Scope::Project | Scope::Cli => base,
            };
            let cwd = cwd.map(|c| x("cwd", &c).map(|c| cwd_base.join(c))).transpose()?;
            // A relative program path is taken relative to the file that names it.
            let command = if program.contains('/') && Path::new(&program).is_relative() {
                base.join(&program).to_string_lossy().into_owned()
            } else {
                program
            };
            TransportConfig::Stdio(StdioConfig {
                command,
                command_as_written,
                args,
                args_as_written,
                env,
                cwd,
                cwd_as_written,
                env_file,
                env_file_as_written,
                env_passthrough: passthrough.unwrap_or_default(),
                inherit_env: inherit_env.unwrap_or(false),
                sandbox: sandbox.map(|p| {
                    super::sandbox::report(p.ignored, Some(name), ctx);
                    p.spec
                }),
            })
        }
        Kind::Http | Kind::Sse => {
            for (field, set) in [
                ("command", program.is_some()),
                ("args", args.is_some()),
                ("cwd", cwd.is_some()),
                ("env_passthrough", passthrough.is_some()),
                ("inherit_env", inherit_env.is_some()),
                ("envFile", env_file.is_some()),
                ("sandbox", sandbox.is_some()),
            ] {
                if set {
                    return err(field, "does not apply to a remote server");
                }
            }
            if env.is_some() {
                return err("env", "does not apply to a remote server (use `headers`)");
            }
            let Some(url) = url else {
                return err("url", "a remote server needs `url`");
            };
            let url_as_written = url.clone();
            let url = x("url", &url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                let shown = crate::text::excerpt(&url_as_written, 60);
                return err("url", format!("`{shown}` is not an http:// or https:// URL"));
            }
            let headers = headers
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| Ok((k.clone(), x(&format!("headers.{k}"), &v)?)))
                .collect::<Result<BTreeMap<_, _>, FieldError>>()?;
            let transport = match (kind, transport.as_deref()) {
                (Kind::Sse, None | Some("sse")) => HttpTransport::Sse,
                (Kind::Sse, Some(other)) => return err("transport", format!("`{other}` contradicts `type: sse`")),
                (_, None | Some("auto")) => HttpTransport::Auto,
                (_, Some("streamable-http" | "streamable_http" | "http")) => HttpTransport::StreamableHttp,
                (_, Some("sse")) => HttpTransport::Sse,
                (_, Some(other)) => {
                    return err("transport", format!("unknown transport `{other}`: use auto, streamable-http or sse"));
                }
            };
            if let Some(var) = &bearer_var
                && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            {
                return err("bearer_token_env_var", format!("`{var}` is not an environment variable name"));
            }
            let oauth = match oauth {
                Some(v) => super::oauth::parse(v, &|field: &str, s: &str| x(field, s))?,
                None => OAuthConfig::default(),
            };
            if bearer_var.is_some() && oauth != OAuthConfig::default() {
                return err("oauth", "contradicts `bearer_token_env_var` (a static token); keep one");
            }
            TransportConfig::Http(HttpConfig {
                url,
                url_as_written,
                headers,
                transport,
                bearer_token_env_var: bearer_var,
                oauth,
            })
        }
    };

    if let Some(v) = &protocol_version
        && !rmcp::model::ProtocolVersion::KNOWN_VERSIONS.iter().any(|k| k.as_str() == v)
    {
        let known: Vec<&str> = rmcp::model::ProtocolVersion::KNOWN_VERSIONS.iter().map(|k| k.as_str()).collect();
        return err(
            "protocol_version",
            format!("`{v}` is not a protocol version switchboard speaks ({})", known.join(", ")),
        );
    }
    Ok(ServerConfig {
        name: name.to_string(),
        protocol_version,
        transport: transport_config,
        enabled,
        startup_timeout: startup.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
        tool_timeout: tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT),
        shutdown_grace: shutdown_grace.unwrap_or(DEFAULT_SHUTDOWN_GRACE),
        max_message_bytes: max_message.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
        tools: tools.unwrap_or_default(),
        validate_arguments: validate.unwrap_or(true),
        // Without its own, the file's (or the default) is put in by the loader.
        idle_shutdown: if keep_alive == Some(true) { None } else { Some(idle.unwrap_or(Duration::ZERO)) },
        always_load: always_load.unwrap_or(false),
        sharing,
        scope: ctx.scope,
        source: PathBuf::from(ctx.path),
    })
}

fn as_sharing(field: &str, value: Value) -> Result<super::Sharing, FieldError> {
    match value.as_str() {
        Some("shared") => Ok(super::Sharing::Shared),
        Some("per_principal") => Ok(super::Sharing::PerPrincipal),
        _ => Err((Some(field.to_string()), format!("must be \"shared\" or \"per_principal\", found {value}"))),
    }
}

/// The variables of a dotenv file (`KEY=value` lines, `#` comments, quotes, `export`).
fn read_env_file(file: &Path) -> Result<BTreeMap<String, String>, FieldError> {
    let fail = |e: dotenvy::Error| (Some("envFile".to_string()), format!("cannot read {}: {e}", file.display()));
    let mut vars = BTreeMap::new();
    for item in dotenvy::from_path_iter(file).map_err(fail)? {
        let (k, v) = item.map_err(fail)?;
        vars.insert(k, v);
    }
    Ok(vars)
}

#[derive(Clone, Copy)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

/// A profile: `{"servers": [...], "tools": {"allow": [...], "deny": [...]}}`; the tool globs
/// match model-visible names and `server/tool` raw names.
fn parse_profile(v: Value) -> Result<super::Profile, FieldError> {
    let Value::Object(mut obj) = v else {
        return err("", "must be an object with `servers` and/or `tools`");
    };
    let servers = obj.remove("servers").map(|v| as_strings("servers", v)).transpose()?;
    let tools = obj.remove("tools").map(parse_filter).transpose()?.unwrap_or_default();
    let groups = obj.remove("groups").map(|v| as_strings("groups", v)).transpose()?.unwrap_or_default();
    if let Some(k) = obj.keys().next() {
        return err(k, "unknown field: use `servers`, `tools` and `groups`");
    }
    Ok(super::Profile { servers, tools, groups })
}

fn parse_filter(v: Value) -> Result<ToolFilter, FieldError> {
    let Value::Object(mut obj) = v else {
        return err("tools", "must be an object with `allow` and/or `deny`");
    };
    let mut globs = |key: &str| -> Result<Vec<String>, FieldError> {
        let field = format!("tools.{key}");
        let list = obj.remove(key).map(|v| as_strings(&field, v)).transpose()?.unwrap_or_default();
        for g in &list {
            crate::glob::check(g).map_err(|message| (Some(field.clone()), message))?;
        }
        Ok(list)
    };
    let allow = globs("allow")?;
    let deny = globs("deny")?;
    if let Some(k) = obj.keys().next() {
        return err(&format!("tools.{k}"), "unknown field: use `allow` and `deny`");
    }
    Ok(ToolFilter { allow, deny })
}

//! One server entry of another tool, in switchboard's field names.
//!
//! Only what each tool names differently is touched; the rest goes to the entry parser as it
//! is, which knows the common fields (`command`, `args`, `env`, `url`, `headers`, `type`...)
//! and reports what it does not know. Variables are rewritten where the tool spells them
//! differently (`{env:X}` for OpenCode, `$X` for Gemini); `${env:X}` becomes `${X}`.

use serde_json::{Map, Value, json};

use super::{Dialect, Note};

/// `entry` (named `name`, from a file of `dialect`) in switchboard's shape; `None` when it
/// cannot be a server here (a Zed extension's), said in `notes`.
pub(super) fn normalize(dialect: Dialect, name: &str, entry: Value, notes: &mut Vec<Note>) -> Option<Value> {
    let Value::Object(mut e) = entry else {
        // Not an object: the entry parser says so with the file and line.
        return Some(entry);
    };
    let mut note = |field: &str, message: String| notes.push(Note::new(Some(name), Some(field), message));
    match dialect {
        Dialect::Own => {}
        Dialect::ClaudeDesktop | Dialect::ClaudeCodeUser | Dialect::McpJson => {
            if e.remove("headersHelper").is_some() {
                note(
                    "headersHelper",
                    "Claude Code's `headersHelper` is not run by switchboard: the headers it made are not sent \
                     (set `headers` or `oauth`)"
                        .into(),
                );
            }
            e.remove("alwaysLoad");
            if let Some(Value::Object(oauth)) = e.get_mut("oauth") {
                rename(oauth, "callbackPort", "callback_port");
                if oauth.remove("authServerMetadataUrl").is_some() {
                    note("oauth.authServerMetadataUrl", "not carried: the authorization server is discovered".into());
                }
            }
        }
        Dialect::Cursor => {
            // Cursor's static OAuth client: `auth: {CLIENT_ID, CLIENT_SECRET, scopes}`.
            if let Some(Value::Object(mut auth)) = e.remove("auth") {
                let mut oauth = Map::new();
                for (theirs, ours) in
                    [("CLIENT_ID", "client_id"), ("CLIENT_SECRET", "client_secret"), ("scopes", "scopes")]
                {
                    if let Some(v) = auth.remove(theirs) {
                        oauth.insert(ours.into(), v);
                    }
                }
                for (k, _) in auth {
                    note(&format!("auth.{k}"), "not carried (unknown to switchboard)".into());
                }
                e.insert("oauth".into(), Value::Object(oauth));
            }
        }
        Dialect::VscodeMcp | Dialect::VscodeSettings => {
            for key in ["dev", "gallery", "version"] {
                e.remove(key);
            }
        }
        Dialect::Windsurf => {
            rename(&mut e, "serverUrl", "url");
            if let Some(deny) = e.remove("disabledTools") {
                e.insert("tools".into(), json!({"deny": deny}));
            }
            for key in ["alwaysAllow", "autoApprove"] {
                if e.remove(key).is_some() {
                    note(key, "not carried: tools are allowed by switchboard's policy (`switchboard allow`)".into());
                }
            }
        }
        Dialect::Codex => codex(&mut e, &mut note),
        Dialect::Gemini => gemini(&mut e, &mut note),
        Dialect::Opencode => opencode(&mut e, &mut note),
        Dialect::Zed => {
            if !zed(&mut e) {
                note(
                    "source",
                    "provided by a Zed extension (no command or URL in the file): not a server switchboard can start"
                        .into(),
                );
                return None;
            }
        }
    }
    rewrite_strings(&mut e, &|s| env_prefix(s));
    Some(Value::Object(e))
}

fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if !obj.contains_key(to)
        && let Some(v) = obj.remove(from)
    {
        obj.insert(to.into(), v);
    }
}

/// Codex's `[mcp_servers.NAME]`.
fn codex(e: &mut Map<String, Value>, note: &mut dyn FnMut(&str, String)) {
    // `env_vars`: names passed through from the host (or `{name, source}` tables).
    if let Some(Value::Array(vars)) = e.remove("env_vars") {
        let names: Vec<Value> = vars
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(Value::String(s)),
                Value::Object(o) => o.get("name").cloned(),
                _ => None,
            })
            .collect();
        e.insert("env_passthrough".into(), Value::Array(names));
    }
    // `env_http_headers`: a header's value from a variable.
    if let Some(Value::Object(from_env)) = e.remove("env_http_headers") {
        let headers = e.entry("http_headers").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(h) = headers {
            for (header, var) in from_env {
                if let Value::String(var) = var {
                    h.insert(header, Value::String(format!("${{{var}}}")));
                }
            }
        }
    }
    rename(e, "http_headers", "headers");
    for (secs, ms) in [("startup_timeout_sec", "startup_timeout_ms"), ("tool_timeout_sec", "tool_timeout_ms")] {
        if let Some(v) = e.remove(secs) {
            let millis = v.as_f64().map(|s| (s * 1000.0).round()).filter(|m| *m >= 1.0 && *m <= u64::MAX as f64);
            match millis {
                // A whole number of milliseconds, in range: the cast is exact.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Some(m) => {
                    e.insert(ms.into(), json!(m as u64));
                }
                None => {
                    e.insert(ms.into(), v);
                }
            }
        }
    }
    let allow = e.remove("enabled_tools");
    let deny = e.remove("disabled_tools");
    if allow.is_some() || deny.is_some() {
        let mut tools = Map::new();
        tools.extend(allow.map(|a| ("allow".to_string(), a)));
        tools.extend(deny.map(|d| ("deny".to_string(), d)));
        e.insert("tools".into(), Value::Object(tools));
    }
    if let Some(scopes) = e.remove("scopes") {
        let oauth = e.entry("oauth").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(o) = oauth {
            o.insert("scopes".into(), scopes);
        }
    }
    for key in ["default_tools_approval_mode", "tools_approval"] {
        if e.remove(key).is_some() {
            note(
                key,
                "Codex's approval modes are not carried: use switchboard's policy (`switchboard ask|allow|deny`)"
                    .into(),
            );
        }
    }
    // Codex's `tools` table holds per-tool approval modes, not a filter.
    if let Some(Value::Object(t)) = e.get("tools")
        && !t.contains_key("allow")
        && !t.contains_key("deny")
    {
        e.remove("tools");
        note("tools", "Codex's per-tool approval modes are not carried: use switchboard's policy".into());
    }
    for key in ["oauth_resource", "experimental_environment", "http_headers_helper"] {
        if e.remove(key).is_some() {
            note(key, "not carried (switchboard has no such setting)".into());
        }
    }
    for key in ["required", "supports_parallel_tool_calls"] {
        e.remove(key);
    }
}

/// Gemini CLI's `mcpServers`: `url` is SSE, `httpUrl` Streamable HTTP, `timeout` a call's.
fn gemini(e: &mut Map<String, Value>, note: &mut dyn FnMut(&str, String)) {
    if let Some(url) = e.remove("httpUrl") {
        e.insert("url".into(), url);
        e.entry("type").or_insert_with(|| Value::String("http".into()));
    } else if e.contains_key("url") && !e.contains_key("type") {
        e.insert("type".into(), Value::String("sse".into()));
    }
    rename(e, "timeout", "tool_timeout_ms");
    let allow = e.remove("includeTools");
    let deny = e.remove("excludeTools");
    if allow.is_some() || deny.is_some() {
        let mut tools = Map::new();
        tools.extend(allow.map(|a| ("allow".to_string(), a)));
        tools.extend(deny.map(|d| ("deny".to_string(), d)));
        e.insert("tools".into(), Value::Object(tools));
    }
    if e.remove("trust").is_some() {
        note("trust", "Gemini's `trust` is not carried: `switchboard allow 'mcp__NAME__*'` does that".into());
    }
    if let Some(Value::Object(oauth)) = e.get_mut("oauth") {
        oauth.remove("enabled");
        let dropped: Vec<String> =
            oauth.keys().filter(|k| !matches!(k.as_str(), "clientId" | "clientSecret" | "scopes")).cloned().collect();
        for k in dropped {
            oauth.remove(&k);
            note(&format!("oauth.{k}"), "not carried: the authorization server is discovered".into());
        }
    }
    if let Some(kind) = e.remove("authProviderType")
        && kind != "dynamic_discovery"
    {
        note("authProviderType", format!("{kind} is not carried: switchboard uses OAuth discovery"));
    }
    // Gemini expands `$VAR` as well as `${VAR}`.
    rewrite_strings(e, &bare_vars);
}

/// OpenCode's `mcp`: `type: local|remote`, `command` as an array, `environment`, `{env:X}`.
fn opencode(e: &mut Map<String, Value>, note: &mut dyn FnMut(&str, String)) {
    if let Some(Value::Array(parts)) = e.get("command").cloned()
        && let Some((head, rest)) = parts.split_first()
    {
        e.insert("command".into(), head.clone());
        if !rest.is_empty() {
            e.insert("args".into(), Value::Array(rest.to_vec()));
        }
    }
    rename(e, "environment", "env");
    if matches!(e.get("type").and_then(Value::as_str), Some("local" | "remote")) {
        e.remove("type");
    }
    // `oauth: false` turns OpenCode's automatic OAuth off; switchboard only starts it when a
    // server asks.
    if e.get("oauth") == Some(&Value::Bool(false)) {
        e.remove("oauth");
    }
    if Value::Object(e.clone()).to_string().contains("{file:") {
        note("{file:...}", "OpenCode's `{file:...}` is not read by switchboard: use `${VAR}` or `envFile`".into());
    }
    // `{env:X}` is OpenCode's `${X}` (and a `${env:X}` written there stays one).
    rewrite_strings(e, &|s: &str| s.replace("{env:", "${").replace("$${", "${"));
}

/// Zed's `context_servers` entry; `false` when it names no program or URL (an extension's).
fn zed(e: &mut Map<String, Value>) -> bool {
    // The older shape: `command: {path, args, env}`.
    if let Some(Value::Object(mut cmd)) = e.remove("command").and_then(|c| match c {
        Value::Object(_) => Some(c),
        other => {
            e.insert("command".into(), other);
            None
        }
    }) {
        if let Some(path) = cmd.remove("path") {
            e.insert("command".into(), path);
        }
        for key in ["args", "env"] {
            if let Some(v) = cmd.remove(key) {
                e.insert(key.into(), v);
            }
        }
    }
    e.remove("source");
    e.remove("settings");
    e.contains_key("command") || e.contains_key("url")
}

/// Applies `f` to every string in the entry's values (not its keys).
fn rewrite_strings(e: &mut Map<String, Value>, f: &dyn Fn(&str) -> String) {
    fn walk(v: &mut Value, f: &dyn Fn(&str) -> String) {
        match v {
            Value::String(s) => *s = f(s),
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, f)),
            Value::Object(m) => m.values_mut().for_each(|i| walk(i, f)),
            _ => {}
        }
    }
    e.values_mut().for_each(|v| walk(v, f));
}

/// `${env:X}` written as `${X}` (both are understood; the short one is switchboard's own).
fn env_prefix(s: &str) -> String {
    s.replace("${env:", "${")
}

/// `$NAME` (not `${`, not `$$`) written as `${NAME}`.
fn bare_vars(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let rest = &s[i + 1..];
        if rest.starts_with('$') || rest.starts_with('{') {
            out.push('$');
            if let Some((_, next)) = chars.next() {
                out.push(next);
            }
            continue;
        }
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if len == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
            out.push('$');
            continue;
        }
        out.push_str("${");
        out.push_str(&rest[..len]);
        out.push('}');
        for _ in 0..rest[..len].chars().count() {
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_variables_get_braces() {
        assert_eq!(bare_vars("Bearer $TOKEN"), "Bearer ${TOKEN}");
        assert_eq!(bare_vars("${A} $$B $1 a$ $_x-y"), "${A} $$B $1 a$ ${_x}-y");
    }
}

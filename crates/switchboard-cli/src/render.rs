//! Output for people (tables, colour on a terminal, spinners) and redacted JSON for programs.

use std::io::IsTerminal;

use comfy_table::{ContentArrangement, Table, presets};
use console::style;
use serde_json::{Value, json};
use switchboard::config::{ServerConfig, ServerEntry, TransportConfig};
use switchboard::status::ServerStatus;
use switchboard::{Remedy, ServerInfo};

/// Whether stdout is a terminal (colour and tables with borders only then).
pub fn stdout_tty() -> bool {
    std::io::stdout().is_terminal()
}

/// Whether stderr is a terminal (spinners only then).
pub fn stderr_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// A table with a header.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(if stdout_tty() { presets::UTF8_HORIZONTAL_ONLY } else { presets::NOTHING });
    // Fit the terminal's width when it has one; a pseudo-terminal without a size (`script`,
    // some CI runners, editors' task panels) reports 0 columns, and squeezing to that would
    // print one character per line.
    let width = console::Term::stdout().size_checked().map_or(0, |(_, cols)| cols);
    if stdout_tty() && width >= 40 {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(width);
    } else {
        t.set_content_arrangement(ContentArrangement::Disabled);
    }
    t.set_header(header.iter().map(|h| if stdout_tty() { style(h).bold().to_string() } else { h.to_string() }));
    t
}

/// Dimmed on a terminal.
pub fn dim(text: &str) -> String {
    if stdout_tty() { style(text).dim().to_string() } else { text.to_string() }
}

/// What to type to make a fix, as the person at the terminal does it.
pub fn fix(remedy: &Remedy) -> String {
    match remedy {
        Remedy::Login { server } => format!("switchboard auth {server}"),
        Remedy::RegisterClient { server } => format!(
            "register a client with its authorization server, set `oauth.client_id` (and `oauth.client_secret`) \
             of `{server}`, then switchboard auth {server}"
        ),
        Remedy::Trust { server } => format!("switchboard trust {server}"),
        Remedy::Allow { tool } => format!("switchboard allow {tool}"),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// A line under `list` for each server with something to fix (`` `gh` needs a login:
/// switchboard auth gh ``), for the servers of this host or of the workspace's `serve`.
pub fn fixes<'a>(servers: impl IntoIterator<Item = (&'a str, &'a ServerStatus)>) -> anyhow::Result<()> {
    for (name, status) in servers {
        let Some(remedy) = status.remedy(name) else { continue };
        let what = match &remedy {
            Remedy::Login { .. } => "needs a login",
            Remedy::RegisterClient { .. } => "needs a client registered by hand",
            Remedy::Trust { .. } => "waits for trust (`switchboard trust` shows what would run)",
            _ => "can be fixed",
        };
        out!("\n`{}` {what}: {}", safe(name), fix(&remedy));
    }
    Ok(())
}

/// The status word, coloured on a terminal. A server that asks for a login says so.
pub fn status_word(status: &ServerStatus) -> String {
    let needs_auth = matches!(
        status,
        ServerStatus::Failed {
            kind: switchboard::status::FailureKind::NeedsAuth
                | switchboard::status::FailureKind::NeedsClientRegistration,
            ..
        }
    );
    let word = if needs_auth { "needs auth" } else { status.state() };
    if !stdout_tty() {
        return word.to_string();
    }
    if needs_auth {
        return style(word).yellow().to_string();
    }
    match status {
        ServerStatus::Connected { .. } => style(word).green().to_string(),
        ServerStatus::Failed { .. } | ServerStatus::Disconnected { .. } => style(word).red().to_string(),
        ServerStatus::Untrusted => style(word).yellow().to_string(),
        _ => style(word).dim().to_string(),
    }
}

/// One line of what a server (or a file) said, safe for a terminal: control characters
/// (escape sequences) escaped.
pub fn safe(s: &str) -> String {
    switchboard::text::for_terminal(s).into_owned()
}

/// Text of several lines for a terminal: newlines kept, other control characters escaped;
/// raw when stdout is not a terminal (a script gets the bytes as they came).
pub fn safe_lines(s: &str) -> std::borrow::Cow<'_, str> {
    if stdout_tty() { switchboard::text::for_terminal_lines(s) } else { std::borrow::Cow::Borrowed(s) }
}

/// Cuts `s` to `n` characters on one line, control characters escaped.
pub fn short(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let line = &safe(line);
    if line.chars().count() <= n && !s.contains('\n') {
        line.to_string()
    } else {
        let cut: String = line.chars().take(n.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// A server's config as JSON with every secret value replaced: env values and header values
/// are shown as `"<redacted>"`, only their names are kept; arguments and URL as written, so
/// what came from a `${VAR}` shows as the reference.
pub fn redacted_config(config: &ServerConfig) -> Value {
    let redact = |m: &std::collections::BTreeMap<String, String>| -> Value {
        m.keys().map(|k| (k.clone(), json!("<redacted>"))).collect::<serde_json::Map<_, _>>().into()
    };
    let transport = match &config.transport {
        TransportConfig::Stdio(s) => json!({
            "type": "stdio", "command": s.command_as_written, "args": s.args_as_written, "cwd": s.cwd_as_written,
            "env": redact(&s.env), "env_passthrough": s.env_passthrough, "inherit_env": s.inherit_env,
        }),
        TransportConfig::Http(h) => {
            json!({"type": "http", "url": h.url_as_written, "headers": redact(&h.headers), "transport": h.transport})
        }
        _ => json!({}),
    };
    json!({
        "name": config.name,
        "transport": transport,
        "enabled": config.enabled,
        "startup_timeout_ms": config.startup_timeout.as_millis() as u64,
        "tool_timeout_ms": config.tool_timeout.as_millis() as u64,
        "tools": {"allow": config.tools.allow, "deny": config.tools.deny},
        "scope": config.scope,
        "source": config.source,
    })
}

/// `redacted_config` for an entry (an invalid one shows its error).
pub fn redacted_entry(entry: &ServerEntry) -> Value {
    match entry {
        ServerEntry::Valid(c) => redacted_config(c),
        ServerEntry::Invalid(i) => json!({"name": i.name, "scope": i.scope, "source": i.source, "error": i.message}),
        _ => json!({}),
    }
}

/// One server as JSON (the `list --json` element).
pub fn server_json(info: &ServerInfo) -> Value {
    let mut json = json!({
        "name": info.name,
        "scope": info.scope,
        "source": info.source,
        "transport": info.transport,
        "target": info.target,
        "status": info.status,
    });
    if let Some(remedy) = &info.remedy {
        json["remedy"] = json!(remedy);
    }
    if !info.findings.is_empty() {
        json["findings"] = json!(info.findings);
    }
    if let Some(sandbox) = &info.sandbox {
        json["sandbox"] = json!(sandbox);
    }
    json
}

/// A server's sandbox in a few words (`get`): `on (secrets hidden, …, network open)`, with
/// its limits; `off: …` for the person's `"sandbox": false`.
pub fn sandbox_word(sandbox: &Value) -> String {
    let network = match sandbox.pointer("/network/kind").and_then(Value::as_str) {
        Some("off") => "no network".to_string(),
        Some("domains") => {
            let names: Vec<&str> = sandbox
                .pointer("/network/domains")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!("network to {} only", names.join(", "))
        }
        _ => "network open".to_string(),
    };
    let mut limits = Vec::new();
    if let Some(l) = sandbox.get("limits") {
        if let Some(mb) = l.get("memory_mb").and_then(Value::as_u64) {
            limits.push(format!("{mb} MiB"));
        }
        if let Some(n) = l.get("processes").and_then(Value::as_u64) {
            limits.push(format!("{n} processes"));
        }
        if let Some(n) = l.get("open_files").and_then(Value::as_u64) {
            limits.push(format!("{n} open files each"));
        }
    }
    let limits = if limits.is_empty() { String::new() } else { format!("; limits {}", limits.join(", ")) };
    let on = format!("on (secrets hidden, writes to its folders only, {network}){limits}");
    if sandbox.get("on").and_then(Value::as_bool) == Some(false) {
        return format!("off: it runs with all your rights (\"sandbox\": false in its entry){limits}");
    }
    on
}

/// After a list of servers: those running without a sandbox (the person's choice, said each
/// time), and those whose sandbox refused something.
pub fn sandboxes(servers: impl IntoIterator<Item = (String, Value)>) -> anyhow::Result<()> {
    let (mut off, mut refused) = (Vec::new(), Vec::new());
    for (name, sandbox) in servers {
        if sandbox.get("on").and_then(Value::as_bool) == Some(false) {
            off.push(safe(&name));
        }
        let n = sandbox.get("refused").and_then(Value::as_array).map_or(0, Vec::len);
        if n > 0 {
            refused.push(format!("{} ({n})", safe(&name)));
        }
    }
    if !off.is_empty() {
        out!("\nNo sandbox (\"sandbox\": false): {} runs with all your rights.", off.join(", "));
    }
    if !refused.is_empty() {
        out!(
            "\nRefused by the sandbox: {}; `switchboard get <server>` says what and the line that allows it.",
            refused.join(", ")
        );
    }
    Ok(())
}

/// An error as the person reads it: each cause once (a cause the message already says is not
/// repeated), then what to type to fix it, when the library names a fix.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if text.is_empty() {
            text = said;
        } else if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
    }
    if let Some(remedy) = e.downcast_ref::<switchboard::Error>().and_then(switchboard::Error::remedy) {
        text.push_str(&format!("\nto fix it: {}", fix(&remedy)));
    }
    text
}

/// What a server would run, for `trust` (variable names only).
pub fn launch_lines(config: &ServerConfig) -> Vec<String> {
    let mut lines = vec![format!("from     {} ({})", config.source.display(), config.scope)];
    match &config.transport {
        TransportConfig::Stdio(s) => {
            lines.push(format!("command  {}", safe(&config.target())));
            lines.push(format!(
                "cwd      {}",
                s.cwd_shown().map(|c| safe(&c)).unwrap_or_else(|| "(project root)".into())
            ));
            if !s.env.is_empty() {
                lines.push(format!("env      {}", safe(&s.env.keys().cloned().collect::<Vec<_>>().join(", "))));
            }
            if !s.env_passthrough.is_empty() {
                lines.push(format!("passes   {}", safe(&s.env_passthrough.join(", "))));
            }
            if s.inherit_env {
                lines.push("env      the whole environment (inherit_env)".into());
            }
        }
        TransportConfig::Http(h) => {
            lines.push(format!("url      {}", safe(&h.url_as_written)));
            if !h.headers.is_empty() {
                lines.push(format!("headers  {}", safe(&h.headers.keys().cloned().collect::<Vec<_>>().join(", "))));
            }
        }
        _ => {}
    }
    lines
}

/// A path with the home folder as `~`.
pub(crate) fn shown(path: &std::path::Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// A note on stderr naming the servers left out of an answer (failed, untrusted, gone).
pub(crate) fn warn_not_connected(hub: &switchboard::Hub) {
    let down: Vec<String> = hub
        .servers()
        .into_iter()
        .filter(|s| {
            matches!(
                s.status,
                switchboard::status::ServerStatus::Failed { .. }
                    | switchboard::status::ServerStatus::Untrusted
                    | switchboard::status::ServerStatus::Disconnected { .. }
            )
        })
        .map(|s| format!("{} ({})", s.name, s.status.state()))
        .collect();
    if !down.is_empty() {
        note!("note: not included: {} (see `switchboard list`)", down.join(", "));
    }
}

/// The suggestions, one per line, and how many more there are.
pub(crate) fn show_completion(values: &[String], total: Option<u32>, has_more: bool) -> anyhow::Result<u8> {
    for value in values {
        out!("{}", safe(value));
    }
    let more = total.map(|t| (t as usize).saturating_sub(values.len())).unwrap_or(0);
    if more > 0 {
        note!("({more} more: type more of it)");
    } else if has_more {
        note!("(more: type more of it)");
    }
    Ok(0)
}

/// After a list of servers: which have findings (hidden characters removed from what they
/// sent), and where to see them.
pub fn findings<'a>(counts: impl IntoIterator<Item = (&'a str, usize)>) -> anyhow::Result<()> {
    for (name, n) in counts.into_iter().filter(|(_, n)| *n > 0) {
        out!(
            "\n{} `{}`: {n} finding{} in what it sent (hidden characters removed); `switchboard get {}` shows {}.",
            console::style("Findings").yellow(),
            safe(name),
            if n == 1 { "" } else { "s" },
            safe(name),
            if n == 1 { "it" } else { "them" }
        );
    }
    Ok(())
}

//! What the gateway tells an agent about its servers, their failures and their fixes: the
//! lines of the instructions, the `switchboard://servers` resource, a failure as a JSON-RPC
//! error, and a fix ([`Remedy`]) in the words an agent passes on to the person (who runs the
//! command in a terminal). The one place the gateway renders a fix.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, ResourceContents};
use switchboard::status::ServerStatus;
use switchboard::{Remedy, ServerInfo};

use crate::view::SERVERS_URI;

/// A fix, as an agent tells the person.
pub(crate) fn advice(remedy: &Remedy) -> String {
    match remedy {
        Remedy::Login { server } => format!("the person must log in: `switchboard auth {server}` in a terminal"),
        Remedy::RegisterClient { server } => format!(
            "the person must register a client with its authorization server, set `oauth.client_id` of \
             `{server}` in switchboard's config, then run `switchboard auth {server}`"
        ),
        Remedy::Trust { server } => {
            format!("the person must trust it: `switchboard trust {server}` in a terminal (it shows what would run)")
        }
        Remedy::Allow { tool } => format!("the person can allow it: `switchboard allow {tool}`"),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// What went wrong, with the fix when the library names one.
pub(crate) fn explained(e: &switchboard::Error) -> String {
    match e.remedy() {
        Some(remedy) => format!("{e}; {}", advice(&remedy)),
        None => e.to_string(),
    }
}

/// A failure from the hub as a JSON-RPC error naming the server, the cause and the fix.
pub(crate) fn error(e: switchboard::Error) -> McpError {
    use switchboard::Error as E;
    match &e {
        E::Cancelled => McpError::internal_error("the call was cancelled", None),
        E::UnknownTool { .. } | E::ToolGone { .. } | E::UnknownServer { .. } => {
            McpError::invalid_params(e.to_string(), None)
        }
        // The upstream's own refusal keeps its code (the message names the server).
        E::Rejected { code, data, .. } => McpError::new(rmcp::model::ErrorCode(*code), e.to_string(), data.clone()),
        _ => McpError::internal_error(explained(&e), None),
    }
}

/// A line of the instructions for each server `sees` lets through: connected (with its own
/// instructions), or why not and its fix.
pub(crate) fn lines(servers: &[ServerInfo], sees: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    for s in servers.iter().filter(|s| sees(&s.name)) {
        let mut line = match &s.status {
            ServerStatus::Connected { instructions, .. } => {
                let mut l = format!("- {}: connected", s.name);
                if let Some(i) = instructions.as_deref().filter(|i| !i.trim().is_empty()) {
                    l.push_str(&format!(". Its instructions: {}", switchboard::text::excerpt(i, 2000)));
                }
                l
            }
            ServerStatus::Untrusted => format!("- {}: not started (a project server not trusted yet)", s.name),
            other => format!("- {}: {}", s.name, other.summary()),
        };
        if let Some(remedy) = &s.remedy {
            line.push_str(&format!("; {}", advice(remedy)));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The `switchboard://servers` resource: each server's status and fix, as JSON, and what
/// screening its definitions found (the rule, severity and place of each finding: never the
/// hidden text itself, which is for the person, not the model).
pub(crate) fn resource(servers: &[ServerInfo]) -> ReadResourceResult {
    let servers: Vec<serde_json::Value> = servers
        .iter()
        .map(|s| {
            let findings: Vec<serde_json::Value> = s
                .findings
                .iter()
                .map(|f| serde_json::json!({"rule": f.rule, "severity": f.severity, "target": f.target, "field": f.field}))
                .collect();
            let mut v = serde_json::json!({
                "name": s.name,
                "status": s.status,
                "remedy": s.remedy,
                "fix": s.remedy.as_ref().map(advice),
            });
            if !findings.is_empty() {
                v["findings"] = serde_json::Value::Array(findings);
            }
            v
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({"servers": servers})).unwrap_or_default();
    ReadResourceResult::new(vec![ResourceContents::text(text, SERVERS_URI).with_mime_type("application/json")])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each fix names the command the person runs, whatever the agent does with the sentence.
    #[test]
    fn each_fix_names_its_command() {
        let cases = [
            (Remedy::Login { server: "gh".into() }, "switchboard auth gh"),
            (Remedy::RegisterClient { server: "gh".into() }, "oauth.client_id"),
            (Remedy::Trust { server: "p".into() }, "switchboard trust p"),
            (Remedy::Allow { tool: "mcp__gh__push".into() }, "switchboard allow mcp__gh__push"),
        ];
        for (remedy, command) in cases {
            assert!(advice(&remedy).contains(command), "{remedy:?}: {}", advice(&remedy));
        }
    }
}

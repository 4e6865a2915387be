//! Asking the person at the terminal whether a tool call may go ahead (the policy's `ask`):
//! the tool, its server, the arguments (long values cut), the server's own annotations and the
//! rule that asked; `[y]es once / [s]ession / [a]lways / [N]o`.

use std::io::{BufRead, Write};
use std::sync::Arc;

use serde_json::Value;
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture};

use super::Terminal;
use crate::render::{safe, short};

/// Asks at the terminal.
pub struct TerminalApprover {
    terminal: Terminal,
}

impl TerminalApprover {
    /// An approver asking at `terminal`.
    pub fn new(terminal: Terminal) -> Arc<Self> {
        Arc::new(TerminalApprover { terminal })
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            self.terminal.ask(move |input, err| ask(&request, input, err)).await.unwrap_or(Approval::Deny)
        })
    }
}

/// The question: tool, server, arguments (pretty, long values cut), annotations, the rule;
/// `[y]es once / [s]ession / [a]lways / [N]o` (anything else, or the end of input, is no).
pub fn ask(request: &ApprovalRequest, input: &mut impl BufRead, out: &mut impl Write) -> Approval {
    let _ = writeln!(out, "\nswitchboard: allow this tool call?");
    let _ = writeln!(out, "  tool:   {} ({}/{})", safe(&request.name), safe(&request.server), safe(&request.tool));
    match &request.arguments {
        Some(args) if !args.is_empty() => {
            let _ = writeln!(out, "  arguments:");
            let cut = cut_values(&Value::Object(args.clone()));
            let pretty = serde_json::to_string_pretty(&cut).unwrap_or_default();
            for line in pretty.lines() {
                let _ = writeln!(out, "    {}", safe(line));
            }
        }
        _ => {
            let _ = writeln!(out, "  arguments: none");
        }
    }
    if let Some(a) = &request.annotations {
        let hints: Vec<String> = [
            ("readOnlyHint", a.read_only_hint),
            ("destructiveHint", a.destructive_hint),
            ("idempotentHint", a.idempotent_hint),
            ("openWorldHint", a.open_world_hint),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}: {v}")))
        .collect();
        if !hints.is_empty() {
            let _ = writeln!(out, "  annotations (the server's own hints): {}", hints.join(", "));
        }
    }
    let _ = writeln!(out, "  asked by: {}", safe(&request.rule.to_string()));
    if request.changed {
        let _ = writeln!(out, "  note: this tool's definition CHANGED since you last allowed it always");
    }
    let _ = write!(out, "[y]es once / [s]ession / [a]lways / [N]o: ");
    let _ = out.flush();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 {
        let _ = writeln!(out);
        return Approval::Deny;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "once" => Approval::AllowOnce,
        "s" | "session" => Approval::AllowSession,
        "a" | "always" => Approval::AllowAlways,
        _ => Approval::Deny,
    }
}

/// Strings longer than 200 characters cut, at any depth.
fn cut_values(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(short(s, 200)),
        Value::Array(a) => Value::Array(a.iter().map(cut_values).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), cut_values(v))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard::policy::{Rule, Verdict};

    fn request() -> ApprovalRequest {
        let mut rules = switchboard::config::PolicyRules::default();
        rules.ask = vec!["mcp__gh__*".into()];
        let layer =
            switchboard::config::PolicyLayer::new(switchboard::config::RuleSource::User, "/u.json".into(), rules);
        let policy = switchboard::policy::Policy::new(&[layer], None);
        let decision = policy.decide(switchboard::policy::ToolRef::new("mcp__gh__delete", "gh", "delete"));
        assert_eq!(decision.verdict, Verdict::Ask);
        let rule: Rule = decision.rule;
        let mut r = ApprovalRequest::new("gh", "delete", "mcp__gh__delete", rule);
        r.arguments = serde_json::from_value(json!({"repo": "me/x", "note": "n".repeat(500)})).ok();
        r.changed = true;
        r
    }

    #[test]
    fn the_question_shows_the_call_and_takes_each_answer() {
        for (typed, want) in [
            ("y\n", Approval::AllowOnce),
            ("s\n", Approval::AllowSession),
            ("always\n", Approval::AllowAlways),
            ("\n", Approval::Deny),
            ("", Approval::Deny),
            ("maybe\n", Approval::Deny),
        ] {
            let mut out = Vec::new();
            let got = ask(&request(), &mut typed.as_bytes(), &mut out);
            assert_eq!(got, want, "{typed:?}");
            let shown = String::from_utf8_lossy(&out);
            assert!(shown.contains("mcp__gh__delete (gh/delete)") && shown.contains("\"repo\": \"me/x\""), "{shown}");
            assert!(!shown.contains(&"n".repeat(300)), "long values are cut");
            assert!(shown.contains("CHANGED") && shown.contains("[y]es once / [s]ession / [a]lways / [N]o"));
            assert!(shown.contains("asked by: rule `ask: mcp__gh__*` of /u.json (user file)"), "{shown}");
        }
    }
}

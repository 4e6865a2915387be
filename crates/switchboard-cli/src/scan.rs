//! `switchboard scan [SERVER]`: what the checks find in servers' definitions, each with its
//! rule, severity, place, why and the words that raised it.

use anyhow::Result;
use serde_json::json;
use switchboard::Hub;
use switchboard::screen::{Severity, Target};

use crate::ctx::print_json;
use crate::render::{safe, short, table};

/// Shows the findings; 1 when one is at `medium` or above.
pub(crate) async fn show(hub: &Hub, only: Option<&str>, json: bool) -> Result<u8> {
    let mut found = hub.scan(only).await;
    found.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.server.cmp(&b.server)));
    let failing = found.iter().any(|f| f.severity >= Severity::Medium);
    let scanned: Vec<String> = hub
        .servers()
        .into_iter()
        .filter(|s| only.is_none_or(|o| o == s.name))
        .filter(|s| matches!(s.status, switchboard::status::ServerStatus::Connected { .. }))
        .map(|s| s.name)
        .collect();
    if json {
        print_json(&json!({"scanned": scanned, "findings": found}))?;
        return Ok(u8::from(failing));
    }
    if found.is_empty() {
        out!("Nothing found in the definitions of {} server(s): {}.", scanned.len(), scanned.join(", "));
        return Ok(0);
    }
    let mut t = table(&["SEVERITY", "RULE", "SERVER", "WHERE", "WHY"]);
    for f in &found {
        let rule = serde_json::to_value(f.rule)?.as_str().unwrap_or("?").to_string();
        let severity = serde_json::to_value(f.severity)?.as_str().unwrap_or("?").to_string();
        let place = match &f.target {
            Target::Instructions => "instructions".to_string(),
            Target::Tool(n) => format!("tool {n}, {}", f.field),
            Target::Prompt(n) => format!("prompt {n}, {}", f.field),
            Target::Resource(u) | Target::Template(u) => format!("resource {u}, {}", f.field),
            _ => f.field.clone(),
        };
        let why = match &f.evidence {
            Some(e) => format!("{}: \"{}\"", f.why, short(e, 90)),
            None => f.why.clone(),
        };
        t.add_row(vec![severity, rule, safe(&f.server), safe(&short(&place, 50)), safe(&why)]);
    }
    out!("{t}");
    out!("\n{} finding(s) in {} server(s) scanned.", found.len(), scanned.len());
    Ok(u8::from(failing))
}

//! The tool-call policy at the command line: `policy` (the decision for every tool, and the
//! rule of which file made it), `approvals` (remembered "always" answers, `--revoke`), `allow`
//! / `ask` / `deny` (editing the files, comments kept) and `audit` (reading the log). The
//! question put to the person when a rule says `ask` is `terminal::approve`.

use std::time::{Duration, SystemTime};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use switchboard::Hub;
use switchboard::policy::approvals::ApprovalStore;
use switchboard::policy::audit::AuditFilter;
use switchboard::status::ServerStatus;

use crate::ctx::{Ctx, print_json};
use crate::render::{safe, table};

/// `switchboard policy [TOOL]`.
pub fn show(ctx: &Ctx, hub: &Hub, tool: Option<&str>, json: bool) -> Result<u8> {
    let catalog = hub.catalog();
    let tools: Vec<_> = match tool {
        Some(name) => match catalog.tool(name) {
            Some(t) => vec![t.clone()],
            None => return Err(hub.missing_tool(name).into()),
        },
        None => catalog.tools().to_vec(),
    };
    let files: Vec<Value> =
        ctx.loaded.policy.iter().map(|l| json!({"file": l.file, "source": l.source, "rules": l.rules})).collect();
    let decisions: Vec<_> = tools.into_iter().map(|t| (hub.decide(&t), t)).map(|(d, t)| (t, d)).collect();
    // Rules are judged against every server's tools, not one tool's.
    let known = Known::of(hub, &catalog);
    let unmatched = if tool.is_none() { unmatched(ctx, &known) } else { Vec::new() };
    if json {
        let tools: Vec<Value> = decisions
            .iter()
            .map(|(t, d)| {
                json!({"name": t.name, "server": t.server, "tool": t.tool.name, "decision": d.verdict,
                       "rule": d.rule, "managed": d.managed, "rule_text": d.rule.to_string()})
            })
            .collect();
        print_json(&json!({"files": files, "tools": tools, "unmatched": unmatched}))?;
        return Ok(0);
    }
    if ctx.loaded.policy.is_empty() && ctx.loaded.managed.as_ref().is_none_or(|m| m.error.is_none()) {
        out!("No `policy` in any config file: every call is allowed.");
    }
    let rows: Vec<Vec<String>> = decisions
        .iter()
        .map(|(t, d)| {
            let mut word = d.verdict.to_string();
            if d.managed {
                word.push_str(" (managed)");
            }
            vec![safe(&t.name), word, d.rule.to_string()]
        })
        .collect();
    if rows.is_empty() {
        out!("No tools (see `switchboard list`).");
    } else {
        print_table(&["TOOL", "DECISION", "RULE"], rows)?;
    }
    let up = known.connected();
    for u in &unmatched {
        say_unmatched(u.list, &u.pattern, u.meant.as_deref(), up);
    }
    Ok(0)
}

/// `switchboard approvals [--revoke GLOB | --all]`.
pub async fn approvals(ctx: &Ctx, revoke: Option<&str>, all: bool, json: bool) -> Result<u8> {
    let dir = &ctx.paths.data_dir;
    // In the team's store when there is one (every gateway on it shares them).
    let db = ctx.store().await?;
    if revoke.is_some() || all {
        let glob = match revoke {
            Some(g) => Some(globset::Glob::new(g)?.compile_matcher()),
            None => None,
        };
        let forget = |s: &mut ApprovalStore| {
            s.revoke(|r| {
                glob.as_ref().is_none_or(|g| g.is_match(&r.name) || g.is_match(format!("{}/{}", r.server, r.tool)))
            })
        };
        let gone = match &db {
            Some(db) => ApprovalStore::update_in(db, forget).await?,
            None => ApprovalStore::update(dir, forget)?,
        };
        if json {
            print_json(&json!({"revoked": gone}))?;
        } else if gone.is_empty() {
            note!("no remembered approval matches `{}`", revoke.unwrap_or("*"));
            return Ok(1);
        } else {
            for r in &gone {
                out!("revoked: {} ({}/{})", safe(&r.name), safe(&r.server), safe(&r.tool));
            }
        }
        return Ok(0);
    }
    let store = match &db {
        Some(db) => ApprovalStore::open_in(db).await?,
        None => ApprovalStore::open(dir)?,
    };
    if json {
        let file = db.is_none().then(|| ApprovalStore::path(dir));
        let place = db.as_ref().map(|d| d.shown().to_string());
        print_json(&json!({"approvals": store.list(), "file": file, "store": place}))?;
        return Ok(0);
    }
    if store.list().is_empty() {
        out!("No remembered approvals (answer \"always\" when asked to add one).");
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = store
        .list()
        .iter()
        .map(|r| vec![safe(&r.name), format!("{}/{}", safe(&r.server), safe(&r.tool)), ago(r.approved_at)])
        .collect();
    print_table(&["TOOL", "SERVER/TOOL", "APPROVED"], rows)?;
    Ok(0)
}

fn print_table(header: &[&str], rows: Vec<Vec<String>>) -> Result<()> {
    let mut t = table(header);
    for row in rows {
        t.add_row(row);
    }
    out!("{t}");
    Ok(())
}

fn ago(unix: u64) -> String {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let secs = now.saturating_sub(unix);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// What the rules of the config match: those that match no tool of the connected servers,
/// with the pattern probably meant.
#[derive(Debug, serde::Serialize)]
pub struct Unmatched {
    /// The file that holds the rule.
    pub file: std::path::PathBuf,
    /// `allow`, `ask` or `deny`.
    pub list: &'static str,
    /// The pattern as written.
    pub pattern: String,
    /// A pattern close to it that matches a tool.
    pub meant: Option<String>,
}

/// What rules are judged against: the tools of the connected servers, and every server's
/// name and whether it is connected.
struct Known<'c> {
    tools: Vec<switchboard::policy::ToolRef<'c>>,
    servers: Vec<(String, bool)>,
}

impl<'c> Known<'c> {
    fn of(hub: &Hub, catalog: &'c switchboard::catalog::Catalog) -> Known<'c> {
        let tools = catalog
            .tools()
            .iter()
            .map(|e| switchboard::policy::ToolRef::new(&e.name, &e.server, e.tool.name.as_ref()))
            .collect();
        let servers =
            hub.servers().into_iter().map(|s| (s.name, matches!(s.status, ServerStatus::Connected { .. }))).collect();
        Known { tools, servers }
    }

    fn connected(&self) -> usize {
        self.servers.iter().filter(|(_, up)| *up).count()
    }

    /// `None` when `pattern` matches a tool, or may match one of a server that is not
    /// connected (its tools are not known); else the pattern probably meant, if any.
    fn judge(&self, pattern: &str) -> Option<Option<String>> {
        use switchboard::policy::suggest;
        if suggest::matches_any(pattern, &self.tools) {
            return None;
        }
        if self.servers.iter().any(|(name, up)| !up && suggest::may_name(pattern, name)) {
            return None;
        }
        let names: Vec<&str> = self.servers.iter().map(|(name, _)| name.as_str()).collect();
        Some(suggest::suggest(pattern, &names, &self.tools))
    }
}

/// Every rule of the config that matches no tool of the connected servers.
fn unmatched(ctx: &Ctx, known: &Known<'_>) -> Vec<Unmatched> {
    let mut found = Vec::new();
    for layer in &ctx.loaded.policy {
        for (list, patterns) in [("allow", &layer.rules.allow), ("ask", &layer.rules.ask), ("deny", &layer.rules.deny)]
        {
            for pattern in patterns {
                if let Some(meant) = known.judge(pattern) {
                    found.push(Unmatched { file: layer.file.clone(), list, pattern: pattern.clone(), meant });
                }
            }
        }
    }
    found
}

/// The warning for a rule that matches nothing.
fn say_unmatched(list: &str, pattern: &str, meant: Option<&str>, connected: usize) {
    let servers = if connected == 1 { "server" } else { "servers" };
    match meant {
        Some(m) => note!(
            "warning: `{list}: {}` matches no tool of the {connected} connected {servers}; did you mean `{}`?",
            safe(pattern),
            safe(m)
        ),
        None => note!(
            "warning: `{list}: {}` matches no tool of the {connected} connected {servers} (`switchboard tools` lists them)",
            safe(pattern)
        ),
    }
}

/// `switchboard allow|ask|deny GLOB [--scope user|project]`: the rule is written, then checked
/// against the tools of the servers (started for it), with a warning when it matches none.
pub async fn edit(ctx: &Ctx, list: &'static str, glob: &str, scope: &str) -> Result<u8> {
    let code = write_rule(ctx, list, glob, scope)?;
    crate::ctx::with_hub(ctx, None, |hub, _| async move {
        let catalog = hub.catalog();
        let known = Known::of(&hub, &catalog);
        if let Some(meant) = known.judge(glob) {
            say_unmatched(list, glob, meant.as_deref(), known.connected());
        }
        Ok(code)
    })
    .await
}

fn write_rule(ctx: &Ctx, list: &'static str, glob: &str, scope: &str) -> Result<u8> {
    let file = match scope {
        "project" => {
            if list == "allow" {
                bail!(
                    "a project file cannot allow tools (a repository must not allow its own); allow in your user file"
                );
            }
            ctx.loaded.project_root.join("switchboard.json")
        }
        _ => ctx.loaded.user_file.clone(),
    };
    let edit = switchboard::config::add_policy_rule(&file, list, glob)?;
    if edit.added {
        out!("{list}: `{}` added to {}", safe(glob), file.display());
    } else {
        out!("{list}: `{}` is already in {}", safe(glob), file.display());
    }
    for other in edit.moved_from {
        note!("note: `{}` was taken out of `policy.{other}` of that file", safe(glob));
    }
    Ok(0)
}

/// `--since 1h` → that long ago (`s`, `m`, `h`, `d`).
pub fn since(text: &str) -> Result<SystemTime> {
    let (n, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 =
        n.parse().map_err(|_| anyhow::anyhow!("--since `{text}`: expected a number and s, m, h or d (`1h`)"))?;
    let secs = match unit {
        "s" | "" => n,
        "m" | "min" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => bail!("--since `{text}`: the unit is s, m, h or d"),
    };
    Ok(SystemTime::now() - Duration::from_secs(secs))
}

/// What `switchboard audit` asks for.
pub struct AuditArgs<'a> {
    /// `--since 1h`.
    pub since: Option<&'a str>,
    /// `--server S`.
    pub server: Option<&'a str>,
    /// `--principal SUBJECT`.
    pub principal: Option<&'a str>,
    /// `--limit N`.
    pub limit: Option<usize>,
}

/// `switchboard audit [--since 1h] [--server S] [--principal P] [--limit N]`: the day files,
/// or the team's store's log.
pub async fn audit(ctx: &Ctx, args: AuditArgs<'_>, json: bool) -> Result<u8> {
    let since_text = args.since;
    let since = since_text.map(since).transpose()?;
    let filter = AuditFilter::new().since(since).server(args.server).principal(args.principal).limit(args.limit);
    let store = ctx.store().await?;
    let log = switchboard::policy::audit::read_from(&ctx.paths.data_dir, store.as_ref(), &filter).await?;
    if json {
        print_json(&json!({
            "calls": log.records,
            "lost_records": log.lost_records(),
            "lost": log.lost,
            "unreadable": log.unreadable,
        }))?;
        return Ok(0);
    }
    let lines = &log.records;
    if lines.is_empty() {
        out!("No calls in the audit log{}.", since_text.map(|s| format!(" in the last {s}")).unwrap_or_default());
    } else {
        let field = |l: &Value, k: &str| l.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let rows: Vec<Vec<String>> = lines
            .iter()
            .map(|l| {
                let caller = l.get("caller");
                let kind = caller.and_then(|c| c.get("kind")).and_then(Value::as_str).unwrap_or("");
                let subject = caller.and_then(|c| c.pointer("/principal/subject")).and_then(Value::as_str);
                let who = match subject {
                    Some(s) => format!("{kind}: {}", safe(s)),
                    None => kind.to_string(),
                };
                vec![
                    field(l, "time").get(..19).unwrap_or("").replace('T', " "),
                    who,
                    safe(&field(l, "name")),
                    field(l, "decision"),
                    field(l, "outcome"),
                    format!("{} ms", l.get("duration_ms").and_then(Value::as_u64).unwrap_or(0)),
                ]
            })
            .collect();
        print_table(&["TIME (UTC)", "CALLER", "TOOL", "DECISION", "OUTCOME", "TOOK"], rows)?;
    }
    if !log.lost.is_empty() {
        // One sentence for all of them (a host that lost a record at each of many exits wrote
        // a line each time); `--json` has each.
        let count = log.lost_records();
        let first = log.lost.iter().filter_map(|l| l.first.as_deref()).min();
        let last = log.lost.iter().filter_map(|l| l.last.as_deref()).max();
        let when = match (first, last) {
            (Some(a), Some(b)) if a != b => format!(" made between {} and {}", short_time(a), short_time(b)),
            (Some(a), _) => format!(" made at {}", short_time(a)),
            _ => String::new(),
        };
        let mut why: Vec<&str> = log.lost.iter().map(|l| l.error.as_str()).filter(|e| !e.is_empty()).collect();
        why.dedup();
        out!(
            "Lost: {count} record{}{when} could not be written ({}){}.",
            if count == 1 { "" } else { "s" },
            safe(&why.join("; ")),
            if log.lost.iter().any(|l| l.time.is_none()) {
                "; the log still cannot be written (counted in lost.json until it can)"
            } else {
                ""
            }
        );
    }
    for bad in &log.unreadable {
        out!(
            "Unreadable: {} line{} of {} (the first at line {}) {} not a record and {} left out.",
            bad.lines,
            if bad.lines == 1 { "" } else { "s" },
            bad.file.display(),
            bad.first_line,
            if bad.lines == 1 { "is" } else { "are" },
            if bad.lines == 1 { "is" } else { "are" },
        );
    }
    Ok(0)
}

/// `2026-12-04 07:31:02` of an RFC 3339 stamp.
fn short_time(stamp: &str) -> String {
    stamp.get(..19).unwrap_or(stamp).replace('T', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_units() {
        let now = SystemTime::now();
        let an_hour = since("1h").ok().and_then(|t| now.duration_since(t).ok()).unwrap_or_default();
        assert!((3599..=3601).contains(&an_hour.as_secs()), "{an_hour:?}");
        assert!(since("2d").is_ok() && since("90m").is_ok() && since("10").is_ok());
        assert!(since("h").is_err() && since("1y").is_err());
    }
}

//! Other tools' servers: `switchboard config sources` (what each tool's files hold),
//! `switchboard import` (into switchboard's own file), and the values of VS Code inputs
//! (`${input:ID}`): asked once on a terminal, kept in the data folder, `switchboard inputs`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde_json::json;
use switchboard::config::{self, Action, Found, InputStore, KnownFile, SourceScope, Tool};

use crate::ctx::{Ctx, print_json};
use crate::render::{safe, shown, table};
use crate::terminal::described;

/// Every place the tools keep servers, for this person and project.
fn known(ctx: &Ctx) -> Vec<KnownFile> {
    let home = ctx.options.env.get("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    config::known_files(&home, &ctx.loaded.project_root, &ctx.options.env)
}

/// The files switchboard reads already (so their servers need no import): those the load
/// looked at and found, a project's `.mcp.json` and included files among them.
fn read_already(ctx: &Ctx) -> Vec<PathBuf> {
    ctx.loaded.files.iter().filter(|f| f.found).map(|f| f.path.clone()).collect()
}

/// How a tool's file stands with switchboard.
fn use_of(ctx: &Ctx, path: &Path) -> &'static str {
    match ctx.loaded.files.iter().find(|f| f.found && f.path == path) {
        Some(f) if f.included_by.is_some() => "included",
        Some(_) => "read",
        None => "",
    }
}

/// `switchboard config sources`.
pub(crate) fn sources(ctx: &Ctx, json: bool) -> Result<u8> {
    let found = config::scan(&known(ctx), &ctx.loaded.project_root, &ctx.options.env);
    if json {
        let files: Vec<_> = found
            .iter()
            .map(|f| {
                json!({"tool": f.source.tool, "title": f.source.tool.title(), "scope": f.source.scope,
                    "path": f.source.path, "servers": f.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
                    "error": f.error, "used": use_of(ctx, &f.source.path)})
            })
            .collect();
        print_json(&json!({"sources": files}))?;
        return Ok(0);
    }
    if found.is_empty() {
        out!(
            "No other tool's MCP config found (looked in {} places: `config sources --json` is empty too).",
            known(ctx).len()
        );
        return Ok(0);
    }
    let mut t = table(&["TOOL", "SCOPE", "FILE", "SERVERS", "SWITCHBOARD"]);
    for f in &found {
        let servers = match &f.error {
            Some(e) => format!("unreadable: {}", safe(e)),
            None if f.servers.is_empty() => "none".into(),
            None => f.servers.iter().map(|s| safe(&s.name)).collect::<Vec<_>>().join(", "),
        };
        let used = match use_of(ctx, &f.source.path) {
            "" => "-",
            other => other,
        };
        t.add_row(vec![
            f.source.tool.title().into(),
            f.source.scope.to_string(),
            shown(&f.source.path),
            servers,
            used.into(),
        ]);
    }
    out!("{t}");
    let waiting: usize = found.iter().filter(|f| use_of(ctx, &f.source.path).is_empty()).map(|f| f.servers.len()).sum();
    if waiting > 0 {
        out!("Bring them in with `switchboard import` (`--dry-run` shows what it would do).");
    }
    Ok(0)
}

/// What `switchboard import` was asked.
pub(crate) struct ImportArgs {
    pub(crate) from: String,
    pub(crate) scope: String,
    pub(crate) dry_run: bool,
    pub(crate) json: bool,
}

/// The addresses switchboard answers MCP at on this machine, each with how that is known: the
/// running `serve` (its `serve.json`), the running hubs of workspaces (their records), and the
/// addresses README gives (`serve`'s default port, `gateway --http 7342`).
fn own_addresses(ctx: &Ctx) -> Vec<(reqwest::Url, String)> {
    let data = &ctx.paths.data_dir;
    let mut own = Vec::new();
    let mut add = |url: &str, how: String| {
        if let Ok(u) = reqwest::Url::parse(&format!("{}/mcp", url.trim_end_matches('/'))) {
            own.push((u, how));
        }
    };
    let read = |p: &Path| -> Option<serde_json::Value> {
        serde_json::from_slice(&switchboard::read_private(p).ok().flatten()?).ok()
    };
    if let Some(url) = read(&data.join("serve.json")).and_then(|v| v["url"].as_str().map(str::to_string)) {
        add(&url, format!("the address of the running `switchboard serve` ({})", data.join("serve.json").display()));
    }
    for entry in std::fs::read_dir(data.join("workspaces")).into_iter().flatten().flatten() {
        if let Some(record) = read(&entry.path())
            && let Some(url) = record["url"].as_str()
        {
            add(url, format!("the address of a running switchboard of a workspace ({})", entry.path().display()));
        }
    }
    let serve_default = switchboard_server::DEFAULT_PORT;
    add(
        &format!("http://127.0.0.1:{serve_default}"),
        format!("`switchboard serve`'s default address (port {serve_default})"),
    );
    add("http://127.0.0.1:7342", "the address README gives `switchboard gateway --http 7342`".into());
    own
}

/// Whether two MCP URLs are the same endpoint (loopback names alike, the query aside).
fn same_endpoint(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    let loopback = |u: &reqwest::Url| {
        let host = u.host_str().unwrap_or_default().trim_matches(|c| c == '[' || c == ']');
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    };
    let host = loopback(a) && loopback(b) || a.host_str() == b.host_str();
    host && a.port_or_known_default() == b.port_or_known_default() && a.path().trim_end_matches('/') == b.path()
}

/// Leaves out the entries that are switchboard itself (its command was left out by the scan;
/// here its addresses): imported, switchboard would start itself, or serve itself.
fn leave_out_switchboard(ctx: &Ctx, found: &mut [Found]) {
    let own = own_addresses(ctx);
    for server in found.iter_mut().flat_map(|f| f.servers.iter_mut()) {
        let Some(url) = server.entry.get("url").and_then(|u| u.as_str()).and_then(|u| reqwest::Url::parse(u).ok())
        else {
            continue;
        };
        if server.problem.is_none()
            && let Some((_, how)) = own.iter().find(|(o, _)| same_endpoint(&url, o))
        {
            server.problem =
                Some(format!("this is switchboard itself ({how}): imported, switchboard would serve itself"));
        }
    }
}

/// `switchboard import`.
pub(crate) fn import(ctx: &Ctx, args: &ImportArgs) -> Result<u8> {
    let tools: Vec<Tool> = if args.from == "all" {
        Tool::ALL.to_vec()
    } else {
        args.from.split(',').map(|t| t.trim().parse::<Tool>().map_err(|e| anyhow!(e))).collect::<Result<_>>()?
    };
    let scope = match args.scope.as_str() {
        "user" => SourceScope::User,
        "project" => SourceScope::Project,
        other => bail!("unknown scope `{other}`: use user or project"),
    };
    let files: Vec<KnownFile> =
        known(ctx).into_iter().filter(|f| tools.contains(&f.tool) && f.scope == scope).collect();
    let mut found = config::scan(&files, &ctx.loaded.project_root, &ctx.options.env);
    leave_out_switchboard(ctx, &mut found);
    let target = match scope {
        SourceScope::Project => crate::manage::project_file(&ctx.loaded.project_root),
        _ => ctx.paths.config_file.clone(),
    };
    let plan = config::plan_import(&found, &target, &read_already(ctx));
    let written = if args.dry_run || !plan.iter().any(|p| p.writes()) {
        0
    } else {
        config::apply_import(&plan, &target, Some(&InputStore::new(&ctx.paths.data_dir)))?
    };
    if args.json {
        let errors: Vec<_> =
            found.iter().filter_map(|f| f.error.as_ref().map(|e| json!({"file": f.source.path, "error": e}))).collect();
        print_json(&json!({"target": target, "dry_run": args.dry_run, "written": written, "servers": plan,
            "unreadable": errors}))?;
        return Ok(0);
    }
    report(&found, &plan, &target, args.dry_run, written, scope)?;
    Ok(0)
}

fn report(
    found: &[Found],
    plan: &[config::Planned],
    target: &Path,
    dry_run: bool,
    written: usize,
    scope: SourceScope,
) -> Result<()> {
    if found.is_empty() {
        out!(
            "No {scope} MCP config of another tool found{}.",
            if scope == SourceScope::User { " (`--scope project` looks in this project)" } else { "" }
        );
        return Ok(());
    }
    for f in found {
        out!("{} ({}):", f.source.tool.title(), shown(&f.source.path));
        if let Some(e) = &f.error {
            out!("  cannot be read: {}", safe(e));
            continue;
        }
        if f.servers.is_empty() {
            out!("  no servers");
        }
        for p in plan.iter().filter(|p| p.file == f.source.path) {
            let verb = if dry_run { "would add" } else { "added" };
            let line = match &p.action {
                Action::Add => format!("{verb} {}", p.name),
                Action::Rename { from, why } => {
                    let why = match why {
                        switchboard::config::RenameReason::Characters => {
                            "switchboard names take letters, digits, `_`, `-` and `.`"
                        }
                        switchboard::config::RenameReason::TooLong => "the name is over 64 characters",
                        _ => "the name is taken by another server",
                    };
                    format!("{verb} {} as {} ({why})", safe(from), p.name)
                }
                Action::AlreadyThere { name } => format!("{} is there already (as {name})", p.name),
                Action::Duplicate { of } => format!("{} is the same server as in {}", p.name, shown(of)),
                Action::Skip { reason } => format!("skipped {}: {}", safe(&p.name), safe(reason)),
                _ => format!("{}: left alone", p.name),
            };
            out!("  {line}");
            for n in &p.notes {
                let field = n.field.as_deref().map(|f| format!("`{}`: ", safe(f))).unwrap_or_default();
                out!("    note: {field}{}", safe(&n.message));
            }
        }
    }
    let adds = plan.iter().filter(|p| p.writes()).count();
    if dry_run {
        out!("{adds} server{} would be written to {} (nothing written: --dry-run).", plural(adds), shown(target));
    } else if written > 0 {
        out!("Imported {written} server{} into {}.", plural(written), shown(target));
        if scope == SourceScope::Project {
            out!("Project servers start once trusted: switchboard trust --all");
        }
    } else {
        out!("Nothing to import.");
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// What `switchboard inputs` was asked.
pub(crate) enum InputsArgs {
    List { json: bool },
    Set { id: String, file: Option<PathBuf> },
    Forget { id: String, file: Option<PathBuf> },
}

/// `switchboard inputs`.
pub(crate) fn inputs(ctx: &Ctx, args: InputsArgs) -> Result<u8> {
    let store = InputStore::new(&ctx.paths.data_dir);
    match args {
        InputsArgs::List { json } => {
            let given = store.list()?;
            if json {
                let given: Vec<_> = given.iter().map(|(f, id)| json!({"file": f, "id": id})).collect();
                print_json(&json!({"given": given, "missing": ctx.loaded.inputs_missing}))?;
                return Ok(0);
            }
            if given.is_empty() && ctx.loaded.inputs_missing.is_empty() {
                out!("No inputs given or needed.");
            }
            for (file, id) in &given {
                out!("{id}  given  ({})", shown(file));
            }
            for m in &ctx.loaded.inputs_missing {
                if m.each_persons {
                    let servers: Vec<&str> = m.servers.iter().map(String::as_str).collect();
                    out!(
                        "{}  each person's  ({}: {} takes each signed-in person's own, given on the gateway's values page)",
                        m.input.id,
                        shown(&m.file),
                        servers.join(", ")
                    );
                } else {
                    out!("{}  missing  ({}){}", m.input.id, shown(&m.file), described(&m.input));
                }
            }
            Ok(0)
        }
        InputsArgs::Set { id, file } => {
            let file = file_of(ctx, &id, file)?;
            let value = read_value(&id, &file)?;
            store.set(&file, &id, &value)?;
            out!("Kept the value of `{id}` for {} (in {}, readable by you alone).", shown(&file), shown(store.path()));
            Ok(0)
        }
        InputsArgs::Forget { id, file } => {
            let n = store.forget(file.as_deref(), &id)?;
            if n == 0 {
                bail!("no value of `{id}` is kept");
            }
            out!("Forgot {n} value{} of `{id}`.", plural(n));
            Ok(0)
        }
    }
}

/// The config file whose input `id` is meant: the one given, else the one that needs it.
fn file_of(ctx: &Ctx, id: &str, file: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(f) = file {
        return Ok(std::path::absolute(f)?);
    }
    let mut files: Vec<&PathBuf> =
        ctx.loaded.inputs_missing.iter().filter(|m| m.input.id == id).map(|m| &m.file).collect();
    files.dedup();
    match files.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!("no config file in use needs `{id}` now: say which with `--file`"),
        _ => bail!("several config files use `{id}`: say which with `--file`"),
    }
}

/// The value, typed (hidden) on a terminal or read as one line from stdin.
fn read_value(id: &str, file: &Path) -> Result<String> {
    if std::io::stdin().is_terminal() {
        let term = console::Term::stderr();
        let _ = write!(&term, "Value of `{id}` (for {}): ", shown(file));
        return Ok(term.read_secure_line()?);
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let value = line.trim_end_matches(['\n', '\r']).to_string();
    if value.is_empty() {
        bail!("no value on stdin");
    }
    Ok(value)
}

/// With no server configured: says which other tools have some, and how to bring them in.
pub(crate) fn hint(ctx: &Ctx) -> Result<()> {
    let files: Vec<KnownFile> = known(ctx).into_iter().filter(|f| f.scope == SourceScope::User).collect();
    let found = config::scan(&files, &ctx.loaded.project_root, &ctx.options.env);
    let mut tools: Vec<&str> = Vec::new();
    let mut count = 0;
    for f in found.iter().filter(|f| !f.servers.is_empty()) {
        count += f.servers.len();
        if !tools.contains(&f.source.tool.title()) {
            tools.push(f.source.tool.title());
        }
    }
    if count > 0 {
        out!(
            "{count} server{} found in {}'s config: bring them in with `switchboard import` (`--dry-run` to see first).",
            plural(count),
            tools.join(", ")
        );
    }
    Ok(())
}

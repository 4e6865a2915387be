//! Commands that change files: `add` (and `remove`/`enable`/`disable` through `edit`), which
//! edit config files keeping their comments, and `trust`, which records what the person saw.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value, json};
use switchboard::config::{self, NewServer, Scope, ServerEntry};
use switchboard::trust::TrustStore;

use crate::ctx::Ctx;
use crate::render;

pub(crate) fn add(
    ctx: &Ctx,
    name: &str,
    scope: &str,
    env: &[String],
    url: Option<&str>,
    headers: &[String],
    command: &[String],
) -> Result<u8> {
    let entry = match (url, command.split_first()) {
        (Some(url), None) => {
            let mut h = Map::new();
            for header in headers {
                let (k, v) =
                    header.split_once(':').ok_or_else(|| anyhow!("`--header {header}`: expected Name: value"))?;
                h.insert(k.trim().to_string(), Value::String(v.trim().to_string()));
            }
            let mut e = json!({"url": url});
            if !h.is_empty() {
                e["headers"] = Value::Object(h);
            }
            if !env.is_empty() {
                bail!("`--env` is for local servers; use `--header` for a remote one");
            }
            e
        }
        (None, Some((program, rest))) => {
            let mut e = json!({"command": program, "args": rest});
            let mut vars = Map::new();
            for kv in env {
                let (k, v) = kv.split_once('=').ok_or_else(|| anyhow!("`--env {kv}`: expected KEY=value"))?;
                vars.insert(k.to_string(), Value::String(v.to_string()));
            }
            if !vars.is_empty() {
                e["env"] = Value::Object(vars);
            }
            e
        }
        _ => bail!("give a command after `--` (a local server) or `--url` (a remote one)"),
    };
    let path: PathBuf =
        if scope == "project" { project_file(&ctx.loaded.project_root) } else { ctx.paths.config_file.clone() };
    config::write_server(&path, &NewServer::new(name, entry))?;
    out!("Added server `{name}` to {}.", path.display());
    if let Some(existing) = ctx.loaded.servers.get(name) {
        let wins = match (scope, existing.scope()) {
            ("project", Scope::User | Scope::Cli) => Some(existing.source().display().to_string()),
            _ => None,
        };
        if let Some(file) = wins {
            note!("note: `{name}` is also defined in {file}, which wins over project files");
        }
    }
    if scope == "project" {
        out!("Project servers start once trusted: switchboard trust {name}");
    }
    Ok(0)
}

/// The project's switchboard file: `switchboard.json` at the root, or `.switchboard/config.json`
/// when only that one exists.
pub(crate) fn project_file(root: &std::path::Path) -> PathBuf {
    let nested = root.join(".switchboard/config.json");
    if nested.exists() && !root.join("switchboard.json").exists() { nested } else { root.join("switchboard.json") }
}

/// `disable`: a user or `--config` server is disabled in its own file; a project server by an
/// override in the user file (the repository's file, shared with others, is left alone).
pub(crate) fn disable(ctx: &Ctx, name: &str) -> Result<u8> {
    let entry = ctx.loaded.servers.get(name).ok_or_else(|| crate::ctx::no_server(&ctx.loaded, name))?;
    if entry.scope() == Scope::Project {
        let user = &ctx.paths.config_file;
        config::disable_server(user, name, true)?;
        out!(
            "Disabled server `{name}` for you: an override in {} (the project's {} is unchanged).",
            user.display(),
            entry.source().display()
        );
    } else {
        config::disable_server(entry.source(), name, false)?;
        out!("Disabled server `{name}` in {}.", entry.source().display());
    }
    Ok(0)
}

/// `enable`: takes away what disables the server (an override in the user file, and
/// `enabled: false` in its own file), never writing `enabled: true`.
pub(crate) fn enable(ctx: &Ctx, name: &str) -> Result<u8> {
    let entry = ctx.loaded.servers.get(name).ok_or_else(|| crate::ctx::no_server(&ctx.loaded, name))?;
    let mut changed = Vec::new();
    let mut files = vec![ctx.paths.config_file.clone()];
    files.extend(ctx.loaded.files.iter().filter(|f| f.found && f.scope == Scope::Cli).map(|f| f.path.clone()));
    files.push(entry.source().to_path_buf());
    files.dedup();
    for file in files {
        if config::enable_server(&file, name)? {
            changed.push(file.display().to_string());
        }
    }
    if changed.is_empty() {
        out!("Server `{name}` is not disabled.");
    } else {
        out!("Enabled server `{name}` ({}).", changed.join(", "));
    }
    Ok(0)
}

pub(crate) fn edit(
    ctx: &Ctx,
    name: &str,
    f: impl FnOnce(&std::path::Path) -> Result<(), config::EditError>,
    verb: &str,
) -> Result<u8> {
    let entry = ctx.loaded.servers.get(name).ok_or_else(|| crate::ctx::no_server(&ctx.loaded, name))?;
    let path = entry.source().to_path_buf();
    f(&path)?;
    out!("{verb} server `{name}` in {}.", path.display());
    Ok(0)
}

pub(crate) fn trust(ctx: &Ctx, server: Option<&str>, all: bool, yes: bool) -> Result<u8> {
    let store = TrustStore::open(&ctx.paths.data_dir)?;
    let root = &ctx.loaded.project_root;
    let candidates: Vec<&config::ServerConfig> = ctx
        .loaded
        .servers
        .values()
        .filter_map(|e| match e {
            ServerEntry::Valid(c) if c.scope == Scope::Project => Some(c),
            _ => None,
        })
        .filter(|c| match server {
            Some(s) => c.name == s,
            None => all && !store.is_trusted(root, c),
        })
        .collect();
    if candidates.is_empty() {
        match server {
            Some(s) if ctx.loaded.servers.contains_key(s) => {
                bail!("`{s}` is not from a project file: user and --config servers are always trusted")
            }
            Some(s) => return Err(crate::ctx::no_server(&ctx.loaded, s)),
            None if all => {
                out!("Every project server is already trusted.");
                return Ok(0);
            }
            None => bail!("name a server, or use --all"),
        }
    }
    out!("Project: {}", root.display());
    for c in &candidates {
        out!("\n{}", console::style(render::safe(&c.name)).bold());
        for line in render::launch_lines(c) {
            out!("  {line}");
        }
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!("not a terminal: pass --yes to trust what is shown above");
        }
        let mut stdout = std::io::stdout().lock();
        write!(stdout, "\nTrust and allow {} to run? [y/N] ", if candidates.len() == 1 { "it" } else { "them" })?;
        stdout.flush()?;
        drop(stdout);
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            out!("Not trusted.");
            return Ok(1);
        }
    }
    // Under the store's lock: other processes trusting at the same time lose nothing.
    TrustStore::update(&ctx.paths.data_dir, |store| {
        for c in &candidates {
            store.trust(root, c);
        }
    })?;
    out!("Trusted {} server{}.", candidates.len(), if candidates.len() == 1 { "" } else { "s" });
    Ok(0)
}

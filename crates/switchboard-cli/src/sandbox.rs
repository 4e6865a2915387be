//! `switchboard sandbox check [SERVER]`: what this kernel can enforce, and what each stdio
//! server may read, write and reach (the rules it would start under now).

use anyhow::{Result, bail};
use serde_json::json;
use switchboard::config::{ServerEntry, TransportConfig};
use switchboard::sandbox::{Kernel, Place, carve, rules};

use crate::ctx::{Ctx, print_json};
use crate::render::safe;

/// `switchboard sandbox check`.
pub(crate) fn check(ctx: &Ctx, only: Option<&str>, json: bool) -> Result<u8> {
    if let Some(name) = only
        && !ctx.loaded.servers.contains_key(name)
    {
        return Err(crate::ctx::no_server(&ctx.loaded, name));
    }
    let kernel = Kernel::probe();
    let env = switchboard::config::host_env();
    let root = &ctx.loaded.project_root;
    let mut servers = Vec::new();
    let mut limits = std::collections::HashMap::new();
    for (name, entry) in &ctx.loaded.servers {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let ServerEntry::Valid(c) = entry else { continue };
        let TransportConfig::Stdio(s) = &c.transport else {
            if only.is_some() {
                bail!("`{name}` is a remote server: the sandbox is for the servers switchboard starts");
            }
            continue;
        };
        let cwd = s.cwd.clone().unwrap_or_else(|| root.clone());
        let place =
            Place::new(name, &cwd, root, &env, Some(&ctx.paths.data_dir), Some(ctx.paths.config_file.as_path()));
        let rules = rules(s.sandbox.as_ref(), &place);
        limits.insert(name.clone(), s.sandbox.as_ref().map(|s| s.limits).unwrap_or_default());
        let granted = rules.as_ref().map(|r| {
            let read = carve(&r.read, &r.hidden).map(|v| v.len());
            let write = carve(&r.write, &r.hidden).map(|v| v.len());
            (read, write)
        });
        servers.push((name.clone(), rules, granted));
    }
    let enforceable = kernel.landlock_abi >= 1;
    if json {
        let list: Vec<_> = servers
            .iter()
            .map(|(name, rules, granted)| {
                json!({"name": name, "on": rules.is_some(), "rules": rules, "limits": limits.get(name.as_str()),
                       "granted": granted.as_ref().map(|(r, w)| json!({"read": r.as_ref().ok(), "write": w.as_ref().ok()}))})
            })
            .collect();
        print_json(&json!({
            "kernel": {"landlock_abi": kernel.landlock_abi, "network_namespace": kernel.network_namespace.is_ok(),
                       "network_namespace_error": kernel.network_namespace.as_ref().err(),
                       "limits_by": "supervisor", "cgroup_v2": kernel.cgroup.as_ref().ok(),
                       "cgroup_v2_error": kernel.cgroup.as_ref().err()},
            "servers": list,
        }))?;
        return Ok(u8::from(!enforceable));
    }
    match kernel.landlock_abi {
        0 => out!("Landlock: not available: sandboxed servers will not start (\"sandbox\": false runs one without)"),
        abi if abi < 6 => out!("Landlock: ABI {abi}: files enforced; signals and abstract sockets not scoped (ABI 6)"),
        abi => out!("Landlock: ABI {abi}: files enforced; signals and abstract Unix sockets scoped"),
    }
    match &kernel.network_namespace {
        Ok(()) => out!("Network namespaces: available (\"network\": false is enforced)"),
        Err(e) => {
            out!("Network namespaces: not available ({}): servers with \"network\": false will not start", safe(e))
        }
    }
    // What keeps `limits`: the supervisor's watch, everywhere; what a cgroup could add here.
    match &kernel.cgroup {
        Ok(dir) => out!(
            "Limits: kept by each server's supervisor (every 200 ms); cgroup v2 delegated at {} (not used)",
            safe(&dir.display().to_string())
        ),
        Err(e) => out!("Limits: kept by each server's supervisor (every 200 ms); no cgroup v2 to use: {}", safe(e)),
    }
    for (name, rules, granted) in &servers {
        out!("");
        let Some(r) = rules else {
            out!("{}  sandbox OFF (\"sandbox\": false): it runs with all your rights", safe(name));
            continue;
        };
        out!("{}  sandbox on, network {}", safe(name), r.network);
        if let Some(l) = limits.get(name.as_str()).filter(|l| **l != switchboard::config::Limits::default()) {
            out!("  limits   {}", safe(&serde_json::to_string(l).unwrap_or_default()));
        }
        out!("  reads    everything under {} but:", list(&r.read));
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let shown = |p: &std::path::Path| match home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
            Some(rest) => format!("~/{}", rest.display()),
            None => p.display().to_string(),
        };
        const SHOWN: usize = 8;
        out!("           {}", safe(&r.hidden.iter().take(SHOWN).map(|h| shown(h)).collect::<Vec<_>>().join(", ")));
        if r.hidden.len() > SHOWN {
            out!("           and {} more (`--json` lists them)", r.hidden.len() - SHOWN);
        }
        out!("  writes   {}", list(&r.write));
        if let Some((read, write)) = granted {
            match (read, write) {
                (Ok(read), Ok(write)) => out!("  rules    {read} subtrees readable, {write} writable"),
                (Err(e), _) | (_, Err(e)) => out!("  rules    cannot be built: {}", safe(e)),
            }
        }
    }
    if servers.is_empty() {
        out!("\nNo stdio server is configured here.");
    }
    Ok(u8::from(!enforceable))
}

fn list(paths: &[std::path::PathBuf]) -> String {
    paths.iter().map(|p| safe(&p.display().to_string())).collect::<Vec<_>>().join(", ")
}

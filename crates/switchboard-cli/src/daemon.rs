//! One set of servers per workspace: `switchboard serve` and `gateway --http` publish a record
//! for their project root (`switchboard::workspace`); a stdio `gateway` of the same workspace,
//! with the same config in effect, attaches to it instead of starting its own servers (a
//! transparent gateway whose one upstream is the running hub's `/mcp`). `switchboard daemon
//! start|stop|status` runs one in the background.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde_json::json;
use switchboard::config::{self, LoadedConfig, Scope};
use switchboard::workspace::{self, Lookup, WorkspaceRecord};

use crate::ctx::{Ctx, print_json};

/// The name of the one upstream an attached gateway has (it appears in errors: "server
/// `workspace-hub` is not connected").
pub(crate) const UPSTREAM: &str = "workspace-hub";

/// Publishes this process's hub at `addr` for the workspace's stdio gateways and commands
/// (`kind`: `serve` or `gateway`), when `offered`; the record goes when the guard is dropped.
pub(crate) fn publish(
    ctx: &Ctx,
    kind: &str,
    addr: std::net::SocketAddr,
    offered: bool,
) -> Option<switchboard::workspace::Published> {
    if !offered {
        return None;
    }
    let record = WorkspaceRecord::new(kind, format!("http://{addr}"), &ctx.loaded);
    switchboard::workspace::publish(&ctx.paths.data_dir, &record)
        .inspect_err(|e| note!("warning: the workspace record: {e}"))
        .ok()
}

/// The running hub of this workspace with this config, if there is one to attach to.
pub(crate) fn attachable(ctx: &Ctx) -> Option<WorkspaceRecord> {
    match workspace::find(&ctx.paths.data_dir, &ctx.loaded.project_root, &workspace::config_key(&ctx.loaded)) {
        Lookup::Live(record) => Some(record),
        Lookup::Gone(record, why) => {
            tracing::info!(
                "the workspace's {} (pid {}) is not there ({why}): starting servers here",
                record.kind,
                record.pid
            );
            None
        }
        Lookup::OtherConfig(record) => {
            tracing::info!(
                "the workspace's {} (pid {}) runs another config: starting servers here",
                record.kind,
                record.pid
            );
            None
        }
        _ => None,
    }
}

/// The data folder's API token.
fn token(ctx: &Ctx) -> Result<String> {
    token_in(&ctx.paths.data_dir)
}

fn token_in(data_dir: &std::path::Path) -> Result<String> {
    let path = data_dir.join("serve-token");
    let bytes = switchboard::read_private(&path)?.ok_or_else(|| anyhow!("no token in {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).trim().to_string())
}

/// The config of a hub whose one server is the workspace's running hub (its `/mcp`, with
/// `profile` if one is asked for, and the names this gateway gives).
pub(crate) fn attached_config(
    ctx: &Ctx,
    record: &WorkspaceRecord,
    profile: Option<&str>,
    names: switchboard_gateway::Names,
) -> Result<LoadedConfig> {
    attached_config_for(&ctx.paths.data_dir, &ctx.loaded, record, profile, names)
}

/// [`attached_config`] from the data folder and the config the gateway would run itself.
pub(crate) fn attached_config_for(
    data_dir: &std::path::Path,
    own: &LoadedConfig,
    record: &WorkspaceRecord,
    profile: Option<&str>,
    names: switchboard_gateway::Names,
) -> Result<LoadedConfig> {
    let mut query = format!("?names={}", names.word());
    if let Some(p) = profile {
        query.push_str(&format!("&profile={p}"));
    }
    let entry = json!({
        "url": format!("{}/mcp{query}", record.url),
        "transport": "streamable-http",
        "headers": {"Authorization": format!("Bearer {}", token_in(data_dir)?)},
        // The running hub keeps each server's own timeouts; this one only bounds a call.
        "tool_timeout_ms": u64::try_from(config::MAX_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        "keep_alive": true,
    });
    let source = workspace::record_path(data_dir, &own.project_root);
    let (entry, diagnostics) = config::parse_server(UPSTREAM, &entry, Scope::User, &source, &Default::default());
    if let Some(d) = diagnostics.first() {
        bail!("attaching to {}: {d}", record.url);
    }
    let mut loaded = LoadedConfig::default();
    loaded.project_root = own.project_root.clone();
    loaded.secrets = own.secrets.clone();
    loaded.servers.insert(UPSTREAM.to_string(), entry);
    Ok(loaded)
}

/// `--require SERVER`: each must be connected (or idle: it starts at the first call) in the
/// running hub of the workspace; the first that is not fails the session with its status.
pub(crate) async fn require_remote(ctx: &Ctx, record: &WorkspaceRecord, required: &[String]) -> Result<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    let token = token(ctx)?;
    for name in required {
        let url = format!("{}/api/servers/{name}", record.url);
        let response = client.get(&url).bearer_auth(&token).send().await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            bail!("`--require {name}`: no such server in the workspace's {} ({})", record.kind, record.url);
        }
        let body: serde_json::Value = response.error_for_status()?.json().await?;
        let status = &body["status"];
        let state = status["state"].as_str().unwrap_or("unknown");
        if !matches!(state, "connected" | "idle") {
            let why = status["message"].as_str().or(status["reason"].as_str()).unwrap_or(state);
            bail!("`--require {name}`: the server is {state}: {why}");
        }
    }
    Ok(())
}

/// `--require SERVER` against this process's own hub.
pub(crate) fn require_local(hub: &switchboard::Hub, required: &[String]) -> Result<()> {
    for name in required {
        match hub.status(name) {
            None => bail!("`--require {name}`: no such server in the config"),
            Some(s) if matches!(s.state(), "connected" | "idle") => {}
            Some(s) => {
                let fix =
                    s.remedy(name).map(|r| format!("\nto fix it: {}", crate::render::fix(&r))).unwrap_or_default();
                bail!("`--require {name}`: the server is {}: {}{fix}", s.state(), s.summary())
            }
        }
    }
    Ok(())
}

/// What `switchboard daemon` was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Start,
    Stop,
    Status,
}

/// `switchboard daemon start|stop|status`.
pub(crate) async fn daemon(ctx: &Ctx, configs: &[PathBuf], action: Action, json: bool) -> Result<u8> {
    let data = &ctx.paths.data_dir;
    let root = &ctx.loaded.project_root;
    let lookup = workspace::find(data, root, &workspace::config_key(&ctx.loaded));
    match action {
        Action::Status => {
            let (state, record, detail) = match &lookup {
                Lookup::Live(r) => ("running", Some(r), None),
                Lookup::OtherConfig(r) => ("running-other-config", Some(r), None),
                Lookup::Gone(r, why) => ("gone", Some(r), Some(why.clone())),
                _ => ("none", None, None),
            };
            if json {
                print_json(&json!({"state": state, "project_root": root, "record": record, "detail": detail}))?;
            } else {
                match (state, record) {
                    ("running", Some(r)) => out!("{} (pid {}) serves {} at {}", r.kind, r.pid, root.display(), r.url),
                    ("running-other-config", Some(r)) => out!(
                        "{} (pid {}) serves {} at {}, with other config files than this command's: not shared",
                        r.kind,
                        r.pid,
                        root.display(),
                        r.url
                    ),
                    ("gone", Some(r)) => out!(
                        "no hub serves {}: the last, {} (pid {}), is gone ({})",
                        root.display(),
                        r.kind,
                        r.pid,
                        detail.unwrap_or_default()
                    ),
                    _ => out!("no hub serves {} (`switchboard daemon start` runs one)", root.display()),
                }
            }
            Ok(u8::from(state != "running"))
        }
        Action::Stop => {
            let record = match lookup {
                Lookup::Live(r) | Lookup::OtherConfig(r) => r,
                Lookup::Gone(r, why) => {
                    let _ = std::fs::remove_file(workspace::record_path(data, root));
                    out!("nothing to stop: {} (pid {}) is gone ({why})", r.kind, r.pid);
                    return Ok(0);
                }
                _ => {
                    out!("nothing to stop: no hub serves {}", root.display());
                    return Ok(0);
                }
            };
            let pid = nix::unistd::Pid::from_raw(i32::try_from(record.pid)?);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            while nix::sys::signal::kill(pid, None).is_ok() {
                if std::time::Instant::now() > deadline {
                    bail!("{} (pid {}) did not end within 15 s of SIGTERM", record.kind, record.pid);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            out!("stopped {} (pid {}) and its servers", record.kind, record.pid);
            Ok(0)
        }
        Action::Start => {
            if let Lookup::Live(r) = &lookup {
                out!("already running: {} (pid {}) at {}", r.kind, r.pid, r.url);
                return Ok(0);
            }
            if let Lookup::OtherConfig(r) = &lookup {
                bail!(
                    "{} (pid {}) serves this workspace with other config files: `switchboard daemon stop` it first",
                    r.kind,
                    r.pid
                );
            }
            start(ctx, configs).await
        }
    }
}

/// Starts `switchboard serve --port 0` for this workspace in the background (its own process
/// group, so the terminal's signals do not reach it; its output in a log next to its record)
/// and waits for its record.
async fn start(ctx: &Ctx, configs: &[PathBuf]) -> Result<u8> {
    use std::os::unix::process::CommandExt;
    let data = &ctx.paths.data_dir;
    let root = &ctx.loaded.project_root;
    let (log_path, log) = workspace::open_log(data, root)?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    for c in configs {
        cmd.arg("--config").arg(std::path::absolute(c)?);
    }
    cmd.args(["serve", "--port", "0"])
        .current_dir(std::env::current_dir()?)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    let mut child = cmd.spawn()?;
    let key = workspace::config_key(&ctx.loaded);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        match workspace::find(data, root, &key) {
            Lookup::Live(r) if r.pid == child.id() => {
                out!("started serve (pid {}) for {} at {}", r.pid, root.display(), r.url);
                out!("  gateways and commands of this workspace use its servers; log: {}", log_path.display());
                return Ok(0);
            }
            Lookup::OtherConfig(r) if r.pid == child.id() => {
                note!("warning: the daemon (pid {}) sees other config files than this command (see its log)", r.pid);
                return Ok(0);
            }
            _ => {}
        }
        if let Some(status) = child.try_wait()? {
            let tail = std::fs::read_to_string(&log_path).unwrap_or_default();
            let last: Vec<&str> = tail.lines().rev().take(5).collect();
            bail!("the daemon ended at once ({status}): {}", last.into_iter().rev().collect::<Vec<_>>().join(" / "));
        }
        if std::time::Instant::now() > deadline {
            bail!("the daemon did not answer within 60 s (log: {})", log_path.display());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

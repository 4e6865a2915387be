//! Starting a local server: spawn it, then run the handshake over its pipes.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::ClientServiceExt;
use rmcp::service::{ClientInitializeError as Init, RoleClient, RunningService};
use tokio::time::Instant;

use super::handler::Handler;
use super::{ConnectCtx, StartFailure, end_with};
use crate::config::{ServerConfig, StdioConfig};
use crate::process::{self, ProcessTree};
use crate::status::FailureKind;
use crate::transport::StdioTransport;

/// Spawns the server and runs `initialize` before `deadline`. On failure the process tree is
/// already ended.
pub(super) async fn start(
    config: &ServerConfig,
    stdio: &StdioConfig,
    ctx: &ConnectCtx,
    handler: Handler,
    deadline: Instant,
) -> Result<(RunningService<RoleClient, Handler>, Arc<ProcessTree>, tokio::sync::watch::Receiver<bool>), StartFailure> {
    let spawn_ctx = process::SpawnCtx {
        server: &config.name,
        default_cwd: &ctx.project_root,
        host_env: &ctx.host_env,
        marker: &ctx.marker,
        chain: &ctx.chain,
        shutdown: process::Shutdown { grace: config.shutdown_grace },
        record: ctx.record.as_ref(),
        data_dir: Some(&ctx.paths.data_dir),
        config_file: Some(&ctx.paths.config_file),
        refusals: Some(&ctx.refusals),
    };
    let spawned = process::spawn(stdio, spawn_ctx).map_err(|e| {
        let kind = match e {
            process::SpawnError::Sandbox { .. } => FailureKind::SandboxUnavailable,
            _ => FailureKind::ProcessStartFailed,
        };
        StartFailure::new(kind, e.to_string())
    })?;
    let tree = spawned.tree.clone();
    ctx.trees.push(tree.clone());
    let transport =
        StdioTransport::new(&config.name, spawned.stdout, spawned.stdin, config.max_message_bytes, ctx.events.clone())
            .notification_rate(ctx.notification_rate)
            .progress_router(handler.progress.clone());
    let closed = transport.closed();
    let outcome = tokio::time::timeout_at(deadline, {
        // Over stdio `initialize` unless a version is pinned: a legacy server may not answer a
        // `server/discover` probe at all (rmcp's fallback waits 10 s), and every server that
        // speaks 2026-07-28 is asked to keep the handshake for older clients.
        let lifecycle = handler.lifecycle(false);
        handler.serve_with_lifecycle(transport, lifecycle)
    })
    .await;
    let (kind, message) = match outcome {
        Ok(Ok(service)) => return Ok((service, tree, closed)),
        Ok(Err(e)) => {
            // The server answered, but not with a handshake we can use: it may exit right
            // after, yet the answer is the cause.
            let answered = matches!(
                e,
                Init::JsonRpcError(_)
                    | Init::NoCompatibleProtocolVersion { .. }
                    | Init::ExpectedInitResponse(Some(_))
                    | Init::ExpectedInitResult(Some(_))
                    | Init::ConflictInitResponseId(..)
            );
            // Otherwise most handshake failures are a process that died: report its exit.
            let exit = if answered { None } else { tree.exited_within(Duration::from_millis(500)).await };
            match exit {
                // A switchboard that refused to be its own upstream: the config is to change.
                // (whatever code a wrapper such as `npx` or `sh -c` made of its exit: the
                // refusal is the cause, not a sandbox's hints)
                Some(_) if crate::chain::is_refusal(&tree.stderr.lines()) => {
                    let why = tree.stderr.lines().into_iter().find(|l| l.contains("switchboard refuses to"));
                    (FailureKind::ConfigInvalid, format!("`{}`: {}", stdio.command_shown(), why.unwrap_or_default()))
                }
                Some(_) if tree.sandbox_refusal().is_some() => (
                    FailureKind::SandboxUnavailable,
                    format!(
                        "`{}` could not start in its sandbox: {}",
                        stdio.command_shown(),
                        tree.sandbox_refusal().unwrap_or_default()
                    ),
                ),
                Some(info) => {
                    let mut message = format!("`{}` exited during start-up ({info})", stdio.command_shown());
                    for r in ctx.refusals.list() {
                        message.push_str(&format!(
                            "\nits sandbox refused {} {}: to allow it, add {} to its entry",
                            serde_json::to_value(r.kind)
                                .ok()
                                .and_then(|v| v.as_str().map(String::from))
                                .unwrap_or_default(),
                            r.target,
                            r.allow
                        ));
                    }
                    (FailureKind::ProcessExited, message)
                }
                None => (FailureKind::ProtocolNegotiationFailed, format!("initialize failed: {e}")),
            }
        }
        Err(_) => (
            FailureKind::StartupTimeout,
            format!(
                "did not finish start-up within {} (startup_timeout_ms)",
                crate::text::human(config.startup_timeout)
            ),
        ),
    };
    Err(end_with(Some(tree), kind, message).await)
}

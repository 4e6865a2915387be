//! The host's side of the supervisor's socket (Linux).

use std::io::Read;
use std::sync::{Arc, OnceLock};

use tokio::io::AsyncReadExt;
use tokio::process::Child;
use tokio::sync::watch;

use super::{ExitInfo, LimitHit, OPT_OUT, SpawnCtx, record, shim};

/// Where what the supervisor and the server say goes.
pub(super) struct Told {
    /// How the server ended.
    pub exit: watch::Sender<Option<ExitInfo>>,
    /// The whole tree is gone.
    pub finished: watch::Sender<bool>,
    /// Why its sandbox could not be set up.
    pub refusal: Arc<OnceLock<String>>,
    /// Its limits (to name the one it went past).
    pub limits: crate::config::Limits,
}

/// Reads the server's pid, records the supervisor, and starts the task that follows it.
pub(super) fn handshake(
    host_end: std::os::unix::net::UnixStream,
    mut child: Child,
    ctx: SpawnCtx<'_>,
    supervisor: i32,
    told: Told,
) -> std::io::Result<(i32, tokio::net::unix::OwnedWriteHalf)> {
    let Told { exit: exit_tx, finished: finished_tx, refusal, limits } = told;
    let mut first = [0u8; 5];
    host_end.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut read = (&host_end).read_exact(&mut first);
    // The server's word about its sandbox may come before the supervisor's.
    if read.is_ok() && first[0] == shim::MSG_SANDBOX {
        let _ = refusal.set(refusal_text(i32::from_ne_bytes([first[1], first[2], first[3], first[4]])));
        read = (&host_end).read_exact(&mut first);
    }
    if read.is_err() || first[0] != shim::MSG_PID {
        let _ = child.start_kill();
        return Err(std::io::Error::other("the supervisor did not report the server's pid"));
    }
    let pid = i32::from_ne_bytes([first[1], first[2], first[3], first[4]]);
    host_end.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(host_end)?;
    let (mut reader, writer) = stream.into_split();
    let entry = record::Entry::new(ctx.server, supervisor, pid, ctx.marker);
    let record = ctx.record.cloned();
    if let (Some(r), Some(e)) = (&record, &entry) {
        r.add(e.clone());
    }
    let server = ctx.server.to_string();
    tokio::spawn(async move {
        let mut told = false;
        let mut hit = None;
        let mut msg = [0u8; 5];
        while reader.read_exact(&mut msg).await.is_ok() {
            let value = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
            match msg[0] {
                shim::MSG_EXIT => {
                    told = true;
                    let _ = exit_tx.send(Some(ExitInfo { limit: hit, ..ExitInfo::from_wait_status(value) }));
                }
                shim::MSG_LIMIT => {
                    hit = match value {
                        shim::LIMIT_MEMORY => limits.memory_mb.map(|mb| LimitHit::Memory { mb }),
                        _ => limits.processes.map(|max| LimitHit::Processes { max: u64::from(max) }),
                    };
                    if let Some(h) = hit {
                        tracing::warn!(server = %server, "{h}");
                    }
                }
                shim::MSG_SANDBOX => {
                    let _ = refusal.set(refusal_text(value));
                }
                shim::MSG_LEFTOVERS => {
                    tracing::info!(server = %server, "ended {value} process(es) the server left behind");
                }
                _ => {}
            }
        }
        let status = child.wait().await;
        if !told {
            // The supervisor died before the server did (it was killed): the server died
            // with it; sweep what the server had started.
            use std::os::unix::process::ExitStatusExt;
            let signal = status.ok().and_then(|s| s.signal());
            tracing::warn!(server = %server, "the supervisor of this server was killed (signal {signal:?}); ending what is left");
            if let Some(e) = &entry {
                let ended = e.sweep();
                if ended > 0 {
                    tracing::warn!(server = %server, "ended {ended} process(es) left by the server");
                }
            }
            let _ =
                exit_tx.send(Some(ExitInfo { code: None, signal: Some(signal.unwrap_or(libc::SIGKILL)), limit: None }));
        }
        if let (Some(r), Some(e)) = (&record, &entry) {
            r.remove(e);
        }
        let _ = finished_tx.send(true);
    });
    Ok((pid, writer))
}

/// What a server's report about its sandbox (`step << 24 | errno`) means, with how to opt out.
fn refusal_text(value: i32) -> String {
    let step = u8::try_from(value >> 24).unwrap_or(0);
    let errno = value & 0x00ff_ffff;
    let e = std::io::Error::from_raw_os_error(errno);
    let hint = match (step, errno) {
        (1 | 2, libc::EPERM | libc::EACCES | libc::ENOSPC | libc::EINVAL) => {
            ": this system does not let unprivileged users make user namespaces \
             (`kernel.unprivileged_userns_clone`, `user.max_user_namespaces`, or an AppArmor rule); \
             `\"network\": true` keeps the rest of the sandbox"
        }
        _ => "",
    };
    format!("{} failed ({e}){hint}; {OPT_OUT}", crate::sandbox::confine::step_name(step))
}

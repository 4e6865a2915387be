//! Child processes for stdio servers: spawn with a minimal environment in a new process group,
//! drain stderr into a bounded tail, and end the whole tree on close.
//!
//! The shutdown sequence ([`ProcessTree::terminate`]): stdin is already closed by the caller,
//! then the process gets a short grace to exit, then SIGTERM goes to its group and to every
//! descendant found through `/proc` (by parent links, and by a marker variable that survives
//! `setsid` and re-parenting), then SIGKILL to all of them. Bounded: it returns within about
//! 1.5 s whatever the children do.

mod env;
mod reap;
mod stderr;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

pub use env::{DEFAULT_ENV_VARS, child_env};
pub use reap::{descendants, pids_with_marker};
pub use stderr::StderrTail;

use crate::config::StdioConfig;

/// Name of the marker variable set in every server's environment, so its descendants can be
/// found even after they leave the process group and are re-parented.
pub const MARKER_VAR: &str = "SWITCHBOARD_SERVER_ID";

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ExitInfo {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal number, if it was killed by one.
    pub signal: Option<i32>,
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => write!(f, "killed by signal {s}"),
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// Why a process could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The program was not found.
    #[error("command `{command}` not found (PATH searched: {path})")]
    NotFound {
        /// The program.
        command: String,
        /// The PATH the child would have had.
        path: String,
    },
    /// The working directory does not exist.
    #[error("working directory `{0}` does not exist")]
    NoCwd(String),
    /// Anything else the OS said.
    #[error("could not start `{command}`: {source}")]
    Io {
        /// The program.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// A spawned server process: its pipes, and a handle that watches and ends its tree.
#[derive(Debug)]
pub struct Spawned {
    /// The child's stdin (the transport writes here).
    pub stdin: ChildStdin,
    /// The child's stdout (the transport reads here).
    pub stdout: ChildStdout,
    /// The running tree.
    pub tree: Arc<ProcessTree>,
}

/// A child process and everything it starts.
#[derive(Debug)]
pub struct ProcessTree {
    pid: i32,
    marker: String,
    exit: watch::Receiver<Option<ExitInfo>>,
    /// The last lines of stderr.
    pub stderr: Arc<StderrTail>,
}

/// Starts `config` as a child in a new process group, with stdin/stdout piped for the
/// transport and stderr drained continuously into a [`StderrTail`].
pub fn spawn(
    server: &str,
    config: &StdioConfig,
    default_cwd: &Path,
    host_env: &HashMap<String, String>,
    marker: String,
) -> Result<Spawned, SpawnError> {
    let mut env = child_env(config, host_env);
    env.insert(MARKER_VAR.to_string(), marker.clone());
    let cwd = config.cwd.clone().unwrap_or_else(|| default_cwd.to_path_buf());
    if !cwd.is_dir() {
        return Err(SpawnError::NoCwd(cwd.display().to_string()));
    }
    let mut cmd = Command::new(&config.command);
    cmd.args(&config.args)
        .env_clear()
        .envs(&env)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child: Child = cmd.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound if !config.command.contains('/') => {
            SpawnError::NotFound { command: config.command.clone(), path: env.get("PATH").cloned().unwrap_or_default() }
        }
        std::io::ErrorKind::NotFound => SpawnError::NotFound {
            command: config.command.clone(),
            path: "(not searched: the command is a path)".into(),
        },
        _ => SpawnError::Io { command: config.command.clone(), source },
    })?;
    let io_err = |what: &str| SpawnError::Io {
        command: config.command.clone(),
        source: std::io::Error::other(format!("no {what} pipe")),
    };
    let stdin = child.stdin.take().ok_or_else(|| io_err("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| io_err("stdout"))?;
    let stderr_pipe = child.stderr.take().ok_or_else(|| io_err("stderr"))?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    let tail = Arc::new(StderrTail::new(50));
    tokio::spawn(stderr::drain(server.to_string(), stderr_pipe, tail.clone()));
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let info = match child.wait().await {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                ExitInfo { code: status.code(), signal: status.signal() }
            }
            Err(_) => ExitInfo { code: None, signal: None },
        };
        let _ = exit_tx.send(Some(info));
    });
    Ok(Spawned { stdin, stdout, tree: Arc::new(ProcessTree { pid, marker, exit: exit_rx, stderr: tail }) })
}

impl ProcessTree {
    /// The child's process id (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// How the child ended, if it has.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the child has exited (returns at once if it has).
    pub async fn exited(&self) -> Option<ExitInfo> {
        let mut rx = self.exit.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(v) => *v,
            Err(_) => None,
        }
    }

    /// Waits at most `d` for the child to exit; on exit, also lets stderr drain (≤ 500 ms).
    pub async fn exited_within(&self, d: Duration) -> Option<ExitInfo> {
        let info = tokio::time::timeout(d, self.exited()).await.ok().flatten();
        if info.is_some() {
            self.stderr.settled(Duration::from_millis(500)).await;
        }
        info
    }

    /// Ends the child and every descendant. Call after stdin is closed. Bounded in time.
    pub async fn terminate(&self) {
        const GRACE: Duration = Duration::from_millis(300);
        const TERM_GRACE: Duration = Duration::from_millis(700);
        if self.pid <= 0 {
            return;
        }
        // Take the tree while the child still links it together.
        let mut known = reap::tree_pids(self.pid, &self.marker);
        if self.exited_within(GRACE).await.is_none() || !known.is_empty() {
            known.extend(reap::tree_pids(self.pid, &self.marker));
            reap::signal_all(self.pid, &known, nix::sys::signal::Signal::SIGTERM);
            let deadline = tokio::time::Instant::now() + TERM_GRACE;
            loop {
                let alive = self.exit_info().is_none() || reap::any_alive(&known);
                if !alive || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        known.extend(reap::tree_pids(self.pid, &self.marker));
        reap::signal_all(self.pid, &known, nix::sys::signal::Signal::SIGKILL);
        let _ = self.exited_within(Duration::from_millis(300)).await;
    }
}

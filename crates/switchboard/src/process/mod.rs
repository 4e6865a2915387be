//! Child processes for stdio servers: spawn with a minimal environment, drain stderr into a
//! bounded tail, and end the whole tree however the host ends.
//!
//! On Linux every server runs under a supervisor of its own ([`shim`]): a child subreaper
//! forked from the host that no descendant of the server can escape (`setsid`, a cleared
//! environment, a double fork), which ends the tree when the host asks, when the server exits
//! (its leftovers), and when the host dies by any means, SIGKILL included (it sees the host's
//! end of a socket close). The ending sequence is ZCode's: stdin closed, `shutdown_grace_ms`,
//! SIGINT, 250 ms, SIGTERM, 750 ms, SIGKILL. The host learns the server's pid and exit status
//! from the supervisor. A supervisor that is itself killed takes the server with it
//! (`PR_SET_PDEATHSIG`); what the server had started is then found by the [`record`] of
//! running supervisors kept in the data folder (pid plus start time), at once if the host
//! still runs, or at the next start.
//!
//! Elsewhere (other Unix systems) the server runs in a process group of its own and the same
//! sequence is sent to the group: descendants that leave the group can escape there (see
//! docs/ARCHITECTURE.md for what macOS and Windows need).

mod env;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod reap;
pub mod record;
#[cfg(target_os = "linux")]
mod shim;
mod stderr;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

pub use env::child_env;
pub use stderr::StderrTail;

use crate::config::StdioConfig;

/// Name of the marker variable set in every server's environment: the last resort for finding
/// what a server started when its supervisor was killed.
pub const MARKER_VAR: &str = "SWITCHBOARD_SERVER_ID";

/// Wait between SIGINT and SIGTERM, and between SIGTERM and SIGKILL (ZCode's).
const INT_GRACE: Duration = Duration::from_millis(250);
const TERM_GRACE: Duration = Duration::from_millis(750);
/// What a server that exited left behind gets between SIGTERM and SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_millis(300);

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ExitInfo {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal number, if it was killed by one.
    pub signal: Option<i32>,
    /// The limit its tree went past, when that is why it was ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitHit>,
}

/// A limit a server's tree went past (it was ended for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "limit")]
#[non_exhaustive]
pub enum LimitHit {
    /// The resident memory of all its processes (`limits.memoryMB`).
    Memory {
        /// The limit, in MiB.
        mb: u64,
    },
    /// Its processes at once (`limits.processes`).
    Processes {
        /// The limit.
        max: u64,
    },
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Memory { mb } => {
                write!(
                    f,
                    "ended past its memory limit: more than {mb} MiB resident in its processes together (`limits.memoryMB`)"
                )
            }
            LimitHit::Processes { max } => {
                write!(f, "ended past its process limit: more than {max} processes (`limits.processes`)")
            }
        }
    }
}

impl ExitInfo {
    fn from_wait_status(st: i32) -> ExitInfo {
        if libc::WIFEXITED(st) {
            ExitInfo { code: Some(libc::WEXITSTATUS(st)), signal: None, limit: None }
        } else if libc::WIFSIGNALED(st) {
            ExitInfo { code: None, signal: Some(libc::WTERMSIG(st)), limit: None }
        } else {
            ExitInfo { code: None, signal: None, limit: None }
        }
    }
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(limit) = self.limit {
            return write!(f, "{limit}");
        }
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
    /// Its sandbox could not be set up (before it was started, or by the server's process
    /// before it ran the command).
    #[error("could not start `{command}` in its sandbox: {why}")]
    Sandbox {
        /// The program.
        command: String,
        /// What failed, and how to opt out.
        why: String,
    },
    /// Anything else the OS said.
    #[error("could not start `{command}`: {source}")]
    Io {
        /// The program.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// How a server's tree is ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shutdown {
    /// Time after the server's stdin is closed before SIGINT (`shutdown_grace_ms`).
    pub grace: Duration,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown { grace: crate::config::DEFAULT_SHUTDOWN_GRACE }
    }
}

impl Shutdown {
    /// The longest the whole sequence takes (grace, SIGINT, SIGTERM, SIGKILL), with a margin.
    pub fn bound(&self) -> Duration {
        self.grace + INT_GRACE + TERM_GRACE + Duration::from_millis(300)
    }
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

/// A server process and everything it starts.
#[derive(Debug)]
pub struct ProcessTree {
    /// The server's pid.
    pid: i32,
    /// The supervisor's pid (Linux), or the server's.
    supervisor: i32,
    /// How the server ended (from the supervisor), once it has.
    exit: watch::Receiver<Option<ExitInfo>>,
    /// True once the supervisor (and so the whole tree) is gone.
    finished: watch::Receiver<bool>,
    /// Commands to the supervisor; dropping it (with the tree) tells the supervisor to end
    /// everything, as the host's death does.
    #[cfg(target_os = "linux")]
    control: tokio::sync::Mutex<Option<tokio::net::unix::OwnedWriteHalf>>,
    shutdown: Shutdown,
    /// The last lines of stderr.
    pub stderr: Arc<StderrTail>,
    /// What went wrong setting up its sandbox, if something did (then it exited).
    refusal: Arc<std::sync::OnceLock<String>>,
}

/// Where a server is started from: its name, its folder, the host's environment, the marker
/// for its descendants, how it is ended, and the record of running supervisors.
#[derive(Debug, Clone, Copy)]
pub struct SpawnCtx<'a> {
    /// The server's name (for logs and the record).
    pub server: &'a str,
    /// The folder a server without `cwd` runs in.
    pub default_cwd: &'a Path,
    /// The host environment the child's is drawn from.
    pub host_env: &'a HashMap<String, String>,
    /// The value of [`MARKER_VAR`] in the child's environment.
    pub marker: &'a str,
    /// The value of [`crate::chain::CHAIN_VAR`] in it (empty: none).
    pub chain: &'a str,
    /// How the tree is ended.
    pub shutdown: Shutdown,
    /// Where running supervisors are recorded.
    pub record: Option<&'a Arc<record::Record>>,
    /// switchboard's data folder and user config file (hidden from sandboxed servers; the
    /// data folder holds their state folders).
    pub data_dir: Option<&'a Path>,
    /// The user config file.
    pub config_file: Option<&'a Path>,
    /// Where what its sandbox refuses is told (judged against its rules).
    pub refusals: Option<&'a Arc<crate::sandbox::Refusals>>,
}

/// The name of the variable that tells a sandboxed server its own writable state folder.
pub const STATE_DIR_VAR: &str = "SWITCHBOARD_STATE_DIR";

/// How to opt out, for messages about a sandbox that could not be set up.
pub(crate) const OPT_OUT: &str =
    "set `\"sandbox\": false` in the server's entry to run it without one (or narrow what it asks)";

/// The capacity asked for the pipe a server writes its messages into (Linux's default is
/// 64 KiB). A big result then crosses in a few writes instead of one wake-up of each side per
/// 64 KiB: for a 1 MiB result that was 16 round trips between the CPUs. The kernel gives pages
/// only as they are written, so an idle pipe costs nothing more.
const STDOUT_PIPE_BYTES: i32 = 256 * 1024;

/// Asks for [`STDOUT_PIPE_BYTES`] of pipe: a system whose `fs.pipe-max-size` is lower (or a
/// user over `fs.pipe-user-pages-soft`) keeps the default, which only costs speed.
fn widen_pipe(stdout: &tokio::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsFd;
        if let Err(e) = nix::fcntl::fcntl(stdout.as_fd(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES)) {
            tracing::debug!("the server's stdout pipe keeps its size: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdout;
}

/// Starts `config` with stdin/stdout piped for the transport and stderr drained continuously
/// into a [`StderrTail`] (on Linux under its supervisor).
pub fn spawn(config: &StdioConfig, ctx: SpawnCtx<'_>) -> Result<Spawned, SpawnError> {
    let mut env = child_env(config, ctx.host_env);
    env.insert(MARKER_VAR.to_string(), ctx.marker.to_string());
    if !ctx.chain.is_empty() {
        env.insert(crate::chain::CHAIN_VAR.to_string(), ctx.chain.to_string());
    }
    let cwd = config.cwd.clone().unwrap_or_else(|| ctx.default_cwd.to_path_buf());
    if !cwd.is_dir() {
        let shown = config.cwd_shown().unwrap_or_else(|| cwd.display().to_string());
        return Err(SpawnError::NoCwd(shown));
    }
    let shown = config.command_shown().to_string();
    let place =
        crate::sandbox::Place::new(ctx.server, &cwd, ctx.default_cwd, ctx.host_env, ctx.data_dir, ctx.config_file);
    let home = place.home;
    let rules = crate::sandbox::rules(config.sandbox.as_ref(), &place);
    let limits = config.sandbox.as_ref().map(|s| s.limits).unwrap_or_default();
    if let Some(r) = ctx.refusals {
        r.set_rules(rules.clone(), home);
    }
    let refused = |why: String| SpawnError::Sandbox { command: shown.clone(), why: format!("{why}; {OPT_OUT}") };
    #[cfg(target_os = "linux")]
    let prepared =
        rules.as_ref().map(crate::sandbox::landlock::prepare).transpose().map_err(|e| refused(e.to_string()))?;
    #[cfg(not(target_os = "linux"))]
    if rules.is_some() {
        return Err(refused("the sandbox is built on Linux only (Landlock)".into()));
    }
    #[cfg(target_os = "linux")]
    if let Some(p) = &prepared {
        tracing::debug!(server = ctx.server, granted = p.granted, own_network = p.own_network, "sandbox prepared");
    }
    if let Some(state) = rules.as_ref().and_then(|r| r.state_dir.as_ref()) {
        env.insert(STATE_DIR_VAR.to_string(), state.display().to_string());
    }
    if matches!(rules.as_ref().map(|r| &r.network), Some(crate::sandbox::Network::Domains(_))) {
        env.extend(crate::sandbox::proxy::env());
    }
    let mut cmd = Command::new(&config.command);
    cmd.args(&config.args)
        .env_clear()
        .envs(&env)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let io = |source: std::io::Error| SpawnError::Io { command: shown.clone(), source };
    #[cfg(target_os = "linux")]
    let (host_end, shim_end) = std::os::unix::net::UnixStream::pair().map_err(io)?;
    // Where the server's process hands over its proxy's socket (`allowedDomains`).
    #[cfg(target_os = "linux")]
    let proxy_pair = match prepared.as_ref().and_then(|p| p.proxy.as_ref()) {
        Some(_) => Some(std::os::unix::net::UnixStream::pair().map_err(io)?),
        None => None,
    };
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = shim_end.as_raw_fd();
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let graces = shim::Graces {
            stdin: ms(ctx.shutdown.grace),
            int: ms(INT_GRACE),
            term: ms(TERM_GRACE),
            leftovers: ms(LEFTOVER_GRACE),
        };
        let mut confine = match &prepared {
            Some(p) => crate::sandbox::confine::Confine {
                ruleset: p.ruleset.as_raw_fd(),
                own_network: p.own_network,
                proxy: proxy_pair.as_ref().map_or(-1, |(_, child)| child.as_raw_fd()),
                proxy_port: crate::sandbox::proxy::PORT,
                open_files: 0,
            },
            None => crate::sandbox::confine::Confine::NONE,
        };
        confine.open_files = limits.open_files.map_or(0, u64::from);
        // SAFETY: sysconf has no preconditions.
        let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        let watch = shim::Watch {
            memory_pages: limits.memory_mb.map_or(0, |mb| mb.saturating_mul(1024 * 1024) / page),
            processes: limits.processes.map_or(0, u64::from),
        };
        // SAFETY: `enter` makes only async-signal-safe calls (see `shim`).
        unsafe {
            cmd.pre_exec(move || shim::enter(fd, graces, confine, watch));
        }
    }
    #[cfg(not(target_os = "linux"))]
    cmd.kill_on_drop(true);
    let mut child: Child = cmd.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound if !config.command.contains('/') => {
            SpawnError::NotFound { command: shown.clone(), path: env.get("PATH").cloned().unwrap_or_default() }
        }
        std::io::ErrorKind::NotFound => {
            SpawnError::NotFound { command: shown.clone(), path: "(not searched: the command is a path)".into() }
        }
        _ => io(source),
    })?;
    let missing = |what: &str| io(std::io::Error::other(format!("no {what} pipe")));
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr_pipe = child.stderr.take().ok_or_else(|| missing("stderr"))?;
    widen_pipe(&stdout);
    let supervisor = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    let tail = Arc::new(StderrTail::new(50));
    let judged = ctx.refusals.filter(|_| rules.is_some()).cloned();
    tokio::spawn(stderr::drain(ctx.server.to_string(), stderr_pipe, tail.clone(), judged));
    let (exit_tx, exit_rx) = watch::channel(None);
    let (finished_tx, finished_rx) = watch::channel(false);

    #[cfg(target_os = "linux")]
    let tree = {
        drop(shim_end);
        let proxy = match (prepared.and_then(|p| p.proxy), proxy_pair) {
            (Some(domains), Some((host, child_end))) => {
                drop(child_end);
                Some((domains, host))
            }
            _ => None,
        };
        let serving = finished_rx.clone();
        let refusal = Arc::new(std::sync::OnceLock::new());
        let (pid, control) = linux::handshake(
            host_end,
            child,
            ctx,
            supervisor,
            linux::Told { exit: exit_tx, finished: finished_tx, refusal: refusal.clone(), limits },
        )
        .map_err(io)?;
        if let Some((domains, from)) = proxy {
            // None when the server's process failed before making it (its refusal says why).
            if let Ok(listener) = crate::sandbox::landlock::receive_listener(&from) {
                let listener = std::net::TcpListener::from(listener);
                listener.set_nonblocking(true).map_err(io)?;
                let listener = tokio::net::TcpListener::from_std(listener).map_err(io)?;
                let refusals = ctx.refusals.cloned().unwrap_or_default();
                let serve = crate::sandbox::proxy::serve(listener, Arc::new(domains), refusals, ctx.server.to_string());
                let mut serving = serving;
                // The proxy (and its socket, which holds the namespace) goes with the tree.
                tokio::spawn(async move {
                    tokio::select! {
                        _ = serve => {}
                        _ = serving.wait_for(|done| *done) => {}
                    }
                });
            }
        }
        ProcessTree {
            pid,
            supervisor,
            exit: exit_rx,
            finished: finished_rx,
            control: tokio::sync::Mutex::new(Some(control)),
            shutdown: ctx.shutdown,
            stderr: tail,
            refusal,
        }
    };
    #[cfg(not(target_os = "linux"))]
    let tree = {
        tokio::spawn(async move {
            let info = match child.wait().await {
                Ok(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    ExitInfo { code: status.code(), signal: status.signal(), limit: None }
                }
                Err(_) => ExitInfo { code: None, signal: None, limit: None },
            };
            let _ = exit_tx.send(Some(info));
            let _ = finished_tx.send(true);
        });
        ProcessTree {
            pid: supervisor,
            supervisor,
            exit: exit_rx,
            finished: finished_rx,
            shutdown: ctx.shutdown,
            stderr: tail,
            refusal: Arc::default(),
        }
    };
    Ok(Spawned { stdin, stdout, tree: Arc::new(tree) })
}

impl ProcessTree {
    /// The server's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// How the server ended, if it has.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the server has exited (returns at once if it has).
    pub async fn exited(&self) -> Option<ExitInfo> {
        let mut rx = self.exit.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(v) => *v,
            Err(_) => None,
        }
    }

    /// Waits at most `d` for the server to exit; on exit, also lets stderr drain (≤ 500 ms).
    pub async fn exited_within(&self, d: Duration) -> Option<ExitInfo> {
        let info = tokio::time::timeout(d, self.exited()).await.ok().flatten();
        if info.is_some() {
            self.stderr.settled(Duration::from_millis(500)).await;
        }
        info
    }

    /// Why its sandbox could not be set up, if that is why it exited (with how to opt out).
    pub fn sandbox_refusal(&self) -> Option<&str> {
        self.refusal.get().map(String::as_str)
    }

    /// Whether everything the server started is gone.
    pub fn is_finished(&self) -> bool {
        *self.finished.borrow()
    }

    /// Waits until the whole tree is gone.
    pub async fn finished(&self) {
        let mut rx = self.finished.clone();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Ends the server and everything it started: call after its stdin is closed. Runs the
    /// ending sequence (grace, SIGINT, SIGTERM, SIGKILL) and returns once the tree is gone, or
    /// after [`Shutdown::bound`]; a server that already exited with nothing left costs nothing.
    pub async fn terminate(&self) {
        if self.pid <= 0 || self.is_finished() {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use tokio::io::AsyncWriteExt;
            if let Some(control) = self.control.lock().await.as_mut() {
                let _ = control.write_all(&[shim::CMD_END]).await;
            }
            if tokio::time::timeout(self.shutdown.bound(), self.finished()).await.is_err() {
                // The supervisor is stuck (it never should be): end it and sweep by hand.
                tracing::warn!(pid = self.supervisor, "the supervisor did not end its tree in time; killing it");
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.supervisor), nix::sys::signal::SIGKILL);
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            use nix::sys::signal::{Signal, killpg};
            use nix::unistd::Pid;
            let group = Pid::from_raw(self.pid);
            let steps =
                [(None, self.shutdown.grace), (Some(Signal::SIGINT), INT_GRACE), (Some(Signal::SIGTERM), TERM_GRACE)];
            for (signal, wait) in steps {
                if let Some(signal) = signal {
                    let _ = killpg(group, signal);
                }
                if tokio::time::timeout(wait, self.finished()).await.is_ok() {
                    return;
                }
            }
            let _ = killpg(group, Signal::SIGKILL);
            let _ = tokio::time::timeout(Duration::from_millis(300), self.finished()).await;
        }
    }
}

/// Trees to end at shutdown, oldest first (finished ones are dropped as new ones come).
#[derive(Debug, Default)]
pub(crate) struct Trees(Mutex<Vec<Arc<ProcessTree>>>);

impl Trees {
    pub(crate) fn push(&self, tree: Arc<ProcessTree>) {
        let mut trees = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        trees.retain(|t| !t.is_finished());
        trees.push(tree);
    }

    pub(crate) fn take(&self) -> Vec<Arc<ProcessTree>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).drain(..).collect()
    }
}

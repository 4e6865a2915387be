//! Process trees for the tests of "no process outlives switchboard": sleepers the server
//! starts, each carrying `--marker M` in its argv (not its environment, which a hostile one
//! clears) so a test can count them through `/proc/*/cmdline`.
//!
//! `--forks plain`: a plain child, and a child that starts a grandchild in a new session
//! (`setsid`). `--forks hostile`: also a grandchild with an empty environment and a
//! double-forked daemon with an empty environment in a session of its own (re-parented away
//! from the server at once: no parent link, no group, no variable leads to it), all ignoring
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{SigHandler, Signal, signal};

/// Which tree `--forks` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forks {
    Plain,
    Hostile,
}

impl std::str::FromStr for Forks {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "plain" => Ok(Forks::Plain),
            "hostile" => Ok(Forks::Hostile),
            other => Err(format!("--forks takes plain or hostile, not {other}")),
        }
    }
}

/// Starts the tree (before the server's runtime starts).
pub fn start(forks: Forks, marker: &str) {
    let stubborn = forks == Forks::Hostile;
    sleeper(marker, None, stubborn);
    sleeper(marker, Some("setsid"), stubborn);
    if forks == Forks::Hostile {
        sleeper(marker, Some("envclear"), stubborn);
        if let Some(mut cmd) = sleeper_command(marker, Some("daemon"), stubborn) {
            let _ = cmd.env_clear().spawn();
        }
    }
}

fn sleeper_command(marker: &str, then: Option<&str>, stubborn: bool) -> Option<Command> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new(exe);
    cmd.args(["--sleeper", "--marker", marker]);
    if let Some(then) = then {
        cmd.args(["--then", then]);
    }
    if stubborn {
        cmd.arg("--stubborn");
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    Some(cmd)
}

fn sleeper(marker: &str, then: Option<&str>, stubborn: bool) {
    let Some(mut cmd) = sleeper_command(marker, then, stubborn) else { return };
    if let Err(e) = cmd.spawn() {
        eprintln!("fixture: could not start a sleeper: {e}");
    }
}

/// `--sleeper --marker M [--then setsid|envclear|daemon] [--stubborn]`: does what `--then`
/// says, then sleeps until killed.
pub fn sleeper_main(args: &[String]) -> ! {
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let marker = value("--marker").unwrap_or_default();
    let stubborn = args.iter().any(|a| a == "--stubborn");
    if stubborn {
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGQUIT] {
            // SAFETY: installing SIG_IGN has no preconditions.
            unsafe {
                let _ = signal(s, SigHandler::SigIgn);
            }
        }
    }
    match value("--then").as_deref() {
        Some("setsid") => {
            if let Some(mut cmd) = sleeper_command(&marker, None, stubborn) {
                // SAFETY: setsid is async-signal-safe.
                unsafe {
                    cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
                }
                let _ = cmd.spawn();
            }
        }
        Some("envclear") => {
            if let Some(mut cmd) = sleeper_command(&marker, None, stubborn) {
                let _ = cmd.env_clear().spawn();
            }
        }
        Some("daemon") => daemonize(),
        _ => {}
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The classic double fork: this process goes on sleeping; a child starts a new session and
/// forks the daemon, then exits, so the daemon's parent is gone at once.
fn daemonize() {
    use nix::unistd::{ForkResult, fork, setsid};
    // SAFETY: this process is single-threaded here (no runtime has started).
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let _ = setsid();
            // SAFETY: still single-threaded.
            match unsafe { fork() } {
                // The daemon: sleeps in the caller's loop.
                Ok(ForkResult::Child) => {}
                _ => std::process::exit(0),
            }
        }
        Ok(ForkResult::Parent { child }) => {
            let _ = nix::sys::wait::waitpid(child, None);
        }
        Err(e) => eprintln!("fixture: fork failed: {e}"),
    }
}

//! The supervisor between the host and one stdio server (Linux): a child subreaper that no
//! descendant of the server can escape, which ends the server's whole tree when the host asks,
//! when the host dies however it dies, and when the server exits (its leftovers).
//!
//! Shape: the host spawns the *supervisor* (a `fork` of the host that never execs); it makes
//! itself a child subreaper (`PR_SET_CHILD_SUBREAPER`: every orphan of the tree re-parents to
//! it, not to init, whether it called `setsid`, cleared its environment or double-forked),
//! forks the server (which execs the configured command with `PR_SET_PDEATHSIG = SIGKILL`, so
//! it dies if the supervisor is killed), and then waits on two things only: a socket to the
//! host and `SIGCHLD` (a `signalfd`). The socket is how the host commands it and how it learns
//! the host is gone: when the host process dies (Ctrl-C, SIGTERM, SIGKILL, OOM, a panic,
//! `exit`), the kernel closes the host's end and the supervisor runs the ending sequence on
//! its own. A thread's exit never looks like the host's death (unlike `PR_SET_PDEATHSIG` on
//! the supervisor, which fires when the spawning *thread* exits).
//!
//! The ending sequence (ZCode's): the server's stdin is closed (by the host, or by the kernel
//! when the host dies), a grace, SIGINT to every process of the tree, a grace, SIGTERM, a
//! grace, then SIGKILL until the supervisor has no child left. "No child left" is exact: as a
//! subreaper, every living descendant is reachable from the supervisor's children. A server
//! that exited by itself with nothing left behind costs no `/proc` walk at all.
//!
//! Everything here after `fork` runs in a copy of a multi-threaded host: only
//! async-signal-safe calls (raw syscalls through `libc`), no allocation, no locks, no panics,
//! every buffer on the stack. Before waiting, the supervisor gives back the anonymous memory
//! it inherited (`MADV_DONTNEED`, except its own stack and thread block), so a long-running
//! host that rewrites its heap does not pay for a copy per server.
//!
//! Messages to the host are 5 bytes: a tag and an `i32` in native byte order.

mod memory;
mod walk;

use std::os::fd::RawFd;

use crate::sandbox::confine::{self, Confine};
use memory::release_memory;
use walk::{Walk, for_each_dirent, has_children_files, parse_int};

/// Supervisor → host: the server's pid (sent first).
pub(super) const MSG_PID: u8 = b'p';
/// Supervisor → host: the server's wait status (sent when it exits, before leftovers end).
pub(super) const MSG_EXIT: u8 = b'x';
/// Supervisor → host: processes the server left behind were ended (their count).
pub(super) const MSG_LEFTOVERS: u8 = b'l';
/// Server → host: its sandbox could not be set up (`step << 24 | errno`); it exits with
/// [`SANDBOX_EXIT`]. May come before or after [`MSG_PID`].
pub(super) const MSG_SANDBOX: u8 = b's';
/// The exit code of a server whose sandbox could not be set up.
pub(super) const SANDBOX_EXIT: i32 = 126;
/// Supervisor → host: the tree went past a limit (`LIMIT_MEMORY`, `LIMIT_PROCESSES`) and is
/// being ended (sent before the exit).
pub(super) const MSG_LIMIT: u8 = b'm';
/// Which limit: the tree's resident memory.
pub(super) const LIMIT_MEMORY: i32 = 1;
/// Which limit: its number of processes.
pub(super) const LIMIT_PROCESSES: i32 = 2;
/// Host → supervisor: run the ending sequence now (the server's stdin is already closed).
pub(super) const CMD_END: u8 = b'e';

/// The waits of the ending sequence, in milliseconds.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(super) struct Graces {
    /// After stdin is closed, before SIGINT.
    pub stdin: i64,
    /// After SIGINT, before SIGTERM.
    pub int: i64,
    /// After SIGTERM, before SIGKILL.
    pub term: i64,
    /// For what a server that exited left behind: after SIGTERM, before SIGKILL.
    pub leftovers: i64,
}

/// What the supervisor watches while the server runs (0: no limit).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub(super) struct Watch {
    /// The tree's resident memory, in pages.
    pub memory_pages: u64,
    /// Its processes at once.
    pub processes: u64,
}

/// How often the limits are checked.
const WATCH_MS: i32 = 200;

/// The `pre_exec` hook: turns the forked child into the supervisor, forks the server (which
/// enters its sandbox, `confine`), and returns (only) in the server, which std then execs.
///
/// # Safety
/// Runs between `fork` and `exec` in a child of a multi-threaded process: it may only make
/// async-signal-safe calls, and does.
pub(super) unsafe fn enter(ctl: RawFd, graces: Graces, confine: Confine, watch: Watch) -> std::io::Result<()> {
    // SAFETY: every call below is a plain syscall wrapper on values on this stack.
    unsafe {
        let me = libc::getpid();
        // Nothing of the host's (its signal handlers) may run here.
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let server = libc::fork();
        if server < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if server == 0 {
            // The server: its own process group (so the supervisor can signal the group
            // without signalling itself), dies with the supervisor, signals as usual.
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
            if libc::getppid() != me {
                libc::_exit(127);
            }
            if let Err((step, errno)) = confine::apply(confine) {
                send(ctl, MSG_SANDBOX, (i32::from(step) << 24) | (errno & 0x00ff_ffff));
                libc::_exit(SANDBOX_EXIT);
            }
            if confine.own_network {
                // A new user namespace may clear the parent-death signal: set it again.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != me {
                    libc::_exit(127);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            return Ok(());
        }
        supervise(ctl, server, graces, watch)
    }
}

/// What the supervisor is doing.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// The server runs.
    Watching,
    /// Waiting `deadline` after a signal step (0: after stdin, 1: after SIGINT, 2: after SIGTERM).
    Ending { step: u8, deadline: i64 },
    /// SIGKILL until no child is left.
    Killing,
}

unsafe fn supervise(ctl: RawFd, server: libc::pid_t, graces: Graces, watch: Watch) -> ! {
    // SAFETY: syscalls on our own fds and stack buffers.
    unsafe {
        // Everything this process uses from here on must live on its own stack: the heap is
        // given back below. `graces` may still be the closure's copy in the host's heap (an
        // optimising build passes it by reference), so it is read into a local first, and the
        // read cannot be put off past `release_memory`.
        let g: Graces = std::ptr::read_volatile(&graces);
        let limits: Watch = std::ptr::read_volatile(&watch);
        let watching = limits.memory_pages > 0 || limits.processes > 0;
        let (ctl, server) = (std::ptr::read_volatile(&ctl), std::ptr::read_volatile(&server));
        send(ctl, MSG_PID, server);
        let ctl = keep_only(ctl);
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let sfd = libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        // No core file when the server's signal is passed on.
        let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &zero);
        libc::prctl(libc::PR_SET_NAME, c"sb-supervisor".as_ptr() as libc::c_ulong, 0, 0, 0);
        release_memory();
        let walk = Walk { proc_children: has_children_files() };

        let mut host_open = true;
        let mut status: Option<libc::c_int> = None;
        let mut phase = Phase::Watching;
        let mut left_behind: i32 = 0;
        loop {
            // Reap: the server, orphans of its tree.
            let children;
            loop {
                let mut st: libc::c_int = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r > 0 {
                    if r == server {
                        status = Some(st);
                        if host_open {
                            send(ctl, MSG_EXIT, st);
                        }
                    } else {
                        left_behind = left_behind.saturating_add(1);
                    }
                    continue;
                }
                children = r == 0;
                break;
            }
            if !children {
                if left_behind > 0 && host_open {
                    send(ctl, MSG_LEFTOVERS, left_behind);
                }
                exit_like(status);
            }
            if status.is_some() && matches!(phase, Phase::Watching | Phase::Ending { step: 0, .. }) {
                // The server is gone and left something behind: TERM, then KILL.
                walk.signal(None, libc::SIGTERM);
                phase = Phase::Ending { step: 2, deadline: now_ms() + g.leftovers };
            }
            // The server's process group id is safe to signal only until the server is reaped
            // (after that the number may be reused).
            let group = if status.is_none() { Some(server) } else { None };
            let timeout = match phase {
                Phase::Watching if watching && status.is_none() => WATCH_MS,
                Phase::Watching => -1,
                Phase::Ending { deadline, .. } => (deadline - now_ms()).clamp(0, i32::MAX as i64) as libc::c_int,
                Phase::Killing => 20,
            };
            let mut fds = [
                libc::pollfd { fd: if host_open { ctl } else { -1 }, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: sfd, events: libc::POLLIN, revents: 0 },
            ];
            let n = libc::poll(fds.as_mut_ptr(), 2, timeout);
            if n > 0 && fds[1].revents != 0 {
                let mut info = [0u8; 128];
                while libc::read(sfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
            }
            if n > 0 && host_open && fds[0].revents != 0 {
                let mut cmd = [0u8; 16];
                let got = libc::read(ctl, cmd.as_mut_ptr().cast(), cmd.len());
                let gone = got == 0 || (got < 0 && errno() != libc::EINTR && errno() != libc::EAGAIN);
                if gone {
                    host_open = false;
                }
                let asked = got > 0 && cmd.iter().take(got as usize).any(|&b| b == CMD_END);
                if (gone || asked) && phase == Phase::Watching && status.is_none() {
                    phase = Phase::Ending { step: 0, deadline: now_ms() + g.stdin };
                }
            }
            if sfd < 0 && phase == Phase::Watching {
                // No signalfd (should not happen): poll for exits instead.
                libc::usleep(50_000);
            }
            if watching && phase == Phase::Watching && status.is_none() {
                let (count, pages) = walk.usage();
                let past = if limits.memory_pages > 0 && pages > limits.memory_pages {
                    LIMIT_MEMORY
                } else if limits.processes > 0 && count as u64 > limits.processes {
                    LIMIT_PROCESSES
                } else {
                    0
                };
                if past != 0 {
                    if host_open {
                        send(ctl, MSG_LIMIT, past);
                    }
                    phase = Phase::Killing;
                }
            }
            match phase {
                Phase::Ending { step, deadline } if now_ms() >= deadline => {
                    phase = match step {
                        0 => {
                            walk.signal(group, libc::SIGINT);
                            Phase::Ending { step: 1, deadline: now_ms() + g.int }
                        }
                        1 => {
                            walk.signal(group, libc::SIGTERM);
                            Phase::Ending { step: 2, deadline: now_ms() + g.term }
                        }
                        _ => Phase::Killing,
                    }
                }
                _ => {}
            }
            if phase == Phase::Killing {
                walk.signal(group, libc::SIGKILL);
            }
        }
    }
}

/// Ends the supervisor the way the server ended (its exit code, or its signal).
unsafe fn exit_like(status: Option<libc::c_int>) -> ! {
    // SAFETY: plain syscalls.
    unsafe {
        match status {
            Some(st) if libc::WIFSIGNALED(st) => {
                let sig = libc::WTERMSIG(st);
                libc::signal(sig, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig)
            }
            Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
            _ => libc::_exit(1),
        }
    }
}

fn errno() -> libc::c_int {
    // SAFETY: reads this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn now_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec.saturating_mul(1000).saturating_add(ts.tv_nsec / 1_000_000)
}

fn send(fd: RawFd, tag: u8, value: i32) {
    let v = value.to_ne_bytes();
    let msg = [tag, v[0], v[1], v[2], v[3]];
    // SAFETY: writes 5 bytes from the stack; MSG_NOSIGNAL: a closed host is no SIGPIPE.
    unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
}

/// Keeps only `ctl` (moved to fd 3): the host's pipes, its other supervisors' sockets and
/// std's exec-error socket must not be held here (a held pipe end would hide the host's death
/// from another supervisor, or an exit from the host).
unsafe fn keep_only(ctl: RawFd) -> RawFd {
    // SAFETY: fd syscalls on numbers only.
    unsafe {
        let target = 3;
        let ctl = if ctl == target {
            ctl
        } else {
            let moved = libc::dup2(ctl, target);
            if moved < 0 {
                return ctl;
            }
            target
        };
        for fd in 0..3 {
            libc::close(fd);
        }
        if libc::syscall(libc::SYS_close_range, (target + 1) as libc::c_uint, libc::c_uint::MAX, 0) != 0 {
            close_listed(target);
        }
        ctl
    }
}

/// `close_range` is missing (Linux < 5.9): closes every fd listed in `/proc/self/fd` above
/// `keep`, or, without `/proc`, up to 4096.
unsafe fn close_listed(keep: RawFd) {
    // SAFETY: fd syscalls; the directory is read into a stack buffer.
    unsafe {
        let dir = libc::open(c"/proc/self/fd".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            for fd in (keep + 1)..4096 {
                libc::close(fd);
            }
            return;
        }
        // Collect first: closing while reading the directory would change it.
        let mut found = [0 as RawFd; 1024];
        let mut n = 0;
        for_each_dirent(dir, |name| {
            if let Some(fd) = parse_int(name)
                && fd > keep
                && fd != dir
                && n < found.len()
            {
                found[n] = fd;
                n += 1;
            }
        });
        libc::close(dir);
        for &fd in found.iter().take(n) {
            libc::close(fd);
        }
    }
}

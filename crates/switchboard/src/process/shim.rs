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

use std::os::fd::RawFd;

/// Supervisor → host: the server's pid (sent first).
pub(super) const MSG_PID: u8 = b'p';
/// Supervisor → host: the server's wait status (sent when it exits, before leftovers end).
pub(super) const MSG_EXIT: u8 = b'x';
/// Supervisor → host: processes the server left behind were ended (their count).
pub(super) const MSG_LEFTOVERS: u8 = b'l';
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

/// The `pre_exec` hook: turns the forked child into the supervisor, forks the server, and
/// returns (only) in the server, which std then execs.
///
/// # Safety
/// Runs between `fork` and `exec` in a child of a multi-threaded process: it may only make
/// async-signal-safe calls, and does.
pub(super) unsafe fn enter(ctl: RawFd, graces: Graces) -> std::io::Result<()> {
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
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            return Ok(());
        }
        supervise(ctl, server, graces)
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

unsafe fn supervise(ctl: RawFd, server: libc::pid_t, graces: Graces) -> ! {
    // SAFETY: syscalls on our own fds and stack buffers.
    unsafe {
        // Everything this process uses from here on must live on its own stack: the heap is
        // given back below. `graces` may still be the closure's copy in the host's heap (an
        // optimising build passes it by reference), so it is read into a local first, and the
        // read cannot be put off past `release_memory`.
        let g: Graces = std::ptr::read_volatile(&graces);
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

/// Whether this kernel lists a task's children in `/proc/<pid>/task/<tid>/children`.
fn has_children_files() -> bool {
    let mut p = PathBuf::new();
    p.push(b"/proc/");
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    p.push_int(i64::from(me));
    p.push(b"/task/");
    p.push_int(i64::from(me));
    p.push(b"/children");
    // SAFETY: a NUL-terminated path on the stack.
    unsafe { libc::access(p.as_ptr(), libc::R_OK) == 0 }
}

/// How the supervisor finds the processes under it.
#[derive(Clone, Copy)]
struct Walk {
    /// `/proc/<pid>/task/<tid>/children` exists (`CONFIG_PROC_CHILDREN`); else `/proc` is scanned.
    proc_children: bool,
}

impl Walk {
    /// Sends `sig` to the server's process group (while it is not reaped) and to every process
    /// under the supervisor; SIGTERM also wakes stopped ones with SIGCONT.
    fn signal(self, group: Option<libc::pid_t>, sig: libc::c_int) {
        // SAFETY: kill on our server's group and on pids found under us.
        unsafe {
            if let Some(g) = group {
                libc::kill(-g, sig);
            }
            let mut tree = [0 as libc::pid_t; 2048];
            let n = self.collect(libc::getpid(), &mut tree);
            for &pid in tree.iter().take(n) {
                if pid > 1 {
                    libc::kill(pid, sig);
                    if sig == libc::SIGTERM {
                        libc::kill(pid, libc::SIGCONT);
                    }
                }
            }
        }
    }

    /// Every descendant of `root`, breadth first, into `out` (as many as fit); returns the count.
    fn collect(self, root: libc::pid_t, out: &mut [libc::pid_t]) -> usize {
        let mut n = 0;
        self.children_of(root, out, &mut n);
        let mut i = 0;
        while i < n && n < out.len() {
            let pid = out[i];
            self.children_of(pid, out, &mut n);
            i += 1;
        }
        n
    }

    /// Appends the children of `pid` (of every thread of it) to `out[*n..]`.
    fn children_of(self, pid: libc::pid_t, out: &mut [libc::pid_t], n: &mut usize) {
        if !self.proc_children {
            scan_for_parent(pid, out, n);
            return;
        }
        let mut path = PathBuf::new();
        path.push(b"/proc/");
        path.push_int(i64::from(pid));
        path.push(b"/task");
        // SAFETY: opens a NUL-terminated path from the stack.
        let dir = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if dir < 0 {
            return;
        }
        // SAFETY: reads the directory into a stack buffer.
        unsafe {
            for_each_dirent(dir, |name| {
                let Some(tid) = parse_int(name) else { return };
                let mut p = PathBuf::new();
                p.push(b"/proc/");
                p.push_int(i64::from(pid));
                p.push(b"/task/");
                p.push_int(i64::from(tid));
                p.push(b"/children");
                read_ints(&p, out, n);
            });
            libc::close(dir);
        }
    }
}

/// Reads the space-separated pids of a `children` file into `out`; false if it cannot be opened.
fn read_ints(path: &PathBuf, out: &mut [libc::pid_t], n: &mut usize) -> bool {
    // SAFETY: a NUL-terminated path; reads into a stack buffer.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 4096];
    let mut value: i64 = -1;
    loop {
        // SAFETY: reads into `buf`.
        let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if got <= 0 {
            break;
        }
        for &b in buf.iter().take(got as usize) {
            if b.is_ascii_digit() {
                value = value.max(0).saturating_mul(10).saturating_add(i64::from(b - b'0'));
            } else {
                push(out, n, value);
                value = -1;
            }
        }
    }
    push(out, n, value);
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    true
}

fn push(out: &mut [libc::pid_t], n: &mut usize, value: i64) {
    if value > 0
        && let Ok(pid) = libc::pid_t::try_from(value)
        && *n < out.len()
        && !out.iter().take(*n).any(|&p| p == pid)
    {
        out[*n] = pid;
        *n += 1;
    }
}

/// The slow way (kernels built without `CONFIG_PROC_CHILDREN`): every `/proc/<pid>/stat`
/// whose parent is `parent`.
fn scan_for_parent(parent: libc::pid_t, out: &mut [libc::pid_t], n: &mut usize) {
    // SAFETY: opens /proc; reads each stat file into a stack buffer.
    unsafe {
        let dir = libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            return;
        }
        for_each_dirent(dir, |name| {
            let Some(pid) = parse_int(name) else { return };
            let mut p = PathBuf::new();
            p.push(b"/proc/");
            p.push_int(pid as i64);
            p.push(b"/stat");
            let fd = libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return;
            }
            let mut buf = [0u8; 512];
            let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            if got <= 0 {
                return;
            }
            let stat = &buf[..got as usize];
            // After the last ')': " S ppid ..."
            let Some(close) = stat.iter().rposition(|&b| b == b')') else { return };
            let mut fields = stat[close + 1..].split(|&b| b == b' ').filter(|f| !f.is_empty());
            let _state = fields.next();
            if fields.next().and_then(parse_int) == Some(parent) {
                push(out, n, i64::from(pid));
            }
        });
        libc::close(dir);
    }
}

/// Calls `f` with the name of every entry of the open directory `dir`.
unsafe fn for_each_dirent(dir: RawFd, mut f: impl FnMut(&[u8])) {
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: getdents64 into `buf`.
        let got = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if got <= 0 {
            return;
        }
        let got = got as usize;
        let mut off = 0;
        // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
        while off + 19 < got {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 || off + reclen > got {
                return;
            }
            let name = &buf[off + 19..off + reclen];
            let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            f(&name[..len]);
            off += reclen;
        }
    }
}

fn parse_int(s: &[u8]) -> Option<i32> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &b in s {
        v = v * 10 + i64::from(b - b'0');
    }
    i32::try_from(v).ok()
}

/// Gives back the anonymous private memory inherited from the host (its heap, arenas and
/// other threads' stacks), which the supervisor never touches: without this, every page the
/// host rewrites later would stay copied here. Kept: the mapping of this stack and of this
/// thread's control block (errno, the stack guard), and every file-backed mapping. The main
/// thread's stack goes too when this is another thread (nothing here reads `environ`).
unsafe fn release_memory() {
    let marker = 0u8;
    let stack = std::ptr::addr_of!(marker) as usize;
    let tls = errno_addr();
    // SAFETY: pthread_self only reads the thread register.
    let tcb = unsafe { libc::pthread_self() } as usize;
    // SAFETY: opens and reads /proc/self/maps into stack buffers; madvise on whole mappings.
    unsafe {
        let fd = libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut line = [0u8; 256];
        let mut len = 0;
        let mut buf = [0u8; 4096];
        loop {
            let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if got <= 0 {
                break;
            }
            for &b in buf.iter().take(got as usize) {
                if b == b'\n' {
                    if let Some((start, end)) = releasable(&line[..len]) {
                        let holds = |a: usize| a >= start && a < end;
                        if ![stack, tls, tcb].into_iter().any(holds) {
                            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
                        } else if holds(stack) {
                            // This stack below where it is now (less a margin for what runs
                            // from here) holds only what deeper calls of the host left.
                            let low = (stack.saturating_sub(STACK_KEPT)) & !(PAGE - 1);
                            if low > start && ![tls, tcb].into_iter().any(|a| a >= start && a < low) {
                                libc::madvise(start as *mut libc::c_void, low - start, libc::MADV_DONTNEED);
                            }
                        }
                    }
                    len = 0;
                } else if len < line.len() {
                    line[len] = b;
                    len += 1;
                }
            }
        }
        libc::close(fd);
    }
}

/// How much of its own stack below the current frame the supervisor keeps.
const STACK_KEPT: usize = 128 * 1024;
const PAGE: usize = 4096;

fn errno_addr() -> usize {
    // SAFETY: returns the address of this thread's errno.
    unsafe { libc::__errno_location() as usize }
}

/// `start-end rw-p offset dev 0` with no path or `[heap]`: the range, if anonymous and private.
fn releasable(line: &[u8]) -> Option<(usize, usize)> {
    let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let range = fields.next()?;
    let perms = fields.next()?;
    let _offset = fields.next()?;
    let _dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next();
    if perms != b"rw-p" || inode != b"0" || !matches!(path, None | Some(b"[heap]" | b"[stack]")) {
        return None;
    }
    let dash = range.iter().position(|&b| b == b'-')?;
    Some((parse_hex(&range[..dash])?, parse_hex(&range[dash + 1..])?))
}

fn parse_hex(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: usize = 0;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        v = v.checked_mul(16)?.checked_add(usize::from(d))?;
    }
    Some(v)
}

/// A NUL-terminated path built on the stack.
struct PathBuf {
    bytes: [u8; 96],
    len: usize,
}

impl PathBuf {
    fn new() -> Self {
        PathBuf { bytes: [0; 96], len: 0 }
    }

    fn push(&mut self, s: &[u8]) {
        for &b in s {
            if self.len + 1 < self.bytes.len() {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
        self.bytes[self.len] = 0;
    }

    fn push_int(&mut self, mut v: i64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        if v <= 0 {
            v = v.saturating_neg().max(0);
            if v == 0 {
                self.push(b"0");
                return;
            }
        }
        while v > 0 && i > 0 {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        let (_, tail) = digits.split_at(i);
        self.push(tail);
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.bytes.as_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_pick_anonymous_private_writable_mappings() {
        assert_eq!(releasable(b"7f00a000-7f00c000 rw-p 00000000 00:00 0"), Some((0x7f00a000, 0x7f00c000)));
        assert_eq!(
            releasable(b"55d0-55f0 rw-p 00000000 00:00 0                          [heap]"),
            Some((0x55d0, 0x55f0))
        );
        assert_eq!(
            releasable(b"7ffd-7fff rw-p 00000000 00:00 0                          [stack]"),
            Some((0x7ffd, 0x7fff))
        );
        assert_eq!(releasable(b"7ffd-7fff rw-p 00000000 00:00 0                          [vvar]"), None);
        assert_eq!(releasable(b"5600-5700 rw-p 00012000 fd:01 1234                       /usr/bin/x"), None);
        assert_eq!(releasable(b"5600-5700 r--p 00000000 00:00 0"), None);
        assert_eq!(releasable(b"5600-5700 rw-s 00000000 00:05 77                         /dev/zero (deleted)"), None);
        assert_eq!(releasable(b"garbage"), None);
    }

    #[test]
    fn paths_and_numbers_on_the_stack() {
        let mut p = PathBuf::new();
        p.push(b"/proc/");
        p.push_int(4_194_304);
        p.push(b"/task");
        assert_eq!(&p.bytes[..p.len + 1], b"/proc/4194304/task\0");
        assert_eq!(parse_int(b"123"), Some(123));
        assert_eq!(parse_int(b"12a"), None);
        assert_eq!(parse_int(b"99999999999"), None);
        let mut long = PathBuf::new();
        long.push(&[b'a'; 200]);
        assert_eq!(long.len, 95);
    }

    #[test]
    fn this_process_children_are_found() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap_or_else(|e| panic!("{e}"));
        let mut out = [0; 64];
        assert!(has_children_files(), "this kernel lists children in /proc");
        let n = Walk { proc_children: true }.collect(std::process::id() as i32, &mut out);
        let found = out[..n].contains(&(child.id() as i32));
        let mut scanned = [0; 64];
        let mut m = 0;
        scan_for_parent(std::process::id() as i32, &mut scanned, &mut m);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found, "{:?}", &out[..n]);
        assert!(scanned[..m].contains(&(child.id() as i32)), "{:?}", &scanned[..m]);
    }
}

//! Finding the processes under the supervisor through `/proc`, with stack buffers only
//! (after `fork`: async-signal-safe, no allocation).

use std::os::fd::RawFd;

/// Whether this kernel lists a task's children in `/proc/<pid>/task/<tid>/children`.
pub(super) fn has_children_files() -> bool {
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
pub(super) struct Walk {
    /// `/proc/<pid>/task/<tid>/children` exists (`CONFIG_PROC_CHILDREN`); else `/proc` is scanned.
    pub(super) proc_children: bool,
}

impl Walk {
    /// Sends `sig` to the server's process group (while it is not reaped) and to every process
    /// under the supervisor; SIGTERM also wakes stopped ones with SIGCONT.
    pub(super) fn signal(self, group: Option<libc::pid_t>, sig: libc::c_int) {
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

    /// How many processes are under the supervisor, and their resident memory in pages
    /// (`/proc/<pid>/statm`; a process gone meanwhile counts for nothing).
    pub(super) fn usage(self) -> (usize, u64) {
        let mut tree = [0 as libc::pid_t; 2048];
        // SAFETY: getpid has no preconditions.
        let n = self.collect(unsafe { libc::getpid() }, &mut tree);
        let mut pages: u64 = 0;
        for &pid in tree.iter().take(n) {
            let mut buf = [0u8; 128];
            let Some(statm) = read_head(&proc_file(i64::from(pid), b"/statm"), &mut buf) else { continue };
            // "size resident shared ...": the second field.
            let resident = statm.split(|&b| b == b' ').nth(1).and_then(parse_int);
            pages = pages.saturating_add(resident.map_or(0, |r| r.max(0) as u64));
        }
        (n, pages)
    }

    /// Every descendant of `root`, breadth first, into `out` (as many as fit); returns the count.
    pub(super) fn collect(self, root: libc::pid_t, out: &mut [libc::pid_t]) -> usize {
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

/// `/proc/<pid><name>`, on the stack.
fn proc_file(pid: i64, name: &[u8]) -> PathBuf {
    let mut p = PathBuf::new();
    p.push(b"/proc/");
    p.push_int(pid);
    p.push(name);
    p
}

/// What one read of `path` gives, into `buf`: `None` if it cannot be opened or is empty.
fn read_head<'a>(path: &PathBuf, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    // SAFETY: a NUL-terminated path; reads into the caller's buffer, closes its own fd.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        usize::try_from(got).ok().filter(|&g| g > 0).map(|g| &buf[..g])
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
            let mut buf = [0u8; 512];
            let Some(stat) = read_head(&proc_file(i64::from(pid), b"/stat"), &mut buf) else { return };
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
pub(super) unsafe fn for_each_dirent(dir: RawFd, mut f: impl FnMut(&[u8])) {
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

pub(super) fn parse_int(s: &[u8]) -> Option<i32> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &b in s {
        v = v * 10 + i64::from(b - b'0');
    }
    i32::try_from(v).ok()
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

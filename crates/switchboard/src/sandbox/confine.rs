//! The server's side of its sandbox, between `fork` and `exec`: a network namespace of its
//! own when asked, then the Landlock ruleset the host built. Async-signal-safe only (raw
//! syscalls, stack buffers): this runs in a copy of a multi-threaded host.

use std::os::fd::RawFd;

/// What the server must do before it execs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Confine {
    /// The Landlock ruleset to apply (-1: none, the sandbox is off).
    pub ruleset: RawFd,
    /// Whether to enter a user and network namespace of its own first.
    pub own_network: bool,
    /// Where to hand the proxy's listening socket, made in that namespace (-1: no proxy).
    pub proxy: RawFd,
    /// The proxy's port there.
    pub proxy_port: u16,
    /// Open files per process (`RLIMIT_NOFILE`; 0: as inherited).
    pub open_files: u64,
}

impl Confine {
    /// No sandbox.
    pub(crate) const NONE: Confine =
        Confine { ruleset: -1, own_network: false, proxy: -1, proxy_port: 0, open_files: 0 };
}

/// The steps, as the failure report names them.
const STEP_NAMESPACE: u8 = 1;
const STEP_ID_MAPS: u8 = 2;
const STEP_LOOPBACK: u8 = 3;
const STEP_NO_NEW_PRIVS: u8 = 4;
const STEP_LANDLOCK: u8 = 5;
const STEP_PROXY: u8 = 6;
const STEP_LIMITS: u8 = 7;

/// What a step was, for the person.
pub(crate) fn step_name(step: u8) -> &'static str {
    match step {
        STEP_NAMESPACE => "making a user and network namespace (for `network: false`)",
        STEP_ID_MAPS => "mapping the user into the new namespace",
        STEP_LOOPBACK => "bringing up the namespace's loopback",
        STEP_NO_NEW_PRIVS => "setting no_new_privs",
        STEP_LANDLOCK => "applying the Landlock ruleset",
        STEP_PROXY => "opening the proxy's socket in the namespace (for `network.allowedDomains`)",
        STEP_LIMITS => "setting `limits.openFiles`",
        _ => "setting up the sandbox",
    }
}

/// Applies `c`. On failure: the step and the errno.
///
/// # Safety
/// Between `fork` and `exec`, in the child only.
pub(crate) unsafe fn apply(c: Confine) -> Result<(), (u8, i32)> {
    // SAFETY: plain syscalls on values on this stack.
    unsafe {
        if c.open_files > 0 {
            let limit = libc::rlimit { rlim_cur: c.open_files, rlim_max: c.open_files };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err((STEP_LIMITS, errno()));
            }
        }
        if c.own_network {
            own_network()?;
        }
        if c.proxy >= 0 {
            hand_listener(c.proxy, c.proxy_port).map_err(|e| (STEP_PROXY, e))?;
        }
        if c.ruleset >= 0 {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err((STEP_NO_NEW_PRIVS, errno()));
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, c.ruleset, 0u32) != 0 {
                return Err((STEP_LANDLOCK, errno()));
            }
            libc::close(c.ruleset);
        }
        Ok(())
    }
}

/// Enters a user and network namespace of its own (only its own loopback, brought up), the
/// user mapped to itself.
///
/// # Safety
/// In a single-threaded process (a child between `fork` and `exec`).
pub(crate) unsafe fn own_network() -> Result<(), (u8, i32)> {
    // SAFETY: plain syscalls on values on this stack.
    unsafe {
        let (uid, gid) = (libc::getuid(), libc::getgid());
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
            return Err((STEP_NAMESPACE, errno()));
        }
        // `setgroups` must be denied before an unprivileged process may write its gid map
        // (missing before Linux 3.19: nothing to deny then).
        if let Err(e) = write_file(c"/proc/self/setgroups", b"deny")
            && e != libc::ENOENT
        {
            return Err((STEP_ID_MAPS, e));
        }
        let mut line = [0u8; 48];
        let n = id_map(&mut line, uid);
        write_file(c"/proc/self/uid_map", &line[..n]).map_err(|e| (STEP_ID_MAPS, e))?;
        let n = id_map(&mut line, gid);
        write_file(c"/proc/self/gid_map", &line[..n]).map_err(|e| (STEP_ID_MAPS, e))?;
        loopback_up().map_err(|e| (STEP_LOOPBACK, e))
    }
}

/// Listens on `127.0.0.1:port` (in this namespace) and sends the socket over `to`
/// (`SCM_RIGHTS`), then closes both here.
unsafe fn hand_listener(to: RawFd, port: u16) -> Result<(), i32> {
    // SAFETY: a socket, and a message built on this stack.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let one: libc::c_int = 1;
        libc::setsockopt(
            s,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() },
            sin_zero: [0; 8],
        };
        let bound = libc::bind(
            s,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        if bound != 0 || libc::listen(s, 128) != 0 {
            let e = errno();
            libc::close(s);
            return Err(e);
        }
        let mut byte = [b'l'];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        // Room for one fd's control message, aligned for `cmsghdr`.
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            libc::close(s);
            return Err(libc::EINVAL);
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), s);
        let sent = libc::sendmsg(to, &msg, libc::MSG_NOSIGNAL);
        let e = errno();
        libc::close(s);
        libc::close(to);
        if sent != 1 { Err(e) } else { Ok(()) }
    }
}

/// `"{id} {id} 1"` into `buf`; returns its length.
fn id_map(buf: &mut [u8; 48], id: u32) -> usize {
    let mut digits = [0u8; 10];
    let mut n = 0;
    let mut v = id;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut len = 0;
    for _ in 0..2 {
        for i in (0..n).rev() {
            buf[len] = digits[i];
            len += 1;
        }
        buf[len] = b' ';
        len += 1;
    }
    buf[len] = b'1';
    len + 1
}

unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: open, write and close on a stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let w = libc::write(fd, data.as_ptr().cast(), data.len());
        let e = errno();
        libc::close(fd);
        if w != data.len() as isize {
            return Err(if w < 0 { e } else { libc::EIO });
        }
        Ok(())
    }
}

/// `ip link set lo up`, by ioctl.
unsafe fn loopback_up() -> Result<(), i32> {
    // SAFETY: a socket and two ioctls on an `ifreq` on this stack.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req);
        if r == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(s, libc::SIOCSIFFLAGS, &req);
        }
        let e = errno();
        libc::close(s);
        if r != 0 { Err(e) } else { Ok(()) }
    }
}

fn errno() -> i32 {
    // SAFETY: reads this thread's errno.
    unsafe { *libc::__errno_location() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_maps_are_written_without_allocating() {
        let mut b = [0u8; 48];
        let n = id_map(&mut b, 0);
        assert_eq!(&b[..n], b"0 0 1");
        let n = id_map(&mut b, 4_294_967_295);
        assert_eq!(&b[..n], b"4294967295 4294967295 1");
    }
}

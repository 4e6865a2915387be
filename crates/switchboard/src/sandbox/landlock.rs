//! Linux: the rules as a Landlock ruleset, built in the host before the server is forked (so
//! the child only has to apply it with two syscalls, see `process::shim::confine`).

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope,
};

use super::{Network, Rules, SandboxError, carve};

/// The newest ABI whose rights we ask for; older kernels get what they have (1 is needed).
const ASKED: ABI = ABI::V6;

/// The Landlock ABI this kernel offers (0: none, or turned off at boot).
pub fn abi() -> i32 {
    // SAFETY: the version query takes no pointer (NULL, 0) and only returns a number.
    let v = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32 /* VERSION */)
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// A ruleset ready for a child to apply, and what else the child must do.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The Landlock ruleset.
    pub ruleset: OwnedFd,
    /// Whether the child needs a network namespace of its own.
    pub own_network: bool,
    /// The names its proxy lets through (`network.allowedDomains`), if it has one.
    pub proxy: Option<Vec<String>>,
    /// How many subtrees it grants (for `sandbox check` and the log).
    pub granted: usize,
}

/// Builds the ruleset of `rules` (the folders named are created first when they are ours to
/// make: the state folder).
pub(crate) fn prepare(rules: &Rules) -> Result<Prepared, SandboxError> {
    let kernel = abi();
    if kernel < 1 {
        return Err(SandboxError::Unavailable {
            what: "Landlock (the kernel's file system sandbox)",
            why: "the kernel has no Landlock, or it is turned off at boot (`lsm=` without landlock)".into(),
        });
    }
    if let Some(state) = &rules.state_dir
        && let Err(e) = crate::fsutil::create_private_dir(state)
    {
        tracing::warn!("the sandbox's state folder {}: {e}", state.display());
    }
    let read_access = AccessFs::from_read(ASKED) | AccessFs::IoctlDev;
    let write_access = read_access | AccessFs::from_write(ASKED) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let read = carve(&rules.read, &rules.hidden).map_err(SandboxError::Rules)?;
    let write = carve(&rules.write, &rules.hidden).map_err(SandboxError::Rules)?;
    let fail = |e: landlock::RulesetError| SandboxError::Rules(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ASKED))
        .map_err(fail)?
        .scope(Scope::from_all(ASKED))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    let mut granted = 0;
    for (paths, access) in [(&read, read_access), (&write, write_access)] {
        for path in paths {
            if let Some(rule) = rule(path, access) {
                ruleset = ruleset.add_rule(rule).map_err(fail)?;
                granted += 1;
            }
        }
    }
    let fd: Option<OwnedFd> = ruleset.into();
    let ruleset = fd.ok_or_else(|| SandboxError::Unavailable {
        what: "Landlock (the kernel's file system sandbox)",
        why: "the kernel refused to make a ruleset".into(),
    })?;
    let proxy = match &rules.network {
        Network::Domains(d) => Some(d.clone()),
        _ => None,
    };
    Ok(Prepared { ruleset, own_network: rules.network != Network::Open, proxy, granted })
}

/// A rule granting `access` beneath `path` (only the rights a file can have, for a file);
/// `None` when the path went away meanwhile. The path is resolved once: opened `O_PATH` (what
/// Landlock takes), its kind read from that descriptor.
fn rule(path: &PathBuf, access: BitFlags<AccessFs>) -> Option<PathBeneath<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path).ok()?;
    let meta = file.metadata().ok()?;
    let access = if meta.is_dir() { access } else { access & AccessFs::from_file(ASKED) };
    Some(PathBeneath::new(file, access))
}

/// Receives the listening socket a server's process made in its namespace (waits at most
/// 10 s: it comes before the server execs).
pub(crate) fn receive_listener(from: &std::os::unix::net::UnixStream) -> std::io::Result<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    from.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: a message header over buffers on this stack; the fd taken is checked.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        let got = libc::recvmsg(from.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if got == 0 || cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(std::io::Error::other("the server's process sent no socket for its proxy"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        if fd < 0 {
            return Err(std::io::Error::other("the server's process sent a bad socket"));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Whether a user and network namespace can be made here: tried in a throwaway child.
pub fn probe_namespaces() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("/bin/true");
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // SAFETY: `own_network` makes only async-signal-safe calls.
    unsafe {
        cmd.pre_exec(|| super::confine::own_network().map_err(|(step, errno)| own_network_error(step, errno)));
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the probe exited with {s}")),
        Err(e) => Err(e.to_string()),
    }
}

fn own_network_error(step: u8, errno: i32) -> std::io::Error {
    let e = std::io::Error::from_raw_os_error(errno);
    std::io::Error::new(e.kind(), format!("{}: {e}", super::confine::step_name(step)))
}

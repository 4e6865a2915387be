//! Giving back the memory the supervisor inherited from the host, which it never touches.
//!
//! Anything the supervisor uses after this must be on its own stack or in a file-backed
//! mapping: a value the compiler leaves in the host's heap (an argument passed by reference
//! into a closure's captures, say) reads as zeros afterwards. `supervise` copies what it was
//! given with `read_volatile` first for that reason.

/// Gives back the anonymous private memory inherited from the host (its heap, arenas and
/// other threads' stacks), which the supervisor never touches: without this, every page the
/// host rewrites later would stay copied here. Kept: the mapping of this stack and of this
/// thread's control block (errno, the stack guard), and every file-backed mapping. The main
/// thread's stack goes too when this is another thread (nothing here reads `environ`).
pub(super) unsafe fn release_memory() {
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
}

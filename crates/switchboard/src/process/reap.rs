//! Finding processes through `/proc` (Linux): start times (so a reused pid is never taken for
//! a process we started), and the last-resort sweep for what a server started when its
//! supervisor was killed.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The fields of `/proc/<pid>/stat` we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: u8,
    pub pgid: i32,
    pub sid: i32,
    /// Start time, in clock ticks after boot.
    pub start: u64,
}

/// `/proc/<pid>/stat`, parsed; `None` if the process is gone.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is in parentheses and may hold spaces: parse after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); field 5 pgrp, 6 session, 22 starttime.
    Some(Stat {
        state: *fields.first()?.as_bytes().first()?,
        pgid: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Whether `pid` is alive and is the process that started at `start` (zombies count as dead).
pub(crate) fn is_same(pid: i32, start: u64) -> bool {
    stat(pid).is_some_and(|s| s.start == start && s.state != b'Z' && s.state != b'X')
}

/// Kills (SIGKILL) every live process that belongs to what a server started: in the process
/// group or session `group` (the server's pid) and started no earlier than `after` (a group
/// or session id is not reused while any member lives, and nothing older can be ours), or
/// holding `marker` in its environment. Returns how many were killed.
pub(crate) fn sweep(group: i32, after: u64, marker: &str) -> usize {
    let needle = format!("{}={marker}\0", super::MARKER_VAR);
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let mut killed = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid <= 1 || pid == me {
            continue;
        }
        let Some(st) = stat(pid) else { continue };
        if st.state == b'Z' || st.state == b'X' {
            continue;
        }
        let in_group = group > 1 && (st.pgid == group || st.sid == group) && st.start >= after;
        let marked = !marker.is_empty()
            && std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()));
        if (in_group || marked) && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
            killed += 1;
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(line), Some(Stat { state: b'S', pgid: 4242, sid: 4242, start: 987654 }));
        assert_eq!(parse_stat("garbage"), None);
        let me = stat(std::process::id() as i32).unwrap();
        assert!(is_same(std::process::id() as i32, me.start));
        assert!(!is_same(std::process::id() as i32, me.start + 1));
    }
}

//! Finding and signalling a server's whole process tree through `/proc`.
//!
//! A descendant is found two ways: by parent links from the server's pid (a `setsid`
//! grandchild keeps its parent while the server lives), and by the marker variable in
//! `/proc/<pid>/environ` (which survives re-parenting to init after the server dies).

use std::collections::{BTreeSet, HashMap};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Parent pid of every process, read from `/proc/<pid>/stat`.
fn parent_map() -> HashMap<i32, i32> {
    let mut map = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return map };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name is in parentheses and may hold spaces: parse after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut fields = rest.split_whitespace();
        let _state = fields.next();
        if let Some(ppid) = fields.next().and_then(|p| p.parse().ok()) {
            map.insert(pid, ppid);
        }
    }
    map
}

/// Every live descendant of `root` (not `root` itself), by parent links.
pub fn descendants(root: i32) -> BTreeSet<i32> {
    let parents = parent_map();
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (&child, &parent) in &parents {
            if parent == p && found.insert(child) {
                frontier.push(child);
            }
        }
    }
    found
}

/// Every live process whose environment holds `SWITCHBOARD_SERVER_ID=<marker>`.
pub fn pids_with_marker(marker: &str) -> BTreeSet<i32> {
    let needle = format!("{}={marker}\0", super::MARKER_VAR);
    let mut found = BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ"))
            && env.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            found.insert(pid);
        }
    }
    found
}

/// The server and all its descendants, both ways.
pub(super) fn tree_pids(root: i32, marker: &str) -> BTreeSet<i32> {
    let mut all = descendants(root);
    all.extend(pids_with_marker(marker));
    all.insert(root);
    all
}

/// Signals the group led by `leader` and every pid in `pids`.
pub(super) fn signal_all(leader: i32, pids: &BTreeSet<i32>, signal: Signal) {
    let _ = killpg(Pid::from_raw(leader), signal);
    for &pid in pids {
        if pid > 1 && pid != std::process::id() as i32 {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }
}

/// Whether any of `pids` is still alive (zombies count as dead).
pub(super) fn any_alive(pids: &BTreeSet<i32>) -> bool {
    pids.iter().any(|pid| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).is_some_and(|s| s != "Z" && s != "X")
        }
        Err(_) => false,
    })
}

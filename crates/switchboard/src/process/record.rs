//! The record of running supervisors, in `<data>/run/<host pid>-<hub>.json` (0600): for each
//! server the supervisor's and the server's pid with their start times, and the marker.
//!
//! A supervisor ends its tree by itself when its host dies; only a supervisor that was itself
//! killed (SIGKILL to it, the OOM killer) leaves the server's descendants without anyone to
//! end them. The host that still runs sweeps at once; otherwise the next hub to start reads
//! the records of hosts that are gone and sweeps for them (`sweep_stale`). Start times make
//! sure a pid the system has since given to another process is never killed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// A process, by pid and start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcId {
    /// Its pid.
    pub pid: i32,
    /// Its start time, from `/proc/<pid>/stat`.
    pub start: u64,
}

/// One running server under its supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The server's name.
    pub server: String,
    /// Its supervisor.
    pub supervisor: ProcId,
    /// The server process.
    pub child: ProcId,
    /// The value of the marker variable in its environment.
    pub marker: String,
}

impl Entry {
    /// The entry for a server just started (`None` where start times cannot be read).
    pub(crate) fn new(server: &str, supervisor: i32, child: i32, marker: &str) -> Option<Entry> {
        let start = |pid: i32| -> Option<ProcId> { Some(ProcId { pid, start: start_time(pid)? }) };
        Some(Entry {
            server: server.to_string(),
            supervisor: start(supervisor)?,
            child: start(child)?,
            marker: marker.to_string(),
        })
    }

    /// Ends what is left of this server's tree once its supervisor is gone; returns how many
    /// processes were ended.
    #[cfg(target_os = "linux")]
    pub(crate) fn sweep(&self) -> usize {
        super::reap::sweep(self.child.pid, self.supervisor.start, &self.marker)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn sweep(&self) -> usize {
        0
    }
}

#[cfg(target_os = "linux")]
fn start_time(pid: i32) -> Option<u64> {
    super::reap::stat(pid).map(|s| s.start)
}

#[cfg(not(target_os = "linux"))]
fn start_time(_pid: i32) -> Option<u64> {
    None
}

#[cfg(target_os = "linux")]
fn is_same(p: ProcId) -> bool {
    super::reap::is_same(p.pid, p.start)
}

#[cfg(not(target_os = "linux"))]
fn is_same(_p: ProcId) -> bool {
    true
}

#[derive(Debug, Serialize, Deserialize)]
struct File {
    host: ProcId,
    servers: Vec<Entry>,
}

/// One hub's record file.
#[derive(Debug)]
pub struct Record {
    path: PathBuf,
    host: ProcId,
    entries: Mutex<Vec<Entry>>,
}

/// The folder of record files.
fn folder(data_dir: &Path) -> PathBuf {
    data_dir.join("run")
}

impl Record {
    /// The record of the hub `hub_id` of this process (`None` where this platform has no
    /// start times).
    pub fn new(data_dir: &Path, hub_id: &str) -> Option<Arc<Record>> {
        let pid = std::process::id() as i32;
        let host = ProcId { pid, start: start_time(pid)? };
        Some(Arc::new(Record {
            path: folder(data_dir).join(format!("{hub_id}.json")),
            host,
            entries: Mutex::default(),
        }))
    }

    pub(crate) fn add(&self, entry: Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.push(entry);
        self.save(&entries);
    }

    pub(crate) fn remove(&self, entry: &Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|e| e != entry);
        self.save(&entries);
    }

    fn save(&self, entries: &[Entry]) {
        let result = if entries.is_empty() {
            match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            let file = File { host: self.host, servers: entries.to_vec() };
            serde_json::to_vec(&file).map_err(std::io::Error::other).and_then(|bytes| {
                crate::fsutil::create_private_dir(self.path.parent().unwrap_or(Path::new(".")))?;
                // Not synced: the record matters only while the machine runs.
                crate::fsutil::write_atomic_unsynced(&self.path, &bytes, 0o600)
            })
        };
        if let Err(e) = result {
            tracing::debug!("could not write the record of running servers {}: {e}", self.path.display());
        }
    }
}

/// Sweeps for hosts that are gone and whose supervisors were killed: ends what their servers
/// left, removes their record files, and returns one line per server swept.
pub fn sweep_stale(data_dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let Ok(dir) = std::fs::read_dir(folder(data_dir)) else { return lines };
    for item in dir.flatten() {
        let path = item.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let parsed: Option<File> = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(file) = parsed else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if is_same(file.host) {
            continue;
        }
        for e in &file.servers {
            // A live supervisor is ending its tree by itself (its host is gone).
            if is_same(e.supervisor) {
                continue;
            }
            let ended = e.sweep();
            if ended > 0 {
                lines.push(format!(
                    "ended {ended} process(es) of server `{}` left by an earlier switchboard (pid {}) whose supervisor had been killed",
                    e.server, file.host.pid
                ));
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    lines
}

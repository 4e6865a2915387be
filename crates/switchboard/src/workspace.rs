//! The workspace daemon's record: which long-running hub (`switchboard serve`, `gateway
//! --http`, `daemon start`) serves a project root, with which config, at which address — so
//! the gateways and commands of the same workspace use its servers instead of starting their
//! own. One record per project root, in `<data>/workspaces/<digest>.json` (0600, written
//! whole); the hub's token is the data folder's `serve-token`.
//!
//! Nothing trusts a record: the process must be alive, its address must answer, and the
//! config in effect must be the same (the same files, looked at in the same order; no
//! `--config` of the caller's own). Anything else is said in [`Lookup`], and the caller runs
//! its own hub.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::config::LoadedConfig;

/// One workspace's running hub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkspaceRecord {
    /// Its process.
    pub pid: u32,
    /// Its base URL (`http://127.0.0.1:PORT`); MCP is at `/mcp`.
    pub url: String,
    /// The project root it serves.
    pub project_root: PathBuf,
    /// The config in effect ([`config_key`]).
    pub config_key: String,
    /// What runs: `serve`, `gateway` or `daemon`.
    pub kind: String,
    /// When it started (Unix seconds).
    pub started_at: u64,
}

impl WorkspaceRecord {
    /// A record of this process serving `loaded`'s workspace at `url`.
    pub fn new(kind: &str, url: String, loaded: &LoadedConfig) -> Self {
        let started_at =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        WorkspaceRecord {
            pid: std::process::id(),
            url,
            project_root: loaded.project_root.clone(),
            config_key: config_key(loaded),
            kind: kind.to_string(),
            started_at,
        }
    }
}

/// What identifies the config in effect: the project root and every file looked at, in order,
/// with its scope (so a `--config` file, or another user file, is another config). The files'
/// contents are not in it: a running hub follows their edits.
pub fn config_key(loaded: &LoadedConfig) -> String {
    let mut h = sha2::Sha256::new();
    h.update(loaded.project_root.as_os_str().as_encoded_bytes());
    for f in &loaded.files {
        h.update([0]);
        h.update(f.scope.to_string().as_bytes());
        h.update([0]);
        // As given (`--config g.json`) or not, the same file is the same config.
        let path = std::path::absolute(&f.path).unwrap_or_else(|_| f.path.clone());
        h.update(path.as_os_str().as_encoded_bytes());
    }
    hex(&h.finalize()[..16])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the record of `project_root`'s hub is kept.
pub fn record_path(data_dir: &Path, project_root: &Path) -> PathBuf {
    let digest = sha2::Sha256::digest(project_root.as_os_str().as_encoded_bytes());
    data_dir.join("workspaces").join(format!("{}.json", hex(&digest[..8])))
}

/// The log of `project_root`'s daemon (what it writes on stdout and stderr, a dashboard login
/// code among it), next to its record: opened to append, in a private folder, only this user
/// may read it (0600 whatever the umask; one left wider by an older version is tightened).
pub fn open_log(data_dir: &Path, project_root: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = record_path(data_dir, project_root).with_extension("log");
    if let Some(dir) = path.parent() {
        crate::fsutil::create_private_dir(dir)?;
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&path)?;
    let meta = file.metadata()?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok((path, file))
}

/// The record of this process, taken away when dropped (if it is still this process's).
#[derive(Debug)]
pub struct Published {
    path: PathBuf,
}

impl Published {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        if read(&self.path).is_some_and(|r| r.pid == std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `record` for its project root (replacing the record of a hub that is gone).
pub fn publish(data_dir: &Path, record: &WorkspaceRecord) -> std::io::Result<Published> {
    let path = record_path(data_dir, &record.project_root);
    let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    crate::write_private(&path, text.as_bytes())?;
    Ok(Published { path })
}

fn read(path: &Path) -> Option<WorkspaceRecord> {
    let bytes = crate::fsutil::read_private(path).ok().flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// What [`find`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lookup {
    /// A hub of this workspace with this config, alive and answering.
    Live(WorkspaceRecord),
    /// No record for this workspace.
    None,
    /// A record whose hub is gone or does not answer (why).
    Gone(WorkspaceRecord, String),
    /// A live hub of this workspace with another config in effect.
    OtherConfig(WorkspaceRecord),
}

/// The hub serving `project_root` with the config `key`, if one is alive and answers.
pub fn find(data_dir: &Path, project_root: &Path, key: &str) -> Lookup {
    let Some(record) = read(&record_path(data_dir, project_root)) else { return Lookup::None };
    if let Some(why) = gone(&record) {
        return Lookup::Gone(record, why);
    }
    if record.config_key != key { Lookup::OtherConfig(record) } else { Lookup::Live(record) }
}

/// Why the record's hub is not there, if it is not.
fn gone(record: &WorkspaceRecord) -> Option<String> {
    let Ok(pid) = i32::try_from(record.pid) else { return Some("a record with no process".into()) };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
        return Some(format!("process {pid} has ended"));
    }
    let Some(addr) = record.url.strip_prefix("http://").and_then(|a| a.parse::<std::net::SocketAddr>().ok()) else {
        return Some(format!("no address in the record ({})", record.url));
    };
    match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
        Ok(_) => None,
        Err(e) => Some(format!("{} does not answer ({e})", record.url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_found_only_while_its_hub_answers_with_the_same_config() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        let loaded = LoadedConfig { project_root: PathBuf::from("/work/p"), ..LoadedConfig::default() };
        let key = config_key(&loaded);
        assert_eq!(find(dir.path(), Path::new("/work/p"), &key), Lookup::None);
        let record = WorkspaceRecord::new("serve", url, &loaded);
        let published = publish(dir.path(), &record).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(find(dir.path(), Path::new("/work/p"), &key), Lookup::Live(record.clone()));
        assert!(matches!(find(dir.path(), Path::new("/work/p"), "another"), Lookup::OtherConfig(_)));
        assert_eq!(find(dir.path(), Path::new("/work/q"), &key), Lookup::None, "another workspace");
        drop(listener);
        assert!(
            matches!(find(dir.path(), Path::new("/work/p"), &key), Lookup::Gone(_, why) if why.contains("does not answer"))
        );
        drop(published);
        assert_eq!(find(dir.path(), Path::new("/work/p"), &key), Lookup::None, "taken away with the hub");
    }
}

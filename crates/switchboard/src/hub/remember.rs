//! Each server's last lists, remembered in the data folder so that they stand in while it
//! starts again ([`crate::HubOptions::remember_lists`]): `<data>/lists/<key>.json`, 0600 in a
//! 0700 folder, written whole and atomically when they differ from what is kept. The key is
//! the SHA-256 of what the entry launches ([`crate::trust::launch_digest`]: command, arguments,
//! folder and environment, or URL and headers) and, for a person's own servers, whose they
//! are: an entry that changes what it runs starts with nothing remembered, and one person's
//! lists never stand in for another's.
//!
//! What is kept is what the hub listed after screening ([`crate::screen`]), with what the
//! screening found (which the policy's `findings` rule decides on), so what stands in is what
//! was given last time, refused as it was. A file that cannot be read or is not ours is ignored (the
//! server is then listed once it is up, as if never seen).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalog::ServerLists;
use crate::config::ServerConfig;
use crate::screen::Finding;

/// What is kept of a server.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub(super) struct Kept {
    pub(super) lists: ServerLists,
    pub(super) findings: Vec<Finding>,
}

/// [`Kept`] as it is written, borrowed from the slot's lists (no copy of them).
#[derive(serde::Serialize)]
struct Keeping<'a> {
    lists: &'a ServerLists,
    findings: &'a [Finding],
}

/// Where a server's lists are kept.
pub(super) fn place(data_dir: &Path, config: &ServerConfig, person: Option<&crate::identity::Principal>) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(crate::trust::launch_digest(config).as_bytes());
    if let Some(p) = person {
        hash.update(b"\0");
        hash.update(p.key().as_bytes());
    }
    let key: String = hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
    data_dir.join("lists").join(format!("{key}.json"))
}

/// The lists kept at `path`, when there are any and they read.
pub(super) fn recall(path: &Path) -> Option<Kept> {
    let bytes = crate::fsutil::read_private(path).ok()??;
    match serde_json::from_slice(&bytes) {
        Ok(lists) => Some(lists),
        Err(e) => {
            tracing::debug!("{}: not a server's lists ({e}); ignored", path.display());
            None
        }
    }
}

/// Keeps `lists` at `path` (in the background: nothing waits for it), when they differ from
/// what is kept there. Two writes close together may land in either order: the next start
/// then stands in with the older lists, and the server's own replace them once it is up.
pub(super) fn keep(path: PathBuf, lists: std::sync::Arc<ServerLists>, findings: std::sync::Arc<Vec<Finding>>) {
    let write = move || {
        let Ok(bytes) = serde_json::to_vec(&Keeping { lists: &lists, findings: &findings }) else { return };
        if crate::fsutil::read_private(&path).ok().flatten().as_deref() == Some(bytes.as_slice()) {
            return;
        }
        if let Some(dir) = path.parent()
            && let Err(e) = crate::fsutil::create_private_dir(dir)
        {
            tracing::warn!("a server's lists were not remembered in {}: {e}", dir.display());
            return;
        }
        if let Err(e) = crate::fsutil::write_atomic_unsynced(&path, &bytes, 0o600) {
            tracing::warn!("a server's lists were not remembered in {}: {e}", path.display());
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn_blocking(write);
        }
        Err(_) => write(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn kept_lists_read_back_and_a_stranger_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lists").join("k.json");
        let tool = rmcp::model::Tool::new("echo", "says it back", std::sync::Arc::new(serde_json::Map::new()));
        let lists = ServerLists { tools: vec![tool], ..ServerLists::default() };
        let mut found = crate::screen::lists(
            "s",
            &mut ServerLists {
                tools: vec![rmcp::model::Tool::new("t", "hi\u{E0041}", std::sync::Arc::new(serde_json::Map::new()))],
                ..ServerLists::default()
            },
        );
        assert_eq!(found.len(), 1);
        keep(path.clone(), std::sync::Arc::new(lists.clone()), std::sync::Arc::new(found.clone()));
        assert_eq!(recall(&path), Some(Kept { lists, findings: std::mem::take(&mut found) }));
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(recall(&path), None);
        assert_eq!(recall(&dir.path().join("absent.json")), None);
    }
}

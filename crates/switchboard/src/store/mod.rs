//! State files of ours that several processes change: a JSON document read whole, changed
//! under a lock file beside it (`<name>.lock`, so concurrent changes all land), and written
//! whole and atomically with mode 0600 in a 0700 folder. Trust records, remembered approvals
//! and the values of inputs are each one (`JsonStore`); a file that cannot be read as what it
//! should be is left as it is and said ([`StoreError::Corrupt`]). A team's store is a PostgreSQL
//! database instead ([`db`]), whose secrets are sealed at rest under a key ring ([`seal`]).

pub mod audit;
pub mod dashboard;
pub mod db;
pub mod pages;
mod records;
pub mod replicas;
pub mod seal;
pub mod sessions;
pub mod signals;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a state file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, locking or writing it failed.
    #[error("{path}: {source}")]
    Io {
        /// The file (or its lock).
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// It is not what switchboard writes there; it is left as is.
    #[error("{path}: not a valid {what} ({message}); fix it or move it away to start afresh")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What it should hold (`trust file`, `approvals file`, `input store`).
        what: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The database refused, or could not be reached.
    #[error("{store}: {source}")]
    Database {
        /// The store (no password).
        store: String,
        /// The cause.
        source: sqlx::Error,
    },
    /// Its schema could not be brought up to date.
    #[error("{store}: applying the schema: {source}")]
    Migrate {
        /// The store (no password).
        store: String,
        /// The cause.
        source: sqlx::migrate::MigrateError,
    },
    /// Its schema is newer than this switchboard's: it is not used (an older binary must not
    /// write rows it does not understand).
    #[error(
        "{store} holds schema version {found}, newer than this switchboard's ({known}): run the switchboard that migrated it, or a newer one"
    )]
    NewerSchema {
        /// The store (no password).
        store: String,
        /// The version found.
        found: i64,
        /// The newest this binary knows.
        known: i64,
    },
    /// A secret does not open (another key ring, or a row moved or altered), or could not be
    /// sealed.
    #[error("{store}: the {kind} `{key}` of {owner}: {source}")]
    Sealed {
        /// The store (no password).
        store: String,
        /// What it is (`token`, `input`).
        kind: &'static str,
        /// Whose (`the host`, `person <key>`).
        owner: String,
        /// Its key (a server URL, an input id).
        key: String,
        /// The cause.
        source: seal::SealError,
    },
    /// The store's key ring could not be read.
    #[error("the store's key ring ({from}): {source}")]
    Keys {
        /// Where it was read from (a file, or the environment variable).
        from: String,
        /// The cause.
        source: seal::SealError,
    },
}

/// One state file: where it is and what it holds (for messages).
#[derive(Debug, Clone)]
pub(crate) struct JsonStore {
    path: PathBuf,
    what: &'static str,
}

impl JsonStore {
    /// The file at `path`, holding a `what`.
    pub(crate) fn new(path: PathBuf, what: &'static str) -> Self {
        JsonStore { path, what }
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its document (an absent file is the default one), refused when the file is not ours or
    /// others can write to it (`fsutil::read_private`).
    pub(crate) fn read<T: DeserializeOwned + Default>(&self) -> Result<T, StoreError> {
        match crate::fsutil::read_private(&self.path) {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                what: self.what,
                message: e.to_string(),
            }),
            Ok(None) => Ok(T::default()),
            Err(source) => Err(StoreError::Io { path: self.path.clone(), source }),
        }
    }

    /// Writes `document` whole (0600, atomically; the folder made 0700). Between a [`read`]
    /// and this another process may have changed the file: [`update`] holds the lock across
    /// both.
    ///
    /// [`read`]: JsonStore::read
    /// [`update`]: JsonStore::update
    pub(crate) fn write<T: Serialize>(&self, document: &T) -> Result<(), StoreError> {
        let io = |source| StoreError::Io { path: self.path.clone(), source };
        crate::fsutil::create_private_dir(self.folder()).map_err(io)?;
        let text = serde_json::to_string_pretty(document).map_err(|e| io(std::io::Error::other(e)))?;
        crate::fsutil::write_atomic(&self.path, text.as_bytes(), Some(0o600)).map_err(io)
    }

    /// Changes the document with `change` under the lock: read, changed and written while no
    /// other process can. Returns what `change` does.
    pub(crate) fn update<T, R>(&self, change: impl FnOnce(&mut T) -> R) -> Result<R, StoreError>
    where
        T: DeserializeOwned + Serialize + Default,
    {
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let io = |source| StoreError::Io { path: lock_path.clone(), source };
        crate::fsutil::create_private_dir(self.folder()).map_err(io)?;
        let _lock = crate::fsutil::lock(&lock_path, crate::fsutil::LOCK_WAIT).map_err(io)?;
        let mut document = self.read()?;
        let out = change(&mut document);
        self.write(&document)?;
        Ok(out)
    }

    fn folder(&self) -> &Path {
        self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn concurrent_updates_all_land_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("state/counts.json");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let store = JsonStore::new(path.clone(), "count file");
                std::thread::spawn(move || {
                    for j in 0..10 {
                        let key = format!("{i}-{j}");
                        let done = store.update(|m: &mut BTreeMap<String, u32>| m.insert(key, 1));
                        assert!(done.is_ok(), "{done:?}");
                    }
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().is_ok());
        }
        let store = JsonStore::new(path.clone(), "count file");
        let all: BTreeMap<String, u32> = store.read().unwrap_or_default();
        assert_eq!(all.len(), 80, "every change landed");
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        let folder = std::fs::metadata(path.parent().unwrap_or(dir.path())).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(folder.unwrap_or(0), 0o700);
    }

    #[test]
    fn a_file_that_is_not_json_is_said_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("trust.json");
        std::fs::write(&path, "{not json").unwrap_or(());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap_or(());
        let store = JsonStore::new(path.clone(), "trust file");
        let err = store.update(|m: &mut BTreeMap<String, u32>| m.clear()).err();
        assert!(matches!(&err, Some(StoreError::Corrupt { what: "trust file", .. })), "{err:?}");
        assert!(err.map(|e| e.to_string()).unwrap_or_default().contains("not a valid trust file"));
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), "{not json");
    }
}

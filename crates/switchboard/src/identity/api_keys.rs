//! Service accounts: API keys for programs that call a protected gateway without signing in
//! (a CI job, a scheduled agent). A key is shown once when made (`sbk_` and 43 random
//! characters); only its SHA-256 is kept, with its name and groups: in `<data>/api-keys.json`
//! (0600, written whole under a lock), or in a team's store (`switchboard_api_keys`). The file
//! is read again when it changes, so a key revoked from the command line stops working in a
//! running gateway at its next request; the store's table is read again at most every
//! [`STORE_KEEP`] (a key revoked on one gateway stops working on every one within it).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Principal;
use crate::store::db::Database;
use crate::store::{JsonStore, StoreError};

/// What every key starts with (so a key is told apart from a JWT, and found by scanners).
pub const PREFIX: &str = "sbk_";

/// The issuer a key's principal names.
pub const ISSUER: &str = "switchboard";

/// One key, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApiKey {
    /// Its name (the principal's subject is `key:<name>`).
    pub name: String,
    /// The SHA-256 of the key, hex.
    pub sha256: String,
    /// Its groups (for rules and profiles).
    #[serde(default)]
    pub groups: Vec<String>,
    /// When it was made (seconds since 1970).
    pub created: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyFile {
    #[serde(default)]
    keys: Vec<ApiKey>,
}

/// How long the keys read from a team's store are used before it is read again.
pub const STORE_KEEP: std::time::Duration = std::time::Duration::from_secs(2);

/// How fresh the keys as last read are.
#[derive(Debug, Clone, PartialEq)]
enum Stamp {
    /// The file's modification time and length (`None`: no file).
    File(Option<(SystemTime, u64)>),
    /// When the store was read.
    Read(std::time::Instant),
}

/// Where keys are kept.
#[derive(Debug)]
enum Place {
    File(JsonStore),
    Store(Database),
}

/// The API keys of a data folder, or of a team's store.
#[derive(Debug)]
pub struct ApiKeys {
    place: Place,
    /// The keys as last read, with how fresh they are.
    cached: Mutex<Option<(Stamp, Vec<ApiKey>)>>,
}

/// Why a key could not be made or revoked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiKeyError {
    /// A key of that name exists.
    #[error("there is already a key named `{0}` (revoke it first)")]
    Exists(String),
    /// No key of that name.
    #[error("no key named `{0}`")]
    Unknown(String),
    /// A name that cannot be a subject.
    #[error("`{0}`: a key's name is letters, digits, `-`, `_` and `.`, 1 to 64 of them")]
    BadName(String),
    /// No randomness.
    #[error("no randomness for a key")]
    Random,
    /// The file, or the team's store.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ApiKeys {
    /// The keys of `data_dir`.
    pub fn open(data_dir: &Path) -> ApiKeys {
        ApiKeys { place: Place::File(JsonStore::new(Self::path(data_dir), "API key file")), cached: Mutex::new(None) }
    }

    /// The keys of a team's store.
    pub fn in_store(db: Database) -> ApiKeys {
        ApiKeys { place: Place::Store(db), cached: Mutex::new(None) }
    }

    /// Where they are kept, as people read it (a file, or the store without its password).
    pub fn shown(&self) -> String {
        match &self.place {
            Place::File(store) => store.path().display().to_string(),
            Place::Store(db) => db.shown().to_string(),
        }
    }

    /// Where they are kept.
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("api-keys.json")
    }

    /// Makes a key named `name` in `groups`; returns it (shown once: only its hash is kept).
    pub async fn create(&self, name: &str, groups: &[String]) -> Result<String, ApiKeyError> {
        let ok = (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ok {
            return Err(ApiKeyError::BadName(crate::text::excerpt(name, 80)));
        }
        let mut bytes = [0u8; 32];
        aws_lc_rs::rand::fill(&mut bytes).map_err(|_| ApiKeyError::Random)?;
        let key = format!("{PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes));
        let entry = ApiKey {
            name: name.to_string(),
            sha256: digest(&key),
            groups: groups.to_vec(),
            created: SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        };
        match &self.place {
            Place::File(store) => store.update(|file: &mut KeyFile| {
                if file.keys.iter().any(|k| k.name == name) {
                    return Err(ApiKeyError::Exists(name.to_string()));
                }
                file.keys.push(entry);
                Ok(())
            })??,
            Place::Store(db) => {
                let record = serde_json::to_value(&entry).map_err(|_| ApiKeyError::Random)?;
                if !db.insert_api_key(name, &record).await? {
                    return Err(ApiKeyError::Exists(name.to_string()));
                }
                self.forget();
            }
        }
        Ok(key)
    }

    /// Removes the key named `name`.
    pub async fn revoke(&self, name: &str) -> Result<(), ApiKeyError> {
        match &self.place {
            Place::File(store) => store.update(|file: &mut KeyFile| {
                let before = file.keys.len();
                file.keys.retain(|k| k.name != name);
                if file.keys.len() == before { Err(ApiKeyError::Unknown(name.to_string())) } else { Ok(()) }
            })?,
            Place::Store(db) => {
                let gone = db.delete_api_key(name).await?;
                self.forget();
                if gone { Ok(()) } else { Err(ApiKeyError::Unknown(name.to_string())) }
            }
        }
    }

    /// The keys kept (names, groups, when made; never the keys).
    pub async fn list(&self) -> Result<Vec<ApiKey>, ApiKeyError> {
        match &self.place {
            Place::File(store) => Ok(store.read::<KeyFile>()?.keys),
            Place::Store(db) => {
                Ok(db.api_keys().await?.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect())
            }
        }
    }

    /// Whose key `key` is, if it is a kept one.
    pub async fn principal(&self, key: &str) -> Option<Principal> {
        let wanted = digest(key);
        let keys = self.current().await;
        // Every kept hash compared in full, so the time says nothing of which came close.
        let found = keys.iter().fold(None, |found, k| if same(&k.sha256, &wanted) { Some(k) } else { found })?;
        Some(Principal {
            subject: format!("key:{}", found.name),
            issuer: ISSUER.to_string(),
            name: Some(found.name.clone()),
            groups: found.groups.clone(),
            scopes: Vec::new(),
        })
    }

    /// Drops the keys as last read (this process changed them).
    fn forget(&self) {
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The keys, read again when the file changed, or every [`STORE_KEEP`] from a store.
    async fn current(&self) -> Vec<ApiKey> {
        let stamp = match &self.place {
            Place::File(store) => {
                Stamp::File(std::fs::metadata(store.path()).ok().and_then(|m| Some((m.modified().ok()?, m.len()))))
            }
            Place::Store(_) => Stamp::Read(std::time::Instant::now()),
        };
        {
            let cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
            let fresh = |at: &Stamp| match (at, &stamp) {
                (Stamp::Read(then), Stamp::Read(_)) => then.elapsed() < STORE_KEEP,
                (a, b) => a == b,
            };
            if let Some((at, keys)) = cached.as_ref()
                && fresh(at)
            {
                return keys.clone();
            }
        }
        let keys = match self.list().await {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!("API keys: {e}; no key is accepted until it is fixed");
                Vec::new()
            }
        };
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some((stamp, keys.clone()));
        keys
    }
}

fn digest(key: &str) -> String {
    Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[tokio::test]
    async fn a_key_is_shown_once_kept_hashed_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let keys = ApiKeys::open(dir.path());
        let key = keys.create("ci-bot", &["ci".into()]).await.unwrap();
        assert!(key.starts_with(PREFIX) && key.len() == PREFIX.len() + 43, "{key}");
        let text = std::fs::read_to_string(ApiKeys::path(dir.path())).unwrap();
        assert!(!text.contains(&key[PREFIX.len()..]), "the key itself is never written");
        let mode = std::fs::metadata(ApiKeys::path(dir.path())).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let who = keys.principal(&key).await.unwrap();
        assert_eq!(
            (who.subject.as_str(), who.issuer.as_str(), who.groups.as_slice()),
            ("key:ci-bot", ISSUER, &["ci".to_string()][..])
        );
        assert!(keys.principal(&format!("{key}x")).await.is_none());
        assert!(matches!(keys.create("ci-bot", &[]).await, Err(ApiKeyError::Exists(_))));
        assert!(matches!(keys.create("no spaces", &[]).await, Err(ApiKeyError::BadName(_))));
        // Revoked by another handle (another process): this one stops accepting it.
        ApiKeys::open(dir.path()).revoke("ci-bot").await.unwrap();
        assert!(keys.principal(&key).await.is_none());
        assert!(matches!(keys.revoke("ci-bot").await, Err(ApiKeyError::Unknown(_))));
        assert!(keys.list().await.unwrap().is_empty());
    }
}

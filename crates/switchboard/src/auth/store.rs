//! The token store: one entry per server URL, holding the client switchboard registered
//! (reused on the next login) and the tokens. Credentials are looked up by the exact URL they
//! were issued for, never by server name. It is `<data>/auth.json` (mode 0600, in a 0700
//! folder) by default, or rows of a team's database ([`crate::store::db`]), each entry sealed
//! whole under the key ring and bound to its owner (the host, or one person) and URL.
//!
//! In the file, every change is read-modify-write under an advisory lock (`auth.json.lock`) and lands by
//! an atomic rename, so two switchboard processes saving at once lose nothing. A file that
//! does not decode is never overwritten: it is moved aside (`auth.json.corrupt-<time>`) and
//! reported, and only then is a fresh file started (one bad byte must not wipe every server's
//! login, as it does in OpenCode).

use nix::fcntl::Flock;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::fsutil::{create_private_dir, write_atomic};
use crate::store::db::{Database, SecretKind};

/// What can go wrong with the token store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, writing or locking the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file does not decode (it is left as it is by reads; a write moves it aside).
    #[error("{path} is not a valid token store ({message}); it was left untouched")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The decoding error (position, not content).
        message: String,
    },
    /// The team's database (or its key ring) refused.
    #[error(transparent)]
    Database(#[from] crate::store::StoreError),
}

/// A client registered with (or configured for) an authorisation server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRecord {
    /// The client id.
    pub client_id: String,
    /// Its secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI it was registered with (a client is reused only for the same one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// When it was registered (Unix seconds).
    #[serde(default)]
    pub registered_at: u64,
    /// When its secret expires (Unix seconds; RFC 7591 `client_secret_expires_at`), if the
    /// authorization server said: an expired client is registered again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// The scopes it was registered for, when switchboard registered it: a login that asks
    /// for more (a step-up) registers a client anew, since an authorization server may hold
    /// a client to the scopes it registered with. `None`: not known (reused as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

impl ClientRecord {
    /// Whether its secret has expired at `now` (Unix seconds).
    pub fn expired(&self, now: u64) -> bool {
        self.client_secret_expires_at.is_some_and(|t| t <= now)
    }
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("redirect_uri", &self.redirect_uri)
            .field("registered_at", &self.registered_at)
            .finish()
    }
}

/// What is stored for one server URL.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Entry {
    /// The server's name when the entry was last written (for people reading the list).
    #[serde(default)]
    pub server: String,
    /// The registered client, reused by the next login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRecord>,
    /// The tokens (rmcp's record: token response, granted scopes, when received, issuer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The `WWW-Authenticate` challenge of the last request the server refused for want of a
    /// scope (a 403 `insufficient_scope`): the next login asks for what it names (step-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// The DPoP key pair its tokens are bound to (base64url PKCS#8), made at the first DPoP
    /// login and kept across logins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
    /// Last change (Unix seconds).
    #[serde(default)]
    pub updated_at: u64,
}

/// A string that is never shown (`Debug` prints `<redacted>`).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default = "version")]
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

fn version() -> u32 {
    1
}

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The token store: a file, or one owner's rows of a team's database.
#[derive(Debug, Clone)]
pub struct TokenStore {
    /// The file (for the database: where its locks would be; unused).
    path: PathBuf,
    db: Option<(Database, String)>,
    /// Where refreshes are counted.
    metrics: Option<crate::metrics::Metrics>,
}

impl TokenStore {
    /// The store in a data folder (`<data>/auth.json`).
    pub fn in_dir(data_dir: &Path) -> TokenStore {
        TokenStore { path: data_dir.join("auth.json"), db: None, metrics: None }
    }

    /// `owner`'s entries in a team's database (`""`: the host's own logins; else a person's
    /// [`Principal::key`](crate::identity::Principal::key)).
    pub fn in_database(db: Database, owner: &str) -> TokenStore {
        TokenStore { path: PathBuf::new(), db: Some((db, owner.to_string())), metrics: None }
    }

    /// Tells the other processes on the team's store that this owner logged out of `server`
    /// (nothing for a file store; a failure is logged).
    pub(crate) async fn tell_logout(&self, server: &str) {
        if let Some((db, owner)) = &self.db {
            db.tell(&crate::store::signals::Signal::Logout { owner: owner.clone(), server: server.to_string() }).await;
        }
    }

    /// The same, each refresh of a token counted in `metrics`
    /// (`switchboard_token_refreshes_total`).
    pub(crate) fn counted(mut self, metrics: crate::metrics::Metrics) -> TokenStore {
        self.metrics = Some(metrics);
        self
    }

    /// The file, for the file store.
    pub fn path(&self) -> Option<&Path> {
        self.db.is_none().then_some(self.path.as_path())
    }

    /// Where the tokens are, as people read it (a file, or the database without its password).
    pub fn shown(&self) -> String {
        match &self.db {
            Some((db, owner)) if owner.is_empty() => db.shown().to_string(),
            Some((db, owner)) => format!("{} (person {owner})", db.shown()),
            None => self.path.display().to_string(),
        }
    }

    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io { path: self.path.clone(), source }
    }

    fn read_contents(&self) -> Result<Contents, StoreError> {
        // Refused if it is not ours or others can write it (tokens could have been planted).
        let bytes = match crate::fsutil::read_private(&self.path) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Contents::default()),
            Err(e) => return Err(self.io(e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            // Line and column only: serde's message could quote a token.
            message: format!("{:?} error at line {}, column {}", e.classify(), e.line(), e.column()),
        })
    }

    /// Every entry, by server URL.
    pub async fn entries(&self) -> Result<BTreeMap<String, Entry>, StoreError> {
        match &self.db {
            Some((db, owner)) => {
                let mut out = BTreeMap::new();
                for (url, _, bytes) in db.secrets(SecretKind::Token, owner).await? {
                    let entry = self.decode_row(&url, &bytes)?;
                    out.insert(url, entry);
                }
                Ok(out)
            }
            None => Ok(self.read_contents()?.servers),
        }
    }

    /// The entry for a server URL.
    pub async fn entry(&self, url: &str) -> Result<Option<Entry>, StoreError> {
        match &self.db {
            Some((db, owner)) => match db.secret(SecretKind::Token, owner, url).await? {
                Some(bytes) => self.decode_row(url, &bytes).map(Some),
                None => Ok(None),
            },
            None => Ok(self.read_contents()?.servers.remove(url)),
        }
    }

    /// A database row's entry (it opened, so it is ours: one that does not decode is said, by
    /// position only, and left).
    fn decode_row(&self, url: &str, bytes: &[u8]) -> Result<Entry, StoreError> {
        serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
            path: PathBuf::from(format!("{} [{url}]", self.shown())),
            message: format!("{:?} error at line {}, column {}", e.classify(), e.line(), e.column()),
        })
    }

    /// Changes the entry for `url` (created empty if missing; removed if `change` leaves it
    /// with no client, credentials or DPoP key) under the store's lock (the file's, or the
    /// row's in the database). Returns where a corrupt file was moved, if one was.
    pub async fn update(
        &self,
        url: &str,
        server: &str,
        change: impl FnOnce(&mut Entry),
    ) -> Result<Option<PathBuf>, StoreError> {
        let Some((db, owner)) = &self.db else { return self.update_file(url, server, change) };
        let decoded = db
            .update_secret(SecretKind::Token, owner, url, server, |current| {
                let mut entry = match current.as_deref().map(serde_json::from_slice::<Entry>) {
                    Some(Ok(e)) => e,
                    // Left as it is: the change is not made (said below).
                    Some(Err(e)) => return (current, Some(e)),
                    None => Entry::default(),
                };
                change(&mut entry);
                entry.server = server.to_string();
                entry.updated_at = now();
                if entry.client.is_none() && entry.credentials.is_none() && entry.dpop_key.is_none() {
                    return (None, None);
                }
                (serde_json::to_vec(&entry).ok(), None)
            })
            .await?;
        match decoded {
            Some(e) => Err(StoreError::Corrupt {
                path: PathBuf::from(format!("{} [{url}]", self.shown())),
                message: format!("{:?} error at line {}, column {}", e.classify(), e.line(), e.column()),
            }),
            None => Ok(None),
        }
    }

    fn update_file(
        &self,
        url: &str,
        server: &str,
        change: impl FnOnce(&mut Entry),
    ) -> Result<Option<PathBuf>, StoreError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| self.io(e))?;
        let _lock = self.lock("auth.json.lock", crate::fsutil::LOCK_WAIT)?;
        let mut set_aside = None;
        let mut contents = match self.read_contents() {
            Ok(c) => c,
            Err(StoreError::Corrupt { message, .. }) => {
                let aside = self.path.with_file_name(format!("auth.json.corrupt-{}", now()));
                std::fs::rename(&self.path, &aside).map_err(|e| self.io(e))?;
                tracing::warn!(
                    "{} did not decode ({message}); it was moved to {} and a new store started",
                    self.path.display(),
                    aside.display()
                );
                set_aside = Some(aside);
                Contents::default()
            }
            Err(e) => return Err(e),
        };
        let entry = contents.servers.entry(url.to_string()).or_default();
        change(entry);
        entry.server = server.to_string();
        entry.updated_at = now();
        if entry.client.is_none() && entry.credentials.is_none() && entry.dpop_key.is_none() {
            contents.servers.remove(url);
        }
        contents.version = version();
        let bytes = serde_json::to_vec_pretty(&contents).map_err(|e| self.io(std::io::Error::other(e)))?;
        write_atomic(&self.path, &bytes, Some(0o600)).map_err(|e| self.io(e))?;
        Ok(set_aside)
    }

    /// Takes an exclusive advisory lock (`flock`) on a file next to the store (0600), waiting
    /// at most `wait`; released when the returned value is dropped, or when the process dies.
    fn lock(&self, name: &str, wait: std::time::Duration) -> Result<Flock<File>, StoreError> {
        let path = self.path.with_file_name(name);
        crate::fsutil::lock(&path, wait).map_err(|source| StoreError::Io { path, source })
    }

    /// The credential store rmcp reads and writes for one server URL.
    pub(crate) fn for_url(&self, url: &str, server: &str) -> UrlStore {
        UrlStore {
            store: self.clone(),
            url: url.to_string(),
            server: server.to_string(),
            kept: Arc::default(),
            refresh: Arc::default(),
        }
    }
}

/// How long a refresh waits for another process's refresh of the same store.
const REFRESH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// How long tokens read from the store are used without reading it again. rmcp reads the
/// store before every request to the server (to see a refresh another process made); a
/// connection's calls within this time take what was read last (a file parse, or a database
/// query and an AES-GCM open, per call otherwise). What this process saves is kept at once;
/// a refresh always reads the store under its lock; another process's logout reaches this one
/// within this time.
const KEEP_READ: std::time::Duration = std::time::Duration::from_secs(1);

/// One server URL's view of the store, as rmcp's `CredentialStore`.
#[derive(Clone)]
pub(crate) struct UrlStore {
    store: TokenStore,
    url: String,
    server: String,
    /// What was last read or saved, and when (shared by the clones rmcp makes).
    kept: Arc<Mutex<Option<Kept>>>,
    /// How the refresh under way is going (`None`: none is).
    refresh: Arc<Mutex<Option<&'static str>>>,
}

/// A refresh's guard: rmcp holds it from before it loads the tokens until it saved the new
/// ones (or gave up); when it is dropped, the refresh is counted by how it ended: `ok` (new
/// tokens saved), `rejected` (`invalid_grant`: the refresh token is no good, log in again) or
/// `failed` (the authorization server did not answer well, or there was no refresh token).
struct Refreshing {
    _held: Box<dyn Send>,
    refresh: Arc<Mutex<Option<&'static str>>>,
    metrics: Option<(crate::metrics::Metrics, String)>,
}

impl Drop for Refreshing {
    fn drop(&mut self) {
        let outcome = self.refresh.lock().unwrap_or_else(PoisonError::into_inner).take().unwrap_or("failed");
        if let Some((metrics, server)) = &self.metrics {
            metrics.token_refresh(server, outcome);
        }
    }
}

/// Tokens as read (or saved) at a time (`None`: the store held none).
type Kept = (Instant, Option<StoredCredentials>);

impl std::fmt::Debug for UrlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlStore").field("store", &self.store).field("url", &self.url).finish_non_exhaustive()
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

impl UrlStore {
    /// Keeps `credentials` as read now (`None`: nothing kept, the next load reads the store).
    fn keep(&self, credentials: Option<Option<StoredCredentials>>) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = credentials.map(|c| (Instant::now(), c));
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&UrlStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, AuthError> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(&me)).await.map_err(store_error)?.map_err(store_error)
    }
}

#[async_trait::async_trait]
impl CredentialStore for UrlStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if let Some((at, credentials)) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
            && at.elapsed() < KEEP_READ
        {
            return Ok(credentials.clone());
        }
        let read = if self.store.db.is_some() {
            self.store.entry(&self.url).await.map_err(store_error)?.and_then(|e| e.credentials)
        } else {
            self.blocking(|s| Ok(s.store.read_contents()?.servers.remove(&s.url).and_then(|e| e.credentials))).await?
        };
        self.keep(Some(read.clone()));
        Ok(read)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.keep(None);
        let saved = credentials.clone();
        let save = move |e: &mut Entry| {
            // The client the tokens were issued to is the one to reuse.
            if e.client.as_ref().is_none_or(|c| c.client_id != credentials.client_id) {
                e.client = Some(ClientRecord {
                    client_id: credentials.client_id.clone(),
                    client_secret: None,
                    redirect_uri: None,
                    registered_at: now(),
                    client_secret_expires_at: None,
                    scopes: None,
                });
            }
            e.credentials = Some(credentials);
        };
        if self.store.db.is_some() {
            self.store.update(&self.url, &self.server, save).await.map_err(store_error)?;
        } else {
            self.blocking(move |s| s.store.update_file(&s.url, &s.server, save)).await?;
        }
        self.keep(Some(Some(saved)));
        if let Some(outcome) = self.refresh.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            *outcome = "ok";
        }
        Ok(())
    }

    async fn on_refresh_token_rejected(&self, _credentials: &StoredCredentials) -> Result<(), AuthError> {
        if let Some(outcome) = self.refresh.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            *outcome = "rejected";
        }
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.keep(None);
        if self.store.db.is_some() {
            return self
                .store
                .update(&self.url, &self.server, |e| e.credentials = None)
                .await
                .map(drop)
                .map_err(store_error);
        }
        self.blocking(|s| s.store.update_file(&s.url, &s.server, |e| e.credentials = None)).await.map(drop)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        // One refresh at a time across processes: the second one then loads the tokens the
        // first saved instead of spending a refresh token that was just rotated away.
        // Another process may be refreshing over a slow network: wait longer for it.
        let held: Box<dyn Send> = if let Some((db, owner)) = &self.store.db {
            Box::new(db.hold("refresh", SecretKind::Token, owner, &self.url, REFRESH_WAIT).await.map_err(store_error)?)
        } else {
            Box::new(self.blocking(|s| s.store.lock("auth.json.refresh.lock", REFRESH_WAIT)).await?)
        };
        // Under the lock, the store itself: another process may have refreshed meanwhile.
        self.keep(None);
        *self.refresh.lock().unwrap_or_else(PoisonError::into_inner) = Some("failed");
        let metrics = self.store.metrics.clone().map(|m| (m, self.server.clone()));
        Ok(Some(CredentialRefreshGuard::new(Refreshing { _held: held, refresh: self.refresh.clone(), metrics })))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn login(entry: &mut Entry, token: &str) {
        let credentials = serde_json::json!({
            "client_id": "c1",
            "token_response": {"access_token": token, "token_type": "Bearer"},
            "granted_scopes": [],
            "token_received_at": 1,
        });
        entry.credentials = Some(serde_json::from_value(credentials).unwrap());
    }

    fn token(credentials: Option<StoredCredentials>) -> String {
        let value = serde_json::to_value(credentials.unwrap()).unwrap();
        value["token_response"]["access_token"].as_str().unwrap().to_string()
    }

    /// Calls within `KEEP_READ` take what was read last; a refresh reads the store under its
    /// lock (another process's refresh is seen), and what this process saves is used at once.
    #[tokio::test]
    async fn reads_are_kept_briefly_but_a_refresh_reads_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let url = "https://up.example/mcp";
        store.update(url, "up", |e| login(e, "first")).await.unwrap();
        let rmcp_view = store.for_url(url, "up");
        assert_eq!(token(rmcp_view.load().await.unwrap()), "first");
        // Another process refreshes.
        TokenStore::in_dir(dir.path()).update(url, "up", |e| login(e, "second")).await.unwrap();
        assert_eq!(token(rmcp_view.load().await.unwrap()), "first", "kept for a moment");
        let guard = rmcp_view.acquire_refresh_guard().await.unwrap();
        assert_eq!(token(rmcp_view.load().await.unwrap()), "second", "under the lock, the store");
        drop(guard);
        // Saved here: used at once.
        let mut entry = Entry::default();
        login(&mut entry, "third");
        rmcp_view.save(entry.credentials.unwrap()).await.unwrap();
        assert_eq!(token(rmcp_view.load().await.unwrap()), "third");
        // Past the time, another process's change is read.
        TokenStore::in_dir(dir.path()).update(url, "up", |e| login(e, "fourth")).await.unwrap();
        tokio::time::sleep(KEEP_READ + std::time::Duration::from_millis(50)).await;
        assert_eq!(token(rmcp_view.load().await.unwrap()), "fourth");
        rmcp_view.clear().await.unwrap();
        assert!(rmcp_view.load().await.unwrap().is_none());
    }
}

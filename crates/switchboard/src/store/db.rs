//! A team's store on PostgreSQL (`store.url`, `--store postgres://…`): the secrets of the host
//! and of each person (upstream logins, input values) sealed under the key ring ([`super::seal`])
//! and the people who signed in, shared by every process that opens the same database.
//!
//! The schema is migrated on open (sqlx's migrator, under its advisory lock, so replicas that
//! start together apply it once); a database whose schema is newer than this binary's is
//! refused ([`StoreError::NewerSchema`]): an older switchboard never writes rows it does not
//! understand. Every secret is one row of `switchboard_secrets`, `(kind, owner, key)`, whose
//! `sealed` column is AES-256-GCM under the ring's first key, bound to those three values (a
//! row copied to another owner or key does not open). Changes are read-modify-write in one
//! transaction under a transaction-level advisory lock of the row's key, so concurrent changes
//! from any number of processes all land. Step 3 of a key rotation ([`super::seal`]) is
//! [`Database::reseal`] (`switchboard store reseal`), run once every replica seals with the
//! new key: never on open, where replicas that are midway through a rotation would seal each
//! other's rows back and forth.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::StoreError;
use super::seal::KeyRing;

/// The schema's migrations, oldest first: `(version, description, SQL)`.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "secrets and people", include_str!("migrations/0001_secrets_and_people.sql")),
    (2, "api keys", include_str!("migrations/0002_api_keys.sql")),
    (3, "documents", include_str!("migrations/0003_documents.sql")),
    (4, "audit", include_str!("migrations/0004_audit.sql")),
    (5, "sessions", include_str!("migrations/0005_sessions.sql")),
    (6, "replicas", include_str!("migrations/0006_replicas.sql")),
    (7, "session memory", include_str!("migrations/0007_session_memory.sql")),
    (8, "dashboard", include_str!("migrations/0008_dashboard.sql")),
    (9, "login links", include_str!("migrations/0009_login_links.sql")),
    (10, "pages", include_str!("migrations/0010_pages.sql")),
];

/// Values given for inputs (`${input:ID}`): config file → input id → value.
pub type InputValues = std::collections::BTreeMap<PathBuf, std::collections::BTreeMap<String, String>>;

/// The kind of secret a row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretKind {
    /// A server URL's entry of the token store (client, tokens, DPoP key).
    Token,
    /// An input value (`${input:ID}`).
    Input,
}

impl SecretKind {
    fn as_str(self) -> &'static str {
        match self {
            SecretKind::Token => "token",
            SecretKind::Input => "input",
        }
    }
}

/// An open team store: a connection pool and the key ring. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    keys: KeyRing,
    shown: String,
    /// Every person's input values, read on open and kept up to date by [`Database::set_input`]
    /// (a person's config is loaded where no query can wait: [`Database::input_values`]).
    inputs: std::sync::RwLock<HashMap<String, InputValues>>,
    /// This handle's name among the processes on the store (random): how it knows its own
    /// signals ([`super::signals`]).
    origin: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("store", &self.inner.shown).field("keys", &self.inner.keys).finish()
    }
}

/// The URL as it may be shown: scheme, user, host, port and database; never the password.
pub fn shown_url(url: &str) -> String {
    match url.parse::<reqwest::Url>() {
        Ok(mut u) => {
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "the store's URL".to_string(),
    }
}

/// Where a team's store is and what seals its secrets: `store` in the user, `--config` or
/// managed file (never a project's), or `--store` of `gateway` and `serve`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// `postgres://user@host:port/database` (sqlx's options such as `sslmode` in the query; a
    /// password is best left to `PGPASSWORD` or `~/.pgpass`, which are read when the URL has
    /// none).
    pub url: String,
    /// The key ring's file (`<id>:<32 bytes in base64>` a line, readable by its owner alone);
    /// without it, the ring is `SWITCHBOARD_STORE_KEYS`.
    pub key_file: Option<PathBuf>,
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig").field("url", &shown_url(&self.url)).field("key_file", &self.key_file).finish()
    }
}

impl StoreConfig {
    /// A store at `url`, its key ring from the environment.
    pub fn new(url: &str) -> StoreConfig {
        StoreConfig { url: url.to_string(), key_file: None }
    }

    /// Whether `url` names a store this switchboard can open.
    pub fn is_store_url(url: &str) -> bool {
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    /// The key ring: from `key_file` (refused when others may read or write it), else from
    /// `env_keys` (the value of [`KEYS_ENV`](super::seal::KEYS_ENV), which the caller reads).
    /// A store is never used without one: its secrets are never kept in the clear.
    pub fn key_ring(&self, env_keys: Option<&str>) -> Result<KeyRing, StoreError> {
        if let Some(file) = &self.key_file {
            let from = file.display().to_string();
            let keys = |message: String| StoreError::Keys {
                from: from.clone(),
                source: super::seal::SealError::BadKeyRing { line: 0, message },
            };
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::metadata(file).map_err(|e| keys(e.to_string()))?;
            if meta.mode() & 0o077 != 0 {
                return Err(keys(format!(
                    "others may read it (mode {:o}): `chmod 600 {}`",
                    meta.mode() & 0o777,
                    file.display()
                )));
            }
            let text = std::fs::read_to_string(file).map_err(|e| keys(e.to_string()))?;
            return KeyRing::parse(&text).map_err(|source| StoreError::Keys { from, source });
        }
        match env_keys {
            Some(text) => KeyRing::parse(text)
                .map_err(|source| StoreError::Keys { from: super::seal::KEYS_ENV.to_string(), source }),
            None => Err(StoreError::Keys {
                from: format!("`store.key_file` or {}", super::seal::KEYS_ENV),
                source: super::seal::SealError::NoKey,
            }),
        }
    }

    /// Opens the store ([`Database::open`]) with its key ring ([`StoreConfig::key_ring`]).
    pub async fn open(&self, env_keys: Option<&str>) -> Result<Database, StoreError> {
        let keys = self.key_ring(env_keys)?;
        Database::open(&self.url, keys).await
    }
}

/// What a store holds ([`Database::status`]).
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct StoreStatus {
    /// Its schema version.
    pub schema: i64,
    /// `(kind, key id, count)`: how many secrets of each kind each key sealed.
    pub secrets: Vec<(String, String, i64)>,
    /// How many people signed in.
    pub people: i64,
}

/// The migrations compiled into this binary, as sqlx's migrator takes them.
#[derive(Debug)]
struct Embedded;

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(self) -> BoxFuture<'s, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async {
            Ok(MIGRATIONS
                .iter()
                .map(|(version, what, sql)| {
                    Migration::new(*version, Cow::Borrowed(what), MigrationType::Simple, Cow::Borrowed(sql), false)
                })
                .collect())
        })
    }
}

/// The newest schema version this binary knows.
pub fn schema_version() -> i64 {
    MIGRATIONS.last().map(|m| m.0).unwrap_or(0)
}

impl Database {
    /// Opens the store at `url` (`postgres://user:password@host:port/database`, with sqlx's
    /// options such as `sslmode`), applies the migrations it lacks, and refuses a newer schema.
    pub async fn open(url: &str, keys: KeyRing) -> Result<Database, StoreError> {
        let shown = shown_url(url);
        let options: PgConnectOptions =
            url.parse().map_err(|source| StoreError::Database { store: shown.clone(), source })?;
        // One connection first, so that a store that cannot be reached says why at once (the
        // pool would retry until its timeout and say only that it timed out).
        let probe = sqlx::ConnectOptions::connect(&options)
            .await
            .map_err(|source| StoreError::Database { store: shown.clone(), source })?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options);
        let migrator =
            Migrator::new(Embedded).await.map_err(|source| StoreError::Migrate { store: shown.clone(), source })?;
        migrator.run(&pool).await.map_err(|source| match source {
            MigrateError::VersionMissing(found) => {
                StoreError::NewerSchema { store: shown.clone(), found, known: schema_version() }
            }
            source => StoreError::Migrate { store: shown.clone(), source },
        })?;
        let mut random = [0u8; 8];
        aws_lc_rs::rand::fill(&mut random).map_err(|_| StoreError::Migrate {
            store: shown.clone(),
            source: MigrateError::Source("no random bytes for the process's name".into()),
        })?;
        let origin = random.iter().map(|b| format!("{b:02x}")).collect();
        let db = Database { inner: Arc::new(Inner { pool, keys, shown, inputs: Default::default(), origin }) };
        db.load_inputs().await?;
        Ok(db)
    }

    /// The store as it may be shown (no password).
    pub fn shown(&self) -> &str {
        &self.inner.shown
    }

    /// This process's name among those on the store (random, made when it opened).
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// The connection pool (for the records of [`super::records`]).
    pub(super) fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    pub(super) fn db_error(&self, source: sqlx::Error) -> StoreError {
        StoreError::Database { store: self.inner.shown.clone(), source }
    }

    fn context(kind: SecretKind, owner: &str, key: &str) -> Vec<u8> {
        [kind.as_str().as_bytes(), owner.as_bytes(), key.as_bytes()].join(&0u8)
    }

    fn open_row(&self, kind: SecretKind, owner: &str, key: &str, sealed: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.keys.open(&Self::context(kind, owner, key), sealed).map_err(|source| StoreError::Sealed {
            store: self.inner.shown.clone(),
            kind: kind.as_str(),
            owner: shown_owner(owner),
            key: crate::text::excerpt(key, 80),
            source,
        })
    }

    fn seal_row(&self, kind: SecretKind, owner: &str, key: &str, plain: &[u8]) -> Result<String, StoreError> {
        self.inner.keys.seal(&Self::context(kind, owner, key), plain).map_err(|source| StoreError::Sealed {
            store: self.inner.shown.clone(),
            kind: kind.as_str(),
            owner: shown_owner(owner),
            key: crate::text::excerpt(key, 80),
            source,
        })
    }

    /// Every secret of `kind` that `owner` holds: `(key, label, value)`.
    pub async fn secrets(&self, kind: SecretKind, owner: &str) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        let rows = sqlx::query_as::<_, (String, String, String)>(
            "SELECT key, label, sealed FROM switchboard_secrets WHERE kind = $1 AND owner = $2 ORDER BY key",
        )
        .bind(kind.as_str())
        .bind(owner)
        .fetch_all(&self.inner.pool)
        .await
        .map_err(|e| self.db_error(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for (key, label, sealed) in rows {
            let plain = self.open_row(kind, owner, &key, &sealed)?;
            out.push((key, label, plain));
        }
        Ok(out)
    }

    /// The secret `(kind, owner, key)`, if there is one.
    pub async fn secret(&self, kind: SecretKind, owner: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let row = sqlx::query_scalar::<_, String>(
            "SELECT sealed FROM switchboard_secrets WHERE kind = $1 AND owner = $2 AND key = $3",
        )
        .bind(kind.as_str())
        .bind(owner)
        .bind(key)
        .fetch_optional(&self.inner.pool)
        .await
        .map_err(|e| self.db_error(e))?;
        row.map(|sealed| self.open_row(kind, owner, key, &sealed)).transpose()
    }

    /// Changes the secret `(kind, owner, key)` with `change` in one transaction that holds the
    /// row's lock: it gets the value (`None`: no row) and returns the new one (`None`: delete
    /// the row) and what to return. `label` is kept beside it in the clear (a server's name, for
    /// lists).
    pub async fn update_secret<R>(
        &self,
        kind: SecretKind,
        owner: &str,
        key: &str,
        label: &str,
        change: impl FnOnce(Option<Vec<u8>>) -> (Option<Vec<u8>>, R),
    ) -> Result<R, StoreError> {
        let mut tx = self.inner.pool.begin().await.map_err(|e| self.db_error(e))?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(lock_name("secret", kind, owner, key))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        let row = sqlx::query_scalar::<_, String>(
            "SELECT sealed FROM switchboard_secrets WHERE kind = $1 AND owner = $2 AND key = $3",
        )
        .bind(kind.as_str())
        .bind(owner)
        .bind(key)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| self.db_error(e))?;
        let current = row.map(|sealed| self.open_row(kind, owner, key, &sealed)).transpose()?;
        let (next, out) = change(current);
        match next {
            Some(plain) => {
                let sealed = self.seal_row(kind, owner, key, &plain)?;
                self.upsert(&mut *tx, kind, owner, key, label, sealed).await?;
            }
            None => {
                sqlx::query("DELETE FROM switchboard_secrets WHERE kind = $1 AND owner = $2 AND key = $3")
                    .bind(kind.as_str())
                    .bind(owner)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.db_error(e))?;
            }
        }
        tx.commit().await.map_err(|e| self.db_error(e))?;
        Ok(out)
    }

    /// Sets the secret `(kind, owner, key)` to `plain` whatever it was (one statement: no
    /// lock needed).
    async fn put_secret(
        &self,
        kind: SecretKind,
        owner: &str,
        key: &str,
        label: &str,
        plain: &[u8],
    ) -> Result<(), StoreError> {
        let sealed = self.seal_row(kind, owner, key, plain)?;
        self.upsert(&self.inner.pool, kind, owner, key, label, sealed).await
    }

    async fn upsert<'e>(
        &self,
        on: impl sqlx::PgExecutor<'e>,
        kind: SecretKind,
        owner: &str,
        key: &str,
        label: &str,
        sealed: String,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO switchboard_secrets (kind, owner, key, label, sealed, updated_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind, owner, key) \
             DO UPDATE SET label = EXCLUDED.label, sealed = EXCLUDED.sealed, updated_ms = EXCLUDED.updated_ms",
        )
        .bind(kind.as_str())
        .bind(owner)
        .bind(key)
        .bind(label)
        .bind(sealed)
        .bind(crate::status::now_ms() as i64)
        .execute(on)
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Holds the lock named `name` for `(kind, owner, key)` (a refresh of a login, across every
    /// process on this store) until the returned guard is dropped (its transaction ends then,
    /// and with it the lock). Waits at most `wait`.
    pub async fn hold(
        &self,
        name: &str,
        kind: SecretKind,
        owner: &str,
        key: &str,
        wait: Duration,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        let mut tx = self.inner.pool.begin().await.map_err(|e| self.db_error(e))?;
        // In milliseconds; SET LOCAL ends with the transaction.
        sqlx::query(&format!("SET LOCAL lock_timeout = {}", wait.as_millis().max(1)))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(lock_name(name, kind, owner, key))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(tx)
    }

    /// Seals again with the first key every secret another key sealed; returns how many.
    pub async fn reseal(&self) -> Result<usize, StoreError> {
        let Some(first) = self.inner.keys.ids().first().map(|s| format!("sb1:{s}:")) else { return Ok(0) };
        let rows = sqlx::query_as::<_, (String, String, String, String)>(
            "SELECT kind, owner, key, label FROM switchboard_secrets WHERE NOT starts_with(sealed, $1)",
        )
        .bind(&first)
        .fetch_all(&self.inner.pool)
        .await
        .map_err(|e| self.db_error(e))?;
        let mut done = 0;
        for (kind, owner, key, label) in rows {
            let kind = match kind.as_str() {
                "token" => SecretKind::Token,
                "input" => SecretKind::Input,
                _ => continue,
            };
            self.update_secret(kind, &owner, &key, &label, |v| (v, ())).await?;
            done += 1;
        }
        Ok(done)
    }

    /// Reads every person's input values into memory. A value that does not open (sealed by a
    /// key this ring lacks, or moved from another row) is left out with a warning naming whose
    /// and which: that person is asked for it again, everyone else goes on.
    async fn load_inputs(&self) -> Result<(), StoreError> {
        let rows = sqlx::query_as::<_, (String, String, String)>(
            "SELECT owner, key, sealed FROM switchboard_secrets WHERE kind = $1",
        )
        .bind(SecretKind::Input.as_str())
        .fetch_all(&self.inner.pool)
        .await
        .map_err(|e| self.db_error(e))?;
        let mut all: HashMap<String, InputValues> = HashMap::new();
        for (owner, key, sealed) in rows {
            let value = match self.open_row(SecretKind::Input, &owner, &key, &sealed) {
                Ok(value) => value,
                Err(e) => {
                    tracing::warn!("{e}; left out: that input is asked for again");
                    continue;
                }
            };
            let Ok((file, id)) = serde_json::from_str::<(PathBuf, String)>(&key) else { continue };
            let value = String::from_utf8_lossy(&value).into_owned();
            all.entry(owner).or_default().entry(file).or_default().insert(id, value);
        }
        *self.inner.inputs.write().unwrap_or_else(PoisonError::into_inner) = all;
        Ok(())
    }

    /// The input values `owner` gave (config file → id → value), as last read or set here.
    pub fn input_values(&self, owner: &str) -> InputValues {
        self.inner.inputs.read().unwrap_or_else(PoisonError::into_inner).get(owner).cloned().unwrap_or_default()
    }

    /// Keeps `value` for the input `id` of `file` as `owner`'s, sealed.
    pub async fn set_input(&self, owner: &str, file: &Path, id: &str, value: &str) -> Result<(), StoreError> {
        let key = serde_json::json!([file, id]).to_string();
        // The old value is not read: one that no longer opens (another key ring's) is replaced.
        self.put_secret(SecretKind::Input, owner, &key, id, value.as_bytes()).await?;
        let mut inputs = self.inner.inputs.write().unwrap_or_else(PoisonError::into_inner);
        inputs
            .entry(owner.to_string())
            .or_default()
            .entry(file.to_path_buf())
            .or_default()
            .insert(id.into(), value.into());
        Ok(())
    }

    /// What the store holds: its schema version, how many secrets of each kind each key
    /// sealed, how many people.
    pub async fn status(&self) -> Result<StoreStatus, StoreError> {
        let schema: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0)::bigint FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.inner.pool)
                .await
                .map_err(|e| self.db_error(e))?;
        let secrets = sqlx::query_as::<_, (String, String, i64)>(
            "SELECT kind, split_part(sealed, ':', 2), COUNT(*) FROM switchboard_secrets GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .fetch_all(&self.inner.pool)
        .await
        .map_err(|e| self.db_error(e))?;
        let people: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM switchboard_people")
            .fetch_one(&self.inner.pool)
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(StoreStatus { schema, secrets, people })
    }

    /// The keys secrets are sealed with: the replicas of one store share them, so what one
    /// seals (a `requestState`) another opens.
    pub fn key_ring(&self) -> &KeyRing {
        &self.inner.keys
    }

    /// Whether the store answers a trivial query within `within` (a readiness check: an
    /// error, or `None` for no answer in time).
    pub async fn ping(&self, within: Duration) -> Option<Result<(), StoreError>> {
        let asked = sqlx::query("SELECT 1").execute(&self.inner.pool);
        match tokio::time::timeout(within, asked).await {
            Ok(Ok(_)) => Some(Ok(())),
            Ok(Err(e)) => Some(Err(self.db_error(e))),
            Err(_) => None,
        }
    }

    /// Closes the pool (waits for connections in use to come back).
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }
}

fn lock_name(name: &str, kind: SecretKind, owner: &str, key: &str) -> String {
    format!("switchboard/{name}/{}/{owner}/{key}", kind.as_str())
}

fn shown_owner(owner: &str) -> String {
    if owner.is_empty() { "the host".to_string() } else { format!("person {owner}") }
}

//! The durable part of the gateway's HTTP sessions in a team's store (`switchboard_sessions`):
//! what each session's `initialize` said, whose it is and how its streams are made, so that a
//! gateway that does not hold a session (started again, or another one on the store) resumes
//! it. Sessions older than [`SESSION_DAYS`] are removed when a gateway opens the store.

use super::StoreError;
use super::db::Database;

/// How long a session can be resumed after it began.
pub const SESSION_DAYS: i64 = 7;

/// A session as kept.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredSession {
    /// What its `initialize` said (rmcp's `SessionState`, as JSON).
    pub state: serde_json::Value,
    /// Whose it is: a principal's key, `""` for a caller who did not sign in, `None` while
    /// not yet known.
    pub owner: Option<String>,
    /// Whether its streams are primed.
    pub primed: bool,
    /// The replica serving it (`None`: none yet).
    pub replica: Option<String>,
    /// What its client was given.
    pub memory: SessionMemory,
}

/// What a legacy session's client was given, kept by the replica serving it so that another
/// one taking the session over can tell the client what changed and subscribe again.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionMemory {
    /// A digest of each list (`tools`, `prompts`, `resources`) as last sent.
    #[serde(default)]
    pub lists: std::collections::BTreeMap<String, String>,
    /// The resources it subscribed to, by the URIs it was given.
    #[serde(default)]
    pub subscribed: std::collections::BTreeSet<String>,
}

impl Database {
    /// The session `id`, if kept (and not older than [`SESSION_DAYS`]).
    pub async fn session(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let row = sqlx::query_as::<_, (String, Option<String>, bool, Option<String>, String)>(
            "SELECT state::text, owner, primed, replica, memory::text FROM switchboard_sessions \
             WHERE id = $1 AND created_ms >= $2",
        )
        .bind(id)
        .bind(oldest())
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(row.and_then(|(state, owner, primed, replica, memory)| {
            let memory = serde_json::from_str(&memory).unwrap_or_default();
            Some(StoredSession { state: serde_json::from_str(&state).ok()?, owner, primed, replica, memory })
        }))
    }

    /// Keeps what the session `id`'s `initialize` said (its owner and kind are kept apart).
    pub async fn put_session(&self, id: &str, state: &serde_json::Value) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO switchboard_sessions (id, state, created_ms) VALUES ($1, $2::jsonb, $3) \
             ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state",
        )
        .bind(id)
        .bind(state.to_string())
        .bind(crate::status::now_ms() as i64)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Records whose the session `id` is, how its streams are made (the first caller's; an
    /// owner once set is kept) and the replica serving it.
    pub async fn claim_session(&self, id: &str, owner: &str, primed: bool, replica: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO switchboard_sessions (id, owner, primed, state, created_ms, replica) \
             VALUES ($1, $2, $3, '{}'::jsonb, $4, $5) \
             ON CONFLICT (id) DO UPDATE SET owner = COALESCE(switchboard_sessions.owner, EXCLUDED.owner), \
             primed = EXCLUDED.primed, replica = EXCLUDED.replica",
        )
        .bind(id)
        .bind(owner)
        .bind(primed)
        .bind(crate::status::now_ms() as i64)
        .bind(replica)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Makes `to` the replica serving the session `id` if `from` still is (`None`: none was):
    /// whether it did. Of replicas taking over a session at once, one does.
    pub async fn take_session(&self, id: &str, from: Option<&str>, to: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE switchboard_sessions SET replica = $3 WHERE id = $1 AND replica IS NOT DISTINCT FROM $2",
        )
        .bind(id)
        .bind(from)
        .bind(to)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Keeps what the session `id`'s client was given.
    pub async fn remember_session(&self, id: &str, memory: &SessionMemory) -> Result<(), StoreError> {
        let memory = serde_json::to_string(memory).unwrap_or_else(|_| "{}".into());
        sqlx::query("UPDATE switchboard_sessions SET memory = $2::jsonb WHERE id = $1")
            .bind(id)
            .bind(memory)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Forgets the session `id` (its client ended it).
    pub async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_sessions WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Removes sessions older than [`SESSION_DAYS`]; returns how many.
    pub async fn prune_sessions(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM switchboard_sessions WHERE created_ms < $1")
            .bind(oldest())
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(done.rows_affected())
    }
}

fn oldest() -> i64 {
    crate::status::now_ms() as i64 - SESSION_DAYS * 86_400_000
}

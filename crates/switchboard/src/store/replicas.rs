//! The gateways serving from a team's store (`switchboard_replicas`): each replica's id, the
//! address the others reach it by, and when it last said it was alive. A replica registers
//! when it starts serving, says it is alive every [`BEAT`], and leaves when it stops; one not
//! heard from within [`GONE_AFTER`] is taken as gone (killed, or cut off), and its row is
//! removed by the next replica that registers after an hour.

use std::time::Duration;

use super::StoreError;
use super::db::Database;

/// How often a replica says it is alive.
pub const BEAT: Duration = Duration::from_secs(5);
/// How long after its last word a replica is taken as gone.
pub const GONE_AFTER: Duration = Duration::from_secs(20);
/// Rows of replicas gone this long are removed.
const FORGET_AFTER_MS: i64 = 3_600_000;

/// A replica as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplicaRow {
    /// Its id (random, made when it started).
    pub id: String,
    /// Where the others reach it (`http://10.0.0.5:7342`; empty: they cannot).
    pub url: String,
    /// When it started (ms since the epoch).
    pub started_ms: i64,
    /// When it last said it was alive.
    pub seen_ms: i64,
}

impl ReplicaRow {
    /// Whether it was heard from within [`GONE_AFTER`] of `now_ms`.
    pub fn alive(&self, now_ms: i64) -> bool {
        now_ms - self.seen_ms <= i64::try_from(GONE_AFTER.as_millis()).unwrap_or(i64::MAX)
    }
}

/// Now, in ms since the epoch, as the store's rows keep it.
pub(super) fn now() -> i64 {
    i64::try_from(crate::status::now_ms()).unwrap_or(i64::MAX)
}

impl Database {
    /// Registers the replica `id`, reached at `url`, or says it is alive (registered again if
    /// its row was removed meanwhile); forgets replicas gone for an hour.
    pub async fn register_replica(&self, id: &str, url: &str) -> Result<(), StoreError> {
        let now = now();
        sqlx::query(
            "INSERT INTO switchboard_replicas (id, url, started_ms, seen_ms) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, seen_ms = EXCLUDED.seen_ms",
        )
        .bind(id)
        .bind(url)
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        sqlx::query("DELETE FROM switchboard_replicas WHERE seen_ms < $1")
            .bind(now - FORGET_AFTER_MS)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// The replica `id` stopped: its row goes.
    pub async fn leave_replica(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_replicas WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// The replica `id`, if registered.
    pub async fn replica(&self, id: &str) -> Result<Option<ReplicaRow>, StoreError> {
        let row = sqlx::query_as::<_, (String, String, i64, i64)>(
            "SELECT id, url, started_ms, seen_ms FROM switchboard_replicas WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(row.map(|(id, url, started_ms, seen_ms)| ReplicaRow { id, url, started_ms, seen_ms }))
    }

    /// Every registered replica, oldest first.
    pub async fn replicas(&self) -> Result<Vec<ReplicaRow>, StoreError> {
        let rows = sqlx::query_as::<_, (String, String, i64, i64)>(
            "SELECT id, url, started_ms, seen_ms FROM switchboard_replicas ORDER BY started_ms, id",
        )
        .fetch_all(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(rows.into_iter().map(|(id, url, started_ms, seen_ms)| ReplicaRow { id, url, started_ms, seen_ms }).collect())
    }
}

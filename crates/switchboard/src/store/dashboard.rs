//! What `serve`'s dashboard keeps in a team's store, so that replicas behind a load balancer
//! serve it as one: people's sign-ins under way (`switchboard_sign_ins`, sealed by the
//! caller), their dashboard sessions (`switchboard_dashboard_sessions`, by the SHA-256 of the
//! cookie's value), one-time login links (`switchboard_login_links`, by the SHA-256 of the
//! code), the calls waiting for approval at each process
//! (`switchboard_approvals`, by [`Database::origin`], sealed by the caller: a call's arguments
//! may hold secrets) and how many follow each process's
//! events (`switchboard_watchers`, said every few seconds: a process not heard from within
//! [`super::replicas::GONE_AFTER`] counts as gone, and so do its approvals).

use std::time::Duration;

use serde_json::Value;

use super::StoreError;
use super::db::Database;
use super::replicas::{GONE_AFTER, now};

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Rows of processes gone this long are removed (with their approvals).
const FORGET_AFTER_MS: i64 = 3_600_000;

impl Database {
    /// Keeps a sign-in under way (`sealed`: what its callback needs, sealed by the caller) and
    /// drops those older than `keep`.
    pub async fn put_sign_in(&self, state: &str, sealed: &str, keep: Duration) -> Result<(), StoreError> {
        let now = now();
        sqlx::query("DELETE FROM switchboard_sign_ins WHERE created_ms < $1")
            .bind(now - ms(keep))
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        sqlx::query("INSERT INTO switchboard_sign_ins (state, sealed, created_ms) VALUES ($1, $2, $3)")
            .bind(state)
            .bind(sealed)
            .bind(now)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Takes the sign-in `state` (once: whoever takes it first has it), if younger than `keep`.
    pub async fn take_sign_in(&self, state: &str, keep: Duration) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar::<_, String>(
            "DELETE FROM switchboard_sign_ins WHERE state = $1 AND created_ms >= $2 RETURNING sealed",
        )
        .bind(state)
        .bind(now() - ms(keep))
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))
    }

    /// Keeps a dashboard session, by the SHA-256 of its cookie (`digest`), until `until_ms`;
    /// drops the ended ones.
    pub async fn put_dashboard_session(
        &self,
        digest: &str,
        principal: &Value,
        until_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_dashboard_sessions WHERE until_ms < $1")
            .bind(now())
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        sqlx::query(
            "INSERT INTO switchboard_dashboard_sessions (digest, principal, until_ms) VALUES ($1, $2::jsonb, $3) \
             ON CONFLICT (digest) DO UPDATE SET principal = EXCLUDED.principal, until_ms = EXCLUDED.until_ms",
        )
        .bind(digest)
        .bind(principal.to_string())
        .bind(until_ms)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// The dashboard session `digest` while it lasts: who, and until when (ms since the epoch).
    pub async fn dashboard_session(&self, digest: &str) -> Result<Option<(Value, i64)>, StoreError> {
        let row = sqlx::query_as::<_, (String, i64)>(
            "SELECT principal::text, until_ms FROM switchboard_dashboard_sessions WHERE digest = $1 AND until_ms > $2",
        )
        .bind(digest)
        .bind(now())
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(row.and_then(|(p, until)| serde_json::from_str(&p).ok().map(|p| (p, until))))
    }

    /// Keeps a one-time dashboard login link, by the SHA-256 of its code (`digest`), until
    /// `until_ms`; drops the expired ones.
    pub async fn put_login_link(&self, digest: &str, until_ms: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_login_links WHERE until_ms < $1")
            .bind(now())
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        sqlx::query("INSERT INTO switchboard_login_links (digest, until_ms) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(digest)
            .bind(until_ms)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Takes the login link `digest` (once: whoever takes it first has it), if not expired.
    pub async fn take_login_link(&self, digest: &str) -> Result<bool, StoreError> {
        let taken = sqlx::query("DELETE FROM switchboard_login_links WHERE digest = $1 AND until_ms > $2")
            .bind(digest)
            .bind(now())
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(taken.rows_affected() == 1)
    }

    /// A new approval's id, unique among every process on the store.
    pub async fn next_approval_id(&self) -> Result<u64, StoreError> {
        let id = sqlx::query_scalar::<_, i64>("SELECT nextval(pg_get_serial_sequence('switchboard_approvals', 'id'))")
            .fetch_one(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(u64::try_from(id).unwrap_or_default())
    }

    /// Keeps the approval `id` this process waits for (`sealed`: as the dashboard shows it,
    /// sealed by the caller).
    pub async fn put_approval(&self, id: u64, sealed: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO switchboard_approvals (id, origin, sealed, asked_ms) VALUES ($1, $2, $3, $4)")
            .bind(i64::try_from(id).unwrap_or(i64::MAX))
            .bind(self.origin())
            .bind(sealed)
            .bind(now())
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// The approval `id` ended (answered, withdrawn): its row goes.
    pub async fn drop_approval(&self, id: u64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_approvals WHERE id = $1")
            .bind(i64::try_from(id).unwrap_or(i64::MAX))
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// The approval `id`, while a live process waits for it: the process's origin and the
    /// sealed item.
    pub async fn approval(&self, id: u64) -> Result<Option<(String, String)>, StoreError> {
        sqlx::query_as::<_, (String, String)>(
            "SELECT a.origin, a.sealed FROM switchboard_approvals a \
             JOIN switchboard_watchers w ON w.origin = a.origin AND w.seen_ms >= $2 WHERE a.id = $1",
        )
        .bind(i64::try_from(id).unwrap_or(i64::MAX))
        .bind(now() - ms(GONE_AFTER))
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))
    }

    /// The approvals live processes other than this one wait for, oldest first: each id and
    /// sealed item.
    pub async fn approvals_elsewhere(&self) -> Result<Vec<(u64, String)>, StoreError> {
        let rows = sqlx::query_as::<_, (i64, String)>(
            "SELECT a.id, a.sealed FROM switchboard_approvals a \
             JOIN switchboard_watchers w ON w.origin = a.origin AND w.seen_ms >= $2 \
             WHERE a.origin <> $1 ORDER BY a.id",
        )
        .bind(self.origin())
        .bind(now() - ms(GONE_AFTER))
        .fetch_all(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(rows.into_iter().map(|(id, sealed)| (u64::try_from(id).unwrap_or_default(), sealed)).collect())
    }

    /// Says this process is alive with `watchers` following its events; forgets processes
    /// gone for an hour, and their approvals.
    pub async fn beat_watchers(&self, watchers: usize) -> Result<(), StoreError> {
        let now = now();
        sqlx::query(
            "INSERT INTO switchboard_watchers (origin, watchers, seen_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (origin) DO UPDATE SET watchers = EXCLUDED.watchers, seen_ms = EXCLUDED.seen_ms",
        )
        .bind(self.origin())
        .bind(i32::try_from(watchers).unwrap_or(i32::MAX))
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        let gone = now - FORGET_AFTER_MS;
        sqlx::query(
            "DELETE FROM switchboard_approvals a USING switchboard_watchers w \
             WHERE w.origin = a.origin AND w.seen_ms < $1",
        )
        .bind(gone)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        sqlx::query("DELETE FROM switchboard_watchers WHERE seen_ms < $1")
            .bind(gone)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Whether someone follows the events of another live process on the store.
    pub async fn watched_elsewhere(&self) -> Result<bool, StoreError> {
        sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM switchboard_watchers WHERE origin <> $1 AND watchers > 0 AND seen_ms >= $2)",
        )
        .bind(self.origin())
        .bind(now() - ms(GONE_AFTER))
        .fetch_one(self.pool())
        .await
        .map_err(|e| self.db_error(e))
    }

    /// This process stops: its row and its approvals go.
    pub async fn leave_watchers(&self) -> Result<(), StoreError> {
        for sql in [
            "DELETE FROM switchboard_approvals WHERE origin = $1",
            "DELETE FROM switchboard_watchers WHERE origin = $1",
        ] {
            sqlx::query(sql).bind(self.origin()).execute(self.pool()).await.map_err(|e| self.db_error(e))?;
        }
        Ok(())
    }
}

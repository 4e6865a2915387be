//! Where each page a person was sent to is held (`switchboard_pages`): the replica holding
//! what a URL-mode elicitation's page completes (a person's input values, their sign-in to
//! their own upstream, its callback), by the SHA-256 of the page's `state`, and whose the
//! page is. A replica the browser reaches instead looks the page up here and passes the
//! request on to that one. Rows older than the page's lifetime are removed as new ones come.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::StoreError;
use super::db::Database;
use super::replicas::now;

/// Where a page is held, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageRow {
    /// The replica holding it.
    pub replica: String,
    /// Whose it is (a principal's key).
    pub owner: String,
}

/// What a page is kept by: the hex SHA-256 of its `state`.
fn digest(state: &str) -> String {
    Sha256::digest(state.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Database {
    /// Keeps that the page `state` of `owner` is held by `replica`, and drops the pages older
    /// than `keep`.
    pub async fn put_page(&self, state: &str, replica: &str, owner: &str, keep: Duration) -> Result<(), StoreError> {
        let now = now();
        sqlx::query("DELETE FROM switchboard_pages WHERE created_ms < $1")
            .bind(now - ms(keep))
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        sqlx::query(
            "INSERT INTO switchboard_pages (digest, replica, owner, created_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (digest) DO UPDATE SET replica = EXCLUDED.replica, owner = EXCLUDED.owner, \
             created_ms = EXCLUDED.created_ms",
        )
        .bind(digest(state))
        .bind(replica)
        .bind(owner)
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Where the page `state` is held, if it is younger than `keep`.
    pub async fn page(&self, state: &str, keep: Duration) -> Result<Option<PageRow>, StoreError> {
        let row = sqlx::query_as::<_, (String, String)>(
            "SELECT replica, owner FROM switchboard_pages WHERE digest = $1 AND created_ms >= $2",
        )
        .bind(digest(state))
        .bind(now() - ms(keep))
        .fetch_optional(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(row.map(|(replica, owner)| PageRow { replica, owner }))
    }

    /// Forgets the page `state` (done).
    pub async fn drop_page(&self, state: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM switchboard_pages WHERE digest = $1")
            .bind(digest(state))
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }
}

//! The records of a team's store that are not secrets: the people who signed in
//! (`switchboard_people`), the service accounts' API keys (`switchboard_api_keys`: name, the
//! key's SHA-256, groups; never a key), and documents kept whole (`switchboard_documents`: the
//! remembered approvals).

use super::StoreError;
use super::db::Database;

impl Database {
    /// Records that the person `key` (their [`Principal::key`](crate::identity::Principal::key))
    /// is `principal` and was seen now.
    pub async fn record_person(&self, key: &str, principal: &serde_json::Value) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO switchboard_people (key, principal, seen_ms) VALUES ($1, $2::jsonb, $3) \
             ON CONFLICT (key) DO UPDATE SET principal = EXCLUDED.principal, seen_ms = EXCLUDED.seen_ms",
        )
        .bind(key)
        .bind(principal.to_string())
        .bind(crate::status::now_ms() as i64)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Everyone who signed in: `(key, principal, seen_ms)`.
    pub async fn people(&self) -> Result<Vec<(String, serde_json::Value, u64)>, StoreError> {
        let rows = sqlx::query_as::<_, (String, String, i64)>(
            "SELECT key, principal::text, seen_ms FROM switchboard_people ORDER BY key",
        )
        .fetch_all(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, principal, seen)| {
                let principal = serde_json::from_str(&principal).ok()?;
                Some((key, principal, u64::try_from(seen).unwrap_or(0)))
            })
            .collect())
    }

    /// The document `name` (`None`: there is none).
    pub async fn document(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let row = sqlx::query_scalar::<_, String>("SELECT body::text FROM switchboard_documents WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(row.and_then(|body| serde_json::from_str(&body).ok()))
    }

    /// Changes the document `name` with `change` in one transaction holding its row's lock:
    /// it gets the document (`None`: none yet) and returns the new one (`None`: left as it is)
    /// and what to return.
    pub async fn update_document<R>(
        &self,
        name: &str,
        change: impl FnOnce(Option<serde_json::Value>) -> (Option<serde_json::Value>, R),
    ) -> Result<R, StoreError> {
        let mut tx = self.pool().begin().await.map_err(|e| self.db_error(e))?;
        // The row may not exist yet: an advisory lock of its name, not a row lock.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("switchboard/document/{name}"))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        let row = sqlx::query_scalar::<_, String>("SELECT body::text FROM switchboard_documents WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        let current = row.and_then(|body| serde_json::from_str(&body).ok());
        let (next, out) = change(current);
        let Some(next) = next else { return Ok(out) };
        sqlx::query(
            "INSERT INTO switchboard_documents (name, body, updated_ms) VALUES ($1, $2::jsonb, $3) \
             ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, updated_ms = EXCLUDED.updated_ms",
        )
        .bind(name)
        .bind(next.to_string())
        .bind(crate::status::now_ms() as i64)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.db_error(e))?;
        tx.commit().await.map_err(|e| self.db_error(e))?;
        Ok(out)
    }

    /// Every API key kept, as its record (`{name, sha256, groups, created}`).
    pub async fn api_keys(&self) -> Result<Vec<serde_json::Value>, StoreError> {
        let rows = sqlx::query_scalar::<_, String>("SELECT record::text FROM switchboard_api_keys ORDER BY name")
            .fetch_all(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(rows.into_iter().filter_map(|record| serde_json::from_str(&record).ok()).collect())
    }

    /// Keeps the API key `name` (its record); `false` when one of that name exists.
    pub async fn insert_api_key(&self, name: &str, record: &serde_json::Value) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO switchboard_api_keys (name, record) VALUES ($1, $2::jsonb) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(record.to_string())
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes the API key `name`; `false` when there was none.
    pub async fn delete_api_key(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM switchboard_api_keys WHERE name = $1")
            .bind(name)
            .execute(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(done.rows_affected() == 1)
    }
}

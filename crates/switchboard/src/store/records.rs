//! The records of a team's store that are not secrets: the people who signed in
//! (`switchboard_people`) and the service accounts' API keys (`switchboard_api_keys`: name,
//! the key's SHA-256, groups; never a key).

use sqlx::Row;

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
        let rows = sqlx::query("SELECT key, principal::text, seen_ms FROM switchboard_people ORDER BY key")
            .fetch_all(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let principal = serde_json::from_str(&r.get::<String, _>(1)).ok()?;
                Some((r.get(0), principal, u64::try_from(r.get::<i64, _>(2)).unwrap_or(0)))
            })
            .collect())
    }

    /// Every API key kept, as its record (`{name, sha256, groups, created}`).
    pub async fn api_keys(&self) -> Result<Vec<serde_json::Value>, StoreError> {
        let rows = sqlx::query("SELECT record::text FROM switchboard_api_keys ORDER BY name")
            .fetch_all(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        Ok(rows.into_iter().filter_map(|r| serde_json::from_str(&r.get::<String, _>(0)).ok()).collect())
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

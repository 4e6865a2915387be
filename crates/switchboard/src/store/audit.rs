//! The audit log in a team's store (`switchboard_audit`): the rows a writer inserts in one
//! statement per flush, the questions `switchboard audit` and `/api/audit` ask, and the cap on
//! its size. What a record holds, and the writer that holds records while the database
//! refuses them, are [`crate::policy::audit`]'s.

use super::StoreError;
use super::db::Database;

/// One row to insert.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditRow {
    /// When the call was made (ms since the epoch).
    pub time_ms: i64,
    /// A record of a call, or one that says records were lost.
    pub kind: AuditRowKind,
    /// The caller's subject, when someone signed in (`key:<name>`: a service account).
    pub subject: Option<String>,
    /// The server called (empty for a loss).
    pub server: String,
    /// The record, as JSON text.
    pub record: String,
}

impl AuditRow {
    /// A row of `kind` holding `record`.
    pub fn new(time_ms: i64, kind: AuditRowKind, subject: Option<String>, server: String, record: String) -> AuditRow {
        AuditRow { time_ms, kind, subject, server, record }
    }
}

/// What an audit row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditRowKind {
    /// A tool call.
    Call,
    /// Records that were lost: how many, when, why.
    Lost,
}

impl AuditRowKind {
    fn as_str(self) -> &'static str {
        match self {
            AuditRowKind::Call => "call",
            AuditRowKind::Lost => "lost",
        }
    }
}

/// Which rows to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// From this time on (ms since the epoch).
    pub since_ms: Option<i64>,
    /// One server's calls.
    pub server: Option<String>,
    /// One caller's calls, by subject.
    pub subject: Option<String>,
    /// The calls of callers of one issuer.
    pub issuer: Option<String>,
    /// At most this many calls, the newest.
    pub limit: Option<i64>,
}

impl Database {
    /// Inserts `rows` in one statement (all of them or none).
    pub async fn insert_audit(&self, rows: &[AuditRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut times = Vec::with_capacity(rows.len());
        let mut kinds = Vec::with_capacity(rows.len());
        let mut subjects = Vec::with_capacity(rows.len());
        let mut servers = Vec::with_capacity(rows.len());
        let mut bytes = Vec::with_capacity(rows.len());
        let mut records = Vec::with_capacity(rows.len());
        for row in rows {
            times.push(row.time_ms);
            kinds.push(row.kind.as_str());
            subjects.push(row.subject.as_deref());
            servers.push(row.server.as_str());
            bytes.push(i32::try_from(row.record.len()).unwrap_or(i32::MAX));
            records.push(row.record.as_str());
        }
        sqlx::query(
            "INSERT INTO switchboard_audit (time_ms, kind, subject, server, bytes, record) \
             SELECT t, k, s, v, b, r::json FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], \
             $5::int[], $6::text[]) AS u(t, k, s, v, b, r)",
        )
        .bind(times)
        .bind(kinds)
        .bind(subjects)
        .bind(servers)
        .bind(bytes)
        .bind(records)
        .execute(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Whether this role may insert audit rows (an error says why not: no table, no right).
    pub async fn audit_writable(&self) -> Result<(), StoreError> {
        let may: bool = sqlx::query_scalar("SELECT has_table_privilege('switchboard_audit', 'INSERT')")
            .fetch_one(self.pool())
            .await
            .map_err(|e| self.db_error(e))?;
        if may {
            return Ok(());
        }
        let denied = sqlx::Error::Protocol("this role may not insert into switchboard_audit".into());
        Err(self.db_error(denied))
    }

    /// The calls `query` asks for, oldest first, and every row that says records were lost in
    /// its time (whatever the server or caller: they may be anyone's), each as JSON text.
    pub async fn audit_rows(&self, query: &AuditQuery) -> Result<(Vec<String>, Vec<String>), StoreError> {
        let mut calls = sqlx::query_scalar::<_, String>(
            "SELECT record::text FROM switchboard_audit WHERE kind = 'call' \
             AND ($1::bigint IS NULL OR time_ms >= $1) AND ($2::text IS NULL OR server = $2) \
             AND ($3::text IS NULL OR subject = $3) \
             AND ($5::text IS NULL OR record->'caller'->'principal'->>'issuer' = $5) \
             ORDER BY time_ms DESC, id DESC LIMIT $4",
        )
        .bind(query.since_ms)
        .bind(query.server.as_deref())
        .bind(query.subject.as_deref())
        .bind(query.limit.unwrap_or(i64::MAX).max(0))
        .bind(query.issuer.as_deref())
        .fetch_all(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        calls.reverse();
        let lost = sqlx::query_scalar::<_, String>(
            "SELECT record::text FROM switchboard_audit WHERE kind = 'lost' \
             AND ($1::bigint IS NULL OR time_ms >= $1) ORDER BY time_ms, id",
        )
        .bind(query.since_ms)
        .fetch_all(self.pool())
        .await
        .map_err(|e| self.db_error(e))?;
        Ok((calls, lost))
    }

    /// Removes the oldest rows beyond `max_bytes` of records in all; returns how many. One
    /// process at a time does it (the others, asking meanwhile, skip it).
    pub async fn prune_audit(&self, max_bytes: u64) -> Result<u64, StoreError> {
        let mut tx = self.pool().begin().await.map_err(|e| self.db_error(e))?;
        let mine: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))")
            .bind("switchboard/audit/prune")
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.db_error(e))?;
        if !mine {
            return Ok(0);
        }
        let done = sqlx::query(
            "DELETE FROM switchboard_audit WHERE id IN (SELECT id FROM \
             (SELECT id, SUM(bytes) OVER (ORDER BY id DESC) AS total FROM switchboard_audit) AS t \
             WHERE total > $1)",
        )
        .bind(i64::try_from(max_bytes).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await
        .map_err(|e| self.db_error(e))?;
        tx.commit().await.map_err(|e| self.db_error(e))?;
        Ok(done.rows_affected())
    }
}

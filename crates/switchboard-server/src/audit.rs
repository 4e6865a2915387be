//! `GET /api/audit`: the audit log's records (newest last), the records it says it lost, the
//! lines it could not read, and how its writing goes now (the dashboard's warning).

use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::state::{ApiResult, AppState, query_of};

/// `GET /api/audit` filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Records of the last this many seconds (default 86400: a day).
    since_secs: Option<u64>,
    /// Only this server's records (lost records are shown whatever the server: they may be
    /// of any).
    server: Option<String>,
    /// Only the records of calls by the signed-in caller of this subject (`key:<name>` for a
    /// service account; lost records are shown whatever the caller).
    principal: Option<String>,
    /// At most this many records, the newest (default 200, at most 10000).
    limit: Option<usize>,
}

/// The log as asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditView {
    /// Whether the hub writes an audit log.
    enabled: bool,
    /// The records, oldest first (the newest `limit`).
    #[schema(value_type = Vec<Object>)]
    calls: Vec<Value>,
    /// Records the log says it could not write, in the time asked.
    lost_records: u64,
    /// Each such loss: `count`, `first`, `last`, `error`, `time`.
    #[schema(value_type = Vec<Object>)]
    lost: Vec<Value>,
    /// Lines of the log that are not records (a file damaged by something else).
    #[schema(value_type = Vec<Object>)]
    unreadable: Vec<Value>,
    /// How the writing goes now: `failing` (why, while the log cannot be written), `held`
    /// (records waiting for the disk), `lost` (records lost since this hub started).
    #[schema(value_type = Option<Object>)]
    health: Option<Value>,
}

#[utoipa::path(get, path = "/api/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, body = AuditView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)))]
pub async fn audit(
    State(app): State<AppState>,
    axum::Extension(viewer): axum::Extension<crate::viewer::Viewer>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> ApiResult<Json<AuditView>> {
    let mut query = query_of(query)?;
    // A person who sees only themselves gets their own calls (another's: 403), of their own
    // issuer.
    let mut issuer = None;
    if let Some(me) = viewer.only() {
        if query.principal.as_ref().is_some_and(|asked| *asked != me.subject) {
            return Err(crate::viewer::forbidden());
        }
        query.principal = Some(me.subject.clone());
        issuer = Some(me.issuer.clone());
    }
    let since = SystemTime::now().checked_sub(Duration::from_secs(query.since_secs.unwrap_or(86_400)));
    let limit = query.limit.unwrap_or(200).min(10_000);
    let filter = switchboard::policy::audit::AuditFilter::new()
        .since(since)
        .server(query.server.as_deref())
        .principal(query.principal.as_deref())
        .issuer(issuer.as_deref())
        .limit(Some(limit));
    let read = switchboard::policy::audit::read_from(&app.hub.paths().data_dir, app.hub.store(), &filter)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let health = app.hub.audit_health();
    let to_values = |v: serde_json::Result<Value>| match v {
        Ok(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    Ok(Json(AuditView {
        enabled: health.is_some(),
        calls: read.records,
        lost_records: read.lost.iter().map(|l| l.count).sum(),
        lost: to_values(serde_json::to_value(&read.lost)),
        unreadable: to_values(serde_json::to_value(&read.unreadable)),
        health: health.and_then(|h| serde_json::to_value(h).ok()),
    }))
}

/// How the audit log's writing goes now.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditHealth {
    /// Whether the hub writes an audit log.
    enabled: bool,
    /// `failing` (why, while the log cannot be written), `held` (records waiting for the
    /// disk), `lost` (records lost since this hub started).
    #[schema(value_type = Option<Object>)]
    health: Option<Value>,
}

#[utoipa::path(get, path = "/api/audit/health", tag = "audit",
    responses((status = 200, body = AuditHealth), (status = 401, body = ErrorBody)))]
pub async fn health(State(app): State<AppState>) -> Json<AuditHealth> {
    let health = app.hub.audit_health();
    Json(AuditHealth { enabled: health.is_some(), health: health.and_then(|h| serde_json::to_value(h).ok()) })
}

//! Allowing what a server's sandbox refused: the dashboard's button (the line `get` shows,
//! written into the file that defines the server; the running serve follows the file and
//! starts the server again under the new rules).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use switchboard::config::{self, Scope};
use switchboard::sandbox::RefusedKind;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::{AppState, find};

/// What to allow: a refusal as `/api/servers` lists it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowRequest {
    /// `read`, `write` or `domain`.
    #[schema(value_type = String)]
    kind: RefusedKind,
    /// The path (`~/...` for the home folder) or the name.
    target: String,
}

/// What was written.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct Allowed {
    /// The file changed.
    file: String,
    /// The entry's `sandbox` block it now holds, in the words of `get`.
    allow: String,
}

#[utoipa::path(post, path = "/api/servers/{name}/sandbox/allow", tag = "servers", request_body = AllowRequest,
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = Allowed, description = "Written; the server starts again under the new rules"),
        (status = 400, body = ErrorBody, description = "Not a refusal of this server, or its entry cannot take it"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "A project's file, which may not widen a sandbox"),
        (status = 500, body = ErrorBody, description = "The config file could not be written")))]
pub async fn allow(
    State(app): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<AllowRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Allowed>, ApiError> {
    let Json(request) = body.map_err(crate::state::rejected)?;
    let info = find(&app.hub, &name)?;
    // Only what it was refused: the page offers those, and nothing else may be widened here.
    let refusal = info
        .sandbox
        .as_ref()
        .and_then(|s| s.refused.iter().find(|r| r.kind == request.kind && r.target == request.target).cloned())
        .ok_or_else(|| ApiError::bad_request(format!("`{name}` was not refused `{}`", request.target)))?;
    if info.scope == Scope::Project {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "project_file",
            format!(
                "`{name}` comes from a project's file ({}), which may not widen a sandbox: define it in your own file \
                 with {}",
                info.source.display(),
                refusal.allow
            ),
        ));
    }
    if !info.source.is_file() {
        return Err(ApiError::bad_request(format!("`{name}` is not defined in a file (added at run time)")));
    }
    config::allow_in_sandbox(&info.source, &name, request.kind, &request.target).map_err(|e| match e {
        config::EditError::Unfit { .. } => ApiError::bad_request(e.to_string()),
        other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_failed", other.to_string()),
    })?;
    Ok(Json(Allowed { file: info.source.display().to_string(), allow: refusal.allow }))
}

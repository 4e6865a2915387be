//! Adding, removing and trusting servers through the API.

use std::path::PathBuf;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use switchboard::config::{self, NewServer, Scope, Severity};
use utoipa::{IntoParams, ToSchema};

use crate::api::{ActionResult, ServerView};
use crate::error::{ApiError, ErrorBody};
use crate::state::{AppState, find};

/// A server to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewServerRequest {
    /// Its name.
    name: String,
    /// Its entry, as in a config file (`{"command", "args"}` or `{"url"}`...).
    #[schema(value_type = Object)]
    config: Value,
    /// Also write it to the user's config file (`user`) or the project's `switchboard.json`
    /// (`project`: it then waits for trust, as project servers do); absent: this run only.
    persist: Option<Persist>,
}

/// Where an added server is written.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Persist {
    /// The user's config file.
    User,
    /// The project's `switchboard.json`.
    Project,
}

#[utoipa::path(post, path = "/api/servers", tag = "servers", request_body = NewServerRequest,
    responses((status = 201, body = ActionResult), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "A server of that name exists"),
        (status = 500, body = ErrorBody, description = "The config file could not be written")))]
pub async fn add(
    State(app): State<AppState>,
    body: Result<Json<NewServerRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<ActionResult>), ApiError> {
    let Json(request) = body.map_err(crate::state::rejected)?;
    if find(&app.hub, &request.name).is_ok() {
        return Err(switchboard::Error::Exists { name: request.name }.into());
    }
    let (scope, source) = match request.persist {
        Some(Persist::User) => (Scope::User, app.hub.paths().config_file.clone()),
        Some(Persist::Project) => (Scope::Project, app.hub.project_root().join("switchboard.json")),
        None => (Scope::Cli, PathBuf::from("<added through the API>")),
    };
    let (entry, diagnostics) = config::parse_server(&request.name, &request.config, scope, &source, app.hub.host_env());
    let problems: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error || d.message.contains("unknown field"))
        .map(|d| match &d.field {
            Some(f) => format!("field `{f}`: {}", d.message),
            None => d.message.clone(),
        })
        .collect();
    if !problems.is_empty() || matches!(entry, config::ServerEntry::Invalid(_)) {
        let why = if problems.is_empty() { format!("{entry:?}") } else { problems.join("; ") };
        return Err(ApiError::bad_request(format!("the entry for `{}` is not valid: {why}", request.name)));
    }
    if request.persist.is_some() {
        config::write_server(&source, &NewServer::new(&request.name, request.config.clone()))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_failed", e.to_string()))?;
    }
    app.hub.add_server(entry).await?;
    Ok((StatusCode::CREATED, Json(ActionResult::of(&app.hub, &request.name)?)))
}

/// Whether a removal also edits the file.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RemoveQuery {
    /// Also remove the entry from the config file that defines it.
    from_file: Option<bool>,
}

#[utoipa::path(delete, path = "/api/servers/{name}", tag = "servers",
    params(("name" = String, Path, description = "The server"), RemoveQuery),
    responses((status = 204, description = "Removed (its process tree ended)"), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 500, body = ErrorBody, description = "The config file could not be written")))]
pub async fn remove(
    State(app): State<AppState>,
    Path(name): Path<String>,
    query: Result<Query<RemoveQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<StatusCode, ApiError> {
    let q = crate::state::query_of(query)?;
    let info = find(&app.hub, &name)?;
    if q.from_file == Some(true) && info.source.exists() {
        config::remove_server(&info.source, &name)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_failed", e.to_string()))?;
    }
    app.hub.remove_server(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/servers/{name}/trust", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = ActionResult), (status = 400, body = ErrorBody, description = "Not a project server"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 500, body = ErrorBody, description = "The trust store could not be read or written")))]
pub async fn trust(State(app): State<AppState>, Path(name): Path<String>) -> Result<Json<ActionResult>, ApiError> {
    app.hub.trust(&name).await?;
    Ok(Json(ActionResult::of(&app.hub, &name)?))
}

impl ActionResult {
    fn of(hub: &switchboard::Hub, name: &str) -> Result<ActionResult, ApiError> {
        Ok(ActionResult { server: ServerView::from(find(hub, name)?) })
    }
}

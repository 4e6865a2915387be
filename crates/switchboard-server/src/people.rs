//! `GET /api/people`: the people who signed in to this host's gateway (`identity`), each with
//! their own servers and logins to them (which server, scopes, expiry: never a token). The
//! API's token is the host's person's (the operator's), who sees everyone; a person's calls
//! are `GET /api/audit?principal=<subject>`.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::{ApiResult, AppState};

/// The people.
#[derive(Debug, Serialize, ToSchema)]
pub struct People {
    /// Each person (the active first): `principal` (subject, issuer, name, groups), `active`
    /// (their servers run now), `seen_ms`, `servers` (while active), `logins`.
    #[schema(value_type = Vec<Object>)]
    people: Vec<switchboard::PersonInfo>,
}

#[utoipa::path(get, path = "/api/people", tag = "people",
    responses((status = 200, body = People), (status = 401, body = ErrorBody)))]
pub async fn list(State(app): State<AppState>) -> ApiResult<Json<People>> {
    let hub = app.hub.clone();
    // Their folders are read from disk.
    let people =
        tokio::task::spawn_blocking(move || hub.known_people()).await.map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Json(People { people }))
}

//! `GET /api/people`: the people who signed in to this host's gateway (`identity`), each with
//! their own servers and logins to them (which server, scopes, expiry: never a token). The
//! API's token is the host's person's (the operator's), who sees everyone, as does a person of
//! an admin group with their own token; anyone else with theirs sees themselves
//! ([`crate::viewer`]). A person's calls are `GET /api/audit?principal=<subject>`.
//! `DELETE /api/people/{key}/servers/{name}/auth` logs one person out of one of their own
//! servers (their next request asks them to sign in again).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::{ApiResult, AppState};
use crate::viewer::Viewer;

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
pub async fn list(State(app): State<AppState>, Extension(viewer): Extension<Viewer>) -> ApiResult<Json<People>> {
    let mut people = app.hub.known_people().await;
    if let Some(me) = viewer.only() {
        let key = me.key();
        people.retain(|p| p.key == key);
    }
    Ok(Json(People { people }))
}

/// A person's logout.
#[derive(Debug, Serialize, ToSchema)]
pub struct PersonLoggedOut {
    /// Whether tokens were held (and are now deleted).
    had_tokens: bool,
}

#[utoipa::path(delete, path = "/api/people/{key}/servers/{name}/auth", tag = "people",
    params(("key" = String, Path, description = "The person (`key` in `GET /api/people`)"),
           ("name" = String, Path, description = "One of their own servers")),
    responses((status = 200, body = PersonLoggedOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn logout(
    State(app): State<AppState>,
    Extension(viewer): Extension<Viewer>,
    Path((key, name)): Path<(String, String)>,
) -> ApiResult<Json<PersonLoggedOut>> {
    viewer.may_see(&key)?;
    crate::state::find(&app.hub, &name)?;
    match app.hub.logout_person(&key, &name).await {
        Ok(had_tokens) => Ok(Json(PersonLoggedOut { had_tokens })),
        Err(switchboard::Error::Invalid { message }) => {
            Err(ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message))
        }
        Err(e) => Err(e.into()),
    }
}

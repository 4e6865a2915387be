//! OAuth through the API: `POST /api/servers/{name}/auth` starts a login and returns the
//! authorization URL, whose redirect comes back to this server's own `/oauth/callback`, so a
//! login works from a browser on any machine that reaches the dashboard. `DELETE` logs out.
//!
//! The callback is a top-level navigation from the authorization server, so the dashboard's
//! cookie (SameSite=Strict) does not come with it: it is matched to its login by the `state`
//! the login created, which no one else knows.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;
use switchboard::auth::Login;
use utoipa::ToSchema;

use crate::api::{AppState, ServerView, find};
use crate::error::{ApiError, ErrorBody};

/// How long a started login waits for its callback.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Logins waiting for the browser, by their `state`.
#[derive(Default)]
pub struct PendingLogins {
    logins: Mutex<Vec<(String, Login, Instant)>>,
}

impl std::fmt::Debug for PendingLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLogins").finish_non_exhaustive()
    }
}

impl PendingLogins {
    fn add(&self, state: String, login: Login) {
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, l, at)| at.elapsed() < LOGIN_TIMEOUT && l.server() != login.server());
        logins.push((state, login, Instant::now()));
    }

    fn take(&self, state: &str) -> Option<Login> {
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, _, at)| at.elapsed() < LOGIN_TIMEOUT);
        let i = logins.iter().position(|(s, _, _)| s == state)?;
        Some(logins.swap_remove(i).1)
    }
}

/// A login started.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthStarted {
    /// Where to send the person (`null` when the server's grant needs no browser and the login
    /// is already done).
    authorization_url: Option<String>,
    /// Where the browser comes back.
    redirect_uri: Option<String>,
    /// The server now.
    server: ServerView,
}

/// The `state` query parameter of an authorization URL.
fn state_of(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| kv.strip_prefix("state=")).map(str::to_string)
}

#[utoipa::path(post, path = "/api/servers/{name}/auth", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = AuthStarted), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The server has no login (stdio, or a static token)"),
        (status = 502, body = ErrorBody)))]
pub async fn start(
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<AuthStarted>, ApiError> {
    find(&app.hub, &name)?;
    let browserless = app.hub.logs_in_without_browser(&name).map_err(conflict)?;
    if browserless {
        app.hub.login_without_browser(&name).await?;
        let server = find(&app.hub, &name)?.into();
        return Ok(Json(AuthStarted { authorization_url: None, redirect_uri: None, server }));
    }
    // The browser comes back to the address it reached this server by (checked by the Host
    // guard), so the login works wherever the dashboard is open.
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let redirect_uri = format!("http://{host}/oauth/callback");
    let login = app.hub.begin_login(&name, &redirect_uri).await?;
    let url = login.authorization_url().to_string();
    let state = state_of(&url)
        .ok_or_else(|| ApiError::new(StatusCode::BAD_GATEWAY, "auth_failed", "the authorization URL has no state"))?;
    app.logins.add(state, login);
    let server = find(&app.hub, &name)?.into();
    Ok(Json(AuthStarted { authorization_url: Some(url), redirect_uri: Some(redirect_uri), server }))
}

fn conflict(e: switchboard::Error) -> ApiError {
    match e {
        switchboard::Error::Auth { message, .. } => ApiError::new(StatusCode::CONFLICT, "no_login", message),
        other => other.into(),
    }
}

/// A logout's outcome.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoggedOut {
    /// Whether tokens were held (and are now deleted).
    had_tokens: bool,
    /// The server now.
    server: ServerView,
}

#[utoipa::path(delete, path = "/api/servers/{name}/auth", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = LoggedOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
pub async fn logout(State(app): State<AppState>, Path(name): Path<String>) -> Result<Json<LoggedOut>, ApiError> {
    find(&app.hub, &name)?;
    let had_tokens = app.hub.logout(&name).await.map_err(conflict)?;
    Ok(Json(LoggedOut { had_tokens, server: find(&app.hub, &name)?.into() }))
}

/// `GET /oauth/callback`: finishes the login the `state` belongs to and shows how it went.
pub async fn callback(State(app): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    let page = |status: StatusCode, outcome: Result<&str, &str>| {
        (status, Html(switchboard::auth::page(outcome).1)).into_response()
    };
    let query = uri.query().unwrap_or_default();
    let Some(login) = query.split('&').find_map(|kv| kv.strip_prefix("state=")).and_then(|s| app.logins.take(s)) else {
        return page(
            StatusCode::BAD_REQUEST,
            Err(
                "this login is unknown or expired (over 5 minutes, or already finished): start it again from the dashboard",
            ),
        );
    };
    let server = login.server().to_string();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let url = format!("http://{host}{uri}");
    match app.hub.finish_login(login, &url).await {
        Ok(_) => page(StatusCode::OK, Ok(&server)),
        Err(e) => page(StatusCode::BAD_REQUEST, Err(&e.to_string())),
    }
}

/// A new one-time link that logs a browser in to the dashboard.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginLink {
    /// Open it in a browser; it works once, within `expires_in` seconds.
    login_url: String,
    /// Seconds the link stays good.
    expires_in: u64,
}

#[utoipa::path(post, path = "/api/login-links", tag = "session",
    responses((status = 200, body = LoginLink), (status = 401, body = ErrorBody),
        (status = 500, body = ErrorBody, description = "No randomness to make the code from")))]
pub async fn new_link(State(app): State<AppState>, headers: HeaderMap) -> Result<Json<LoginLink>, ApiError> {
    let code = app.access.login_code_for_later().map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no_randomness", format!("no login code could be made: {e}"))
    })?;
    // The host the asker reached this server by (checked by the Host guard).
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    Ok(Json(LoginLink {
        login_url: format!("http://{host}/login?code={code}"),
        expires_in: crate::security::LINK_LIFETIME.as_secs(),
    }))
}

//! OAuth through the API: `POST /api/servers/{name}/auth` starts a login and returns the
//! authorization URL, whose redirect comes back to this server's own `/oauth/callback`, so a
//! login works from a browser on any machine that reaches the dashboard. `DELETE` logs out.
//!
//! The callback is a top-level navigation from the authorization server, so the dashboard's
//! cookie (SameSite=Strict) does not come with it: it is matched to its login by the `state`
//! the login created, which no one else knows.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::ServerView;
use crate::error::{ApiError, ErrorBody};
use crate::state::{AppState, LOGIN_TIMEOUT, find};

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
    // Where the browser comes back: a redirect URI registered with the authorization server,
    // or the loopback callback when the config chose its port or pre-registered the client
    // (listened on here for this login, as the CLI does); else this server's own
    // `/oauth/callback` at the address the browser reached it by (its public URL, or the
    // scheme and host a TLS-terminating proxy says it forwarded), so the login works wherever
    // the dashboard is open.
    let own = || format!("{}/oauth/callback", crate::security::public_base(&headers, app.public_url.as_deref()));
    let (redirect_uri, listener) = match app.hub.login_comeback(&name)? {
        switchboard::Comeback::Registered(uri) => {
            let listener = switchboard::auth::Callback::bind_redirect(&uri).await.map_err(callback_error)?;
            (uri, listener)
        }
        switchboard::Comeback::Loopback { port, chosen: true } => {
            let listener = switchboard::auth::Callback::bind(port).await.map_err(callback_error)?;
            (listener.redirect_uri(), Some(listener))
        }
        _ => (own(), None),
    };
    let login = app.hub.begin_login(&name, &redirect_uri).await?;
    let url = login.authorization_url().to_string();
    let state = state_of(&url)
        .ok_or_else(|| ApiError::new(StatusCode::BAD_GATEWAY, "auth_failed", "the authorization URL has no state"))?;
    match listener {
        Some(listener) => {
            let hub = app.hub.clone();
            tokio::spawn(async move {
                let came = tokio::time::timeout(LOGIN_TIMEOUT, listener.wait_for(&state)).await;
                let Ok(Ok((callback_url, responder))) = came else {
                    tracing::info!("the login's browser did not come back to {}", listener.redirect_uri());
                    return;
                };
                let server = login.server().to_string();
                let outcome = hub.finish_login(login, &callback_url).await;
                let why = outcome.as_ref().err().map(ToString::to_string);
                responder.finish(why.as_deref().map_or(Ok(server.as_str()), Err)).await;
            });
        }
        None => app.logins.add(state, login),
    }
    let server = find(&app.hub, &name)?.into();
    Ok(Json(AuthStarted { authorization_url: Some(url), redirect_uri: Some(redirect_uri), server }))
}

fn callback_error(e: switchboard::auth::CallbackError) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "callback_unavailable", e.to_string())
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

/// `GET /oauth/callback`: finishes the login the `state` belongs to and shows how it went: a
/// login of the dashboard's, else a person's sign-in to their own upstream (a gateway whose
/// callers sign in).
pub async fn callback(State(app): State<AppState>, request: axum::extract::Request) -> Response {
    let (parts, _) = request.into_parts();
    let (uri, headers) = (&parts.uri, &parts.headers);
    let page = |status: StatusCode, outcome: Result<&str, &str>| {
        (status, Html(switchboard::auth::page(outcome).1)).into_response()
    };
    let url = format!("{}{uri}", crate::security::public_base(headers, app.public_url.as_deref()));
    let query = uri.query().unwrap_or_default();
    let Some(login) = query.split('&').find_map(|kv| kv.strip_prefix("state=")).and_then(|s| app.logins.take(s)) else {
        if let Some(pages) = &app.pages
            && let Some(answer) = pages.finish_callback(&parts, &url).await
        {
            return answer;
        }
        return page(
            StatusCode::BAD_REQUEST,
            Err(
                "this login is unknown or expired (over 5 minutes, or already finished): start it again from the dashboard",
            ),
        );
    };
    let server = login.server().to_string();
    match app.hub.finish_login(login, &url).await {
        Ok(_) => page(StatusCode::OK, Ok(&server)),
        Err(e) => page(StatusCode::BAD_REQUEST, Err(&e.to_string())),
    }
}

#[derive(serde::Deserialize)]
pub(crate) struct LoginQuery {
    code: Option<String>,
}

/// `GET /login?code=`: spends a one-time login code (this process's, or a link's kept in the
/// team's store by any replica) and gives the browser its dashboard session.
pub(crate) async fn login_page(State(app): State<AppState>, Query(q): Query<LoginQuery>) -> Response {
    let code = q.code.unwrap_or_default();
    let mut spent = !code.is_empty() && app.access.redeem_code(&code);
    if let Some(store) = app.hub.store().filter(|_| !spent && !code.is_empty()) {
        spent = store.take_login_link(&crate::security::digest(&code)).await.unwrap_or_else(|e| {
            tracing::warn!("login links in the team's store: {e}");
            false
        });
    }
    match app.access.new_session().filter(|_| spent) {
        Some(session) => {
            let cookie = format!("{}={session}; HttpOnly; SameSite=Strict; Path=/", crate::COOKIE);
            (StatusCode::SEE_OTHER, [(header::SET_COOKIE, cookie), (header::LOCATION, "/".to_string())]).into_response()
        }
        None => crate::dashboard::login_failed(),
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
    let no_code = |e: String| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no_randomness", format!("no login code could be made: {e}"))
    };
    // On a team's store, kept there: the balancer may send the browser to another replica.
    let code = match app.hub.store() {
        Some(store) => {
            let code = crate::security::random(24).map_err(|e| no_code(e.to_string()))?;
            let until = crate::security::now_ms().saturating_add(crate::security::LINK_LIFETIME.as_millis() as u64);
            store
                .put_login_link(&crate::security::digest(&code), i64::try_from(until).unwrap_or(i64::MAX))
                .await
                .map_err(|e| {
                    ApiError::internal(format!("the login link could not be kept in the team's store: {e}"))
                })?;
            code
        }
        None => app.access.login_code_for_later().map_err(|e| no_code(e.to_string()))?,
    };
    // Where the asker reached this server (its public URL behind a proxy, else the host the
    // Host guard checked).
    let base = crate::security::public_base(&headers, app.public_url.as_deref());
    Ok(Json(LoginLink {
        login_url: format!("{base}/login?code={code}"),
        expires_in: crate::security::LINK_LIFETIME.as_secs(),
    }))
}

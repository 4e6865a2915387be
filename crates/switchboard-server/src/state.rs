//! What every `/api` handler reaches ([`AppState`]: the hub, its numbered events, the queues
//! of what the person is asked, logins waiting for their callback) and the extractors they
//! share: a server by name, a query string, a JSON body, each with the error the API gives.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::http::StatusCode;
use switchboard::auth::Login;
use switchboard::catalog::tokens::TokenCounter;
use switchboard::{Hub, ServerInfo};

use crate::error::ApiError;
use crate::events::EventLog;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The hub.
    pub hub: Hub,
    /// Its events, numbered.
    pub events: Arc<EventLog>,
    /// Logins waiting for their callback.
    pub logins: Arc<PendingLogins>,
    /// Tokens, sessions and login codes.
    pub access: Arc<crate::security::Access>,
    /// The questions servers ask the person, if the hub asks through this API.
    pub questions: Option<Arc<crate::questions::Questions>>,
    /// Calls waiting for approval, if the hub asks through this API.
    pub approvals: Option<Arc<crate::approvals::ApprovalQueue>>,
    /// Servers' requests for a completion, if the relay asks through this API.
    pub sampling: Option<Arc<crate::sampling::SamplingQueue>>,
    /// The token counter, once a request asked for token counts.
    pub tokens: Arc<std::sync::OnceLock<Arc<switchboard::catalog::tokens::TokenCounter>>>,
    /// The address browsers reach this server by, when it is not the one they send in `Host`
    /// (`--public-url`, behind a proxy).
    pub public_url: Option<String>,
    /// The pages of the gateway's callers at `/mcp` (when they sign in), whose sign-ins to
    /// their own upstreams come back to `/oauth/callback` too.
    pub(crate) pages: Option<crate::person_pages::PersonPages>,
}

/// What a handler returns: a value, or the API's error.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

impl AppState {
    /// The token counter, loaded on first use (a tenth of a second, off the async threads)
    /// and kept.
    pub(crate) async fn token_counter(&self) -> ApiResult<Arc<TokenCounter>> {
        let cell = self.tokens.clone();
        if let Some(c) = cell.get() {
            return Ok(c.clone());
        }
        let loaded = tokio::task::spawn_blocking(TokenCounter::o200k)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(cell.get_or_init(|| Arc::new(loaded)).clone())
    }
}

/// How long a started login waits for its callback.
pub(crate) const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

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
    pub(crate) fn add(&self, state: String, login: Login) {
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, l, at)| at.elapsed() < LOGIN_TIMEOUT && l.server() != login.server());
        logins.push((state, login, Instant::now()));
    }

    pub(crate) fn take(&self, state: &str) -> Option<Login> {
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, _, at)| at.elapsed() < LOGIN_TIMEOUT);
        let i = logins.iter().position(|(s, _, _)| s == state)?;
        Some(logins.swap_remove(i).1)
    }
}

/// The server named `name`, or 404 with the closest name there is.
pub(crate) fn find(hub: &Hub, name: &str) -> ApiResult<ServerInfo> {
    let servers = hub.servers();
    let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    let meant = switchboard::Error::unknown_server(name, known);
    servers.into_iter().find(|s| s.name == name).ok_or_else(|| ApiError::from(meant))
}

/// A request body that did not make it: too big (413) or not the JSON asked for (400).
pub(crate) fn rejected(e: axum::extract::rejection::JsonRejection) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "the request body is over the limit (1 MiB)");
    }
    ApiError::bad_request(e.body_text())
}

/// A query string as asked for, or 400 saying what is wrong with it.
pub(crate) fn query_of<T>(query: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    query.map(|Query(q)| q).map_err(|e| ApiError::bad_request(e.body_text()))
}

/// `server` if it names a server (404 otherwise), or no filter.
pub(crate) fn known_server(hub: &Hub, server: Option<String>) -> ApiResult<Option<String>> {
    if let Some(name) = &server {
        find(hub, name)?;
    }
    Ok(server)
}

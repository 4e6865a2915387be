//! People sign in to a team's dashboard with the organisation's provider (on `serve` with
//! `identity`): `GET /people/login` sends the browser to the first issuer's authorization
//! endpoint (authorization code with PKCE S256, `resource` = this gateway's `/mcp`, so the
//! token is one `/mcp` itself accepts), `GET /people/callback` takes the code back, exchanges it,
//! checks the access token as `/mcp` does ([`Protected`]) and gives the browser a session
//! cookie of its own (`switchboard_person`: HttpOnly, SameSite=Lax, until the token expires).
//! With it, the dashboard's pages ask the person's part of the API ([`crate::viewer`]). The
//! dashboard's client is `identity.dashboard_client`, else one registered at the issuer
//! (RFC 7591) the first time someone signs in. The access token itself stays here: the browser
//! holds only the session's random value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::identity::{Principal, Protected};
use crate::security::random;

/// The person's session cookie.
pub const PERSON_COOKIE: &str = "switchboard_person";

/// The cookie that ties a sign-in's `state` to the browser that started it (so a callback URL
/// someone else obtained cannot sign this browser in as them).
const SIGN_IN_COOKIE: &str = "switchboard_sign_in";

/// How long a sign-in may take between `/people/login` and the callback.
const PENDING_FOR: Duration = Duration::from_secs(600);

/// How long a session lasts when the token response says nothing of it.
const DEFAULT_SESSION: Duration = Duration::from_secs(3600);

/// The most sign-ins waiting and sessions kept (past it, old ones go).
const MAX_KEPT: usize = 10_000;

/// The dashboard's client at the issuer, and its endpoints.
#[derive(Clone)]
struct Client {
    id: String,
    secret: Option<String>,
    authorize: String,
    token: String,
}

struct Pending {
    verifier: String,
    redirect: String,
    at: Instant,
}

/// A person's dashboard session.
#[derive(Clone)]
pub struct PersonSession {
    /// Who.
    pub principal: Principal,
    until: Instant,
}

/// The dashboard's sign-in for people.
pub struct PeopleLogin {
    guard: Arc<Protected>,
    public_url: Option<String>,
    client: tokio::sync::Mutex<Option<Client>>,
    pending: Mutex<HashMap<String, Pending>>,
    sessions: Mutex<HashMap<String, PersonSession>>,
}

impl std::fmt::Debug for PeopleLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeopleLogin").finish_non_exhaustive()
    }
}

impl PeopleLogin {
    /// Sign-ins checked by `guard`, with callbacks at `public_url` (else where the browser
    /// reached this server).
    pub fn new(guard: Arc<Protected>, public_url: Option<String>) -> PeopleLogin {
        PeopleLogin {
            guard,
            public_url,
            client: tokio::sync::Mutex::new(None),
            pending: Mutex::default(),
            sessions: Mutex::default(),
        }
    }

    /// The person of a request's session cookie, while it lasts.
    pub fn person(&self, headers: &HeaderMap) -> Option<Principal> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        cookies(headers, PERSON_COOKIE)
            .filter_map(|value| sessions.get(value))
            .find(|s| s.until > Instant::now())
            .map(|s| s.principal.clone())
    }

    /// The dashboard's client: the configured one, else registered now (once).
    async fn client(&self, redirect: &str) -> Result<Client, String> {
        let mut held = self.client.lock().await;
        if let Some(c) = held.as_ref() {
            return Ok(c.clone());
        }
        let verifier = self.guard.verifier();
        let config = verifier.config();
        let issuer = config.issuers.first().map(|i| i.issuer.clone()).ok_or("no issuer is configured")?;
        let meta = verifier.issuer_metadata(&issuer).await.map_err(|e| e.to_string())?;
        let endpoint = |key: &str| -> Result<String, String> {
            let url =
                meta.get(key).and_then(Value::as_str).ok_or_else(|| format!("{issuer}'s metadata names no {key}"))?;
            switchboard::identity::check_endpoint(url)?;
            Ok(url.to_string())
        };
        let (authorize, token) = (endpoint("authorization_endpoint")?, endpoint("token_endpoint")?);
        let (id, secret) = match &config.dashboard_client {
            Some(c) => (c.client_id.clone(), c.client_secret.clone()),
            None => {
                let register = endpoint("registration_endpoint").map_err(|e| {
                    format!("{e}: register a client for the dashboard there and name it in `identity.dashboard_client`")
                })?;
                let asked = serde_json::json!({
                    "client_name": "switchboard dashboard",
                    "redirect_uris": [redirect],
                    "grant_types": ["authorization_code"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                    "scope": scopes(&config.scopes),
                });
                let answer = verifier
                    .http()
                    .post(&register)
                    .json(&asked)
                    .timeout(Duration::from_secs(10))
                    .send()
                    .await
                    .map_err(|e| format!("registering the dashboard at {register}: {e}"))?;
                let status = answer.status();
                let body: Value = answer.json().await.unwrap_or_default();
                let id = body.get("client_id").and_then(Value::as_str).filter(|_| status.is_success());
                let id = id.ok_or_else(|| format!("registering the dashboard at {register}: HTTP {status}"))?;
                (id.to_string(), body.get("client_secret").and_then(Value::as_str).map(str::to_string))
            }
        };
        let client = Client { id, secret, authorize, token };
        *held = Some(client.clone());
        Ok(client)
    }

    fn redirect(&self, headers: &HeaderMap) -> String {
        format!("{}/people/callback", crate::login::public_base(headers, self.public_url.as_deref()))
    }
}

fn scopes(required: &[String]) -> String {
    let mut all = vec!["openid".to_string()];
    all.extend(required.iter().filter(|s| *s != "openid").cloned());
    all.join(" ")
}

/// The values of the cookie `name` in a request.
fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(move |c| c.trim().strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

fn failed(status: StatusCode, message: impl Into<String>) -> Response {
    ApiError::new(status, "sign_in_failed", message).into_response()
}

/// `GET /people/login`: to the issuer's sign-in.
pub async fn start(State(login): State<Arc<PeopleLogin>>, headers: HeaderMap) -> Response {
    let redirect = login.redirect(&headers);
    let client = match login.client(&redirect).await {
        Ok(c) => c,
        Err(e) => return failed(StatusCode::BAD_GATEWAY, e),
    };
    let (Ok(state), Ok(verifier)) = (random(24), random(32)) else {
        return failed(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let config = login.guard.verifier().config();
    let Ok(mut url) = reqwest::Url::parse(&client.authorize) else {
        return failed(StatusCode::BAD_GATEWAY, format!("{} is not a URL", client.authorize));
    };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &client.id)
        .append_pair("redirect_uri", &redirect)
        .append_pair("scope", &scopes(&config.scopes))
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", login.guard.resource());
    {
        let mut pending = login.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.retain(|_, p| p.at.elapsed() < PENDING_FOR);
        if pending.len() < MAX_KEPT {
            pending.insert(state.clone(), Pending { verifier, redirect: redirect.clone(), at: Instant::now() });
        }
    }
    let bound = format!(
        "{SIGN_IN_COOKIE}={state}; HttpOnly; SameSite=Lax; Path=/people; Max-Age={}{}",
        PENDING_FOR.as_secs(),
        secure(&redirect)
    );
    let headers = [
        (header::LOCATION, url.to_string()),
        (header::CACHE_CONTROL, "no-store".to_string()),
        (header::SET_COOKIE, bound),
    ];
    (StatusCode::FOUND, headers).into_response()
}

/// `; Secure` for a cookie of a server reached over https.
fn secure(redirect: &str) -> &'static str {
    if redirect.starts_with("https://") { "; Secure" } else { "" }
}

#[derive(serde::Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /people/callback`: the code exchanged, the token checked, the session given.
pub async fn callback(
    State(login): State<Arc<PeopleLogin>>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    // Only the browser that started this sign-in may finish it.
    let mine = q.state.as_deref().is_some_and(|s| cookies(&headers, SIGN_IN_COOKIE).any(|c| c == s));
    if !mine {
        return failed(
            StatusCode::BAD_REQUEST,
            "this sign-in was started by another browser: start again at /people/login",
        );
    }
    let pending =
        q.state.as_deref().and_then(|s| login.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(s));
    let Some(pending) = pending.filter(|p| p.at.elapsed() < PENDING_FOR) else {
        return failed(StatusCode::BAD_REQUEST, "this sign-in is unknown or too old: start again at /people/login");
    };
    if let Some(error) = q.error {
        let why = q.error_description.map(|d| format!(": {d}")).unwrap_or_default();
        return failed(StatusCode::FORBIDDEN, format!("the provider refused: {error}{why}"));
    }
    let Some(code) = q.code else { return failed(StatusCode::BAD_REQUEST, "no code") };
    let client = match login.client(&pending.redirect).await {
        Ok(c) => c,
        Err(e) => return failed(StatusCode::BAD_GATEWAY, e),
    };
    let mut form = vec![
        ("grant_type", "authorization_code".to_string()),
        ("code", code),
        ("redirect_uri", pending.redirect.clone()),
        ("code_verifier", pending.verifier.clone()),
        ("resource", login.guard.resource().to_string()),
        ("client_id", client.id.clone()),
    ];
    let mut request = login.guard.verifier().http().post(&client.token).timeout(Duration::from_secs(10));
    if let Some(secret) = &client.secret {
        request = request.basic_auth(&client.id, Some(secret));
        form.retain(|(k, _)| *k != "client_id");
    }
    let answer = match request.form(&form).send().await {
        Ok(a) => a,
        Err(e) => return failed(StatusCode::BAD_GATEWAY, format!("{}: {e}", client.token)),
    };
    let status = answer.status();
    let body: Value = answer.json().await.unwrap_or_default();
    let Some(token) = body.get("access_token").and_then(Value::as_str).filter(|_| status.is_success()) else {
        let why = body.get("error").and_then(Value::as_str).unwrap_or("no access token");
        return failed(StatusCode::BAD_GATEWAY, format!("{}: HTTP {status}: {why}", client.token));
    };
    let principal = match login.guard.verifier().verify(token).await {
        Ok(p) => p,
        Err(e) => return failed(StatusCode::FORBIDDEN, format!("the provider's token is not one /mcp accepts: {e}")),
    };
    let lasts = body.get("expires_in").and_then(Value::as_u64).map_or(DEFAULT_SESSION, Duration::from_secs);
    let Ok(session) = random(32) else { return failed(StatusCode::INTERNAL_SERVER_ERROR, "no randomness") };
    {
        let mut sessions = login.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        sessions.retain(|_, s| s.until > now);
        if sessions.len() >= MAX_KEPT {
            sessions.clear();
        }
        tracing::info!(subject = %principal.subject, "signed in to the dashboard");
        sessions.insert(session.clone(), PersonSession { principal, until: now + lasts });
    }
    let cookie = format!(
        "{PERSON_COOKIE}={session}; HttpOnly; SameSite=Lax; Path=/; Max-Age={}{}",
        lasts.as_secs(),
        secure(&pending.redirect)
    );
    let done = format!("{SIGN_IN_COOKIE}=; HttpOnly; SameSite=Lax; Path=/people; Max-Age=0");
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/".to_string())]).into_response();
    for value in [cookie, done] {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

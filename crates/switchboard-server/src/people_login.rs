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
//!
//! On a team's store every replica behind a load balancer serves them as one: a sign-in begun
//! at one finishes at another (the pending sign-in in `switchboard_sign_ins`, its PKCE verifier
//! sealed with the store's key ring, taken once), a session given by one is known to all
//! (`switchboard_dashboard_sessions`, by the SHA-256 of the cookie's value), and the dashboard
//! client registered at the issuer is registered once for all (the store's document
//! `dashboard_client`, its secret sealed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard::store::db::Database;

use crate::error::ApiError;
use crate::identity::{Principal, Protected};
use crate::security::{now_ms, random};

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

#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    verifier: String,
    redirect: String,
    /// Where the browser goes once signed in (a path of this server).
    #[serde(default)]
    next: Option<String>,
    #[serde(skip, default = "Instant::now")]
    at: Instant,
}

/// The store's document that names the dashboard client registered at the issuer.
const CLIENT_DOCUMENT: &str = "dashboard_client";

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
    store: Option<Database>,
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
    /// reached this server), kept in the team's `store` when there is one.
    pub fn new(guard: Arc<Protected>, public_url: Option<String>, store: Option<Database>) -> PeopleLogin {
        PeopleLogin {
            guard,
            public_url,
            store,
            client: tokio::sync::Mutex::new(None),
            pending: Mutex::default(),
            sessions: Mutex::default(),
        }
    }

    /// The person of a request's session cookie, while it lasts: one given here, else one the
    /// team's store knows (given by another replica; kept here from then on).
    pub async fn person(&self, headers: &HeaderMap) -> Option<Principal> {
        let values: Vec<&str> = cookies(headers, PERSON_COOKIE).collect();
        {
            let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let known = values.iter().filter_map(|v| sessions.get(*v)).find(|s| s.until > Instant::now());
            if let Some(s) = known {
                return Some(s.principal.clone());
            }
        }
        let store = self.store.as_ref()?;
        for value in values.into_iter().filter(|v| !v.is_empty()).take(4) {
            let found = match store.dashboard_session(&crate::security::digest(value)).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!("dashboard sessions in the team's store: {e}");
                    return None;
                }
            };
            let Some((principal, until_ms)) = found else { continue };
            let Ok(principal) = serde_json::from_value::<Principal>(principal) else { continue };
            let left = u64::try_from(until_ms).unwrap_or(0).saturating_sub(now_ms());
            self.keep_session(
                value,
                PersonSession { principal: principal.clone(), until: Instant::now() + Duration::from_millis(left) },
            );
            return Some(principal);
        }
        None
    }

    /// Keeps a session in this process's memory.
    fn keep_session(&self, value: &str, session: PersonSession) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        sessions.retain(|_, s| s.until > now);
        if sessions.len() >= MAX_KEPT {
            sessions.clear();
        }
        sessions.insert(value.to_string(), session);
    }

    /// Keeps a sign-in under way until its callback: in the team's store when there is one.
    async fn keep_pending(&self, state: &str, pending: Pending) -> Result<(), String> {
        let Some(store) = &self.store else {
            let mut kept = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            kept.retain(|_, p| p.at.elapsed() < PENDING_FOR);
            if kept.len() < MAX_KEPT {
                kept.insert(state.to_string(), pending);
            }
            return Ok(());
        };
        let plain = serde_json::to_vec(&pending).map_err(|e| e.to_string())?;
        let sealed = store.key_ring().seal(&sign_in_context(state), &plain).map_err(|e| e.to_string())?;
        store.put_sign_in(state, &sealed, PENDING_FOR).await.map_err(|e| e.to_string())
    }

    /// Takes the sign-in `state` (once), if it is not too old.
    async fn take_pending(&self, state: &str) -> Result<Option<Pending>, String> {
        let Some(store) = &self.store else {
            let taken = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(state);
            return Ok(taken.filter(|p| p.at.elapsed() < PENDING_FOR));
        };
        let Some(sealed) = store.take_sign_in(state, PENDING_FOR).await.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let plain = store.key_ring().open(&sign_in_context(state), &sealed).map_err(|e| e.to_string())?;
        Ok(serde_json::from_slice(&plain).ok())
    }

    /// Gives the session `value` to `principal` until `lasts` from now.
    async fn give_session(&self, value: &str, principal: Principal, lasts: Duration) -> Result<(), String> {
        if let Some(store) = &self.store {
            let until_ms = now_ms().saturating_add(u64::try_from(lasts.as_millis()).unwrap_or(0));
            let who = serde_json::to_value(&principal).map_err(|e| e.to_string())?;
            store
                .put_dashboard_session(
                    &crate::security::digest(value),
                    &who,
                    i64::try_from(until_ms).unwrap_or(i64::MAX),
                )
                .await
                .map_err(|e| e.to_string())?;
        }
        self.keep_session(value, PersonSession { principal, until: Instant::now() + lasts });
        Ok(())
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
        let shared = match &config.dashboard_client {
            Some(_) => None,
            None => self.shared_client(&issuer, redirect, None).await,
        };
        let (id, secret) = match (&config.dashboard_client, shared) {
            (Some(c), _) => (c.client_id.clone(), c.client_secret.clone()),
            (None, Some(shared)) => shared,
            (None, None) => {
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
                let ours = (id.to_string(), body.get("client_secret").and_then(Value::as_str).map(str::to_string));
                // Another replica may have registered one meanwhile: the first kept is used.
                match self.shared_client(&issuer, redirect, Some(&ours)).await {
                    Some(shared) => shared,
                    None => ours,
                }
            }
        };
        let client = Client { id, secret, authorize, token };
        *held = Some(client.clone());
        Ok(client)
    }

    /// The dashboard client registered for `issuer` and `redirect` as the team's store names
    /// it; with `ours`, names that one unless another is named already (and returns the one
    /// named). `None`: no store, or none named (a store that fails is logged).
    async fn shared_client(
        &self,
        issuer: &str,
        redirect: &str,
        ours: Option<&(String, Option<String>)>,
    ) -> Option<(String, Option<String>)> {
        let store = self.store.as_ref()?;
        let ring = store.key_ring();
        let read = |doc: &Value| -> Option<(String, Option<String>)> {
            if doc.get("issuer")?.as_str()? != issuer || doc.get("redirect")?.as_str()? != redirect {
                return None;
            }
            let id = doc.get("client_id")?.as_str()?.to_string();
            let secret = match doc.get("client_secret").and_then(Value::as_str) {
                Some(sealed) => Some(String::from_utf8(ring.open(CLIENT_DOCUMENT.as_bytes(), sealed).ok()?).ok()?),
                None => None,
            };
            Some((id, secret))
        };
        let result = match ours {
            None => store.document(CLIENT_DOCUMENT).await.map(|doc| doc.as_ref().and_then(read)),
            Some((id, secret)) => {
                let sealed = match secret {
                    Some(s) => match ring.seal(CLIENT_DOCUMENT.as_bytes(), s.as_bytes()) {
                        Ok(sealed) => Some(sealed),
                        Err(e) => {
                            tracing::warn!("sealing the dashboard client's secret: {e}");
                            return None;
                        }
                    },
                    None => None,
                };
                let mine = json!({"issuer": issuer, "redirect": redirect, "client_id": id, "client_secret": sealed});
                store
                    .update_document(CLIENT_DOCUMENT, |current| match current.as_ref().and_then(read) {
                        Some(theirs) => (None, Some(theirs)),
                        None => (Some(mine), None),
                    })
                    .await
            }
        };
        result.unwrap_or_else(|e| {
            tracing::warn!("the dashboard client in the team's store: {e}");
            None
        })
    }

    fn redirect(&self, headers: &HeaderMap) -> String {
        format!("{}/people/callback", crate::security::public_base(headers, self.public_url.as_deref()))
    }
}

/// What a pending sign-in is sealed for.
fn sign_in_context(state: &str) -> Vec<u8> {
    [b"sign_in".as_slice(), state.as_bytes()].join(&0u8)
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

/// `?next=`: where to go once signed in.
#[derive(serde::Deserialize)]
pub struct Start {
    next: Option<String>,
}

/// `next` if it is a path of this server (`/…`, not `//host` nor `/\host`, which browsers take
/// for another site), else nothing: a sign-in never sends the browser elsewhere.
fn own_path(next: Option<String>) -> Option<String> {
    next.filter(|n| {
        n.starts_with('/')
            && !n.starts_with("//")
            && !n.starts_with("/\\")
            && !n.chars().any(|c| c.is_control() || c == '\\')
    })
}

/// `/people/login` and `/people/callback`.
pub(crate) fn routes(login: &Arc<PeopleLogin>) -> axum::Router {
    axum::Router::new()
        .route("/people/login", axum::routing::get(start))
        .route("/people/callback", axum::routing::get(callback))
        .with_state(login.clone())
}

/// `GET /people/login?next=…`: to the issuer's sign-in (and, once signed in, to `next`, a
/// path of this server, else `/`).
pub async fn start(State(login): State<Arc<PeopleLogin>>, headers: HeaderMap, Query(q): Query<Start>) -> Response {
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
    let pending = Pending { verifier, redirect: redirect.clone(), next: own_path(q.next), at: Instant::now() };
    if let Err(e) = login.keep_pending(&state, pending).await {
        return failed(StatusCode::SERVICE_UNAVAILABLE, format!("keeping the sign-in in the team's store: {e}"));
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
    let pending = match q.state.as_deref() {
        Some(state) => match login.take_pending(state).await {
            Ok(p) => p,
            Err(e) => {
                return failed(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("reading the sign-in from the team's store: {e}"),
                );
            }
        },
        None => None,
    };
    let Some(pending) = pending else {
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
    let subject = principal.subject.clone();
    if let Err(e) = login.give_session(&session, principal, lasts).await {
        return failed(StatusCode::SERVICE_UNAVAILABLE, format!("keeping the session in the team's store: {e}"));
    }
    tracing::info!(subject = %subject, "signed in to the dashboard");
    let cookie = format!(
        "{PERSON_COOKIE}={session}; HttpOnly; SameSite=Lax; Path=/; Max-Age={}{}",
        lasts.as_secs(),
        secure(&pending.redirect)
    );
    let done = format!("{SIGN_IN_COOKIE}=; HttpOnly; SameSite=Lax; Path=/people; Max-Age=0");
    let next = own_path(pending.next.clone()).unwrap_or_else(|| "/".to_string());
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, next)]).into_response();
    for value in [cookie, done] {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::own_path;

    #[test]
    fn a_sign_in_goes_on_to_a_path_of_this_server_alone() {
        let next = |n: &str| own_path(Some(n.to_string()));
        assert_eq!(next("/inputs?state=ab").as_deref(), Some("/inputs?state=ab"));
        assert_eq!(next("/").as_deref(), Some("/"));
        for elsewhere in ["//evil.example/x", "/\\evil.example", "https://evil.example", "evil", "/a\nb", ""] {
            assert_eq!(next(elsewhere), None, "{elsewhere:?}");
        }
        assert_eq!(own_path(None), None);
    }
}

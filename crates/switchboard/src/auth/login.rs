//! The login flow for one server: discovery (from the server's challenge, else the well-known
//! paths), the client identity in the spec's order, the authorization URL with PKCE S256,
//! `state` and RFC 8707 `resource`, then the callback: state and issuer checked, code
//! exchanged, tokens saved to the store. The grants without a browser are in `grants`, the
//! connection's manager in `connect`.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};

use std::sync::Arc;

use super::dpop::{Dpop, DpopKey};
use super::http::OAuthHttp;
use super::store::{ClientRecord, TokenStore, now};
use crate::config::{DpopMode, HttpConfig};

/// Why a login could not go on. Messages name the step and never carry a token, code,
/// verifier or secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The authorisation server offers no way to register and no client id is configured.
    #[error(
        "the authorization server ({issuer}) supports no client registration: register a client with it and set \
         `oauth.client_id` (and `oauth.client_secret`) for this server"
    )]
    NeedsClientRegistration {
        /// Who it is.
        issuer: String,
    },
    /// The person (or the server) refused at the authorisation page.
    #[error("authorization was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code (`access_denied`...).
        error: String,
        /// What the server said.
        description: Option<String>,
    },
    /// The callback URL is not one this login produced.
    #[error("{0}")]
    BadCallback(String),
    /// The authorization server could not be reached (refused, timed out, no route, TLS): not
    /// a login to do, a server to try again later.
    #[error("{url} cannot be reached to find its authorization server: {cause}")]
    Unreachable {
        /// The address asked.
        url: String,
        /// What the network said.
        cause: String,
    },
    /// A step of the OAuth protocol failed.
    #[error("{step}: {message}")]
    Protocol {
        /// Discovery, registration, token exchange...
        step: &'static str,
        /// rmcp's description.
        message: String,
    },
    /// The authorization server refused the client switchboard registered (`invalid_client`:
    /// it forgot it, or its secret expired). It is forgotten; the next login registers anew.
    #[error(
        "the authorization server refused the client switchboard registered for it (invalid_client); it is \
         forgotten, and logging in again registers a new one"
    )]
    ClientRefused,
    /// The token store failed.
    #[error("{0}")]
    Store(#[from] super::StoreError),
}

pub(super) fn protocol(step: &'static str) -> impl FnOnce(AuthError) -> LoginError {
    move |e| LoginError::Protocol { step, message: e.to_string() }
}

/// A login waiting for the browser to come back.
pub struct Login {
    session: AuthorizationSession,
    server: String,
    url: String,
    client: Arc<OAuthHttp>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").field("server", &self.server).field("url", &self.url).finish_non_exhaustive()
    }
}

impl Login {
    /// The URL the person opens (it carries no secret: PKCE keeps the verifier here).
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// The `state` the browser brings back to this login's callback (from the authorization
    /// URL), for a callback listener that takes only its own.
    pub fn state(&self) -> Option<String> {
        let url = reqwest::Url::parse(self.authorization_url()).ok()?;
        url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned())
    }

    /// Where the browser is sent back.
    pub fn redirect_uri(&self) -> &str {
        &self.session.redirect_uri
    }

    /// The server being logged in to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Finishes with the URL the browser was sent back to (its query carries `code` and
    /// `state`, or `error`): checks the state and the issuer, exchanges the code, saves the
    /// tokens.
    pub async fn complete(self, callback_url: &str) -> Result<(), LoginError> {
        let parsed = reqwest::Url::parse(callback_url)
            .map_err(|e| LoginError::BadCallback(format!("the callback URL does not parse: {e}")))?;
        let query: std::collections::HashMap<String, String> = parsed.query_pairs().into_owned().collect();
        if let Some(error) = query.get("error") {
            return Err(LoginError::Denied {
                error: error.clone(),
                description: query.get("error_description").cloned(),
            });
        }
        if !query.contains_key("code") || !query.contains_key("state") {
            return Err(LoginError::BadCallback(
                "the callback URL has no `code` and `state` (paste the whole address the browser ended on)".into(),
            ));
        }
        let client = self.client.clone();
        self.session.handle_callback_url(callback_url).await.map_err(|e| match e {
            // The code exchange was refused for the client itself.
            _ if client.client_refused() => LoginError::ClientRefused,
            // rmcp's state check: the code is for another login (or was used already).
            AuthError::InternalError(m) if m.contains("CSRF") || m.contains("state") => LoginError::BadCallback(
                "the callback's `state` does not belong to this login (an old browser tab, or another program's \
                 login)"
                    .into(),
            ),
            other => protocol("token exchange")(other),
        })?;
        Ok(())
    }
}

/// `before` then the scopes of `now` it lacks, in order, each once. Empty when `now` is (a
/// login that asks for no scope keeps asking for none).
fn scope_union(before: Vec<String>, now: Vec<String>) -> Vec<String> {
    if now.is_empty() {
        return now;
    }
    let mut all = before;
    for scope in now {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    all
}

/// A manager for `http`'s URL whose tokens live in `store`.
pub(super) async fn manager(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
) -> Result<AuthorizationManager, LoginError> {
    Ok(manager_with(server, http, store, None).await?.0)
}

/// A manager whose OAuth requests go through our client (signed with `dpop` when given), and
/// that client, which tells what a registration answered.
pub(super) async fn manager_with(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    dpop: Option<Arc<Dpop>>,
) -> Result<(AuthorizationManager, Arc<OAuthHttp>), LoginError> {
    // A client switchboard registered is forgotten when refused; a configured one is the
    // person's to fix.
    let forget = http.oauth.client_id.is_none().then(|| super::http::Forget {
        store: store.clone(),
        url: http.url.clone(),
        server: server.to_string(),
    });
    let client = Arc::new(
        OAuthHttp::new(dpop, &http.url, forget)
            .map_err(|e| LoginError::Protocol { step: "setting up OAuth", message: format!("no HTTP client: {e}") })?,
    );
    let mut manager = AuthorizationManager::new_with_oauth_http_client(http.url.as_str(), client.clone())
        .await
        .map_err(protocol("setting up OAuth"))?;
    manager.set_credential_store(store.for_url(&http.url, server));
    Ok((manager, client))
}

/// Whether the authorization server offers DPoP with ES256 (RFC 9449 §5.1).
pub(super) fn offers_dpop(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some("ES256")))
}

/// Whether a `WWW-Authenticate` value has a challenge of the `DPoP` scheme.
fn names_dpop(challenge: &str) -> bool {
    challenge.split(',').any(|part| {
        let scheme = part.trim_start().split([' ', '=']).next().unwrap_or_default();
        scheme.eq_ignore_ascii_case("dpop") && !part.trim_start()[scheme.len()..].starts_with('=')
    })
}

/// The server's DPoP key when its tokens are to be bound (`oauth.dpop`, and for `auto` what the
/// authorization server offers): the one stored with its tokens, else a new one, stored.
pub(super) async fn dpop_for(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    offered: bool,
) -> Result<Option<Arc<Dpop>>, LoginError> {
    let wanted = match http.oauth.dpop {
        DpopMode::Never => false,
        DpopMode::Always => true,
        _ => offered,
    };
    if !wanted {
        return Ok(None);
    }
    let dpop_error = |e: super::dpop::DpopError| LoginError::Protocol { step: "DPoP", message: e.to_string() };
    if let Some(stored) = store.entry(&http.url).await?.and_then(|e| e.dpop_key) {
        return Ok(Some(Dpop::new(DpopKey::from_stored(&stored.0).map_err(dpop_error)?)));
    }
    let (key, stored) = DpopKey::generate().map_err(dpop_error)?;
    store.update(&http.url, server, |e| e.dpop_key = Some(super::store::Secret(stored))).await?;
    Ok(Some(Dpop::new(key)))
}

/// The key a stored token is bound to, when it is (`token_type: DPoP`).
pub(super) fn bound_dpop(entry: Option<&super::store::Entry>) -> Option<Arc<Dpop>> {
    let entry = entry?;
    let response = entry.credentials.as_ref()?.token_response.as_ref()?;
    let kind = serde_json::to_value(response).ok()?.get("token_type")?.as_str()?.to_string();
    if !kind.eq_ignore_ascii_case("dpop") {
        return None;
    }
    match entry.dpop_key.as_ref().map(|k| DpopKey::from_stored(&k.0)) {
        Some(Ok(key)) => Some(Dpop::new(key)),
        Some(Err(e)) => {
            tracing::warn!("{e}");
            None
        }
        None => {
            tracing::warn!("a DPoP-bound token is stored without its key: log in again");
            None
        }
    }
}

/// A manager whose token requests carry DPoP proofs signed with `dpop`.
pub(super) async fn dpop_manager(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    dpop: &Arc<Dpop>,
) -> Result<AuthorizationManager, LoginError> {
    Ok(manager_with(server, http, store, Some(dpop.clone())).await?.0)
}

/// Discovery: the authorisation server's metadata, from the challenge's
/// `resource_metadata`, else the well-known paths (rmcp's order). One relaxation: when the
/// server has no protected-resource metadata and its own origin serves authorisation-server
/// metadata whose `issuer` is not that origin (the 2025-03-26 arrangement, before issuers
/// were checked), that metadata is used, with a warning: it comes from the MCP server itself.
pub(super) async fn discover(
    manager: &AuthorizationManager,
    http: &HttpConfig,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, LoginError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch { expected_issuer, received_issuer }) => {
            let url = reqwest::Url::parse(&http.url)
                .map_err(|e| LoginError::Protocol { step: "discovery", message: e.to_string() })?;
            let origin = url.origin().ascii_serialization();
            if expected_issuer.trim_end_matches('/') != origin {
                return Err(protocol("discovery")(AuthError::AuthorizationServerMismatch {
                    expected_issuer,
                    received_issuer,
                }));
            }
            let fetched = async {
                let response = reqwest::Client::new()
                    .get(format!("{origin}/.well-known/oauth-authorization-server"))
                    .send()
                    .await?
                    .error_for_status()?;
                response.json::<AuthorizationMetadata>().await
            };
            let metadata =
                fetched.await.map_err(|e| LoginError::Protocol { step: "discovery", message: e.to_string() })?;
            tracing::warn!(
                "{origin} serves authorization server metadata for issuer {received_issuer} (the 2025-03-26                  arrangement); using it"
            );
            Ok(metadata)
        }
        Err(AuthError::DiscoveryRequestFailed { url, source }) => {
            Err(LoginError::Unreachable { cause: unreachable(url.as_ref(), &causes(&*source)), url: url.to_string() })
        }
        Err(AuthError::HttpError(e)) if e.is_connect() || e.is_timeout() => {
            let url = e.url().map(ToString::to_string).unwrap_or_else(|| http.url.clone());
            Err(LoginError::Unreachable { cause: unreachable(&url, &causes(&e)), url })
        }
        Err(e) => Err(protocol("discovery")(e)),
    }
}

/// Why `url` could not be reached, in a person's words first: a host name that does not
/// resolve is said as such (a typo, or a network without that name), the causes after it.
fn unreachable(url: &str, causes: &str) -> String {
    if causes.to_lowercase().contains("dns error") {
        let host = reqwest::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default();
        return format!("its host name `{host}` does not resolve: {causes}");
    }
    causes.to_string()
}

/// An error and its sources, as one line.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Starts a login: discovery, a client identity (configured id, then a client ID metadata
/// document where supported, then the client registered last time, then dynamic
/// registration), the authorization URL.
pub async fn begin(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    redirect_uri: &str,
    challenge: Option<&str>,
) -> Result<Login, LoginError> {
    let oauth = &http.oauth;
    let (mut manager, mut oauth_http) = manager_with(server, http, store, None).await?;
    let metadata = discover(&manager, http, challenge).await?;
    let issuer = metadata.issuer.clone().unwrap_or_else(|| metadata.authorization_endpoint.clone());
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let can_register = metadata.registration_endpoint.is_some();
    // A resource server that refused with a challenge of the `Bearer` scheme alone takes no
    // DPoP-bound token (RFC 9449 §7.1: one that does names the `DPoP` scheme), whatever its
    // authorization server offers.
    let offered = offers_dpop(&metadata) && challenge.is_none_or(names_dpop);
    manager.set_metadata(metadata.clone());
    let entry = store.entry(&http.url).await?.unwrap_or_default();
    // SEP-2350: a new login asks for what was granted before as well as what is asked for now
    // (a step-up's challenge names only the scope that was missing).
    let granted = entry.credentials.as_ref().map(|c| c.granted_scopes.clone()).unwrap_or_default();
    let wanted = if oauth.scopes.is_empty() { manager.select_scopes(None, &[]) } else { oauth.scopes.clone() };
    let scopes = scope_union(granted, wanted);
    // DPoP: from here on (registration, the code exchange, refreshes) through the DPoP client.
    if let Some(dpop) = dpop_for(server, http, store, offered).await? {
        (manager, oauth_http) = manager_with(server, http, store, Some(dpop)).await?;
        manager.set_metadata(metadata);
    }
    let mut request =
        AuthorizationRequest::new(redirect_uri).with_client_name("switchboard").with_scopes(scopes.clone());
    let stored = entry.client.filter(|c| c.redirect_uri.as_deref() == Some(redirect_uri));
    // A client whose secret expired is registered again.
    let stored = match stored {
        Some(c) if c.expired(now()) => {
            tracing::info!(server, "the secret of the client registered for it expired: registering a new one");
            None
        }
        // Registered for fewer scopes than this login asks (a step-up): a new one, for all.
        Some(c) if c.scopes.as_ref().is_some_and(|had| !scopes.iter().all(|s| had.contains(s))) => {
            tracing::info!(server, "the client registered for it is for fewer scopes: registering a new one");
            None
        }
        other => other,
    };
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret);
        }
    } else if let (Some(url), true) = (&oauth.client_metadata_url, cimd) {
        request = request.with_client_metadata_url(url);
    } else if let Some(client) = stored {
        // Registered at the last login: reuse it rather than register a new client each time.
        request = request.with_preregistered_client(&client.client_id);
        if let Some(secret) = &client.client_secret {
            request = request.with_client_secret(secret);
        }
    } else if can_register {
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let client = manager
            .register_client("switchboard", redirect_uri, &refs)
            .await
            .map_err(protocol("client registration"))?;
        let record = ClientRecord {
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            redirect_uri: Some(redirect_uri.to_string()),
            registered_at: now(),
            client_secret_expires_at: oauth_http.registered_expiry(),
            scopes: Some(scopes.clone()),
        };
        store.update(&http.url, server, |e| e.client = Some(record)).await?;
        request = request.with_preregistered_client(&client.client_id);
        if let Some(secret) = &client.client_secret {
            request = request.with_client_secret(secret);
        }
    } else {
        return Err(LoginError::NeedsClientRegistration { issuer });
    }
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| protocol("authorization")(e))?;
    Ok(Login { session, server: server.to_string(), url: http.url.clone(), client: oauth_http })
}

/// Whether a login could get a client identity for `http` (a configured id, a client ID
/// metadata document the server accepts, or dynamic registration). `None`: discovery itself
/// failed (the login will say why).
pub(crate) async fn can_identify(http: &HttpConfig, challenge: Option<&str>) -> Option<bool> {
    if http.oauth.client_id.is_some() {
        return Some(true);
    }
    let manager = AuthorizationManager::new(http.url.as_str()).await.ok()?;
    let metadata = discover(&manager, http, challenge).await.ok()?;
    let cimd = metadata.additional_fields.get("client_id_metadata_document_supported").and_then(|v| v.as_bool());
    Some(metadata.registration_endpoint.is_some() || (cimd == Some(true) && http.oauth.client_metadata_url.is_some()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_challenge_names_the_dpop_scheme_or_not() {
        assert!(names_dpop("DPoP resource_metadata=\"https://r/x\""));
        assert!(names_dpop("Bearer realm=\"x\", DPoP algs=\"ES256\""));
        assert!(!names_dpop("Bearer error=\"invalid_token\", resource_metadata=\"https://r/x\""));
        // A parameter called `dpop`, not a scheme.
        assert!(!names_dpop("Bearer realm=\"x\", dpop=1"));
    }

    use super::{names_dpop, scope_union};

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_new_login_keeps_what_was_granted_and_adds_what_is_asked() {
        assert_eq!(scope_union(v(&["mcp:basic"]), v(&["mcp:write"])), v(&["mcp:basic", "mcp:write"]));
        assert_eq!(scope_union(v(&["a", "b"]), v(&["b", "c", "a"])), v(&["a", "b", "c"]));
        assert_eq!(scope_union(v(&[]), v(&["a"])), v(&["a"]));
        assert_eq!(scope_union(v(&["a"]), v(&[])), v(&[]), "a login that asks for nothing asks for nothing");
    }
}

//! The login flow for one server: discovery (from the server's challenge, else the well-known
//! paths), the client identity in the spec's order, the authorization URL with PKCE S256,
//! `state` and RFC 8707 `resource`, then the callback: state and issuer checked, code
//! exchanged, tokens saved to the store. And the machine-to-machine grant (client
//! credentials), which needs no browser.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, JwtSigningAlgorithm, OAuthClientConfig,
};

use super::store::{ClientRecord, TokenStore, now};
use crate::config::{HttpConfig, OAuthConfig};

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
    /// A step of the OAuth protocol failed.
    #[error("{step}: {message}")]
    Protocol {
        /// Discovery, registration, token exchange...
        step: &'static str,
        /// rmcp's description.
        message: String,
    },
    /// The token store failed.
    #[error("{0}")]
    Store(#[from] super::StoreError),
}

fn protocol(step: &'static str) -> impl FnOnce(AuthError) -> LoginError {
    move |e| LoginError::Protocol { step, message: e.to_string() }
}

/// A login waiting for the browser to come back.
pub struct Login {
    session: AuthorizationSession,
    server: String,
    url: String,
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
        self.session.handle_callback_url(callback_url).await.map_err(|e| match e {
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
async fn manager(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<AuthorizationManager, LoginError> {
    let mut manager = AuthorizationManager::new(http.url.as_str()).await.map_err(protocol("setting up OAuth"))?;
    manager.set_credential_store(store.for_url(&http.url, server));
    Ok(manager)
}

/// Discovery: the authorisation server's metadata, from the challenge's
/// `resource_metadata`, else the well-known paths (rmcp's order). One relaxation: when the
/// server has no protected-resource metadata and its own origin serves authorisation-server
/// metadata whose `issuer` is not that origin (the 2025-03-26 arrangement, before issuers
/// were checked), that metadata is used, with a warning: it comes from the MCP server itself.
async fn discover(
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
        Err(e) => Err(protocol("discovery")(e)),
    }
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
    let mut manager = manager(server, http, store).await?;
    let metadata = discover(&manager, http, challenge).await?;
    let issuer = metadata.issuer.clone().unwrap_or_else(|| metadata.authorization_endpoint.clone());
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let can_register = metadata.registration_endpoint.is_some();
    manager.set_metadata(metadata);
    let entry = store.entry(&http.url)?.unwrap_or_default();
    // SEP-2350: a new login asks for what was granted before as well as what is asked for now
    // (a step-up's challenge names only the scope that was missing).
    let granted = entry.credentials.as_ref().map(|c| c.granted_scopes.clone()).unwrap_or_default();
    let wanted = if oauth.scopes.is_empty() { manager.select_scopes(None, &[]) } else { oauth.scopes.clone() };
    let scopes = scope_union(granted, wanted);
    let mut request =
        AuthorizationRequest::new(redirect_uri).with_client_name("switchboard").with_scopes(scopes.clone());
    let stored = entry.client.filter(|c| c.redirect_uri.as_deref() == Some(redirect_uri));
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
        };
        store.update(&http.url, server, |e| e.client = Some(record))?;
        request = request.with_preregistered_client(&client.client_id);
        if let Some(secret) = &client.client_secret {
            request = request.with_client_secret(secret);
        }
    } else {
        return Err(LoginError::NeedsClientRegistration { issuer });
    }
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| protocol("authorization")(e))?;
    Ok(Login { session, server: server.to_string(), url: http.url.clone() })
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

/// The grants that need no browser: client credentials (the configured client's secret, or a
/// JWT signed with its private key) and enterprise-managed authorization (an ID token from
/// the organisation's identity provider). Gets a token and saves it.
pub async fn client_credentials(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<(), LoginError> {
    // rmcp's exchange future is not `Send` (it keeps a form serializer across an await), so
    // it runs on a runtime of its own, on a blocking thread.
    let (server, http, store) = (server.to_string(), http.clone(), store.clone());
    let run = move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LoginError::Protocol { step: "client credentials", message: format!("no runtime: {e}") })?;
        match http.oauth.grant {
            crate::config::OAuthGrant::Enterprise => runtime.block_on(enterprise(&server, &http, &store)),
            crate::config::OAuthGrant::JwtBearer => runtime.block_on(jwt_bearer(&server, &http, &store)),
            _ => runtime.block_on(exchange_client_credentials(&server, &http, &store)),
        }
    };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| LoginError::Protocol { step: "client credentials", message: e.to_string() })?
}

async fn exchange_client_credentials(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<(), LoginError> {
    let mut manager = manager(server, http, store).await?;
    manager.set_metadata(discover(&manager, http, None).await?);
    let config = credentials_config(&http.oauth, &http.url)?;
    manager.configure_client_credentials(&config).map_err(protocol("client credentials"))?;
    manager.exchange_client_credentials(&config).await.map_err(protocol("client credentials"))?;
    Ok(())
}

/// SEP-990: the ID token is exchanged at the identity provider for an ID-JAG (RFC 8693),
/// which the server's authorization server exchanges for an access token (RFC 7523
/// jwt-bearer, authenticated as the configured client).
async fn enterprise(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<(), LoginError> {
    use oauth2::ClientSecret;
    use rmcp::transport::auth::enterprise::{EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest};
    let step = "enterprise authorization";
    let fail = |message: String| LoginError::Protocol { step, message };
    let (Some(idp), Some(client_id)) = (&http.oauth.enterprise, &http.oauth.client_id) else {
        return Err(fail("`oauth.enterprise` and `oauth.client_id` are needed".into()));
    };
    let manager = manager(server, http, store).await?;
    let metadata = discover(&manager, http, None).await?;
    let issuer = metadata.issuer.clone().ok_or_else(|| fail("the authorization server names no issuer".into()))?;
    let mut idp_server = EmaAuthorizationServer::new(&idp.idp_issuer, &idp.idp_token_endpoint, &idp.idp_client_id);
    if let Some(secret) = &idp.idp_client_secret {
        idp_server = idp_server
            .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone())));
    }
    let mut resource_as = EmaAuthorizationServer::new(&issuer, &metadata.token_endpoint, client_id);
    if let Some(secret) = &http.oauth.client_secret {
        resource_as = resource_as
            .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone())));
    }
    let client = rmcp::transport::auth::default_oauth_http_client().map_err(|e| fail(e.to_string()))?;
    let token = EmaExchangeRequest::new_with_id_token(idp_server, resource_as, &http.url, &idp.id_token)
        .with_scopes(http.oauth.scopes.clone())
        .exchange(&client, &client)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let mut scopes: Vec<String> = token.scopes.iter().cloned().collect();
    scopes.sort();
    let token = Obtained {
        access_token: token.access_token.secret().clone(),
        token_type: "bearer".into(),
        expires_in: token.expires_in.map(|d| d.as_secs()),
        scopes,
    };
    save_token(server, http, store, client_id, issuer, token).map_err(|e| match e {
        LoginError::Protocol { message, .. } => fail(message),
        other => other,
    })
}

/// A token a grant without refresh obtained.
struct Obtained {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
    scopes: Vec<String>,
}

/// Stores `token` as rmcp stores any token, so the connection reads it the same way.
fn save_token(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    client_id: &str,
    issuer: String,
    token: Obtained,
) -> Result<(), LoginError> {
    let response = serde_json::json!({
        "access_token": token.access_token,
        "token_type": token.token_type,
        "expires_in": token.expires_in,
        "scope": (!token.scopes.is_empty()).then(|| token.scopes.join(" ")),
    });
    let response = serde_json::from_value(response)
        .map_err(|e| LoginError::Protocol { step: "storing the token", message: format!("the token response: {e}") })?;
    let credentials =
        rmcp::transport::auth::StoredCredentials::new(client_id.to_string(), Some(response), token.scopes, Some(now()))
            .with_issuer(Some(issuer));
    store.update(&http.url, server, |e| e.credentials = Some(credentials))?;
    Ok(())
}

/// The grant type of RFC 7523.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Workload identity (RFC 7523, SEP-1933): the workload's JWT goes to the authorization
/// server's token endpoint as the assertion of a `jwt-bearer` grant, once: a refusal
/// (`invalid_grant`, `invalid_scope`, `unauthorized_client`) is reported as the server said
/// it, never retried and never answered with another grant.
async fn jwt_bearer(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<(), LoginError> {
    let step = "workload identity (jwt-bearer)";
    let fail = |message: String| LoginError::Protocol { step, message };
    let assertion = match &http.oauth.assertion {
        Some(crate::config::AssertionSource::Value(v)) => v.trim().to_string(),
        Some(crate::config::AssertionSource::File(path)) => std::fs::read_to_string(path)
            .map_err(|e| fail(format!("reading `oauth.assertion_file` {}: {e}", path.display())))?
            .trim()
            .to_string(),
        None => return Err(fail("`oauth.assertion_file` (or `oauth.assertion`) is not set".into())),
    };
    if assertion.is_empty() {
        return Err(fail("the workload's JWT is empty".into()));
    }
    let manager = manager(server, http, store).await?;
    let metadata = discover(&manager, http, None).await?;
    let issuer = metadata.issuer.clone().unwrap_or_else(|| metadata.token_endpoint.clone());
    let mut form: Vec<(&str, &str)> =
        vec![("grant_type", JWT_BEARER), ("assertion", &assertion), ("resource", &http.url)];
    let scope = http.oauth.scopes.join(" ");
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| fail(format!("no HTTP client: {e}")))?;
    let mut request = client.post(&metadata.token_endpoint).header(reqwest::header::ACCEPT, "application/json");
    match (&http.oauth.client_id, &http.oauth.client_secret) {
        (Some(id), Some(secret)) => request = request.basic_auth(urlencode(id), Some(urlencode(secret))),
        (Some(id), None) => form.push(("client_id", id)),
        _ => {}
    }
    let response = request.form(&form).send().await.map_err(|e| fail(format!("{}: {e}", metadata.token_endpoint)))?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        let error = body["error"].as_str().unwrap_or("no error code");
        let said = body["error_description"]
            .as_str()
            .map(|d| format!(" ({})", crate::text::excerpt(d, 200)))
            .unwrap_or_default();
        return Err(fail(format!(
            "the authorization server refused the workload's JWT: {error}{said} (HTTP {status})"
        )));
    }
    let access_token = body["access_token"].as_str().ok_or_else(|| fail("the answer has no access_token".into()))?;
    let scopes = match body["scope"].as_str() {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => http.oauth.scopes.clone(),
    };
    let token = Obtained {
        access_token: access_token.to_string(),
        token_type: body["token_type"].as_str().unwrap_or("bearer").to_string(),
        expires_in: body["expires_in"].as_u64(),
        scopes,
    };
    let client_id = http.oauth.client_id.clone().unwrap_or_default();
    save_token(server, http, store, &client_id, issuer, token)
}

/// RFC 6749 §2.3.1: client credentials in Basic are form-urlencoded first.
fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn credentials_config(oauth: &OAuthConfig, url: &str) -> Result<ClientCredentialsConfig, LoginError> {
    let missing =
        |what: &str| LoginError::Protocol { step: "client credentials", message: format!("`oauth.{what}` is not set") };
    let client_id = oauth.client_id.clone().ok_or_else(|| missing("client_id"))?;
    let scopes = oauth.scopes.clone();
    let resource = Some(url.to_string());
    if let Some(file) = &oauth.private_key_file {
        let signing_key = std::fs::read(file).map_err(|e| LoginError::Protocol {
            step: "client credentials",
            message: format!("reading `oauth.private_key_file` {}: {e}", file.display()),
        })?;
        let signing_algorithm = match oauth.signing_algorithm.as_deref().unwrap_or("ES256") {
            "ES384" => JwtSigningAlgorithm::ES384,
            "RS256" => JwtSigningAlgorithm::RS256,
            "RS384" => JwtSigningAlgorithm::RS384,
            "RS512" => JwtSigningAlgorithm::RS512,
            _ => JwtSigningAlgorithm::ES256,
        };
        return Ok(ClientCredentialsConfig::PrivateKeyJwt {
            client_id,
            signing_key,
            signing_algorithm,
            token_endpoint_audience: None,
            scopes,
            resource,
        });
    }
    let client_secret = oauth.client_secret.clone().ok_or_else(|| missing("client_secret"))?;
    Ok(ClientCredentialsConfig::ClientSecret { client_id, client_secret, scopes, resource })
}

/// The authorised HTTP client's manager for a connection: tokens from the store (refreshed
/// as they near expiry, saved when rotated), or for client credentials a fresh exchange when
/// there is no usable token. `None` when nothing is stored (the request then goes out
/// without a token and a 401 says the server needs a login).
pub(crate) async fn connection_manager(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
) -> Result<Option<AuthorizationManager>, LoginError> {
    let entry = store.entry(&http.url).unwrap_or_else(|e| {
        tracing::warn!(server, "the token store cannot be read: {e}");
        None
    });
    let has_tokens = entry.as_ref().is_some_and(|e| e.credentials.as_ref().is_some_and(|c| c.token_response.is_some()));
    let machine = http.oauth.grant == crate::config::OAuthGrant::ClientCredentials;
    // Grants with no refresh token: a token missing or expiring is obtained anew.
    let enterprise =
        matches!(http.oauth.grant, crate::config::OAuthGrant::Enterprise | crate::config::OAuthGrant::JwtBearer);
    if !has_tokens && !machine && !enterprise {
        return Ok(None);
    }
    if enterprise {
        // No refresh in this grant: a token that is missing or expiring is exchanged anew.
        let mut manager = manager(server, http, store).await?;
        manager.set_metadata(discover(&manager, http, None).await?);
        if !has_tokens || manager.get_access_token().await.is_err() {
            client_credentials(server, http, store).await?;
        }
        return Ok(Some(manager));
    }
    if machine {
        let mut manager = manager(server, http, store).await?;
        manager.set_metadata(discover(&manager, http, None).await?);
        let config = credentials_config(&http.oauth, &http.url)?;
        manager.configure_client_credentials(&config).map_err(protocol("client credentials"))?;
        if !has_tokens || manager.get_access_token().await.is_err() {
            client_credentials(server, http, store).await?;
        }
        return Ok(Some(manager));
    }
    let mut manager = manager(server, http, store).await?;
    manager.set_metadata(discover(&manager, http, None).await?);
    if !manager.initialize_from_store().await.map_err(protocol("loading the stored login"))? {
        return Ok(None);
    }
    // A confidential client needs its secret to refresh.
    let secret =
        http.oauth.client_secret.clone().or_else(|| entry.and_then(|e| e.client).and_then(|c| c.client_secret));
    if let Some(secret) = secret
        && let Ok(credentials) = manager.get_credentials().await
    {
        let (client_id, _) = credentials;
        let config = OAuthClientConfig::new(client_id, "http://127.0.0.1/oauth/callback").with_client_secret(secret);
        manager.configure_client(config).map_err(protocol("loading the stored login"))?;
    }
    Ok(Some(manager))
}

#[cfg(test)]
mod tests {
    use super::scope_union;

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

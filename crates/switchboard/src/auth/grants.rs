//! The grants that need no browser: client credentials (rmcp's exchange: the client's secret
//! or a JWT signed with its key), enterprise-managed authorization (SEP-990, rmcp's exchange),
//! and workload identity (RFC 7523 jwt-bearer, ours: rmcp has none). Each gets a token and
//! saves it to the store, where the connection reads it as any other.

use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};

use super::login::{LoginError, discover, dpop_for, dpop_manager, manager, offers_dpop, protocol};
use super::store::{TokenStore, now};
use crate::config::{HttpConfig, OAuthConfig};

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
            crate::config::OAuthGrant::TokenExchange => Err(LoginError::Protocol {
                step: "token exchange",
                message: "a token exchange is made for a caller signed in to a gateway, on their request".into(),
            }),
            _ => runtime.block_on(exchange_client_credentials(&server, &http, &store)),
        }
    };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| LoginError::Protocol { step: "client credentials", message: e.to_string() })?
}

async fn exchange_client_credentials(server: &str, http: &HttpConfig, store: &TokenStore) -> Result<(), LoginError> {
    let plain = manager(server, http, store).await?;
    let metadata = discover(&plain, http, None).await?;
    let mut manager = match dpop_for(server, http, store, offers_dpop(&metadata)).await? {
        Some(dpop) => dpop_manager(server, http, store, &dpop).await?,
        None => plain,
    };
    manager.set_metadata(metadata);
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
    save_token(server, http, store, client_id, issuer, token).await.map_err(|e| match e {
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
async fn save_token(
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
    store.update(&http.url, server, |e| e.credentials = Some(credentials)).await?;
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
    let grant = [("grant_type", JWT_BEARER), ("assertion", assertion.as_str())];
    extension_grant(step, "the workload's JWT", server, http, store, &grant).await
}

/// The grant type of RFC 8693.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Token exchange (RFC 8693): `subject` (the caller's own access token, of the organisation's
/// provider) is exchanged at the server's authorization server, as the configured client, for
/// an access token for the server (`resource`), which is stored as any other. `subject` goes
/// only to that token endpoint, never to the server.
pub(crate) async fn token_exchange(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    subject: &str,
) -> Result<(), LoginError> {
    let grant = [
        ("grant_type", TOKEN_EXCHANGE),
        ("subject_token", subject),
        ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
        ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
    ];
    extension_grant("token exchange", "the caller's token", server, http, store, &grant).await
}

/// An extension grant at the server's authorization server (its token endpoint, from
/// discovery): `grant`'s fields, the server's URL as `resource`, the configured scopes, the
/// configured client (HTTP Basic with a secret, else `client_id` in the form); the token it
/// gives is stored. A refusal is reported as the server said it (`what` was refused).
async fn extension_grant(
    step: &'static str,
    what: &str,
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    grant: &[(&str, &str)],
) -> Result<(), LoginError> {
    let fail = |message: String| LoginError::Protocol { step, message };
    let manager = manager(server, http, store).await?;
    let metadata = discover(&manager, http, None).await?;
    let issuer = metadata.issuer.clone().unwrap_or_else(|| metadata.token_endpoint.clone());
    let mut form: Vec<(&str, &str)> = grant.to_vec();
    form.push(("resource", &http.url));
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
        return Err(fail(format!("the authorization server refused {what}: {error}{said} (HTTP {status})")));
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
    save_token(server, http, store, &client_id, issuer, token).await
}

/// RFC 6749 §2.3.1: client credentials in Basic are form-urlencoded first.
fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub(super) fn credentials_config(oauth: &OAuthConfig, url: &str) -> Result<ClientCredentialsConfig, LoginError> {
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

//! The authorised HTTP client's manager for a connection: stored tokens (refreshed by rmcp as
//! they near expiry, saved when rotated), or for the grants without a browser a fresh exchange
//! when there is no usable token.

use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationManager, OAuthClientConfig};

use super::dpop::Dpop;
use super::grants::{client_credentials, credentials_config};
use super::http::OAuthHttp;
use super::login::{LoginError, bound_dpop, discover, dpop_for, manager, manager_with, offers_dpop, protocol};
use super::store::TokenStore;
use crate::config::HttpConfig;

/// What a connection authorises its requests with: the manager (tokens, refreshes) and, when
/// its tokens are DPoP-bound, the key its proofs are signed with.
pub(crate) struct Authorised {
    pub manager: AuthorizationManager,
    pub dpop: Option<Arc<Dpop>>,
    /// The manager's HTTP client, which tells whether the client was refused.
    pub oauth_http: Option<Arc<OAuthHttp>>,
}

/// The authorised HTTP client's manager for a connection: tokens from the store (refreshed
/// as they near expiry, saved when rotated), or for client credentials a fresh exchange when
/// there is no usable token. `None` when nothing is stored (the request then goes out
/// without a token and a 401 says the server needs a login).
pub(crate) async fn connection_manager(
    server: &str,
    http: &HttpConfig,
    store: &TokenStore,
    subject: Option<String>,
) -> Result<Option<Authorised>, LoginError> {
    let entry = store.entry(&http.url).await.unwrap_or_else(|e| {
        tracing::warn!(server, "the token store cannot be read: {e}");
        None
    });
    let has_tokens = entry.as_ref().is_some_and(|e| e.credentials.as_ref().is_some_and(|c| c.token_response.is_some()));
    let machine = http.oauth.grant == crate::config::OAuthGrant::ClientCredentials;
    // Grants with no refresh token: a token missing or expiring is obtained anew.
    let enterprise =
        matches!(http.oauth.grant, crate::config::OAuthGrant::Enterprise | crate::config::OAuthGrant::JwtBearer);
    if http.oauth.grant == crate::config::OAuthGrant::TokenExchange {
        // The caller's token, exchanged anew when the one kept for them is missing or expired.
        let mut manager = manager(server, http, store).await?;
        manager.set_metadata(discover(&manager, http, None).await?);
        if !has_tokens || manager.get_access_token().await.is_err() {
            let subject = subject.ok_or_else(|| LoginError::Protocol {
                step: "token exchange",
                message: "no caller's token to exchange: this server is used by people signed in to a gateway \
                          (`oauth.grant: token_exchange`)"
                    .into(),
            })?;
            super::grants::token_exchange(server, http, store, &subject).await?;
        }
        return Ok(Some(Authorised { manager, dpop: None, oauth_http: None }));
    }
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
        return Ok(Some(Authorised { manager, dpop: None, oauth_http: None }));
    }
    if machine {
        let plain = manager(server, http, store).await?;
        let metadata = discover(&plain, http, None).await?;
        let dpop = dpop_for(server, http, store, offers_dpop(&metadata)).await?;
        let (mut manager, oauth_http) = manager_with(server, http, store, dpop.clone()).await?;
        manager.set_metadata(metadata);
        let config = credentials_config(&http.oauth, &http.url)?;
        manager.configure_client_credentials(&config).map_err(protocol("client credentials"))?;
        if !has_tokens || manager.get_access_token().await.is_err() {
            client_credentials(server, http, store).await?;
        }
        // Bound only if the authorization server did bind the token it gave.
        let dpop = dpop.and(bound_dpop(store.entry(&http.url).await.ok().flatten().as_ref()));
        return Ok(Some(Authorised { manager, dpop, oauth_http: Some(oauth_http) }));
    }
    let dpop = bound_dpop(entry.as_ref());
    let (mut manager, oauth_http) = manager_with(server, http, store, dpop.clone()).await?;
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
    Ok(Some(Authorised { manager, dpop, oauth_http: Some(oauth_http) }))
}

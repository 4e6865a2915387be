//! What `switchboard auth --list` shows, and logging out: read from the token store, never a
//! token.

use serde::Serialize;

use super::store::{StoreError, TokenStore};

/// One stored login, as `switchboard auth --list` shows it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LoginInfo {
    /// The server URL the credentials were issued for.
    pub url: String,
    /// The configured servers with that URL (the name saved with the entry if none is).
    pub servers: Vec<String>,
    /// The client id.
    pub client_id: Option<String>,
    /// The authorisation server that issued them.
    pub issuer: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// When the access token expires (Unix seconds), if the server said.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is held.
    pub refreshable: bool,
    /// Whether tokens are held at all (a registered client may be kept without them).
    pub logged_in: bool,
}

/// Every stored login; `servers` are the configured (name, URL) pairs, to name each entry by
/// the servers that use it.
pub async fn list_logins(store: &TokenStore, servers: &[(String, String)]) -> Result<Vec<LoginInfo>, StoreError> {
    Ok(store
        .entries()
        .await?
        .into_iter()
        .map(|(url, entry)| {
            let mut names: Vec<String> = servers.iter().filter(|(_, u)| *u == url).map(|(n, _)| n.clone()).collect();
            if names.is_empty() {
                names.push(entry.server.clone());
            }
            // Read through JSON: the token response's fields without its secrets.
            let creds = entry.credentials.as_ref().and_then(|c| serde_json::to_value(c).ok()).unwrap_or_default();
            let token = &creds["token_response"];
            let received = creds["token_received_at"].as_u64();
            let expires_at = token["expires_in"].as_u64().zip(received).map(|(e, r)| r + e);
            let mut scopes: Vec<String> = creds["granted_scopes"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            if scopes.is_empty() {
                scopes = token["scope"]
                    .as_str()
                    .map(|s| s.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
            }
            LoginInfo {
                url,
                servers: names,
                client_id: entry.client.as_ref().map(|c| c.client_id.clone()),
                issuer: creds["issuer"].as_str().map(str::to_string),
                scopes,
                expires_at,
                refreshable: token["refresh_token"].is_string(),
                logged_in: token.is_object(),
            }
        })
        .collect())
}

/// Forgets the tokens stored for `url` (the registered client is kept, to be reused by the
/// next login). Returns whether there were any. On a team's store the other processes are
/// told ([`crate::store::signals::Signal::Logout`]): their running hubs forget the tokens they
/// hold.
pub async fn logout(store: &TokenStore, url: &str, server: &str) -> Result<bool, StoreError> {
    let had = store.entry(url).await?.is_some_and(|e| e.credentials.is_some());
    // The DPoP key goes with the tokens bound to it: the next login makes a new one.
    store
        .update(url, server, |e| {
            e.credentials = None;
            e.dpop_key = None;
        })
        .await?;
    store.tell_logout(server).await;
    Ok(had)
}

/// Forgets the client switchboard registered for the server at `url` (the next login
/// registers a new one). Returns whether one was kept.
pub async fn forget_client(store: &TokenStore, url: &str, server: &str) -> Result<bool, StoreError> {
    let had = store.entry(url).await?.is_some_and(|e| e.client.is_some());
    store.update(url, server, |e| e.client = None).await?;
    Ok(had)
}

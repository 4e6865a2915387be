//! Logging in to remote servers through the hub: the login flow for a configured server (its
//! URL, its `oauth` block, the challenge its last 401 carried), the reconnection that follows,
//! logout, and the list of stored logins (never a token).

use super::Hub;

/// Where a browser login comes back ([`Hub::login_comeback`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Comeback {
    /// `http://127.0.0.1:<port>/oauth/callback`, the loopback callback.
    Loopback {
        /// The port (`0`: any free one).
        port: u16,
        /// The config named the port, or the client is pre-registered (its redirect URI is
        /// then the loopback one it was registered with): every login, the dashboard's too,
        /// comes back there.
        chosen: bool,
    },
    /// A redirect URI registered with the authorization server (`oauth.redirect_uri`).
    Registered(String),
}
use crate::auth::{Login, LoginInfo, TokenStore};
use crate::config::{HttpConfig, OAuthGrant, TransportConfig};
use crate::error::Error;
use crate::status::ServerStatus;

impl Hub {
    /// The token store this hub uses (`<data>/auth.json`; a person's hub, theirs in
    /// `<data>/people/<key>/`).
    pub fn token_store(&self) -> TokenStore {
        self.inner.tokens.clone()
    }

    /// The team's store this hub keeps its state in ([`HubOptions::store`](crate::HubOptions)),
    /// if it has one.
    pub fn store(&self) -> Option<&crate::store::db::Database> {
        self.inner.options.store.as_ref()
    }

    fn http_config(&self, server: &str) -> Result<HttpConfig, Error> {
        let slot = self.inner.slot(server)?;
        let config = slot.config().ok_or_else(|| {
            let status = slot.state().status.clone();
            Error::NotConnected {
                server: server.into(),
                reason: format!("it cannot be started ({})", status.summary()),
                remedy: status.remedy(server),
                cause: None,
            }
        })?;
        match &config.transport {
            TransportConfig::Http(http) if http.bearer_token_env_var.is_some() => Err(Error::Auth {
                server: server.into(),
                message: "it uses a static token (`bearer_token_env_var`), not OAuth".into(),
                cause: None,
            }),
            TransportConfig::Http(http) => Ok(http.clone()),
            _ => Err(Error::Auth {
                server: server.into(),
                message: "a local (stdio) server has no login".into(),
                cause: None,
            }),
        }
    }

    /// Whether a server logs in without a browser (`oauth.grant: client_credentials` or
    /// `enterprise`): then [`Hub::login_without_browser`], else [`Hub::begin_login`].
    pub fn logs_in_without_browser(&self, server: &str) -> Result<bool, Error> {
        Ok(self.http_config(server)?.oauth.grant != OAuthGrant::AuthorizationCode)
    }

    /// Where a browser login of `server` comes back, as its `oauth` block says: a redirect URI
    /// registered with the authorization server, else the loopback callback on
    /// `oauth.callback_port` (for a host with an address of its own, such as `serve`, only when
    /// the port was chosen or the client is pre-registered: see [`Comeback`]).
    pub fn login_comeback(&self, server: &str) -> Result<Comeback, Error> {
        let oauth = self.http_config(server)?.oauth;
        Ok(match oauth.redirect_uri {
            Some(uri) => Comeback::Registered(uri),
            None => Comeback::Loopback {
                port: oauth.callback_port,
                chosen: oauth.callback_port_configured || oauth.client_id.is_some(),
            },
        })
    }

    /// Starts a browser login for a server; the browser must come back to `redirect_uri`
    /// (a [`Callback`](crate::auth::Callback)'s, or this process's own HTTP route). Discovery
    /// starts from the challenge of the server's last 401, when there was one.
    pub async fn begin_login(&self, server: &str, redirect_uri: &str) -> Result<Login, Error> {
        // The last refusal a request met (a 403 naming the scope a tool needs), else the 401
        // that failed the start-up.
        let refused = self.inner.slot(server)?.state().auth_challenge.clone();
        let http = self.http_config(server)?;
        let remembered = self.token_store().entry(&http.url).await.ok().flatten().and_then(|e| e.challenge);
        let challenge = refused.or(remembered).or_else(|| match self.status(server) {
            Some(ServerStatus::Failed { auth_challenge, .. }) => auth_challenge,
            _ => None,
        });
        self.begin_login_with(server, redirect_uri, challenge.as_deref()).await
    }

    /// [`Hub::begin_login`] from a given challenge: a 403 `insufficient_scope` a call met
    /// ([`Error::AuthRequired`]) asks for a login with the scopes it names (step-up).
    pub async fn begin_login_with(
        &self,
        server: &str,
        redirect_uri: &str,
        challenge: Option<&str>,
    ) -> Result<Login, Error> {
        let http = self.http_config(server)?;
        crate::auth::begin(server, &http, &self.token_store(), redirect_uri, challenge)
            .await
            .map_err(|e| Error::auth(server, e))
    }

    /// Finishes a login with the URL the browser came back to, then reconnects the server
    /// with the new tokens. Returns its status afterwards.
    pub async fn finish_login(&self, login: Login, callback_url: &str) -> Result<ServerStatus, Error> {
        let server = login.server().to_string();
        login.complete(callback_url).await.map_err(|e| match e {
            crate::auth::LoginError::ClientRefused => Error::ClientRefused { server: server.clone() },
            e => Error::auth(&server, e),
        })?;
        self.reconnect_status(&server).await
    }

    /// Gets a token with a grant that needs no browser (client credentials, enterprise), then
    /// reconnects.
    pub async fn login_without_browser(&self, server: &str) -> Result<ServerStatus, Error> {
        let http = self.http_config(server)?;
        crate::auth::client_credentials(server, &http, &self.token_store())
            .await
            .map_err(|e| Error::auth(server, e))?;
        self.reconnect_status(server).await
    }

    /// Forgets a server's tokens (the registered client is kept for the next login) and
    /// reconnects it, which then asks for a login again. Returns whether tokens were held.
    pub async fn logout(&self, server: &str) -> Result<bool, Error> {
        let http = self.http_config(server)?;
        let had =
            crate::auth::logout(&self.token_store(), &http.url, server).await.map_err(|e| Error::auth(server, e))?;
        self.reconnect_status(server).await?;
        Ok(had)
    }

    /// Every stored login, with the configured servers that use each.
    pub async fn logins(&self) -> Result<Vec<LoginInfo>, Error> {
        let servers: Vec<(String, String)> = self
            .inner
            .all_slots()
            .iter()
            .filter_map(|s| match &s.config()?.transport {
                TransportConfig::Http(h) => Some((s.name.clone(), h.url.clone())),
                _ => None,
            })
            .collect();
        crate::auth::list_logins(&self.token_store(), &servers).await.map_err(|e| Error::auth("", e))
    }

    /// Keeps a scope refusal (403 `insufficient_scope`) a request met, for the next login,
    /// which may run in another process (`switchboard auth` after a failed `switchboard call`).
    pub(crate) async fn remember_refusal(&self, server: &str, challenge: &str) {
        let Ok(http) = self.http_config(server) else { return };
        let saved = self
            .token_store()
            .update(&http.url, server, |e| {
                if e.credentials.is_some() {
                    e.challenge = Some(challenge.to_string());
                }
            })
            .await;
        if let Err(e) = saved {
            tracing::warn!(server, "could not keep the scope the server asked for: {e}");
        }
    }

    /// Reconnects a server after its tokens changed; its status afterwards says how it went.
    async fn reconnect_status(&self, server: &str) -> Result<ServerStatus, Error> {
        let _ = self.reconnect(server).await;
        self.status(server).ok_or_else(|| Error::unknown_server(server, []))
    }
}

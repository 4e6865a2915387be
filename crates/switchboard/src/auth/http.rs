//! The HTTP client of every OAuth flow (rmcp's `OAuthHttpClient` hook), in place of rmcp's
//! own, for what a host needs to see or add: the registration answer (rmcp keeps only the
//! client id and secret; `client_secret_expires_at` is kept here, so an expired client is
//! registered again), and DPoP proofs on token requests when the server's tokens are bound
//! (`super::dpop`). It refuses the addresses rmcp's client refuses: a URL discovered from a
//! server's metadata may lead to a public address, or to a loopback or private one only when
//! the MCP server itself is on one (`localhost`, a loopback or private literal); link-local
//! (cloud metadata), unspecified, multicast and reserved addresses never.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::HeaderValue;
use rmcp::transport::auth::{OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest};

use super::dpop::{DPOP, DPOP_NONCE, Dpop};

/// The largest OAuth answer read (rmcp's bound).
const MAX_BODY: usize = 1024 * 1024;

/// Whether the addresses a discovered URL leads to may be reached.
#[derive(Debug, Clone, Copy)]
struct AddressPolicy {
    /// The MCP server itself is on a loopback or private address (or `localhost`): its
    /// authorization server may be too.
    private_ok: bool,
}

impl AddressPolicy {
    fn for_server(url: &str) -> AddressPolicy {
        let host = reqwest::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let private_ok = host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| matches!(class(ip), Class::Loopback | Class::Private));
        AddressPolicy { private_ok }
    }

    fn allows(self, ip: IpAddr) -> bool {
        match class(ip) {
            Class::Public => true,
            Class::Loopback | Class::Private => self.private_ok,
            Class::Blocked => false,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Class {
    Public,
    Loopback,
    Private,
    Blocked,
}

fn class(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() || o[0] >= 240 {
                Class::Blocked
            } else if v4.is_loopback() {
                Class::Loopback
            } else if v4.is_private() || (o[0] == 100 && (64..=127).contains(&o[1])) {
                Class::Private
            } else {
                Class::Public
            }
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => class(IpAddr::V4(v4)),
            None if v6.is_loopback() => Class::Loopback,
            None if v6.is_unspecified() || v6.is_multicast() || (v6.segments()[0] & 0xffc0) == 0xfe80 => Class::Blocked,
            None if (v6.segments()[0] & 0xfe00) == 0xfc00 => Class::Private,
            None => Class::Public,
        },
    }
}

/// Resolves names, keeping only the addresses the policy allows.
struct GuardedResolver(AddressPolicy);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<std::net::SocketAddr> = found.into_iter().filter(|a| policy.allows(a.ip())).collect();
            if allowed.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> =
                    format!("`{host}` resolves only to addresses an OAuth request may not reach").into();
                return Err(e);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Where a registered client is forgotten when the authorization server refuses it.
#[derive(Debug, Clone)]
pub struct Forget {
    /// The store.
    pub store: super::TokenStore,
    /// The server's URL (its entry).
    pub url: String,
    /// The server's name.
    pub server: String,
}

/// The OAuth HTTP client of one server.
pub struct OAuthHttp {
    dpop: Option<Arc<Dpop>>,
    /// A client switchboard registered (not one configured) is forgotten when a token request
    /// is answered `invalid_client`: the next login registers a new one.
    forget: Option<Forget>,
    /// A token request was answered `invalid_client`.
    refused: std::sync::atomic::AtomicBool,
    /// The last client registration's answer.
    registered: Mutex<Option<serde_json::Value>>,
    policy: AddressPolicy,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl std::fmt::Debug for OAuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHttp").field("dpop", &self.dpop).finish_non_exhaustive()
    }
}

impl OAuthHttp {
    /// For the server at `server_url`; token requests signed with `dpop` when given; a
    /// registered client refused forgotten in `forget`'s entry.
    pub fn new(dpop: Option<Arc<Dpop>>, server_url: &str, forget: Option<Forget>) -> Result<OAuthHttp, reqwest::Error> {
        let policy = AddressPolicy::for_server(server_url);
        let build = |redirect: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .redirect(redirect)
                .dns_resolver(Arc::new(GuardedResolver(policy)))
                .build()
        };
        let limited = reqwest::redirect::Policy::custom(move |attempt| {
            let literal_ok = attempt.url().host_str().and_then(|h| h.trim_matches(['[', ']']).parse::<IpAddr>().ok());
            if literal_ok.is_some_and(|ip| !policy.allows(ip)) {
                attempt.error("a redirect to an address an OAuth request may not reach")
            } else if attempt.previous().len() > 10 {
                attempt.error("more than 10 redirects")
            } else {
                attempt.follow()
            }
        });
        Ok(OAuthHttp {
            dpop,
            forget,
            refused: std::sync::atomic::AtomicBool::new(false),
            registered: Mutex::new(None),
            policy,
            follow: build(limited)?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }

    /// Whether a token request was answered `invalid_client` (the client is unknown to the
    /// authorization server, or its secret expired).
    pub fn client_refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// When the secret of the client registered last through this client expires (Unix
    /// seconds; RFC 7591 `client_secret_expires_at`, 0 or absent: never).
    pub fn registered_expiry(&self) -> Option<u64> {
        let answer = self.registered.lock().unwrap_or_else(PoisonError::into_inner);
        answer.as_ref()?.get("client_secret_expires_at")?.as_u64().filter(|t| *t > 0)
    }

    async fn send(&self, request: OAuthHttpRequest) -> Result<oauth2::HttpResponse, OAuthHttpClientError> {
        let stop = matches!(request.redirect_policy, rmcp::transport::auth::OAuthHttpRedirectPolicy::Stop);
        let timeout = request.timeout;
        let post = request.request.method() == oauth2::http::Method::POST;
        let body = std::str::from_utf8(request.request.body()).unwrap_or_default();
        let token_request = post && body.contains("grant_type=");
        // RFC 7591: a registration sends the client's metadata, redirect URIs among it.
        let registration =
            post && serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| v.get("redirect_uris").is_some());
        let mut request = reqwest::Request::try_from(request.request)?;
        if let Some(ip) = request.url().host_str().and_then(|h| h.trim_matches(['[', ']']).parse::<IpAddr>().ok())
            && !self.policy.allows(ip)
        {
            return Err(format!("OAuth request to {} refused: an address it may not reach", request.url()).into());
        }
        if let Some(t) = timeout {
            *request.timeout_mut() = Some(t);
        }
        let client = if stop { &self.stop } else { &self.follow };
        let url = request.url().to_string();
        for attempt in 0..2 {
            let mut this = request.try_clone().ok_or("an OAuth request whose body cannot be sent twice")?;
            let dpop = self.dpop.as_ref().filter(|_| token_request);
            if let Some(dpop) = dpop {
                let nonce = Dpop::nonce(&dpop.as_nonce);
                let proof = dpop.key().proof("POST", &url, None, nonce.as_deref())?;
                this.headers_mut().insert(DPOP, HeaderValue::from_str(&proof)?);
            }
            let response = client.execute(this).await?;
            if let Some(dpop) = dpop {
                Dpop::set_nonce(&dpop.as_nonce, response.headers().get(DPOP_NONCE));
            }
            let (status, version, headers) = (response.status(), response.version(), response.headers().clone());
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(format!("an OAuth answer over {MAX_BODY} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            let asks_nonce = status == reqwest::StatusCode::BAD_REQUEST
                && headers.contains_key(DPOP_NONCE)
                && serde_json::from_slice::<serde_json::Value>(&body)
                    .is_ok_and(|v| v["error"].as_str() == Some("use_dpop_nonce"));
            let refused = token_request
                && matches!(status.as_u16(), 400 | 401)
                && serde_json::from_slice::<serde_json::Value>(&body)
                    .is_ok_and(|v| v["error"].as_str() == Some("invalid_client"));
            if refused {
                self.client_refused_now().await;
            }
            if registration && status.is_success() {
                *self.registered.lock().unwrap_or_else(PoisonError::into_inner) = serde_json::from_slice(&body).ok();
            }
            if dpop.is_some() && asks_nonce && attempt == 0 {
                tracing::debug!("the authorization server asks for a DPoP nonce: the token request is sent again");
                continue;
            }
            let mut builder = oauth2::http::Response::builder().status(status).version(version);
            for (name, value) in &headers {
                builder = builder.header(name, value);
            }
            return Ok(builder.body(body)?);
        }
        Err("the authorization server asked for a DPoP nonce twice".into())
    }
}

impl OAuthHttp {
    async fn client_refused_now(&self) {
        self.refused.store(true, std::sync::atomic::Ordering::Relaxed);
        let Some(f) = &self.forget else { return };
        tracing::warn!(
            server = %f.server,
            "the authorization server refused the client switchboard registered (invalid_client): it is forgotten, \
             and the next login registers a new one"
        );
        if let Err(e) = f.store.update(&f.url, &f.server, |e| e.client = None).await {
            tracing::warn!(server = %f.server, "forgetting the refused client: {e}");
        }
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(self.send(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_requests_reach_only_the_addresses_allowed() {
        let public = AddressPolicy::for_server("https://mcp.example.com/mcp");
        let local = AddressPolicy::for_server("http://localhost:3000/mcp");
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert!(public.allows(ip("93.184.216.34")));
        assert!(!public.allows(ip("127.0.0.1")) && !public.allows(ip("10.0.0.1")));
        assert!(local.allows(ip("127.0.0.1")) && local.allows(ip("192.168.1.2")));
        for blocked in ["169.254.169.254", "::ffff:169.254.169.254", "0.0.0.0", "fe80::1", "224.0.0.1"] {
            assert!(!local.allows(ip(blocked)) && !public.allows(ip(blocked)), "{blocked}");
        }
    }
}

//! DPoP (RFC 9449; MCP SEP-1932): access tokens bound to a key only this host holds, so a
//! stolen token is useless without it. rmcp has none of it (its authorised client always sends
//! `Bearer`), so this module is ours:
//!
//! - [`DpopKey`]: one P-256 key pair per server URL, made at the first DPoP login and kept with
//!   the tokens (`auth.json`, 0600, written atomically); its proofs are ES256 JWTs (`typ:
//!   dpop+jwt`, the public key as `jwk`, a fresh `jti`, `htm`, `htu` without query or
//!   fragment, `iat`, `ath` for a token, `nonce` when a server asked for one).
//! - [`OAuthClient`]: every HTTP request of the OAuth flow for such a server, with a proof on
//!   each token request (code exchange, refresh, client credentials) and one retry with the
//!   authorization server's nonce on `use_dpop_nonce` (§8). rmcp's own client refuses
//!   addresses a discovered URL must not reach; this one applies the same rule.
//! - [`DpopLayer`]: under rmcp's authorised client, turns its bearer token into
//!   `Authorization: DPoP <token>` and a fresh proof on every MCP request, and answers the
//!   resource server's `use_dpop_nonce` (§9) once. rmcp hides response headers, so the nonce
//!   is learnt with a `ping` (no side effects) and the request is sent again with it.
//!
//! Used when the authorization server lists ES256 in `dpop_signing_alg_values_supported`
//! (`oauth.dpop: "auto"`, the default), always (`true`) or never (`false`); a connection uses
//! it when its stored token is DPoP-bound.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use futures::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::auth::{OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest};
use sha2::{Digest, Sha256};

mod layer;

pub use layer::DpopLayer;

/// What went wrong with a key or a proof.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// The stored key does not load (not a P-256 PKCS#8 key).
    #[error("the stored DPoP key of this server cannot be used ({0}): `switchboard logout` and log in again")]
    BadKey(String),
    /// The system's random source or the signer failed.
    #[error("making a DPoP proof failed: {0}")]
    Crypto(String),
}

/// A server's DPoP key pair.
pub struct DpopKey {
    pair: EcdsaKeyPair,
    /// The public key as a JWK, members in RFC 7638 order.
    jwk: String,
    thumbprint: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").field("thumbprint", &self.thumbprint).finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key, and its PKCS#8 form (base64url) to store.
    pub fn generate() -> Result<(DpopKey, String), DpopError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| DpopError::Crypto(format!("generating a key: {e}")))?;
        let stored = B64.encode(pkcs8.as_ref());
        Ok((DpopKey::from_stored(&stored)?, stored))
    }

    /// The key stored as base64url PKCS#8.
    pub fn from_stored(stored: &str) -> Result<DpopKey, DpopError> {
        let der = B64.decode(stored.trim()).map_err(|e| DpopError::BadKey(e.to_string()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
            .map_err(|e| DpopError::BadKey(e.to_string()))?;
        let point = pair.public_key().as_ref();
        // Uncompressed: 0x04, then X and Y of 32 bytes each.
        if point.len() != 65 || point[0] != 4 {
            return Err(DpopError::BadKey("not an uncompressed P-256 point".into()));
        }
        let (x, y) = (B64.encode(&point[1..33]), B64.encode(&point[33..]));
        let jwk = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = B64.encode(Sha256::digest(jwk.as_bytes()));
        Ok(DpopKey { pair, jwk, thumbprint })
    }

    /// The JWK thumbprint (RFC 7638) a bound token's `cnf.jkt` names.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for one request: `method` on `url` (its query and fragment left out), for
    /// `access_token` (`ath`) if any, with the server's `nonce` if it gave one.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, DpopError> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut jti = [0u8; 16];
        aws_lc_rs::rand::fill(&mut jti).map_err(|e| DpopError::Crypto(e.to_string()))?;
        let iat = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let header = format!(r#"{{"typ":"dpop+jwt","alg":"ES256","jwk":{}}}"#, self.jwk);
        let mut claims = serde_json::json!({"jti": B64.encode(jti), "htm": method, "htu": htu, "iat": iat});
        if let Some(token) = access_token {
            claims["ath"] = serde_json::json!(B64.encode(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = serde_json::json!(nonce);
        }
        let signing_input = format!("{}.{}", B64.encode(header.as_bytes()), B64.encode(claims.to_string().as_bytes()));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|e| DpopError::Crypto(e.to_string()))?;
        Ok(format!("{signing_input}.{}", B64.encode(signature.as_ref())))
    }
}

/// A server's key and the nonces its servers gave.
#[derive(Debug)]
pub struct Dpop {
    key: DpopKey,
    /// The authorization server's last nonce (§8).
    as_nonce: Mutex<Option<String>>,
    /// The resource (MCP) server's last nonce (§9).
    pub(super) rs_nonce: Mutex<Option<String>>,
}

impl Dpop {
    /// For `key`, no nonce known yet.
    pub fn new(key: DpopKey) -> Arc<Dpop> {
        Arc::new(Dpop { key, as_nonce: Mutex::new(None), rs_nonce: Mutex::new(None) })
    }

    /// The key.
    pub fn key(&self) -> &DpopKey {
        &self.key
    }

    pub(super) fn nonce(slot: &Mutex<Option<String>>) -> Option<String> {
        slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(super) fn set_nonce(slot: &Mutex<Option<String>>, value: Option<&HeaderValue>) {
        if let Some(v) = value.and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty() && v.len() <= 1024) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(v.to_string());
        }
    }
}

pub(super) const DPOP: HeaderName = HeaderName::from_static("dpop");
pub(super) const DPOP_NONCE: &str = "dpop-nonce";
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

/// The OAuth HTTP client of a DPoP server.
pub struct OAuthClient {
    dpop: Arc<Dpop>,
    policy: AddressPolicy,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient").field("dpop", &self.dpop).finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// For the server at `server_url`, signing with `dpop`.
    pub fn new(dpop: Arc<Dpop>, server_url: &str) -> Result<OAuthClient, reqwest::Error> {
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
        Ok(OAuthClient { dpop, policy, follow: build(limited)?, stop: build(reqwest::redirect::Policy::none())? })
    }

    async fn send(&self, request: OAuthHttpRequest) -> Result<oauth2::HttpResponse, OAuthHttpClientError> {
        let stop = matches!(request.redirect_policy, rmcp::transport::auth::OAuthHttpRedirectPolicy::Stop);
        let timeout = request.timeout;
        let token_request = request.request.method() == oauth2::http::Method::POST
            && std::str::from_utf8(request.request.body()).is_ok_and(|b| b.contains("grant_type="));
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
            if token_request {
                let nonce = Dpop::nonce(&self.dpop.as_nonce);
                let proof = self.dpop.key.proof("POST", &url, None, nonce.as_deref())?;
                this.headers_mut().insert(DPOP, HeaderValue::from_str(&proof)?);
            }
            let response = client.execute(this).await?;
            Dpop::set_nonce(&self.dpop.as_nonce, response.headers().get(DPOP_NONCE));
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
            if token_request && asks_nonce && attempt == 0 {
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

impl OAuthHttpClient for OAuthClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(self.send(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(jwt: &str, i: usize) -> serde_json::Value {
        let segment = jwt.split('.').nth(i).unwrap_or_default();
        serde_json::from_slice(&B64.decode(segment).unwrap_or_default()).unwrap_or_default()
    }

    #[test]
    fn a_proof_has_the_claims_rfc_9449_asks_for_and_verifies_with_its_own_key() {
        let Ok((key, stored)) = DpopKey::generate() else { panic!("no key") };
        let again = DpopKey::from_stored(&stored).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key.thumbprint(), again.thumbprint(), "the stored key is the same key");
        let proof = key.proof("POST", "https://mcp.example/mcp?x=1#f", Some("tok"), Some("n1")).unwrap_or_default();
        let (header, claims) = (part(&proof, 0), part(&proof, 1));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp", "no query, no fragment");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(claims["ath"], B64.encode(Sha256::digest(b"tok")));
        let other = key.proof("POST", "https://mcp.example/mcp", None, None).unwrap_or_default();
        assert_ne!(part(&other, 1)["jti"], claims["jti"], "a fresh jti each time");
        assert!(part(&other, 1).get("ath").is_none() && part(&other, 1).get("nonce").is_none());
        // The signature checks out with the public key in the header.
        let jwk = &header["jwk"];
        let mut point = vec![4u8];
        for c in ["x", "y"] {
            point.extend(B64.decode(jwk[c].as_str().unwrap_or_default()).unwrap_or_default());
        }
        let public =
            aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED, point);
        let (input, signature) = proof.rsplit_once('.').unwrap_or_default();
        assert!(public.verify(input.as_bytes(), &B64.decode(signature).unwrap_or_default()).is_ok());
        // RFC 7638: the thumbprint is of the required members in order.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#, jwk["x"], jwk["y"]);
        assert_eq!(key.thumbprint(), B64.encode(Sha256::digest(canonical.as_bytes())));
        assert!(DpopKey::from_stored("not a key").is_err());
    }

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

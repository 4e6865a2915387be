//! The issuers' signing keys: found through their metadata (OpenID discovery, then RFC 8414),
//! fetched from their `jwks_uri`, cached, and fetched again when a token names a key not held
//! (at most once per [`REFETCH`] per issuer; one fetch at a time per issuer, the others wait
//! for its answer).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{JwkSet, PublicKeyUse};
use serde_json::Value;

use super::{IdentityError, Issuer};

/// The shortest time between two fetches of an issuer's keys for an unknown key id (a stream
/// of tokens with made-up ids must not become a stream of requests to the issuer).
pub(super) const REFETCH: Duration = Duration::from_secs(30);

/// How long a fetch of metadata or keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(super) struct KeySets {
    http: reqwest::Client,
    /// The shortest time between two fetches for an unknown key ([`REFETCH`]).
    pub(super) refetch: Duration,
    sets: HashMap<String, tokio::sync::Mutex<KeySet>>,
}

#[derive(Default)]
struct KeySet {
    /// Where the keys are (configured, or found in the metadata once).
    jwks_uri: Option<String>,
    keys: Vec<(Option<String>, DecodingKey)>,
    fetched: Option<Instant>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet").field("jwks_uri", &self.jwks_uri).field("keys", &self.keys.len()).finish()
    }
}

impl KeySets {
    /// The HTTP client the issuers are asked with.
    pub(super) fn http(&self) -> reqwest::Client {
        self.http.clone()
    }

    pub(super) fn new(issuers: &[Issuer], http: reqwest::Client) -> KeySets {
        let sets = issuers
            .iter()
            .map(|i| {
                let set = KeySet { jwks_uri: i.jwks_uri.clone(), ..KeySet::default() };
                (i.issuer.clone(), tokio::sync::Mutex::new(set))
            })
            .collect();
        KeySets { http, refetch: REFETCH, sets }
    }

    /// The key `issuer` signs with under `kid` (or its only key, when the token names none).
    pub(super) async fn key(&self, issuer: &str, kid: Option<&str>) -> Result<DecodingKey, IdentityError> {
        let Some(set) = self.sets.get(issuer) else {
            return Err(IdentityError::UnknownIssuer(issuer.to_string()));
        };
        let mut set = set.lock().await;
        if let Some(key) = set.find(kid) {
            return Ok(key);
        }
        if set.fetched.is_none_or(|at| at.elapsed() >= self.refetch) {
            let (uri, keys) = self.fetch(issuer, set.jwks_uri.clone()).await?;
            tracing::debug!(issuer, keys = keys.len(), "fetched the issuer's keys from {uri}");
            set.jwks_uri = Some(uri);
            set.keys = keys;
            set.fetched = Some(Instant::now());
            if let Some(key) = set.find(kid) {
                return Ok(key);
            }
        }
        Err(IdentityError::UnknownKey { issuer: issuer.to_string(), kid: kid.map(str::to_string) })
    }

    /// The keys at `jwks_uri`, found from the issuer's metadata when not given.
    async fn fetch(
        &self,
        issuer: &str,
        jwks_uri: Option<String>,
    ) -> Result<(String, Vec<(Option<String>, DecodingKey)>), IdentityError> {
        let failed = |message: String| IdentityError::Provider { issuer: issuer.to_string(), message };
        let uri = match jwks_uri {
            Some(uri) => uri,
            None => self.discover(issuer).await.map_err(failed)?,
        };
        let set: JwkSet = self
            .get_json(&uri)
            .await
            .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
            .map_err(failed)?;
        let keys = set
            .keys
            .iter()
            .filter(|k| !matches!(k.common.public_key_use, Some(PublicKeyUse::Encryption)))
            .filter_map(|k| DecodingKey::from_jwk(k).ok().map(|d| (k.common.key_id.clone(), d)))
            .collect();
        Ok((uri, keys))
    }

    /// The issuer's `jwks_uri`, from its metadata ([`KeySets::metadata`]).
    async fn discover(&self, issuer: &str) -> Result<String, String> {
        let (candidate, doc) = self.metadata(issuer).await?;
        doc.get("jwks_uri")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{candidate} names no jwks_uri"))
    }

    /// The issuer's metadata: its OpenID configuration, else its RFC 8414 metadata (where it
    /// was found, and the document); the document must name the issuer exactly (RFC 8414
    /// §3.3).
    pub(super) async fn metadata(&self, issuer: &str) -> Result<(String, Value), String> {
        let trimmed = issuer.trim_end_matches('/');
        let url = reqwest::Url::parse(issuer).map_err(|e| format!("`{issuer}` is not a URL: {e}"))?;
        let origin = url.origin().ascii_serialization();
        let path = url.path().trim_end_matches('/');
        let candidates = [
            format!("{trimmed}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut failures = Vec::new();
        for candidate in candidates {
            match self.get_json(&candidate).await {
                Ok(doc) if doc.get("issuer").and_then(Value::as_str) == Some(issuer) => return Ok((candidate, doc)),
                Ok(doc) => failures.push(format!(
                    "{candidate} is for issuer {}",
                    doc.get("issuer").map(Value::to_string).unwrap_or_else(|| "none".into())
                )),
                Err(e) => failures.push(e),
            }
        }
        Err(failures.join("; "))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        check_url(url)?;
        let response = self
            .http
            .get(url)
            .header("accept", "application/json")
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        response.json::<Value>().await.map_err(|e| format!("{url}: not JSON: {e}"))
    }
}

impl KeySet {
    fn find(&self, kid: Option<&str>) -> Option<DecodingKey> {
        match kid {
            Some(kid) => self.keys.iter().find(|(k, _)| k.as_deref() == Some(kid)).map(|(_, key)| key.clone()),
            // A token that names no key: the issuer's only key, if it has just one.
            None => match self.keys.as_slice() {
                [(_, key)] => Some(key.clone()),
                _ => None,
            },
        }
    }
}

/// Keys come over HTTPS, or from this machine.
pub(super) fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let host = parsed.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(format!("`{url}`: keys are fetched over https (or http on this machine only)"))
    }
}

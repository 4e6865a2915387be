//! Opaque access tokens: an issuer that hands out tokens that are not JWTs is asked whether one
//! is active (RFC 7662 token introspection), as the client the config names (HTTP Basic). An
//! answer is kept for [`KEEP`] (never past the token's `exp`), under the token's SHA-256, so a
//! session's requests do not each cost a round trip; a revoked token thus works at most that
//! long.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{IdentityError, Issuer, SKEW};

/// How long an introspection answer is kept.
pub(super) const KEEP: Duration = Duration::from_secs(30);

/// The most answers kept (past it, expired ones are dropped, then all).
const MAX_KEPT: usize = 10_000;

#[derive(Debug)]
pub(super) struct Answers {
    http: reqwest::Client,
    kept: Mutex<HashMap<[u8; 32], (Instant, Value)>>,
}

impl Answers {
    pub(super) fn new(http: reqwest::Client) -> Answers {
        Answers { http, kept: Mutex::default() }
    }

    /// The claims of `token` as `issuer`'s introspection endpoint says them, when it is active.
    pub(super) async fn claims(&self, issuer: &Issuer, token: &str) -> Result<Value, IdentityError> {
        let Some(spec) = &issuer.introspection else {
            return Err(IdentityError::Malformed("not a JWT, and no issuer checks opaque tokens".into()));
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((until, claims)) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
            && Instant::now() < *until
        {
            return Ok(claims.clone());
        }
        let failed = |message: String| IdentityError::Provider { issuer: issuer.issuer.clone(), message };
        super::keys::check_url(&spec.url).map_err(failed)?;
        let response = self
            .http
            .post(&spec.url)
            .basic_auth(&spec.client_id, Some(&spec.client_secret))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| failed(format!("{}: {e}", spec.url)))?;
        if !response.status().is_success() {
            return Err(failed(format!("{}: HTTP {}", spec.url, response.status())));
        }
        let claims: Value = response.json().await.map_err(|e| failed(format!("{}: not JSON: {e}", spec.url)))?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(IdentityError::Invalid("the issuer says the token is not active".into()));
        }
        if let Some(iss) = claims.get("iss").and_then(Value::as_str)
            && iss != issuer.issuer
        {
            return Err(IdentityError::UnknownIssuer(crate::text::excerpt(iss, 200)));
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let exp = claims.get("exp").and_then(Value::as_u64);
        if exp.is_some_and(|exp| exp + SKEW.as_secs() < now) {
            return Err(IdentityError::Expired);
        }
        if claims.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now + SKEW.as_secs()) {
            return Err(IdentityError::NotYetValid);
        }
        let left = exp.map_or(KEEP, |exp| Duration::from_secs(exp.saturating_sub(now)).min(KEEP));
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_KEPT {
            let at = Instant::now();
            kept.retain(|_, (until, _)| *until > at);
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
        }
        kept.insert(key, (Instant::now() + left, claims.clone()));
        Ok(claims)
    }
}

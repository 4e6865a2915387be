//! DPoP (RFC 9449; MCP SEP-1932): access tokens bound to a key only this host holds, so a
//! stolen token is useless without it. rmcp has none of it (its authorised client always sends
//! `Bearer`), so this module is ours:
//!
//! - [`DpopKey`]: one P-256 key pair per server URL, made at the first DPoP login and kept with
//!   the tokens (`auth.json`, 0600, written atomically); its proofs are ES256 JWTs (`typ:
//!   dpop+jwt`, the public key as `jwk`, a fresh `jti`, `htm`, `htu` without query or
//!   fragment, `iat`, `ath` for a token, `nonce` when a server asked for one).
//! - `super::http::OAuthHttp` (the OAuth flow's HTTP client) puts a proof on each token
//!   request (code exchange, refresh, client credentials) and answers the authorization
//!   server's `use_dpop_nonce` (§8) once.
//! - [`DpopLayer`]: under rmcp's authorised client, turns its bearer token into
//!   `Authorization: DPoP <token>` and a fresh proof on every MCP request, and answers the
//!   resource server's `use_dpop_nonce` (§9) once. rmcp hides response headers, so the nonce
//!   is learnt with a `ping` (no side effects) and the request is sent again with it.
//!
//! Used when the authorization server lists ES256 in `dpop_signing_alg_values_supported`
//! (`oauth.dpop: "auto"`, the default), always (`true`) or never (`false`); a connection uses
//! it when its stored token is DPoP-bound.

use std::sync::{Arc, Mutex, PoisonError};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use reqwest::header::{HeaderName, HeaderValue};
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
    pub(crate) as_nonce: Mutex<Option<String>>,
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

    pub(crate) fn nonce(slot: &Mutex<Option<String>>) -> Option<String> {
        slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_nonce(slot: &Mutex<Option<String>>, value: Option<&HeaderValue>) {
        if let Some(v) = value.and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty() && v.len() <= 1024) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(v.to_string());
        }
    }
}

pub(crate) const DPOP: HeaderName = HeaderName::from_static("dpop");
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";

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
}

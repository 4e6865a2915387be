//! Who is calling: a gateway or `serve` that is an OAuth 2.1 protected resource (RFC 9728).
//! Clients sign in against the organisation's authorization server themselves and bring an
//! access token; [`Verifier::verify`] checks it and says whose it is ([`Principal`]): a JWT's
//! signature against its issuer's keys (JWKS, discovered from the issuer's metadata, cached,
//! fetched again when a token names a key it does not hold), `iss`, `aud` (the resource's own
//! URL, RFC 8707), `exp` and `nbf` with a minute's skew, the scopes the config requires.
//! Symmetric algorithms and `none` are never accepted. [`Verifier::metadata`] is the
//! protected resource metadata document, [`Verifier::challenge`] the `WWW-Authenticate`
//! header of a refusal.

pub mod api_keys;
mod introspect;
mod keys;
#[cfg(test)]
mod tests;
mod verified;

use std::collections::BTreeSet;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Validation};
use serde::Serialize;
use serde_json::Value;

use keys::KeySets;

/// How far a token's `exp` and `nbf` may be off (clocks differ).
pub const SKEW: Duration = Duration::from_secs(60);

/// The signature algorithms accepted (asymmetric only: a public key never verifies an HMAC).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One authorization server whose tokens are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Issuer {
    /// Its issuer identifier, exactly as its tokens' `iss` and its metadata say it.
    pub issuer: String,
    /// Where its keys are; `None`: from its metadata (OpenID discovery, then RFC 8414).
    pub jwks_uri: Option<String>,
    /// Audiences accepted besides the resource's own URL (a provider that cannot put the
    /// resource into `aud`, such as one that names an API by an id of its own).
    pub audiences: Vec<String>,
    /// The claim that holds the caller's groups (a dotted path: `realm_access.roles`).
    pub groups_claim: String,
    /// The claim that holds the caller's display name.
    pub name_claim: String,
    /// Where its opaque (non-JWT) tokens are checked (RFC 7662), if it issues any.
    pub introspection: Option<Introspection>,
}

/// An issuer's token introspection endpoint and the client this resource is there.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Introspection {
    /// The endpoint.
    pub url: String,
    /// This resource's client id at the issuer.
    pub client_id: String,
    /// Its secret (from the environment variable the config names; never logged).
    pub client_secret: String,
}

impl Introspection {
    /// The endpoint at `url`, as the client `client_id` with `client_secret`.
    pub fn new(url: impl Into<String>, client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Introspection { url: url.into(), client_id: client_id.into(), client_secret: client_secret.into() }
    }
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    /// An issuer with the usual claims (`groups`, `name`) and its keys from its metadata.
    pub fn new(issuer: impl Into<String>) -> Issuer {
        Issuer {
            issuer: issuer.into(),
            jwks_uri: None,
            audiences: Vec::new(),
            groups_claim: "groups".into(),
            name_claim: "name".into(),
            introspection: None,
        }
    }
}

/// What a protected gateway accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityConfig {
    /// The authorization servers whose tokens are accepted.
    pub issuers: Vec<Issuer>,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
    /// The URL clients reach (behind a proxy, its public one): the `resource` of the
    /// metadata and the audience tokens must be for. `None`: `http://<listen address>/mcp`.
    pub resource: Option<String>,
    /// Groups whose members see everyone's part of the API (the people, their logins and
    /// calls) with their own token; others see their own.
    pub admin_groups: Vec<String>,
    /// The dashboard's client at the first issuer, for people who sign in to `serve`'s
    /// dashboard (`None`: registered dynamically, RFC 7591, when the issuer allows it).
    pub dashboard_client: Option<DashboardClient>,
}

/// A client registered at the issuer for the dashboard's sign-in (redirect URI
/// `<serve's public URL>/people/callback`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DashboardClient {
    /// Its id.
    pub client_id: String,
    /// Its secret, for a confidential client (never logged).
    pub client_secret: Option<String>,
}

impl DashboardClient {
    /// The client `client_id`, with `client_secret` when confidential.
    pub fn new(client_id: impl Into<String>, client_secret: Option<String>) -> DashboardClient {
        DashboardClient { client_id: client_id.into(), client_secret }
    }
}

impl std::fmt::Debug for DashboardClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl IdentityConfig {
    /// Tokens of these issuers, with no scope required.
    pub fn new(issuers: Vec<Issuer>) -> IdentityConfig {
        IdentityConfig { issuers, scopes: Vec::new(), resource: None, admin_groups: Vec::new(), dashboard_client: None }
    }
}

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Principal {
    /// The token's `sub`.
    pub subject: String,
    /// Who vouched for it (the token's `iss`).
    pub issuer: String,
    /// A name to show people, when the token has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its groups, from the issuer's `groups_claim`.
    #[serde(default)]
    pub groups: Vec<String>,
    /// The scopes the token carries.
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl Principal {
    /// A stable key for this person that says nothing of them: the first 128 bits of
    /// SHA-256 over issuer and subject, in hex (their folder under `<data>/people/`).
    pub fn key(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(self.issuer.as_bytes());
        hash.update([0]);
        hash.update(self.subject.as_bytes());
        hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// How to name them to people: their name, else their subject.
    pub fn shown(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.subject)
    }
}

/// Why a token is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// No `Authorization: Bearer` token.
    #[error("no access token (an `Authorization: Bearer` header)")]
    Missing,
    /// Not a JWT this resource can read.
    #[error("the access token is not a JWT: {0}")]
    Malformed(String),
    /// Its `iss` is not one of the configured issuers.
    #[error("the access token's issuer `{0}` is not one this gateway accepts")]
    UnknownIssuer(String),
    /// Signed by a key its issuer does not publish (after fetching its keys again).
    #[error("the access token is signed by a key `{issuer}` does not publish (kid {kid:?})")]
    UnknownKey {
        /// The issuer.
        issuer: String,
        /// The key id the token names.
        kid: Option<String>,
    },
    /// Past its `exp` (beyond the skew).
    #[error("the access token has expired")]
    Expired,
    /// Before its `nbf` (beyond the skew).
    #[error("the access token is not valid yet")]
    NotYetValid,
    /// For another resource.
    #[error("the access token is for another resource (aud {found}; this one is {expected})")]
    Audience {
        /// The token's `aud`.
        found: String,
        /// This resource's URL.
        expected: String,
    },
    /// Lacks a scope the config requires.
    #[error("the access token lacks the scope {}", .missing.join(" "))]
    Scope {
        /// The scopes it lacks.
        missing: Vec<String>,
    },
    /// Anything else wrong with the token (signature, algorithm, claims).
    #[error("the access token is invalid: {0}")]
    Invalid(String),
    /// The issuer's metadata or keys could not be fetched.
    #[error("the keys of `{issuer}` could not be fetched: {message}")]
    Provider {
        /// The issuer.
        issuer: String,
        /// What failed.
        message: String,
    },
}

impl IdentityError {
    /// The HTTP status of the refusal: 403 for a missing scope, 503 when the issuer cannot
    /// be reached (the token may be fine), else 401.
    pub fn status(&self) -> u16 {
        match self {
            IdentityError::Scope { .. } => 403,
            IdentityError::Provider { .. } => 503,
            _ => 401,
        }
    }

    /// The `error` of the `WWW-Authenticate` challenge (RFC 6750 §3.1); `None` when no
    /// token was sent.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            IdentityError::Missing | IdentityError::Provider { .. } => None,
            IdentityError::Scope { .. } => Some("insufficient_scope"),
            _ => Some("invalid_token"),
        }
    }
}

/// Whether `url` may be reached for an issuer: https, or http on loopback only.
pub fn check_endpoint(url: &str) -> Result<(), String> {
    keys::check_url(url)
}

/// Checks the access tokens of one protected resource.
#[derive(Debug)]
pub struct Verifier {
    config: IdentityConfig,
    /// The resource's own URL (what clients connect to, and the audience of its tokens).
    resource: String,
    keys: KeySets,
    /// Answers of introspection endpoints, kept a little (see [`introspect`]).
    introspected: introspect::Answers,
    /// JWTs that passed, until they expire (see [`verified`]).
    verified: verified::Verified,
    /// Service accounts' keys, when accepted.
    api_keys: Option<api_keys::ApiKeys>,
}

impl Verifier {
    /// A verifier for the resource at `config.resource`, else `default_resource` (its URL as
    /// clients reach it: the gateway's `…/mcp`), fetching keys with `http`.
    pub fn new(config: IdentityConfig, default_resource: impl Into<String>, http: reqwest::Client) -> Verifier {
        let keys = KeySets::new(&config.issuers, http);
        let resource = config.resource.clone().unwrap_or_else(|| default_resource.into());
        let introspected = introspect::Answers::new(keys.http());
        Verifier { config, resource, keys, introspected, verified: verified::Verified::default(), api_keys: None }
    }

    /// Also accepting the API keys `keys` (service accounts: [`api_keys`]); a key
    /// stands for its required scopes (whoever made it made it for this gateway).
    pub fn with_api_keys(mut self, keys: api_keys::ApiKeys) -> Verifier {
        self.api_keys = Some(keys);
        self
    }

    /// With another shortest time between two fetches of an issuer's keys for a key id not
    /// held (default 30 s).
    pub fn refetch_after(mut self, after: Duration) -> Verifier {
        self.keys.refetch = after;
        self
    }

    /// What it checks against.
    pub fn config(&self) -> &IdentityConfig {
        &self.config
    }

    /// The metadata of the configured issuer `issuer` (its OpenID configuration, else its
    /// RFC 8414 document): its endpoints, for a sign-in at it.
    pub async fn issuer_metadata(&self, issuer: &str) -> Result<Value, IdentityError> {
        self.keys
            .metadata(issuer)
            .await
            .map(|(_, doc)| doc)
            .map_err(|message| IdentityError::Provider { issuer: issuer.to_string(), message })
    }

    /// The HTTP client it reaches issuers with.
    pub fn http(&self) -> reqwest::Client {
        self.keys.http()
    }

    /// The resource's URL.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Whose token `token` is, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Principal, IdentityError> {
        if let Some(keys) = &self.api_keys
            && token.starts_with(api_keys::PREFIX)
        {
            return keys
                .principal(token)
                .await
                .ok_or_else(|| IdentityError::Invalid("not a key of this gateway (revoked?)".into()));
        }
        // Not a JWT (three dot-separated parts): an opaque token, for an issuer that checks them.
        if token.split('.').count() != 3
            && let Some(issuer) = self.config.issuers.iter().find(|i| i.introspection.is_some())
        {
            let claims = self.introspected.claims(issuer, token).await?;
            return self.principal_of(issuer, &claims, |aud| self.audience_ok(issuer, aud));
        }
        let digest = verified::Verified::digest(token);
        if let Some(principal) = self.verified.get(&digest) {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| IdentityError::Malformed(e.to_string()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(IdentityError::Invalid(format!("algorithm {:?} is not accepted", header.alg)));
        }
        let unverified: Value = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|e| IdentityError::Malformed(e.to_string()))?;
        let iss = unverified.get("iss").and_then(Value::as_str).unwrap_or_default();
        let Some(issuer) = self.config.issuers.iter().find(|i| i.issuer == iss) else {
            return Err(IdentityError::UnknownIssuer(crate::text::excerpt(iss, 200)));
        };
        let key = self.keys.key(&issuer.issuer, header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = SKEW.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[issuer.issuer.as_str()]);
        let mut audiences = vec![self.resource.clone()];
        audiences.extend(issuer.audiences.iter().cloned());
        validation.set_audience(&audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = match jsonwebtoken::decode::<Value>(token, &key, &validation) {
            Ok(data) => data.claims,
            Err(e) => return Err(refusal(e, &unverified, &self.resource)),
        };
        let principal = self.principal_of(issuer, &claims, |_| true)?;
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            self.verified.keep(digest, exp, &principal);
        }
        Ok(principal)
    }

    /// Whether an introspected token's `aud` (when it has one) names this resource.
    fn audience_ok(&self, issuer: &Issuer, aud: &Value) -> bool {
        let names = strings(Some(aud));
        names.iter().any(|a| *a == self.resource || issuer.audiences.contains(a))
    }

    /// The caller of checked `claims`: the audience (`aud_ok`, when the claims have one) and
    /// the required scopes, then who it is.
    fn principal_of(
        &self,
        issuer: &Issuer,
        claims: &Value,
        aud_ok: impl Fn(&Value) -> bool,
    ) -> Result<Principal, IdentityError> {
        if let Some(aud) = claims.get("aud")
            && !aud_ok(aud)
        {
            return Err(IdentityError::Audience {
                found: crate::text::excerpt(&aud.to_string(), 200),
                expected: self.resource.clone(),
            });
        }
        let subject = claims.get("sub").and_then(Value::as_str).unwrap_or_default();
        if subject.is_empty() {
            return Err(IdentityError::Invalid("the token names no subject (`sub`)".into()));
        }
        let scopes = scopes_of(claims);
        let missing: Vec<String> = self.config.scopes.iter().filter(|s| !scopes.contains(*s)).cloned().collect();
        if !missing.is_empty() {
            return Err(IdentityError::Scope { missing });
        }
        Ok(Principal {
            subject: subject.to_string(),
            issuer: issuer.issuer.clone(),
            name: claim(claims, &issuer.name_claim).and_then(Value::as_str).map(str::to_string),
            groups: strings(claim(claims, &issuer.groups_claim)),
            scopes: scopes.into_iter().collect(),
        })
    }

    /// The protected resource metadata (RFC 9728 §2), served at
    /// `/.well-known/oauth-protected-resource` (and with the resource's path after it).
    pub fn metadata(&self) -> Value {
        let mut doc = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.config.issuers.iter().map(|i| i.issuer.clone()).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "resource_name": "switchboard",
        });
        if !self.config.scopes.is_empty() {
            doc["scopes_supported"] = serde_json::json!(self.config.scopes);
        }
        doc
    }

    /// The `WWW-Authenticate` value of a refusal (RFC 9728 §5.1, RFC 6750 §3):
    /// `metadata_url` is where [`Verifier::metadata`] is served.
    pub fn challenge(&self, metadata_url: &str, refused: &IdentityError) -> String {
        let mut value = format!("Bearer resource_metadata=\"{metadata_url}\"");
        if !self.config.scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", self.config.scopes.join(" ")));
        }
        if let Some(code) = refused.code() {
            let description = refused.to_string().replace(['"', '\\'], "'");
            value.push_str(&format!(", error=\"{code}\", error_description=\"{description}\""));
        }
        value
    }
}

/// The refusal a failed validation stands for.
fn refusal(e: jsonwebtoken::errors::Error, claims: &Value, expected: &str) -> IdentityError {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => IdentityError::Expired,
        ErrorKind::ImmatureSignature => IdentityError::NotYetValid,
        ErrorKind::InvalidAudience => IdentityError::Audience {
            found: crate::text::excerpt(&claims.get("aud").map(Value::to_string).unwrap_or_default(), 200),
            expected: expected.to_string(),
        },
        ErrorKind::MissingRequiredClaim(c) if c == "aud" => {
            IdentityError::Audience { found: "none".into(), expected: expected.to_string() }
        }
        _ => IdentityError::Invalid(e.to_string()),
    }
}

/// The scopes of a token: `scope` (space-separated, RFC 9068) or `scp` (a list or a string).
fn scopes_of(claims: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(s)) => out.extend(s.split_whitespace().map(str::to_string)),
            Some(Value::Array(items)) => out.extend(items.iter().filter_map(Value::as_str).map(str::to_string)),
            _ => {}
        }
    }
    out
}

/// The claim at a dotted path (`realm_access.roles`).
fn claim<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    claims.get(path).or_else(|| path.split('.').try_fold(claims, |v, part| v.get(part)))
}

/// A claim that holds one name or a list of them.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

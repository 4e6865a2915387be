//! The `oauth` block of a remote server: how switchboard identifies itself to the server's
//! authorisation server, which scopes it asks for, where the browser comes back, and which
//! grant it uses.
//!
//! ```jsonc
//! "oauth": {
//!   "client_id": "pre-registered-id",          // else a metadata document URL, else registration
//!   "client_secret": "${MY_SECRET}",            // a confidential pre-registered client
//!   "client_metadata_url": "https://example.com/switchboard.json",  // SEP-991 CIMD
//!   "scopes": ["files:read"],                  // default: the server's challenge, else its list
//!   "callback_port": 19876,                    // 0: any free port
//!   "redirect_uri": "http://localhost:8080/callback", // a pre-registered one (else the loopback callback)
//!   "grant": "authorization_code",             // or "client_credentials", "enterprise", "jwt_bearer", "token_exchange"
//!   "private_key_file": "~/keys/sb.pem",       // client_credentials with private_key_jwt
//!   "signing_algorithm": "ES256",
//!   "assertion_file": "/var/run/secrets/tokens/mcp", // jwt_bearer: the workload's JWT (or "assertion": "${VAR}")
//!   "dpop": "auto"                              // DPoP-bound tokens when offered; true: always; false: never
//! }
//! ```
//!
//! OpenCode's spelling is read too: `clientId`, `clientSecret` and `scope` (one
//! space-separated string).

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

/// The callback port used unless `oauth.callback_port` says otherwise. Fixed, so that a
/// server which only accepts pre-registered redirect URIs can be given one.
pub const DEFAULT_CALLBACK_PORT: u16 = 19876;

/// How switchboard obtains tokens for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OAuthGrant {
    /// A person logs in in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// Machine to machine: the client's own credentials (secret or signed JWT), no browser.
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): an ID token from the organisation's
    /// identity provider is exchanged there for an identity assertion (ID-JAG), which the
    /// server's authorization server exchanges for an access token. No browser.
    Enterprise,
    /// Workload identity (RFC 7523 JWT bearer, SEP-1933): a JWT the platform issued to this
    /// workload (a Kubernetes service account token, a cloud's identity token) is exchanged
    /// for an access token. No browser, no client secret.
    JwtBearer,
    /// Token exchange (RFC 8693), in a gateway whose callers sign in: the caller's own access
    /// token (the organisation's) is exchanged, as this client (`client_id`), at the server's
    /// authorization server for a token for the server, per person, cached until it expires.
    /// The caller's token itself never goes to the server. No browser.
    TokenExchange,
}

/// When tokens are bound to a key of this host (DPoP, RFC 9449).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DpopMode {
    /// When the authorization server offers it (ES256 in `dpop_signing_alg_values_supported`)
    /// and the server's challenge, when it sent one, names the `DPoP` scheme.
    #[default]
    Auto,
    /// Always (a server that does not offer it gets proofs it may ignore).
    Always,
    /// Never: plain bearer tokens.
    Never,
}

/// Where a `jwt_bearer` grant's assertion comes from.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AssertionSource {
    /// The value itself (usually `${VAR}`). Never printed.
    Value(#[serde(serialize_with = "ser_secret_str")] String),
    /// A file read at each exchange (platforms rotate these tokens).
    File(PathBuf),
}

impl std::fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AssertionSource::Value(_) => f.write_str("Value(<redacted>)"),
            AssertionSource::File(p) => f.debug_tuple("File").field(p).finish(),
        }
    }
}

/// The identity provider of an `enterprise` grant (`oauth.enterprise`).
#[derive(Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct EnterpriseConfig {
    /// The identity provider's issuer.
    pub idp_issuer: String,
    /// Its token endpoint (RFC 8693 token exchange).
    pub idp_token_endpoint: String,
    /// switchboard's client id there.
    pub idp_client_id: String,
    /// Its secret there, for a confidential client. Never printed.
    #[serde(serialize_with = "ser_secret")]
    pub idp_client_secret: Option<String>,
    /// The person's ID token from that provider (usually `${VAR}`). Never printed.
    #[serde(serialize_with = "ser_secret_str")]
    pub id_token: String,
}

impl std::fmt::Debug for EnterpriseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseConfig")
            .field("idp_issuer", &self.idp_issuer)
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("idp_client_id", &self.idp_client_id)
            .field("idp_client_secret", &self.idp_client_secret.as_ref().map(|_| super::REDACTED))
            .field("id_token", &super::REDACTED)
            .finish()
    }
}

fn ser_secret_str<S: serde::Serializer>(_: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(super::REDACTED)
}

/// A server's `oauth` block.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// A client id registered with the authorisation server out of band.
    pub client_id: Option<String>,
    /// Its secret (a confidential client). Never printed.
    #[serde(serialize_with = "ser_secret")]
    pub client_secret: Option<String>,
    /// An HTTPS URL of a client ID metadata document (SEP-991), used as the client id where
    /// the authorisation server supports it.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for; empty: the server's challenge, else everything it lists, else none.
    pub scopes: Vec<String>,
    /// Port of the loopback callback (`0`: any free port).
    pub callback_port: u16,
    /// Whether the config named `callback_port` (a login from the dashboard then comes back to
    /// that loopback port too, as one from the CLI does).
    pub callback_port_configured: bool,
    /// A redirect URI registered with the authorisation server out of band, used as it is by
    /// every login (the CLI and the dashboard listen on its port and path when it is a
    /// loopback address; another address must reach `serve`'s `/oauth/callback`).
    pub redirect_uri: Option<String>,
    /// Which grant.
    pub grant: OAuthGrant,
    /// A PEM private key for `private_key_jwt` client authentication (client credentials).
    pub private_key_file: Option<PathBuf>,
    /// The JWT signing algorithm for that key (default `ES256`).
    pub signing_algorithm: Option<String>,
    /// The identity provider of the `enterprise` grant.
    pub enterprise: Option<Box<EnterpriseConfig>>,
    /// The workload's JWT for the `jwt_bearer` grant.
    pub assertion: Option<AssertionSource>,
    /// DPoP.
    pub dpop: DpopMode,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            callback_port: DEFAULT_CALLBACK_PORT,
            callback_port_configured: false,
            redirect_uri: None,
            grant: OAuthGrant::AuthorizationCode,
            private_key_file: None,
            signing_algorithm: None,
            enterprise: None,
            assertion: None,
            dpop: DpopMode::Auto,
        }
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| super::REDACTED))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("redirect_uri", &self.redirect_uri)
            .field("grant", &self.grant)
            .field("private_key_file", &self.private_key_file)
            .field("signing_algorithm", &self.signing_algorithm)
            .field("enterprise", &self.enterprise)
            .field("assertion", &self.assertion)
            .field("dpop", &self.dpop)
            .finish()
    }
}

fn ser_secret<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(_) => s.serialize_str(super::REDACTED),
        None => s.serialize_none(),
    }
}

type FieldError = (Option<String>, String);

fn fail<T>(field: &str, message: impl Into<String>) -> Result<T, FieldError> {
    Err((Some(format!("oauth.{field}")), message.into()))
}

/// Parses the `oauth` block; `expand` expands `${VAR}` in a field's value.
pub(crate) fn parse(
    value: Value,
    expand: &dyn Fn(&str, &str) -> Result<String, FieldError>,
) -> Result<OAuthConfig, FieldError> {
    let Value::Object(mut obj) = value else {
        return Err((Some("oauth".into()), "must be an object".into()));
    };
    let string = |obj: &mut Map<String, Value>, key: &str| -> Result<Option<String>, FieldError> {
        match obj.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(&format!("oauth.{key}"), &s).map(Some),
            Some(_) => fail(key, "must be a string"),
        }
    };
    // OpenCode writes `clientId`, `clientSecret` and `scope`: the same fields.
    for (theirs, ours) in [("clientId", "client_id"), ("clientSecret", "client_secret"), ("scope", "scopes")] {
        if let Some(v) = obj.remove(theirs) {
            if obj.contains_key(ours) {
                return fail(theirs, format!("is `{ours}` written again: keep one"));
            }
            obj.insert(ours.to_string(), v);
        }
    }
    let client_id = string(&mut obj, "client_id")?;
    let client_secret = string(&mut obj, "client_secret")?;
    let assertion_value = string(&mut obj, "assertion")?;
    let assertion_file = string(&mut obj, "assertion_file")?;
    let client_metadata_url = string(&mut obj, "client_metadata_url")?;
    let grant = string(&mut obj, "grant")?;
    let private_key_file = string(&mut obj, "private_key_file")?;
    let signing_algorithm = string(&mut obj, "signing_algorithm")?;
    let enterprise = match obj.remove("enterprise") {
        None | Some(Value::Null) => None,
        Some(Value::Object(mut e)) => {
            let mut field = |key: &str| -> Result<Option<String>, FieldError> {
                match e.remove(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => expand(&format!("oauth.enterprise.{key}"), &s).map(Some),
                    Some(_) => fail(&format!("enterprise.{key}"), "must be a string"),
                }
            };
            let need = |v: Option<String>, key: &str| {
                v.ok_or_else(|| (Some(format!("oauth.enterprise.{key}")), "is required".to_string()))
            };
            let config = EnterpriseConfig {
                idp_issuer: need(field("idp_issuer")?, "idp_issuer")?,
                idp_token_endpoint: need(field("idp_token_endpoint")?, "idp_token_endpoint")?,
                idp_client_id: need(field("idp_client_id")?, "idp_client_id")?,
                idp_client_secret: field("idp_client_secret")?,
                id_token: need(field("id_token")?, "id_token")?,
            };
            if let Some((key, _)) = e.into_iter().next() {
                return fail(
                    &format!("enterprise.{key}"),
                    "unknown field (known: idp_issuer, idp_token_endpoint, idp_client_id, idp_client_secret, id_token)",
                );
            }
            Some(Box::new(config))
        }
        Some(_) => return fail("enterprise", "must be an object"),
    };
    let scopes = match obj.remove("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) if !s.trim().is_empty() && !s.contains(char::is_whitespace) => Ok(s),
                _ => fail(&format!("scopes[{i}]"), "must be a scope name (a string without spaces)"),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return fail("scopes", "must be an array of strings (or one space-separated string)"),
    };
    let dpop = match obj.remove("dpop") {
        None | Some(Value::Null) => DpopMode::Auto,
        Some(Value::Bool(true)) => DpopMode::Always,
        Some(Value::Bool(false)) => DpopMode::Never,
        Some(Value::String(s)) if s == "auto" => DpopMode::Auto,
        Some(other) => return fail("dpop", format!("must be \"auto\", true or false, found {other}")),
    };
    let (callback_port, callback_port_configured) = match obj.remove("callback_port") {
        None | Some(Value::Null) => (DEFAULT_CALLBACK_PORT, false),
        Some(v) => match v.as_u64().and_then(|p| u16::try_from(p).ok()) {
            Some(p) => (p, true),
            None => return fail("callback_port", format!("must be a port number 0-65535, found {v}")),
        },
    };
    let redirect_uri = match obj.remove("redirect_uri").or_else(|| obj.remove("redirectUri")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let s = expand("oauth.redirect_uri", &s)?;
            let url =
                reqwest::Url::parse(&s).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            match url {
                Some(u) if u.fragment().is_none() => Some(s),
                _ => {
                    return fail(
                        "redirect_uri",
                        format!("must be an absolute http(s) URL without a fragment, found `{s}`"),
                    );
                }
            }
        }
        Some(other) => return fail("redirect_uri", format!("must be a string, found {other}")),
    };
    if let Some((key, _)) = obj.into_iter().next() {
        return fail(
            &key,
            "unknown field (known: client_id, client_secret, client_metadata_url, scopes, callback_port, \
             redirect_uri, grant, private_key_file, signing_algorithm, enterprise, assertion, assertion_file, dpop)",
        );
    }
    let grant = match grant.as_deref() {
        None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
        Some("client_credentials") => OAuthGrant::ClientCredentials,
        Some("enterprise") => OAuthGrant::Enterprise,
        Some("jwt_bearer") => OAuthGrant::JwtBearer,
        Some("token_exchange") => OAuthGrant::TokenExchange,
        Some(other) => {
            return fail(
                "grant",
                format!(
                    "unknown grant `{other}`: use authorization_code, client_credentials, enterprise, jwt_bearer or \
                     token_exchange"
                ),
            );
        }
    };
    if grant == OAuthGrant::TokenExchange && client_id.is_none() {
        return fail(
            "grant",
            "token_exchange needs `client_id` (the client that exchanges, at the server's authorization server)",
        );
    }
    let assertion = match (assertion_value, assertion_file) {
        (Some(_), Some(_)) => return fail("assertion_file", "and `assertion` both given: keep one"),
        (Some(v), None) => Some(AssertionSource::Value(v)),
        (None, Some(f)) => Some(AssertionSource::File(crate::paths::expand_home(&f))),
        (None, None) => None,
    };
    match (grant, &assertion) {
        (OAuthGrant::JwtBearer, None) => {
            return fail(
                "grant",
                "`jwt_bearer` needs the workload's JWT: `assertion_file` (or `assertion`: \"${VAR}\")",
            );
        }
        (OAuthGrant::JwtBearer, Some(_)) | (_, None) => {}
        (_, Some(_)) => return fail("assertion", "applies to `grant: jwt_bearer` only"),
    }
    if client_secret.is_some() && client_id.is_none() {
        return fail("client_secret", "needs `client_id` (a secret belongs to a pre-registered client)");
    }
    if let Some(url) = &client_metadata_url {
        let ok = reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
        if !ok {
            return fail("client_metadata_url", "must be an https:// URL with a path (SEP-991)");
        }
    }
    if grant == OAuthGrant::ClientCredentials {
        if client_id.is_none() {
            return fail("grant", "client_credentials needs `client_id`");
        }
        if client_secret.is_none() && private_key_file.is_none() {
            return fail("grant", "client_credentials needs `client_secret` or `private_key_file`");
        }
    } else if private_key_file.is_some() {
        return fail("private_key_file", "applies to `grant: client_credentials` only");
    }
    match (grant, &enterprise) {
        (OAuthGrant::Enterprise, None) => {
            return fail("enterprise", "`grant: enterprise` needs the `enterprise` block");
        }
        (OAuthGrant::Enterprise, Some(_)) if client_id.is_none() => {
            return fail(
                "client_id",
                "`grant: enterprise` needs the client registered with the server's authorization server",
            );
        }
        (OAuthGrant::Enterprise, _) | (_, None) => {}
        (_, Some(_)) => return fail("enterprise", "applies to `grant: enterprise` only"),
    }
    if let Some(alg) = &signing_algorithm
        && !["ES256", "ES384", "RS256", "RS384", "RS512"].contains(&alg.as_str())
    {
        return fail("signing_algorithm", format!("unknown algorithm `{alg}` (ES256, ES384, RS256, RS384 or RS512)"));
    }
    Ok(OAuthConfig {
        client_id,
        client_secret,
        client_metadata_url,
        scopes,
        callback_port,
        callback_port_configured,
        redirect_uri,
        grant,
        private_key_file: private_key_file.map(|p| crate::paths::expand_home(&p)),
        signing_algorithm,
        enterprise,
        assertion,
        dpop,
    })
}

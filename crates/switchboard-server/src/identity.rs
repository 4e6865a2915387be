//! `/mcp` as an OAuth 2.1 protected resource (RFC 9728), when the config has `identity`:
//! every request carries an access token of a configured issuer, checked by
//! [`switchboard::identity::Verifier`]; whose it is ([`Principal`]) rides in the request's
//! extensions to the gateway's session. The protected resource metadata is served, without a
//! token, at `/.well-known/oauth-protected-resource` and with the resource's path after it
//! (`…/oauth-protected-resource/mcp`, where MCP clients look first). A refusal is 401 (403 for
//! a missing scope, 503 when the issuer's keys cannot be fetched) with `WWW-Authenticate:
//! Bearer resource_metadata="…"`, so a client knows where to sign in.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use switchboard::identity::api_keys::ApiKeys;
use switchboard::identity::{IdentityConfig, IdentityError, Verifier};

pub use switchboard::identity::Principal;

use crate::error::ApiError;

/// The path of the metadata document (RFC 9728 §3.1).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The guard of a protected `/mcp`.
#[derive(Debug)]
pub struct Protected {
    verifier: Verifier,
    /// Where the metadata of this resource is (for the challenge).
    metadata_url: String,
}

impl Protected {
    /// The guard for the resource at `config.resource`, else `default_resource`; the API keys
    /// of `keys` (service accounts: the data folder's, or a team's store's) are accepted too.
    pub fn new(config: IdentityConfig, default_resource: &str, keys: ApiKeys) -> Result<Protected, String> {
        let http = reqwest::Client::builder().build().map_err(|e| format!("an HTTP client for the issuers: {e}"))?;
        let verifier = Verifier::new(config, default_resource, http).with_api_keys(keys);
        let url = reqwest::Url::parse(verifier.resource())
            .map_err(|e| format!("`identity.resource` {}: {e}", verifier.resource()))?;
        // RFC 9728 §3.1: the well-known path goes between the host and the resource's path.
        let path = url.path().trim_end_matches('/');
        let metadata_url = format!("{}{METADATA_PATH}{path}", url.origin().ascii_serialization());
        Ok(Protected { verifier, metadata_url })
    }

    /// What checks the tokens.
    pub fn verifier(&self) -> &Verifier {
        &self.verifier
    }

    /// The resource's URL (what tokens must be for).
    pub fn resource(&self) -> &str {
        self.verifier.resource()
    }

    /// The routes of the metadata document (no token needed).
    pub fn routes(self: &Arc<Self>) -> Router {
        let doc = self.verifier.metadata();
        let path = reqwest::Url::parse(self.resource())
            .map(|u| u.path().trim_end_matches('/').to_string())
            .unwrap_or_default();
        let serve = move || {
            let doc = doc.clone();
            async move { axum::Json(doc) }
        };
        let mut router = Router::new().route(METADATA_PATH, axum::routing::get(serve.clone()));
        if !path.is_empty() {
            router = router.route(&format!("{METADATA_PATH}{path}"), axum::routing::get(serve));
        }
        router
    }

    fn refuse(&self, refused: &IdentityError) -> Response {
        let status = StatusCode::from_u16(refused.status()).unwrap_or(StatusCode::UNAUTHORIZED);
        let code = match refused {
            IdentityError::Missing => "unauthorized",
            IdentityError::Scope { .. } => "insufficient_scope",
            IdentityError::Provider { .. } => "identity_unavailable",
            _ => "invalid_token",
        };
        let mut response = ApiError::new(status, code, refused.to_string()).into_response();
        if let Ok(value) = HeaderValue::from_str(&self.verifier.challenge(&self.metadata_url, refused)) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

impl Protected {
    /// The caller of a request's bearer token, or the refusal to send (with the challenge).
    pub async fn check(&self, headers: &axum::http::HeaderMap) -> Result<Principal, Response> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(self.refuse(&IdentityError::Missing));
        };
        match self.verifier.verify(token).await {
            Ok(principal) => {
                tracing::debug!(subject = %principal.subject, issuer = %principal.issuer, "caller signed in");
                Ok(principal)
            }
            Err(refused) => {
                tracing::info!("a request was refused: {refused}");
                Err(self.refuse(&refused))
            }
        }
    }
}

/// Lets a request through with its caller's [`Principal`] in its extensions, or refuses it.
pub async fn check_identity(State(guard): State<Arc<Protected>>, mut request: Request, next: Next) -> Response {
    match guard.check(request.headers()).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            crate::listen::mark(&request);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

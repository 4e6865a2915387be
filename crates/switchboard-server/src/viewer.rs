//! Who is asking the API. The host's token (or the dashboard's session) sees everything. On a
//! team's `serve` (a gateway with `identity`), a person may also ask with their own access
//! token (the one their MCP client uses for `/mcp`, or a service account's key) for their part
//! of it: `GET /api/me`, `GET /api/people`, `GET /api/audit`, and the logout of one of their own
//! servers. A member of one of `identity.admin_groups` sees everyone there; anyone else sees
//! themselves only (another person's calls or logout is 403). Every other route stays the
//! host's.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::identity::{Principal, Protected};
use crate::people_login::PeopleLogin;
use crate::security::Access;

/// Who asks.
#[derive(Debug, Clone)]
pub enum Viewer {
    /// The host's token or the dashboard's session.
    Host,
    /// A person who signed in with the organisation's provider.
    Person {
        /// Who.
        principal: Box<Principal>,
        /// In one of `identity.admin_groups`.
        admin: bool,
    },
}

impl Viewer {
    /// The person this viewer is limited to (`None`: sees everyone).
    pub fn only(&self) -> Option<&Principal> {
        match self {
            Viewer::Person { principal, admin: false } => Some(principal),
            _ => None,
        }
    }

    /// Refuses what concerns another person (by their key) than the one this viewer is
    /// limited to.
    pub fn may_see(&self, key: &str) -> Result<(), ApiError> {
        match self.only() {
            Some(p) if p.key() != key => Err(forbidden()),
            _ => Ok(()),
        }
    }
}

/// The 403 of a person asking for another's part.
pub fn forbidden() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "only your own part: another person's is for the admin groups (`identity.admin_groups`)",
    )
}

/// What the API's guard checks against.
#[derive(Debug)]
pub struct ApiGuard {
    /// The host's token and the dashboard's sessions.
    pub access: Arc<Access>,
    /// The people, on a team's `serve`.
    pub people: Option<People>,
}

/// How people are known on a team's `serve`.
#[derive(Debug)]
pub struct People {
    /// Their tokens' check.
    pub guard: Arc<Protected>,
    /// `identity.admin_groups`.
    pub admins: Vec<String>,
    /// Their dashboard sessions.
    pub login: Arc<PeopleLogin>,
}

/// Whether a person's token may ask for this route.
fn persons_route(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET => matches!(path, "/api/me" | "/api/people" | "/api/audit"),
        Method::DELETE => {
            let parts: Vec<&str> = path.split('/').collect();
            matches!(parts.as_slice(), ["", "api", "people", _, "servers", _, "auth"])
        }
        _ => false,
    }
}

/// Lets an `/api` request through with its [`Viewer`], or refuses it.
pub async fn check_api(State(guard): State<Arc<ApiGuard>>, mut request: Request, next: Next) -> Response {
    if guard.access.allows(request.headers()) {
        request.extensions_mut().insert(Viewer::Host);
        crate::listen::mark(&request);
        return next.run(request).await;
    }
    let Some(people) = guard.people.as_ref().filter(|_| persons_route(request.method(), request.uri().path())) else {
        return guard.access.refusal();
    };
    let checked = if request.headers().get(header::AUTHORIZATION).is_some() {
        people.guard.check(request.headers()).await
    } else {
        // The dashboard of a person who signed in, from a page of this server.
        let from_here = guard.access.same_origin(request.headers());
        let person = if from_here { people.login.person(request.headers()).await } else { None };
        match person {
            Some(principal) => Ok(principal),
            None => {
                let mut refused = guard.access.refusal();
                // Where a person signs in to the dashboard.
                refused
                    .headers_mut()
                    .insert("x-switchboard-sign-in", axum::http::HeaderValue::from_static("/people/login"));
                return refused;
            }
        }
    };
    match checked {
        Ok(principal) => {
            let admin = principal.groups.iter().any(|g| people.admins.contains(g));
            request.extensions_mut().insert(Viewer::Person { principal: Box::new(principal), admin });
            crate::listen::mark(&request);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// `GET /api/me`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// `host` (the host's token or the dashboard), or `person`.
    kind: &'static str,
    /// Who signed in (a person).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    principal: Option<Principal>,
    /// Their key (`key` in `GET /api/people`).
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// Whether they see everyone's part (`identity.admin_groups`).
    everyone: bool,
}

#[utoipa::path(get, path = "/api/me", tag = "people",
    responses((status = 200, body = Me), (status = 401, body = ErrorBody)))]
pub async fn me(axum::Extension(viewer): axum::Extension<Viewer>) -> Response {
    let me = match viewer {
        Viewer::Host => Me { kind: "host", principal: None, key: None, everyone: true },
        Viewer::Person { principal, admin } => {
            Me { kind: "person", key: Some(principal.key()), principal: Some(*principal), everyone: admin }
        }
    };
    Json(me).into_response()
}

//! `switchboard serve`: the hub over HTTP, for editors, agents in any language and people in a
//! browser. Built on the library's public [`Hub`] API only.
//!
//! Security: it binds to loopback unless told otherwise ([`ServeOptions::allow_remote`]);
//! every request must name this server in `Host`; `/api` needs the bearer token from the data
//! folder or the session cookie from a one-time login URL; request bodies are limited.

mod answers;
mod api;
mod approvals;
mod audit;
mod complete;
mod dashboard;
mod error;
mod events;
mod gateway_http;
mod health;
pub mod identity;
pub mod listen;
mod login;
mod manage;
mod metrics;
mod people;
mod people_login;
mod person_pages;
mod questions;
mod queue;
mod running;
mod sampling;
mod sandbox;
mod security;
mod state;
mod tools;
mod viewer;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use switchboard::Hub;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use approvals::{ApprovalQueue, PendingApproval};
pub use error::{ErrorBody, ErrorDetail};
pub use gateway_http::{GatewayHttpOptions, bind_gateway};
pub use questions::{AnswerError, Question, Questions};
pub use running::{RecordError, RunningServe, ServeApprover};
pub use sampling::{PendingSample, SamplingQueue};
pub use security::COOKIE;

/// The port used unless `--port` says otherwise.
pub const DEFAULT_PORT: u16 = 7341;

/// The largest request body accepted.
const BODY_LIMIT: usize = 1024 * 1024;
/// The largest MCP message a client may send to `/mcp` (tool arguments can be big).
pub const MCP_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// How to serve.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The address to bind (default 127.0.0.1).
    pub bind: IpAddr,
    /// The port (`0`: any free one).
    pub port: u16,
    /// Binding to a non-loopback address needs this (the API then answers the network).
    pub allow_remote: bool,
    /// More names the server answers to (`Host` header), beyond the loopback names and the
    /// bound address: `name` (with the bound port) or `name:port` (behind a proxy).
    pub hosts: Vec<String>,
    /// Web origins (`https://app.example`) whose pages may call the API with the bearer token
    /// (CORS); none by default. Cookies never cross origins: the dashboard session stays
    /// same-origin.
    pub cors_origins: Vec<String>,
    /// Where the token and the address file live.
    pub data_dir: PathBuf,
    /// The hub's elicitor, if it is this API's [`Questions`]: servers' questions are then
    /// published as events and answered through `/api/elicitations` (the dashboard shows a
    /// form). Without it the list is always empty.
    pub questions: Option<Arc<Questions>>,
    /// The hub's approver, if it is this API's [`ApprovalQueue`]: calls the policy asks about
    /// are published as events and decided through `/api/approvals` (the dashboard shows a
    /// card).
    pub approvals: Option<Arc<ApprovalQueue>>,
    /// The relay's sampler when no MCP client can answer, if it is this API's
    /// [`SamplingQueue`]: servers' requests for a completion are published as events and
    /// answered through `/api/sampling` (the dashboard shows the request and takes the reply).
    pub sampling: Option<Arc<SamplingQueue>>,
    /// A gateway over the same hub: `/mcp` then answers MCP clients (Streamable HTTP, both
    /// eras) with the same token, so the dashboard and agents share one set of connections.
    pub gateway: Option<switchboard_gateway::Gateway>,
    /// The address browsers reach this server by (`https://sb.example`), behind a proxy that
    /// does not say it in `Forwarded` / `X-Forwarded-*`: where OAuth logins come back.
    pub public_url: Option<String>,
    /// `/mcp` callers sign in with the organisation's authorization server instead of the
    /// local token (`identity` in the config: see [`identity`]); the API keeps the token.
    pub identity: Option<switchboard::identity::IdentityConfig>,
    /// How the other replicas on the team's store reach this one's `/mcp` directly; `None`:
    /// `http://<the address bound>` unless that is a wildcard.
    pub advertise: Option<String>,
}

impl ServeOptions {
    /// Loopback, the default port.
    pub fn new(data_dir: PathBuf) -> ServeOptions {
        ServeOptions {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            allow_remote: false,
            hosts: Vec::new(),
            cors_origins: Vec::new(),
            data_dir,
            questions: None,
            approvals: None,
            sampling: None,
            gateway: None,
            public_url: None,
            identity: None,
            advertise: None,
        }
    }
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without `allow_remote`.
    #[error("{0} is not a loopback address: the API would answer the network; pass --allow-remote if that is meant")]
    NotLoopback(IpAddr),
    /// The port is taken.
    #[error("{addr} is already in use: choose another with --port (0 picks a free one)")]
    InUse {
        /// The address.
        addr: SocketAddr,
    },
    /// An `--allow-origin` that is not an origin.
    #[error("`{0}` is not a web origin: write it as scheme://host[:port], e.g. https://app.example")]
    BadOrigin(String),
    /// `--no-auth` on an address others can reach.
    #[error("--no-auth is allowed on loopback only: anyone who reaches the address could use every server")]
    NoAuthRemote,
    /// `identity` that cannot be served as it is.
    #[error("identity: {0}")]
    Identity(String),
    /// Files or sockets.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

#[derive(OpenApi)]
#[openapi(
    info(title = "switchboard", description = "The switchboard hub over HTTP: MCP servers, their tools, resources and prompts, and live events."),
    tags((name = "servers"), (name = "catalog"), (name = "events"), (name = "elicitation"), (name = "approval"), (name = "sampling"), (name = "session"), (name = "audit"), (name = "people")),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The `/api` router and the OpenAPI description built from its routes.
fn api(state: state::AppState) -> (Router, utoipa::openapi::OpenApi) {
    let (router, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(api::list_servers, manage::add))
        .routes(routes!(api::get_server, manage::remove))
        .routes(routes!(manage::trust))
        .routes(routes!(sandbox::allow))
        .routes(routes!(api::connect))
        .routes(routes!(api::disconnect))
        .routes(routes!(api::revalidate))
        .routes(routes!(login::start, login::logout))
        .routes(routes!(login::new_link))
        .routes(routes!(tools::list_tools))
        .routes(routes!(api::call_tool))
        .routes(routes!(api::list_resources))
        .routes(routes!(api::read_resource))
        .routes(routes!(api::list_prompts))
        .routes(routes!(api::get_prompt))
        .routes(routes!(complete::complete))
        .routes(routes!(api::events))
        .routes(routes!(audit::audit))
        .routes(routes!(audit::health))
        .routes(routes!(people::list))
        .routes(routes!(viewer::me))
        .routes(routes!(people::logout))
        .routes(routes!(answers::questions::list))
        .routes(routes!(answers::questions::answer))
        .routes(routes!(answers::approvals::list, answers::approvals::request))
        .routes(routes!(answers::approvals::decide))
        .routes(routes!(answers::sampling::list))
        .routes(routes!(answers::sampling::answer))
        .with_state(state)
        .split_for_parts();
    (router, openapi)
}

fn state(hub: &Hub, access: Arc<security::Access>, options: &ServeOptions) -> state::AppState {
    let events = events::EventLog::start(hub);
    let (questions, approvals, sampling) =
        (options.questions.clone(), options.approvals.clone(), options.sampling.clone());
    if let Some(q) = &questions {
        q.attach(&events);
    }
    if let Some(a) = &approvals {
        a.attach(&events);
        // A team's `serve` replicas: one queue of approvals, answered at any.
        if let Some(db) = hub.store() {
            a.share(db.clone(), events.stopping().child_token());
        }
    }
    if let Some(s) = &sampling {
        s.attach(&events);
    }
    state::AppState {
        hub: hub.clone(),
        events,
        logins: Arc::default(),
        access,
        questions,
        approvals,
        sampling,
        tokens: Arc::default(),
        public_url: options.public_url.clone(),
        pages: None,
    }
}

/// The OpenAPI description of the API (what `GET /api/openapi.json` serves).
pub fn openapi_json(hub: &Hub) -> serde_json::Value {
    let access = Arc::new(security::Access::new(String::new(), SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), &[], &[]));
    let options = ServeOptions::new(std::path::PathBuf::new());
    serde_json::to_value(api(state(hub, access, &options)).1).unwrap_or_default()
}

/// A bound server, not serving yet.
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: Router,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The one-time URL that logs a browser in.
    pub login_url: String,
    /// The API token (for clients: `Authorization: Bearer <token>`).
    pub token: String,
    stopping: tokio_util::sync::CancellationToken,
    limits: listen::Limits,
    health: Arc<health::Health>,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound").field("addr", &self.addr).finish_non_exhaustive()
    }
}

/// A body refused for its size was not read to its end, so the connection cannot carry another
/// request: say so (`Connection: close`), or a client that reuses it gets a broken response.
async fn close_after_unread_body(mut response: Response) -> Response {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        response.headers_mut().insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    }
    response
}

/// The CORS layer for `origins`; none listed, no layer (and no CORS headers, no preflight
/// answers) at all.
fn cors(origins: &[String]) -> Result<Option<tower_http::cors::CorsLayer>, ServeError> {
    if origins.is_empty() {
        return Ok(None);
    }
    use axum::http::{HeaderName, HeaderValue, Method};
    let mut allowed = Vec::new();
    for origin in origins {
        let trimmed = origin.trim_end_matches('/');
        let ok = (trimmed.starts_with("http://") || trimmed.starts_with("https://"))
            && !trimmed.split_once("://").is_some_and(|(_, rest)| rest.is_empty() || rest.contains('/'));
        let value = HeaderValue::from_str(trimmed).ok().filter(|_| ok);
        allowed.push(value.ok_or_else(|| ServeError::BadOrigin(origin.clone()))?);
    }
    Ok(Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(allowed)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                HeaderName::from_static("last-event-id"),
            ])
            .max_age(std::time::Duration::from_secs(600)),
    ))
}

/// Binds the API for `hub`: checks the address, reads (or makes) the token, writes
/// `<data>/serve.json` with the URL.
pub async fn bind(hub: &Hub, options: &ServeOptions) -> Result<Bound, ServeError> {
    if !options.bind.is_loopback() && !options.allow_remote {
        return Err(ServeError::NotLoopback(options.bind));
    }
    let cors = cors(&options.cors_origins)?;
    let wanted = SocketAddr::new(options.bind, options.port);
    let listener = tokio::net::TcpListener::bind(wanted).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => ServeError::InUse { addr: wanted },
        _ => e.into(),
    })?;
    let addr = listener.local_addr()?;
    let token = security::load_or_make_token(&options.data_dir)?;
    // Its public addresses name it too: `--public-url`, and the resource callers sign in for.
    let resource = options.identity.as_ref().and_then(|i| i.resource.clone());
    let public: Vec<&str> = options.public_url.iter().chain(resource.iter()).map(String::as_str).collect();
    let access = Arc::new(security::Access::new(token.clone(), addr, &options.hosts, &public));
    let code = access.login_code()?;
    // The URL people are shown: the public URL (behind a proxy), else the first extra name if
    // any (that is how others reach it).
    let host = match options.hosts.first() {
        Some(name) => security::with_port(name, addr.port()),
        None if addr.ip().is_unspecified() || addr.ip().is_loopback() => format!("127.0.0.1:{}", addr.port()),
        None => addr.to_string(),
    };
    let shown = match &options.public_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => format!("http://{host}"),
    };
    let login_url = format!("{shown}/login?code={code}");
    if let Some(gateway) = &options.gateway {
        gateway.set_public_url(options.public_url.as_deref().unwrap_or(&format!("http://{host}")));
    }
    let mut state = state(hub, access.clone(), options);
    let stopping = state.events.stopping().clone();
    let mut people = None;
    let mcp = match (&options.gateway, &options.identity) {
        (Some(g), Some(config)) => {
            let public = options.public_url.as_deref().map(|u| format!("{}/mcp", u.trim_end_matches('/')));
            let mut config = config.clone();
            config.resource = config.resource.or(public);
            let admins = config.admin_groups.clone();
            let (router, guard) = protected_mcp(g, stopping.child_token(), config, addr, &options.data_dir)?;
            let login = Arc::new(people_login::PeopleLogin::new(
                guard.clone(),
                options.public_url.clone(),
                hub.store().cloned(),
            ));
            people = Some(viewer::People { guard, admins, login: login.clone() });
            // The pages its callers open (their values, their sign-ins to their own upstreams).
            let pages = person_pages::PersonPages::new(g.clone(), login.clone());
            let router = router.merge(person_pages::routes(&pages, false)).merge(people_login::routes(&login));
            state.pages = Some(pages);
            Some(router)
        }
        (Some(g), None) => Some(mcp_router(g, stopping.child_token(), access.clone(), true)),
        (None, _) => None,
    };
    let guard = Arc::new(viewer::ApiGuard { access: access.clone(), people });
    let (api_router, openapi) = api(state.clone());
    let openapi = Arc::new(openapi);
    let api_router = api_router
        .route(
            "/api/openapi.json",
            axum::routing::get(move || {
                let doc = openapi.clone();
                async move { axum::Json(serde_json::to_value(&*doc).unwrap_or_default()) }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(guard, viewer::check_api));
    let mut router = Router::new()
        .merge(mcp.unwrap_or_default())
        .merge(api_router)
        .merge(dashboard::routes())
        .route("/login", axum::routing::get(login::login_page).with_state(state.clone()))
        .route("/oauth/callback", axum::routing::get(login::callback).with_state(state.clone()))
        .fallback(|| async {
            error::ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route").into_response()
        })
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::map_response(close_after_unread_body));
    if let Some(cors) = cors {
        // Outside the auth check, so a preflight (no token) gets its answer.
        router = router.layer(cors);
    }
    let health = health::Health::new(hub, options.gateway.as_ref());
    if let Some(gateway) = &options.gateway {
        gateway_http::join_replicas(gateway, options.advertise.as_deref(), addr, stopping.child_token());
    }
    let exposed = metrics::Exposed::new(hub, options.gateway.as_ref()).routes(Some(access.clone()));
    let router = router.layer(axum::middleware::from_fn_with_state(access, security::check_host));
    let router = with_health(router, &health, exposed);
    let info = serde_json::json!({"url": format!("http://{host}"), "port": addr.port(), "pid": std::process::id()});
    switchboard::write_private(&options.data_dir.join("serve.json"), info.to_string().as_bytes())?;
    Ok(Bound { listener, router, addr, login_url, token, stopping, limits: listen::Limits::from_descriptors(), health })
}

/// `router` with `/healthz` and `/readyz` (outside the `Host` check and the token: a load
/// balancer asks by address) and `metrics` (`/metrics`, outside the `Host` check: a scraper
/// asks by address too; behind its own token check), its requests counted for the drain.
fn with_health(router: Router, health: &Arc<health::Health>, metrics: Router) -> Router {
    router
        .merge(health.routes())
        .merge(metrics)
        .layer(axum::middleware::from_fn_with_state(health.clone(), health::count))
}

/// `/mcp`: the gateway's Streamable HTTP service, behind the token unless `auth` is off.
fn mcp_router(
    gateway: &switchboard_gateway::Gateway,
    cancel: tokio_util::sync::CancellationToken,
    access: Arc<security::Access>,
    auth: bool,
) -> Router {
    let service = switchboard_gateway::http_service(gateway, cancel, MCP_BODY_LIMIT);
    let router = Router::new().route_service("/mcp", service);
    if auth {
        router.layer(axum::middleware::from_fn_with_state(access, security::check_bearer))
    } else {
        router.layer(axum::middleware::from_fn_with_state(access, security::check_origin))
    }
}

/// `/mcp` for callers who sign in ([`identity`]), with the protected resource metadata.
fn protected_mcp(
    gateway: &switchboard_gateway::Gateway,
    cancel: tokio_util::sync::CancellationToken,
    config: switchboard::identity::IdentityConfig,
    addr: SocketAddr,
    data_dir: &std::path::Path,
) -> Result<(Router, Arc<identity::Protected>), ServeError> {
    // The URL clients reach is the audience of their tokens: on a wildcard address it cannot
    // be guessed.
    if addr.ip().is_unspecified() && config.resource.is_none() {
        return Err(ServeError::Identity(
            "on every address, `identity.resource` must say the URL clients reach (https://host/mcp)".into(),
        ));
    }
    // Service accounts' keys: in the team's store when the hub has one, else the data folder.
    let keys = match gateway.hub().store() {
        Some(db) => switchboard::identity::api_keys::ApiKeys::in_store(db.clone()),
        None => switchboard::identity::api_keys::ApiKeys::open(data_dir),
    };
    let guard =
        Arc::new(identity::Protected::new(config, &format!("http://{addr}/mcp"), keys).map_err(ServeError::Identity)?);
    let service = switchboard_gateway::http_service(gateway, cancel, MCP_BODY_LIMIT);
    let router = Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(guard.clone(), identity::check_identity))
        .merge(guard.routes());
    Ok((router, guard))
}

/// How long open requests get to finish once the server stops.
const DRAIN: std::time::Duration = std::time::Duration::from_millis(1000);

impl Bound {
    /// Serves until `shutdown` resolves. Then it stops taking connections, every event stream
    /// gets a last `shutdown` event and ends, calls in flight are cancelled (their servers are
    /// told), questions waiting are cancelled; what is still open after a second is dropped.
    /// Connections are bounded as [`listen`] says.
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        self.serve_draining(async move {
            shutdown.await;
            std::time::Duration::ZERO
        })
        .await
    }

    /// Serves until `shutdown` resolves with a drain time. Then it drains first: `/readyz`
    /// says 503 at once (a load balancer sends new requests elsewhere), requests still come in
    /// and are served, and it waits until no request is in flight and no call waits for its
    /// client's answers, at most that long (`/healthz` and `/readyz` answer throughout); then it stops as [`Bound::serve`]
    /// says, cancelling what is left.
    pub async fn serve_draining(
        self,
        shutdown: impl std::future::Future<Output = std::time::Duration> + Send + 'static,
    ) -> std::io::Result<()> {
        let stopping = self.stopping.clone();
        let health = self.health.clone();
        let signal = async move {
            let drain = shutdown.await;
            health.drain(drain).await;
            stopping.cancel();
            std::future::pending::<()>().await;
        };
        tokio::select! {
            served = listen::serve(self.listener, self.router, self.limits, self.stopping, DRAIN) => served,
            () = signal => Ok(()),
        }
    }

    /// How many connections it keeps open at most.
    pub fn max_connections(&self) -> usize {
        self.limits.max_connections
    }
}

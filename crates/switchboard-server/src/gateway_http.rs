//! `switchboard gateway --http`: the gateway alone on HTTP (`/mcp`, its health routes, and
//! for callers who sign in their pages: values, sign-ins to their upstreams and the callback,
//! and the organisation's sign-in those pages ask for), and the part every HTTP front of a gateway
//! shares: joining the replicas of its store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::IntoResponse;

use crate::{
    Bound, ServeError, close_after_unread_body, error, health, listen, mcp_router, metrics, people_login, person_pages,
    protected_mcp, security, with_health,
};

/// How `switchboard gateway --http` serves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayHttpOptions {
    /// The address (loopback unless `allow_remote`).
    pub addr: SocketAddr,
    /// Binding to a non-loopback address needs this.
    pub allow_remote: bool,
    /// No token (loopback only).
    pub no_auth: bool,
    /// More names accepted in `Host`.
    pub hosts: Vec<String>,
    /// Where the token lives.
    pub data_dir: PathBuf,
    /// Callers sign in with the organisation's authorization server instead of the local
    /// token (`identity` in the config: see [`identity`]).
    pub identity: Option<switchboard::identity::IdentityConfig>,
    /// How the other replicas on the team's store reach this one directly
    /// (`http://10.0.0.5:7342`); `None`: `http://<the address bound>` unless that is a
    /// wildcard.
    pub advertise: Option<String>,
}

impl GatewayHttpOptions {
    /// Loopback at `addr`, with the token from `data_dir`.
    pub fn new(addr: SocketAddr, data_dir: PathBuf) -> GatewayHttpOptions {
        GatewayHttpOptions {
            addr,
            allow_remote: false,
            no_auth: false,
            hosts: Vec::new(),
            data_dir,
            identity: None,
            advertise: None,
        }
    }
}

/// Makes `gateway` one of the replicas on its store, reached at `advertise` or the address
/// bound, until `stop`.
pub(crate) fn join_replicas(
    gateway: &switchboard_gateway::Gateway,
    advertise: Option<&str>,
    addr: SocketAddr,
    stop: tokio_util::sync::CancellationToken,
) {
    let url = match advertise {
        Some(url) => url.trim_end_matches('/').to_string(),
        None if addr.ip().is_unspecified() => {
            if gateway.hub().store().is_some() {
                tracing::warn!(
                    "bound to every address: the other replicas cannot reach this one (give `--advertise URL`); \
                     a 2026-07-28 client's answers that reach another replica fail"
                );
            }
            String::new()
        }
        None => format!("http://{addr}"),
    };
    gateway.join_replicas(&url, stop);
}

/// Binds the gateway alone (`/mcp`, nothing else) for `switchboard gateway --http`.
pub async fn bind_gateway(
    gateway: &switchboard_gateway::Gateway,
    options: &GatewayHttpOptions,
) -> Result<Bound, ServeError> {
    let ip = options.addr.ip();
    if !ip.is_loopback() && !options.allow_remote {
        return Err(ServeError::NotLoopback(ip));
    }
    if !ip.is_loopback() && options.no_auth {
        return Err(ServeError::NoAuthRemote);
    }
    let listener = tokio::net::TcpListener::bind(options.addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => ServeError::InUse { addr: options.addr },
        _ => e.into(),
    })?;
    let addr = listener.local_addr()?;
    let stopping = tokio_util::sync::CancellationToken::new();
    if let Some(config) = &options.identity {
        if options.no_auth {
            return Err(ServeError::Identity("--no-auth and `identity` contradict each other".into()));
        }
        // A person's sign-in to their own upstream comes back here.
        let resource = config.resource.clone().unwrap_or_else(|| format!("http://{addr}/mcp"));
        // The resource's host names it too (what clients reach it by).
        let access = Arc::new(security::Access::new(String::new(), addr, &options.hosts, &[&resource]));
        gateway.set_public_url(resource.strip_suffix("/mcp").unwrap_or(&resource));
        let (router, guard) = protected_mcp(gateway, stopping.child_token(), config.clone(), addr, &options.data_dir)?;
        // The pages callers open are theirs alone: they sign in there with the organisation's
        // provider (`/people/login`) as on `/mcp`.
        let base = resource.strip_suffix("/mcp").unwrap_or(&resource).to_string();
        let login = Arc::new(people_login::PeopleLogin::new(guard, Some(base), gateway.hub().store().cloned()));
        let pages = person_pages::PersonPages::new(gateway.clone(), login.clone());
        let router = router
            .merge(person_pages::routes(&pages, true))
            .merge(people_login::routes(&login))
            .fallback(|| async {
                error::ApiError::new(StatusCode::NOT_FOUND, "not_found", "MCP is served at /mcp").into_response()
            })
            .layer(axum::middleware::map_response(close_after_unread_body))
            .layer(axum::middleware::from_fn_with_state(access, security::check_host));
        let health = health::Health::new(gateway.hub(), Some(gateway));
        // Callers sign in on `/mcp`; `/metrics` takes the local token, for the scraper.
        let token = security::load_or_make_token(&options.data_dir)?;
        let scraper = Arc::new(security::Access::new(token, addr, &options.hosts, &[&resource]));
        let exposed = metrics::Exposed::new(gateway.hub(), Some(gateway)).routes(Some(scraper));
        let router = with_health(router, &health, exposed);
        join_replicas(gateway, options.advertise.as_deref(), addr, stopping.child_token());
        let limits = listen::Limits::from_descriptors();
        let login_url = String::new();
        return Ok(Bound { listener, router, addr, login_url, token: String::new(), stopping, limits, health });
    }
    let token = if options.no_auth { String::new() } else { security::load_or_make_token(&options.data_dir)? };
    let access = Arc::new(security::Access::new(token.clone(), addr, &options.hosts, &[]));
    let router = mcp_router(gateway, stopping.child_token(), access.clone(), !options.no_auth)
        .fallback(|| async {
            error::ApiError::new(StatusCode::NOT_FOUND, "not_found", "MCP is served at /mcp").into_response()
        })
        .layer(axum::middleware::map_response(close_after_unread_body))
        .layer(axum::middleware::from_fn_with_state(access.clone(), security::check_host));
    let health = health::Health::new(gateway.hub(), Some(gateway));
    let exposed = metrics::Exposed::new(gateway.hub(), Some(gateway)).routes((!options.no_auth).then_some(access));
    let router = with_health(router, &health, exposed);
    join_replicas(gateway, options.advertise.as_deref(), addr, stopping.child_token());
    let limits = listen::Limits::from_descriptors();
    Ok(Bound { listener, router, addr, login_url: String::new(), token, stopping, limits, health })
}

//! `GET /metrics`: what the gateway served and its hub did, for Prometheus (the text the
//! Prometheus project's `prometheus-client` encodes, OpenMetrics): the gateway's and the hub's
//! metrics (`switchboard_gateway::GatewayMetrics`, `switchboard::metrics`), and each server's
//! state as it is at the scrape (`switchboard_server_state{server, state}` = 1). Behind the local
//! token (`Authorization: Bearer`, the `serve-token` file; Prometheus's `authorization:
//! credentials_file`), on any `Host` (a scraper asks by address), outside the dashboard's
//! session: it names every server and tool that was called.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use switchboard::Hub;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerState {
    server: String,
    state: &'static str,
}

/// What `/metrics` encodes.
pub(crate) struct Exposed {
    registry: Registry,
    hub: Hub,
    states: Family<ServerState, Gauge>,
}

impl Exposed {
    /// The hub's metrics, and the gateway's when it serves one.
    pub(crate) fn new(hub: &Hub, gateway: Option<&switchboard_gateway::Gateway>) -> Arc<Exposed> {
        let mut registry = Registry::default();
        match gateway {
            Some(g) => g.metrics().register(hub, &mut registry),
            None => hub.metrics().register(&mut registry),
        }
        let states = Family::<ServerState, Gauge>::default();
        registry.register(
            "switchboard_server_state",
            "Each server's state now (1 for the state it is in)",
            states.clone(),
        );
        Arc::new(Exposed { registry, hub: hub.clone(), states })
    }

    /// `/metrics`, behind `access`'s token (`None`: `--no-auth`, loopback only, as `/mcp`).
    pub(crate) fn routes(self: &Arc<Self>, access: Option<Arc<crate::security::Access>>) -> Router {
        let router = Router::new().route("/metrics", axum::routing::get(scrape)).with_state(self.clone());
        match access {
            Some(access) => router.layer(axum::middleware::from_fn_with_state(access, crate::security::check_bearer)),
            None => router,
        }
    }
}

async fn scrape(State(exposed): State<Arc<Exposed>>) -> Response {
    exposed.states.clear();
    for server in exposed.hub.servers() {
        exposed.states.get_or_create(&ServerState { server: server.name, state: server.status.state() }).set(1);
    }
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &exposed.registry) {
        return (StatusCode::INTERNAL_SERVER_ERROR, format!("encoding the metrics: {e}")).into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

//! What the gateway serves, counted for Prometheus: each request of its HTTP front timed
//! (`mcp_server_operation_duration_seconds`, by method and error type: the HTTP status of a
//! request refused before it was served; a JSON-RPC error inside a 200 is not told apart),
//! its legacy sessions open (`mcp_server_sessions`) and how long each lasted when it ended
//! (`mcp_server_session_duration_seconds`). The hub's own ([`switchboard::metrics`]) are
//! registered beside them by [`GatewayMetrics::register`].

use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use switchboard::metrics::{Durations, duration_histogram};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    mcp_method_name: String,
    /// Empty when it was answered.
    error_type: String,
}

/// The gateway's metrics (see the module).
#[derive(Clone, Debug)]
pub struct GatewayMetrics {
    operations: Durations<Operation>,
    sessions: Gauge,
    session_durations: Histogram,
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        GatewayMetrics {
            operations: Durations::new_with_constructor(duration_histogram),
            sessions: Gauge::default(),
            session_durations: Histogram::new([1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 4.0 * 3600.0, 24.0 * 3600.0]),
        }
    }
}

impl GatewayMetrics {
    /// A request `method` was served in `took`; `error`: how it was refused (`None`: it was not).
    pub(crate) fn served(&self, method: &str, error: Option<String>, took: Duration) {
        let labels = Operation { mcp_method_name: method.to_string(), error_type: error.unwrap_or_default() };
        self.operations.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// How many legacy sessions are open now.
    pub(crate) fn sessions_open(&self, n: usize) {
        self.sessions.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// A legacy session made at `made` ended.
    pub(crate) fn session_ended(&self, made: Instant) {
        self.session_durations.observe(made.elapsed().as_secs_f64());
    }

    /// Puts them, and the hub's, in `registry`.
    pub fn register(&self, hub: &switchboard::Hub, registry: &mut Registry) {
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "How long the requests the gateway served took (until their answer was sent)",
            Unit::Seconds,
            self.operations.clone(),
        );
        registry.register(
            "mcp_server_sessions",
            "Legacy (2025-11-25 and earlier) sessions open",
            self.sessions.clone(),
        );
        registry.register_with_unit(
            "mcp_server_session_duration",
            "How long legacy sessions lasted, from their initialize to their end",
            Unit::Seconds,
            self.session_durations.clone(),
        );
        hub.metrics().register(registry);
    }
}

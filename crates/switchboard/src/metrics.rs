//! What a hub does, counted for Prometheus (`prometheus-client`): each request it makes of a
//! server, timed (`mcp_client_operation_duration_seconds`, by method, server and error type,
//! in the buckets the OpenTelemetry MCP conventions advise), and each tool call by its outcome
//! and the policy's verdict (`switchboard_tool_calls_total`), what servers' sandboxes refused
//! (`switchboard_sandbox_refusals_total`) and refreshes of their tokens
//! (`switchboard_token_refreshes_total`). A hub's [`Metrics`] are shared with
//! the hubs made from it (each person's), so one registry has them all; the program serving
//! them registers them ([`Metrics::register`]) next to its own, and encodes the registry when
//! asked (`switchboard serve` and `gateway --http` at `/metrics`). Counting costs a hash lookup
//! and an atomic add or two per request; nothing is kept per caller (no label names a person).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The buckets (seconds) of an operation's duration, as the OpenTelemetry MCP conventions
/// advise for `mcp.client.operation.duration` and `mcp.server.operation.duration`.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// A histogram of durations in [`DURATION_BUCKETS`].
pub fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// A family of duration histograms by label set `L`.
pub type Durations<L> = Family<L, Histogram, fn() -> Histogram>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    mcp_method_name: String,
    server: String,
    /// Empty when it succeeded.
    error_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    server: String,
    outcome: &'static str,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refused {
    server: String,
    /// `read`, `write` or `domain`.
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refresh {
    server: String,
    /// `ok`, `rejected` (the authorization server refused the refresh token: log in again) or
    /// `failed`.
    outcome: &'static str,
}

/// A hub's counters and histograms (see the module).
#[derive(Clone, Debug)]
pub struct Metrics {
    operations: Durations<Operation>,
    calls: Family<Call, Counter>,
    refusals: Family<Refused, Counter>,
    refreshes: Family<Refresh, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            operations: Family::new_with_constructor(duration_histogram),
            calls: Family::default(),
            refusals: Family::default(),
            refreshes: Family::default(),
        }
    }
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// A request `method` made of `server` took `took`; `error`: how it failed (`None`: it did not).
    pub(crate) fn client_operation(&self, server: &str, method: &str, error: Option<&'static str>, took: Duration) {
        let labels = Operation {
            mcp_method_name: method.to_string(),
            server: server.to_string(),
            error_type: error.unwrap_or(""),
        };
        self.operations.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// A tool call of `server` ended with `outcome` under the policy's `decision`.
    pub(crate) fn call(&self, server: &str, outcome: &'static str, decision: &'static str) {
        self.calls.get_or_create(&Call { server: server.to_string(), outcome, decision }).inc();
    }

    /// `server`'s sandbox refused something of `kind` (`read`, `write`, `domain`).
    pub(crate) fn sandbox_refusal(&self, server: &str, kind: &'static str) {
        self.refusals.get_or_create(&Refused { server: server.to_string(), kind }).inc();
    }

    /// A refresh of `server`'s token ended with `outcome` (`ok`, `rejected`, `failed`).
    pub(crate) fn token_refresh(&self, server: &str, outcome: &'static str) {
        self.refreshes.get_or_create(&Refresh { server: server.to_string(), outcome }).inc();
    }

    /// Puts them in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "How long the requests switchboard made of MCP servers took",
            Unit::Seconds,
            self.operations.clone(),
        );
        registry.register(
            "switchboard_tool_calls",
            "Tool calls, by server, outcome and the policy's decision",
            self.calls.clone(),
        );
        registry.register(
            "switchboard_sandbox_refusals",
            "What servers' sandboxes refused (a hidden path read, a write outside the writable folders, a name not allowed), by server and kind",
            self.refusals.clone(),
        );
        registry.register(
            "switchboard_token_refreshes",
            "Refreshes of servers' OAuth tokens, by server and outcome",
            self.refreshes.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_counted_is_encoded_with_its_labels() {
        let metrics = Metrics::new();
        metrics.client_operation("fx", "tools/call", None, Duration::from_millis(30));
        metrics.client_operation("fx", "tools/call", Some("timeout"), Duration::from_secs(3));
        metrics.call("fx", "ok", "allow");
        metrics.call("fx", "ok", "allow");
        metrics.sandbox_refusal("fx", "domain");
        metrics.token_refresh("up", "rejected");
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_default();
        assert!(
            text.contains(r#"switchboard_tool_calls_total{server="fx",outcome="ok",decision="allow"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"mcp_client_operation_duration_seconds_bucket{le="0.05",mcp_method_name="tools/call",server="fx",error_type=""} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"error_type="timeout""#), "{text}");
        assert!(text.contains(r#"switchboard_sandbox_refusals_total{server="fx",kind="domain"} 1"#), "{text}");
        assert!(text.contains(r#"switchboard_token_refreshes_total{server="up",outcome="rejected"} 1"#), "{text}");
    }
}

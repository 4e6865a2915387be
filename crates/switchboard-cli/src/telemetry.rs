//! Traces over OTLP: the spans of every MCP request served and sent ([`switchboard::telemetry`])
//! exported with OpenTelemetry's SDK and OTLP exporter (HTTP, protobuf) when, and only when,
//! an endpoint is configured the standard way: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`,
//! `OTEL_SERVICE_NAME` (default `switchboard`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*` and
//! `OTEL_TRACES_SAMPLER` as the SDK reads them; `OTEL_SDK_DISABLED=true` or
//! `OTEL_TRACES_EXPORTER=none` turn it off. Spans are sent in batches from a thread of the
//! SDK's; the last ones are sent when the command ends ([`Exporter`]'s drop, at most
//! [`LAST_SPANS`]).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The exporter while the command runs; dropping it sends what is left and stops it.
pub struct Exporter {
    provider: SdkTracerProvider,
}

/// The longest a command's end waits for its last spans to be sent (a collector that does not
/// answer must not hold the exit up; the SDK's default is 5 s).
const LAST_SPANS: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown_with_timeout(LAST_SPANS) {
            tracing::warn!("the last spans could not be sent to the OTLP endpoint: {e}");
        }
    }
}

/// Whether the environment asks for traces.
fn wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let is = |name: &str, value: &str| var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// The layer that turns the MCP spans into OpenTelemetry's and the exporter behind it, when the
/// environment asks for traces; `Err` says why it could not be made.
pub fn layer<S>() -> Result<Option<(impl tracing_subscriber::Layer<S>, Exporter)>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    if !wanted(|name| std::env::var(name).ok()) {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("cannot make the OTLP exporter: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name("switchboard");
    }
    let resource =
        resource.with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("switchboard");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_tracked_inactivity(false);
    Ok(Some((layer, Exporter { provider })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_endpoint_turns_traces_on_and_the_standard_switches_turn_them_off() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert!(!wanted(env(&[])));
        assert!(!wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")])));
        assert!(wanted(env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")])));
        const ON: (&str, &str) = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(!wanted(env(&[ON, ("OTEL_SDK_DISABLED", "TRUE")])));
        assert!(!wanted(env(&[ON, ("OTEL_TRACES_EXPORTER", "none")])));
        assert!(wanted(env(&[ON, ("OTEL_TRACES_EXPORTER", "otlp")])));
    }
}

//! Traces over OTLP: the spans of every MCP request served and sent ([`switchboard::telemetry`])
//! exported with OpenTelemetry's SDK and OTLP exporter (HTTP, protobuf) when, and only when,
//! an endpoint is configured the standard way: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`,
//! `OTEL_SERVICE_NAME` (default `switchboard`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*` and
//! `OTEL_TRACES_SAMPLER` as the SDK reads them; `OTEL_SDK_DISABLED=true` or
//! `OTEL_TRACES_EXPORTER=none` turn it off. Spans are sent in batches from a thread of the
//! SDK's; the last ones are sent when the command ends ([`Exporter`]'s drop, at most
//! [`LAST_SPANS`]). Every value the config marks secret is taken out of a span's name,
//! attributes, events and status before it is sent ([`Redacting`]), as out of the logs.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanProcessor};

/// What takes the secrets out of a text (`None`: it holds none).
pub type Redact = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A span processor that redacts each span before `inner` has it.
struct Redacting<P> {
    inner: P,
    redact: Redact,
}

impl<P: std::fmt::Debug> std::fmt::Debug for Redacting<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redacting").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl<P> Redacting<P> {
    fn values(&self, attributes: &mut [KeyValue]) {
        for kv in attributes {
            if let Value::String(text) = &kv.value
                && let Some(clean) = (self.redact)(text.as_str())
            {
                kv.value = Value::String(clean.into());
            }
        }
    }
}

impl<P: SpanProcessor> SpanProcessor for Redacting<P> {
    fn on_start(&self, span: &mut Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        if let Some(clean) = (self.redact)(&span.name) {
            span.name = clean.into();
        }
        self.values(&mut span.attributes);
        for event in &mut span.events.events {
            if let Some(clean) = (self.redact)(&event.name) {
                event.name = clean.into();
            }
            self.values(&mut event.attributes);
        }
        for link in &mut span.links.links {
            self.values(&mut link.attributes);
        }
        if let opentelemetry::trace::Status::Error { description } = &span.status
            && let Some(clean) = (self.redact)(description)
        {
            span.status = opentelemetry::trace::Status::error(clean);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter while the command runs; dropping it sends what is left and stops it.
pub struct Exporter {
    provider: SdkTracerProvider,
}

/// The longest a command's end waits for its last spans to be sent (a collector that does not
/// answer must not hold the exit up; the SDK's default is 5 s).
const LAST_SPANS: Duration = Duration::from_secs(2);

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
/// environment asks for traces, each span redacted by `redact`; `Err` says why it could not be
/// made.
pub fn layer<S>(redact: Redact) -> Result<Option<(impl tracing_subscriber::Layer<S>, Exporter)>, String>
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
    let batch = BatchSpanProcessor::builder(exporter).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Redacting { inner: batch, redact })
        .with_resource(resource)
        .build();
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

    /// What the processor after the redaction gets.
    #[derive(Debug, Default, Clone)]
    struct Kept(Arc<std::sync::Mutex<Vec<SpanData>>>);

    impl SpanProcessor for Kept {
        fn on_start(&self, _: &mut Span, _: &opentelemetry::Context) {}
        fn on_end(&self, span: SpanData) {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(span);
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    #[test]
    fn secrets_never_leave_in_a_span() {
        use opentelemetry::trace::{Span as _, Tracer as _};
        let secrets = crate::logs::Secrets::default();
        secrets.add(&["hunter2-token".into()]);
        let held = secrets.clone();
        let redact: Redact = Arc::new(move |text: &str| held.redact(text));
        let kept = Kept::default();
        let provider =
            SdkTracerProvider::builder().with_span_processor(Redacting { inner: kept.clone(), redact }).build();
        let tracer = provider.tracer("test");
        let mut span = tracer.start("resources/read https://x/?key=hunter2-token");
        span.set_attribute(KeyValue::new("mcp.resource.uri", "https://x/?key=hunter2-token"));
        span.set_attribute(KeyValue::new("switchboard.server", "docs"));
        span.set_attribute(KeyValue::new("jsonrpc.request.id", 7));
        span.add_event("failed", vec![KeyValue::new("why", "401 for hunter2-token")]);
        span.set_status(opentelemetry::trace::Status::error("refused hunter2-token"));
        span.end();
        let spans = kept.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        assert_eq!(spans.len(), 1);
        let shown = format!("{:?}", spans[0]);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(spans[0].name, "resources/read https://x/?key=<redacted>");
        let attr = |key: &str| spans[0].attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.clone());
        assert_eq!(attr("mcp.resource.uri"), Some(Value::from("https://x/?key=<redacted>")));
        assert_eq!(attr("switchboard.server"), Some(Value::from("docs")), "the rest as it was");
        assert_eq!(attr("jsonrpc.request.id"), Some(Value::I64(7)));
    }
}

//! Traces: a `tracing` span around each MCP request, named and attributed as OpenTelemetry's
//! MCP semantic conventions say (`{mcp.method.name} {target}`; `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`, `jsonrpc.request.id`,
//! `mcp.session.id`, `mcp.protocol.version`, `network.transport`, `error.type`), and the W3C
//! trace context (`traceparent`, `tracestate`) read from and put into a request's `_meta`
//! (SEP-414) and HTTP headers.
//!
//! The hub makes a client span around every request it sends a server (a tool call, a prompt,
//! a resource read, each page of a list), a child of whatever span is current, and puts the
//! span's context in the request's `_meta` (which reaches stdio servers too) and, over HTTP, in
//! its `traceparent` header. The gateway makes a server span around every request it serves,
//! with the caller's context as its parent.
//!
//! Spans have the target [`TARGET`] at INFO level. Nothing is exported by the library: a
//! program that wants the spans installs `tracing-opentelemetry`'s layer with a tracer of its
//! own (the CLI does when `OTEL_EXPORTER_OTLP_ENDPOINT` is set). Without one, or with the target
//! filtered out, a span is never made and no context is sent.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rmcp::model::{ClientRequest, MetaObject};
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span this module makes: a program filters its traces with it
/// (`mcp=info`).
pub const TARGET: &str = "mcp";

/// The side of a request a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A request this program sends (the hub to a server).
    Client,
    /// A request this program serves (the gateway to its clients).
    Server,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Client => "client",
            Kind::Server => "server",
        }
    }
}

/// How the request travels (`network.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A pipe: stdio.
    Pipe,
    /// TCP: Streamable HTTP.
    Tcp,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// What a request is about: its method and target, for a span's name and attributes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Operation<'a> {
    /// `tools/call`, `resources/read`, …
    pub method: &'a str,
    /// The tool a `tools/call` calls.
    pub tool: Option<&'a str>,
    /// The prompt a `prompts/get` gets.
    pub prompt: Option<&'a str>,
    /// The resource a `resources/read` (or a subscription) is about.
    pub resource: Option<&'a str>,
}

impl<'a> Operation<'a> {
    /// The operation `request` asks for.
    pub fn of(request: &'a ClientRequest) -> Operation<'a> {
        let mut op = Operation { method: request.method(), tool: None, prompt: None, resource: None };
        match request {
            ClientRequest::CallToolRequest(r) => op.tool = Some(&r.params.name),
            ClientRequest::GetPromptRequest(r) => op.prompt = Some(&r.params.name),
            ClientRequest::ReadResourceRequest(r) => op.resource = Some(&r.params.uri),
            #[allow(deprecated)]
            ClientRequest::SubscribeRequest(r) => op.resource = Some(&r.params.uri),
            #[allow(deprecated)]
            ClientRequest::UnsubscribeRequest(r) => op.resource = Some(&r.params.uri),
            _ => {}
        }
        op
    }

    /// A request of `method` with no tool, prompt or resource.
    pub fn method(method: &'a str) -> Operation<'a> {
        Operation { method, tool: None, prompt: None, resource: None }
    }

    /// A call of `tool`.
    pub fn tool(tool: &'a str) -> Operation<'a> {
        Operation { tool: Some(tool), ..Operation::method("tools/call") }
    }

    /// A `prompts/get` of `prompt`.
    pub fn prompt(prompt: &'a str) -> Operation<'a> {
        Operation { prompt: Some(prompt), ..Operation::method("prompts/get") }
    }

    /// A request of `method` about the resource `uri`.
    pub fn resource(method: &'a str, uri: &'a str) -> Operation<'a> {
        Operation { resource: Some(uri), ..Operation::method(method) }
    }

    /// The span's name: the method, then the tool or prompt (a resource's URI stays an
    /// attribute: too many of them for a name).
    fn name(&self) -> String {
        match self.tool.or(self.prompt) {
            Some(target) => format!("{} {target}", self.method),
            None => self.method.to_string(),
        }
    }
}

/// A span for one request: `kind` (client or server) of `op` over `transport`. Its other
/// attributes are recorded as they become known ([`Span::record`](tracing::Span::record)):
/// `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version`, `switchboard.server` (the
/// upstream server), `switchboard.principal` (who asked), and the outcome ([`failed`],
/// [`tool_error`]). A disabled span (no layer wants [`TARGET`]) costs a check.
pub fn span(kind: Kind, op: &Operation<'_>, transport: Transport) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp",
        "otel.name" = Empty,
        "otel.kind" = kind.as_str(),
        "otel.status_code" = Empty,
        "mcp.method.name" = op.method,
        "gen_ai.operation.name" = Empty,
        "gen_ai.tool.name" = op.tool,
        "gen_ai.prompt.name" = op.prompt,
        "mcp.resource.uri" = op.resource,
        "jsonrpc.request.id" = Empty,
        "mcp.session.id" = Empty,
        "mcp.protocol.version" = Empty,
        "network.transport" = transport.as_str(),
        "network.protocol.name" = Empty,
        "error.type" = Empty,
        "rpc.response.status_code" = Empty,
        "switchboard.server" = Empty,
        "switchboard.principal" = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", op.name());
        if op.tool.is_some() {
            span.record("gen_ai.operation.name", "execute_tool");
        }
        if transport == Transport::Tcp {
            span.record("network.protocol.name", "http");
        }
    }
    span
}

/// Marks `span` failed: `error_type` (the hub's error kind, or a JSON-RPC code), and the code
/// of a JSON-RPC error when there is one.
pub fn failed(span: &tracing::Span, error_type: &str, code: Option<i32>) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
    if let Some(code) = code {
        span.record("rpc.response.status_code", code.to_string());
    }
}

/// Marks `span` as a tool call whose result said `isError` (a successful JSON-RPC response
/// that is a failure all the same).
pub fn tool_error(span: &tracing::Span) {
    failed(span, "tool_error", None);
}

/// Puts `span`'s trace context in `meta` (`traceparent`, and `tracestate` when there is one),
/// replacing what was there; nothing when the span is not traced.
pub fn inject(span: &tracing::Span, meta: &mut MetaObject) {
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    let span_ref = context.span();
    let sc = span_ref.span_context();
    if !sc.is_valid() {
        return;
    }
    meta.set_traceparent(traceparent(sc));
    let state = sc.trace_state().header();
    if !state.is_empty() {
        meta.set_tracestate(state);
    }
}

/// The trace id of `span` (32 hex digits), when it is traced: the audit record of a call
/// carries it, so that a record leads to its trace.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_ref = context.span();
    let sc = span_ref.span_context();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// Makes `span` a child of the caller's trace: the context in the request's `_meta` when it
/// has a valid one (the conventions prefer it), else the HTTP headers'; when both are there
/// and differ, the header's becomes a link. Returns whether a parent was found.
pub fn adopt(span: &tracing::Span, meta: &MetaObject, headers: Option<&http::HeaderMap>) -> bool {
    if span.is_disabled() {
        return false;
    }
    let header = |name: &str| headers.and_then(|h| h.get(name)).and_then(|v| v.to_str().ok());
    let from_meta = meta.get_traceparent().and_then(|p| parse(p, meta.get_tracestate()));
    let from_header = header("traceparent").and_then(|p| parse(p, header("tracestate")));
    let (parent, link) = match (from_meta, from_header) {
        (Some(m), Some(h)) if m.trace_id() != h.trace_id() || m.span_id() != h.span_id() => (m, Some(h)),
        (Some(m), _) => (m, None),
        (None, Some(h)) => (h, None),
        (None, None) => return false,
    };
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
    if let Some(link) = link {
        span.add_link(link);
    }
    true
}

/// `traceparent` for `sc` (W3C Trace Context, version 00).
fn traceparent(sc: &SpanContext) -> String {
    format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8())
}

/// A remote span context from a `traceparent` (and `tracestate`): None when it is not a valid
/// one (W3C Trace Context: version `ff` invalid, ids not all zeros, lower-case hex; a later
/// version may add fields after the flags).
fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex =
        |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let state = tracestate.and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
    Some(SpanContext::new(trace_id, span_id, TraceFlags::new(flags) & TraceFlags::SAMPLED, true, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
    use tracing_subscriber::layer::SubscriberExt;

    /// Runs `f` with a tracer that keeps its spans, and returns them.
    fn traced(f: impl FnOnce()) -> Vec<SpanData> {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, f);
        let _ = provider.force_flush();
        exporter.get_finished_spans().unwrap_or_default()
    }

    fn attribute(span: &SpanData, key: &str) -> Option<String> {
        span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
    }

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    #[test]
    fn traceparents_are_read_as_the_w3c_says() {
        let sc = parse(PARENT, Some("vendor=1")).expect("valid");
        assert_eq!(sc.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert!(sc.is_sampled() && sc.is_remote());
        assert_eq!(sc.trace_state().get("vendor"), Some("1"));
        assert_eq!(traceparent(&sc), PARENT);
        for bad in [
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "not a traceparent",
        ] {
            assert!(parse(bad, None).is_none(), "{bad}");
        }
        // A later version may add fields.
        assert!(parse("01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-later", None).is_some());
    }

    #[test]
    fn a_served_request_is_a_child_of_meta_rather_than_the_header_and_its_upstream_request_of_it() {
        let mut sent = MetaObject::new();
        let spans = traced(|| {
            let mut meta = MetaObject::new();
            meta.set_traceparent(PARENT);
            let mut headers = http::HeaderMap::new();
            let other = "00-11111111111111111111111111111111-2222222222222222-01";
            headers.insert("traceparent", http::HeaderValue::from_static(other));
            let request: ClientRequest = serde_json::from_value(serde_json::json!({
                "method": "tools/call", "params": {"name": "echo", "arguments": {}}
            }))
            .expect("a request");
            let served = span(Kind::Server, &Operation::of(&request), Transport::Tcp);
            assert!(adopt(&served, &meta, Some(&headers)));
            let _in = served.enter();
            let upstream = span(Kind::Client, &Operation::of(&request), Transport::Pipe);
            inject(&upstream, &mut sent);
            tool_error(&upstream);
            assert_eq!(trace_id(&upstream).as_deref(), Some("0af7651916cd43dd8448eb211c80319c"));
        });
        assert_eq!(spans.len(), 2, "{spans:?}");
        let client = spans.iter().find(|s| s.span_kind == opentelemetry::trace::SpanKind::Client).expect("client span");
        let server = spans.iter().find(|s| s.span_kind == opentelemetry::trace::SpanKind::Server).expect("server span");
        assert_eq!(server.name, "tools/call echo");
        assert_eq!(server.span_context.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(server.parent_span_id.to_string(), "00f067aa0ba902b7");
        assert_eq!(server.links.len(), 1, "the header's context is a link");
        assert_eq!(client.parent_span_id, server.span_context.span_id());
        assert_eq!(attribute(client, "gen_ai.tool.name").as_deref(), Some("echo"));
        assert_eq!(attribute(client, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert_eq!(attribute(client, "network.transport").as_deref(), Some("pipe"));
        assert_eq!(attribute(server, "network.transport").as_deref(), Some("tcp"));
        assert_eq!(attribute(client, "error.type").as_deref(), Some("tool_error"));
        assert_eq!(client.status, opentelemetry::trace::Status::error(""));
        let expected = format!("00-0af7651916cd43dd8448eb211c80319c-{}-01", client.span_context.span_id());
        assert_eq!(sent.get_traceparent(), Some(expected.as_str()));
    }

    /// Without OpenTelemetry's layer (a program that only logs, or none at all), a span has no
    /// trace context: nothing goes in `_meta`. (Whether it is made at all depends on the
    /// subscribers of the whole process, which other tests' scoped ones change.)
    #[test]
    fn without_a_tracer_nothing_is_sent() {
        let request = ClientRequest::ListToolsRequest(Default::default());
        let check = || {
            let mut meta = MetaObject::new();
            let s = span(Kind::Client, &Operation::of(&request), Transport::Tcp);
            inject(&s, &mut meta);
            assert!(meta.get_traceparent().is_none());
            assert!(trace_id(&s).is_none());
        };
        check();
        tracing::subscriber::with_default(tracing_subscriber::registry(), check);
    }
}

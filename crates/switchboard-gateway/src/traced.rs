//! Every request the gateway serves in a span of OpenTelemetry's MCP conventions
//! ([`switchboard::telemetry`]): a server span named `{mcp.method.name} {target}`, a child of
//! the caller's trace (`_meta.traceparent` first, else the HTTP header), with the session, the
//! protocol version, who asked, and how it ended (a JSON-RPC error's code, `tool_error` for a
//! result that says `isError`). The hub's client spans of the same request, to the upstream
//! server, are its children; the call's handler records which server that was
//! (`switchboard.server`, [`upstream`]).

use std::future::Future;

use rmcp::ErrorData as McpError;
use rmcp::service::{RequestContext, RoleServer};
use switchboard::telemetry::{self, Kind, Operation, Transport};
use tracing::Instrument;

/// The span of one request `op` served over `transport`, its attributes read from `ctx` (its
/// `_meta`, its HTTP request's headers, who signed in). Disabled, and made for nothing, when no
/// tracer wants it.
pub(crate) fn span(op: &Operation<'_>, transport: Transport, ctx: &RequestContext<RoleServer>) -> tracing::Span {
    let span = telemetry::span(Kind::Server, op, transport);
    if span.is_disabled() {
        return span;
    }
    let parts = ctx.extensions.get::<http::request::Parts>();
    telemetry::adopt(&span, &ctx.meta, parts.map(|p| &p.headers));
    span.record("jsonrpc.request.id", tracing::field::display(&ctx.id));
    if let Some(session) = parts.and_then(|p| p.headers.get("mcp-session-id")).and_then(|v| v.to_str().ok()) {
        span.record("mcp.session.id", session);
    }
    if let Some(version) = ctx.meta.protocol_version().or_else(|| ctx.protocol_version()) {
        span.record("mcp.protocol.version", version.as_str());
    }
    if let Some(principal) = crate::caller::principal(ctx) {
        span.record("switchboard.principal", principal.subject.as_str());
    }
    span
}

/// `work` in `span`, its end recorded: a JSON-RPC error by its code; a result that is a
/// failure all the same (`failed_result`: a tool call's `isError`) as `tool_error`.
///
/// A combinator, not an `async fn`: an `async fn` keeps its argument beside the future it
/// awaits, so the request's future (about 10 KB) was held, and copied, twice over.
pub(crate) fn within<T>(
    span: tracing::Span,
    work: impl Future<Output = Result<T, McpError>>,
    failed_result: fn(&T) -> bool,
) -> impl Future<Output = Result<T, McpError>> {
    use futures::FutureExt;
    // A disabled span is entered for nothing (a check of its id on each poll).
    let record = (!span.is_disabled()).then(|| span.clone());
    work.instrument(span).map(move |result| {
        if let Some(span) = record {
            match &result {
                Ok(r) if failed_result(r) => telemetry::tool_error(&span),
                Ok(_) => {}
                Err(e) => telemetry::failed(&span, &e.code.0.to_string(), Some(e.code.0)),
            }
        }
        result
    })
}

/// A result that is never a failure of its own.
pub(crate) fn never<T>(_: &T) -> bool {
    false
}

/// Records on the request's span which upstream server it went to.
pub(crate) fn upstream(server: &str) {
    tracing::Span::current().record("switchboard.server", server);
}

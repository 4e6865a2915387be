"""py_server.py's server with its spans exported: the Python SDK makes a server span for every
request (its OpenTelemetry middleware, parented by the request's `_meta.traceparent`), and
OpenTelemetry's SDK sends them to `OTEL_EXPORTER_OTLP_ENDPOINT` as they end. One more tool,
`trace_header`, says which `traceparent` HTTP header the request came with.

`python py_traced.py` serves stdio; `python py_traced.py streamable-http PORT` serves HTTP.
"""
import os
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "python-peer")}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_server import mcp  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402


@mcp.tool()
def trace_header(ctx: Context) -> str:
    """The `traceparent` header of the HTTP request this call came in (empty over stdio)."""
    headers = ctx.headers or {}
    return headers.get("traceparent", "")


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails (a tool error: `isError`)."""
    raise ValueError(reason)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "streamable-http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")

//! An OTLP receiver of the tests' own: the HTTP endpoint an OpenTelemetry exporter sends
//! spans to (`POST /v1/traces`, protobuf), decoding each batch with the official protobuf
//! definitions (`opentelemetry-proto`) and keeping every span with the service that sent it.
//! Loopback only, a thread per connection, stopped when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

pub use opentelemetry_proto::tonic::trace::v1::Span;

/// A span as it arrived, with the `service.name` of the exporter that sent it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The resource's `service.name`.
    pub service: String,
    /// The span, decoded.
    pub span: Span,
}

impl Received {
    /// The span's attribute `key`, as text (strings as they are, numbers and booleans written).
    pub fn attr(&self, key: &str) -> Option<String> {
        attribute(&self.span.attributes, key)
    }

    /// Its trace id, in hex.
    pub fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    /// Its span id, in hex.
    pub fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }

    /// Its parent's span id, in hex (empty for a root).
    pub fn parent_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &AnyValue) -> Option<String> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| text(kv.value.as_ref()?))
}

/// The running receiver.
pub struct Receiver {
    port: u16,
    spans: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    /// Listens on a free loopback port.
    pub fn start() -> Receiver {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap_or_else(|e| panic!("the OTLP receiver: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (kept, stopped) = (spans.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Receiver { port, spans, stop }
    }

    /// The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Waits (up to `limit`) until the spans received satisfy `done`; returns them then,
    /// whether or not they do.
    pub fn wait(&self, limit: Duration, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let started = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) || started.elapsed() > limit {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread up so that it sees the stop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves one connection: each request's body decoded and kept, answered 200 (an empty
/// `ExportTraceServiceResponse`), until the exporter closes it.
fn serve(stream: TcpStream, kept: &Mutex<Vec<Received>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut out) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
        let (mut length, mut chunked) = (0usize, false);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
        }
        let body = if chunked { read_chunked(&mut reader) } else { read_exact(&mut reader, length) };
        let Some(body) = body else { return };
        let status = if path.ends_with("/v1/traces") {
            match ExportTraceServiceRequest::decode(body.as_slice()) {
                Ok(request) => {
                    keep(request, kept);
                    "200 OK"
                }
                Err(_) => "400 Bad Request",
            }
        } else {
            "404 Not Found"
        };
        let head = format!("HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n");
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}

fn read_exact(reader: &mut impl Read, length: usize) -> Option<Vec<u8>> {
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let chunk = read_exact(reader, size + 2)?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn keep(request: ExportTraceServiceRequest, kept: &Mutex<Vec<Received>>) {
    let mut kept = kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for resource_spans in request.resource_spans {
        let service =
            resource_spans.resource.as_ref().and_then(|r| attribute(&r.attributes, "service.name")).unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                kept.push(Received { service: service.clone(), span });
            }
        }
    }
}

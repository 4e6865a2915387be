//! The legacy HTTP+SSE client transport (protocol 2024-11-05), which rmcp no longer ships.
//!
//! The client opens `GET <url>` with `Accept: text/event-stream`; the server's first event,
//! `endpoint`, names the URL to `POST` each JSON-RPC message to (resolved against the SSE URL,
//! and refused unless it is on the same origin, so headers and tokens never go elsewhere);
//! replies and server requests arrive as `message` events on the stream. A legacy session
//! lives as long as its stream: when the stream ends the transport closes, and the hub's
//! next request starts a new session with a fresh handshake.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Url};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// How much of an error body a message quotes.
const BODY_QUOTED: usize = 200;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// The server answered with an HTTP error status.
    #[error("HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status {
        /// The status code.
        status: u16,
        /// The first bytes of the body.
        body: String,
        /// The `WWW-Authenticate` challenge, on 401.
        challenge: Option<String>,
    },
    /// The request did not get an HTTP answer.
    #[error(transparent)]
    Request(#[from] reqwest::Error),
    /// The GET answered, but not with an event stream.
    #[error("the server did not answer with an event stream (content type {0:?})")]
    NotEventStream(Option<String>),
    /// The stream ended or broke before the `endpoint` event.
    #[error("the event stream ended before the server named its message endpoint")]
    NoEndpoint,
    /// The `endpoint` event named a URL that is not usable.
    #[error("the server's message endpoint `{0}` is not a URL on the same origin as the SSE URL")]
    BadEndpoint(String),
    /// The stream ended; the session is over.
    #[error("the event stream closed")]
    Closed,
}

/// A legacy HTTP+SSE connection to one server.
pub struct SseClientTransport {
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    poster: Poster,
    stop: CancellationToken,
}

#[derive(Clone)]
struct Poster {
    client: Client,
    headers: HeaderMap,
    endpoint: watch::Receiver<Url>,
}

impl SseClientTransport {
    /// Opens the event stream at `url` and waits for the server's `endpoint` event. `headers`
    /// go with every request (the GET and each POST). An event over `max_event_bytes` ends
    /// the stream (it is never held whole).
    pub async fn connect(url: Url, headers: HeaderMap, max_event_bytes: usize) -> Result<Self, SseError> {
        let client = Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
        let mut request = client.get(url.clone()).headers(headers.clone());
        request = request.header(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response = request.send().await?;
        let response = check(response).await?;
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        if !content_type.as_deref().is_some_and(|c| c.starts_with("text/event-stream")) {
            return Err(SseError::NotEventStream(content_type));
        }
        let mut events = SseStream::from_bytes_stream(bounded(response.bytes_stream(), max_event_bytes));
        // Everything before the endpoint is kept in order and delivered after it.
        let mut early = Vec::new();
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    break resolve(&url, event.data.as_deref().unwrap_or("").trim())?;
                }
                Some(Ok(event)) => early.push(event),
                Some(Err(_)) | None => return Err(SseError::NoEndpoint),
            }
        };
        let (endpoint_tx, endpoint_rx) = watch::channel(endpoint);
        let (tx, incoming) = mpsc::channel(64);
        let stop = CancellationToken::new();
        let stop2 = stop.clone();
        tokio::spawn(async move {
            for event in early {
                deliver(&tx, event).await;
            }
            loop {
                let next = tokio::select! {
                    () = stop2.cancelled() => break,
                    next = events.next() => next,
                };
                match next {
                    Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                        match resolve(&url, event.data.as_deref().unwrap_or("").trim()) {
                            Ok(new) => {
                                let _ = endpoint_tx.send(new);
                            }
                            Err(e) => tracing::warn!("ignoring a new endpoint: {e}"),
                        }
                    }
                    Some(Ok(event)) => {
                        if !deliver(&tx, event).await {
                            break;
                        }
                    }
                    Some(Err(e)) => {
                        tracing::debug!("SSE stream broke: {e}");
                        break;
                    }
                    None => break,
                }
            }
            // Dropping `tx` ends `receive`: rmcp sees the transport closed.
        });
        Ok(SseClientTransport { incoming, poster: Poster { client, headers, endpoint: endpoint_rx }, stop })
    }
}

/// The body's bytes, ended with an error once one event (the bytes between blank lines) goes
/// over `max`.
fn bounded<D: AsRef<[u8]>, E: std::error::Error + Send + Sync + 'static>(
    body: impl futures::Stream<Item = Result<D, E>>,
    max: usize,
) -> impl futures::Stream<Item = Result<D, std::io::Error>> {
    // Bytes since the last blank line, and whether the last byte (CRs aside) ended a line.
    let state = (0usize, false, false);
    body.scan(state, move |(since, newline, over), chunk| {
        if *over {
            return futures::future::ready(None);
        }
        let item = chunk.map_err(std::io::Error::other).and_then(|bytes| {
            for &b in bytes.as_ref() {
                match b {
                    b'\r' => {}
                    b'\n' if *newline => *since = 0,
                    b'\n' => *newline = true,
                    _ => {
                        *newline = false;
                        *since += 1;
                    }
                }
                if *since > max {
                    tracing::warn!("an SSE event over max_message_bytes ({max}): closing the stream");
                    return Err(std::io::Error::other(format!("an event over max_message_bytes ({max})")));
                }
            }
            Ok(bytes)
        });
        *over = item.is_err();
        futures::future::ready(Some(item))
    })
}

/// For the fuzz layer: `chunks` through the bound and the SSE parser; the bytes let through.
#[cfg(test)]
pub(crate) fn fuzz_bounded(chunks: Vec<Vec<u8>>, max: usize) -> usize {
    let chunks: Vec<&'static [u8]> = chunks.into_iter().map(|c| &*Box::leak(c.into_boxed_slice())).collect();
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
    let through = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = through.clone();
    let bounded = bounded(body, max).map(move |r| {
        if let Ok(b) = &r {
            counted.fetch_add(b.len(), std::sync::atomic::Ordering::Relaxed);
        }
        r
    });
    let mut events = SseStream::from_bytes_stream(bounded);
    futures::executor::block_on(async { while events.next().await.is_some() {} });
    through.load(std::sync::atomic::Ordering::Relaxed)
}

/// Hands a `message` event (the default type) to the session; other events (pings...) are
/// skipped. Returns `false` when nobody listens any more.
async fn deliver(tx: &mpsc::Sender<ServerJsonRpcMessage>, event: sse_stream::Sse) -> bool {
    if !matches!(event.event.as_deref(), None | Some("message")) {
        return true;
    }
    let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else { return true };
    match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
        Ok(message) => tx.send(message).await.is_ok(),
        Err(e) => {
            tracing::debug!("skipping an SSE message that is not JSON-RPC: {e}");
            true
        }
    }
}

/// The endpoint named by the server, resolved against the SSE URL; same origin only.
fn resolve(base: &Url, endpoint: &str) -> Result<Url, SseError> {
    let url = base.join(endpoint).map_err(|_| SseError::BadEndpoint(endpoint.to_string()))?;
    if url.origin() != base.origin() {
        return Err(SseError::BadEndpoint(endpoint.to_string()));
    }
    Ok(url)
}

/// The response if its status is a success; otherwise the status, body prefix and challenge.
async fn check(response: reqwest::Response) -> Result<reqwest::Response, SseError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let challenge =
        response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = response.text().await.unwrap_or_default();
    let mut body: String = body.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if body.chars().count() > BODY_QUOTED {
        body = format!("{}…", body.chars().take(BODY_QUOTED).collect::<String>());
    }
    Err(SseError::Status { status: status.as_u16(), body: body.trim().to_string(), challenge })
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let poster = self.poster.clone();
        async move {
            let endpoint = poster.endpoint.borrow().clone();
            let response = poster
                .client
                .post(endpoint)
                .headers(poster.headers)
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .timeout(Duration::from_secs(60))
                .json(&item)
                .send()
                .await?;
            check(response).await.map(|_| ())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.stop.cancel();
        self.incoming.close();
        Ok(())
    }
}

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap_or_else(|e| panic!("{e}"));
        let ok = resolve(&base, "/messages?sessionId=abc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.as_str(), "http://127.0.0.1:3001/messages?sessionId=abc");
        let relative = resolve(&base, "messages").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(relative.as_str(), "http://127.0.0.1:3001/messages");
        assert!(resolve(&base, "http://evil.example/steal").is_err());
        assert!(resolve(&base, "https://127.0.0.1:3001/messages").is_err(), "another scheme is another origin");
    }
}

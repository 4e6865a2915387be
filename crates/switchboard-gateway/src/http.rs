//! The Streamable HTTP front: rmcp's `StreamableHttpService`, twice over one session manager,
//! behind a look at each request that decides what rmcp cannot decide per client:
//!
//! - The SSE priming event (an event with an id and empty `data:`, SEP-1699) only for clients
//!   of 2025-11-25 or later, as the TypeScript SDK does: a client of an earlier revision may
//!   `JSON.parse` every event's data and drop the server on the empty one (Gemini CLI 0.61,
//!   on `@modelcontextprotocol/sdk` 1.23, got no tools at all). The revision is the
//!   `initialize` request's `protocolVersion`, then the `MCP-Protocol-Version` header (absent
//!   before 2025-06-18: no priming).
//!   A session keeps the choice its `initialize` made ([`crate::sessions`]), which also caps
//!   how many sessions are kept.
//! - A request whose id is still in flight in the same session is answered with a JSON-RPC
//!   error at once (rmcp routes answers by id: one of the two would never come, and its POST
//!   would stay open with only keep-alive comments). The id is free again when the first
//!   request's response ends (or its client goes away).
//! - A request from a switchboard whose chain holds this hub's config already is answered 508
//!   Loop Detected (`switchboard::chain`): switchboard is not its own upstream.
//! - A session is its maker's (`sessions.rs`): every request that names it (a `POST`,
//!   the session's own stream or a request's, a `Last-Event-ID` resumption, a `DELETE`), by
//!   anyone else, here or at the replica serving it, is answered as a session that does not
//!   exist (404 `Session not found`, no id echoed), and the session goes on untouched. A
//!   `DELETE` of one's own session answers 200 (rmcp says 202, which the Python SDK takes
//!   for a failure).

use std::collections::HashSet;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use rmcp::model::RequestId;
use rmcp::transport::StreamableHttpService;
use tower_service::Service;

use crate::Session;
use crate::sessions::{MAKING, Making, Sessions};

type Inner = StreamableHttpService<Session, Sessions>;
type Response = http::Response<BoxBody<Bytes, Infallible>>;

/// Requests in flight, by session and id.
type InFlight = Arc<Mutex<HashSet<(Arc<str>, RequestId)>>>;

/// The first revision whose clients take the priming event.
const PRIMING_FROM: &str = "2025-11-25";

/// The `/mcp` service: see the module. A handle: axum clones the service for every request,
/// and this one holds two of rmcp's services and a dozen other shared parts (cloned and dropped
/// whole, they were a few percent of the gateway's CPU per call).
#[derive(Clone)]
pub struct HttpFront(Arc<Front>);

impl std::ops::Deref for HttpFront {
    type Target = Front;
    fn deref(&self) -> &Front {
        &self.0
    }
}

/// What an [`HttpFront`] holds.
pub struct Front {
    primed: Inner,
    plain: Inner,
    sessions: Arc<Sessions>,
    in_flight: InFlight,
    max_body: usize,
    /// The hub's config id: a request that passed through it already is refused.
    config_id: Arc<str>,
    /// A team's store, where sessions outlive the process ([`crate::durable`]).
    store: Option<switchboard::store::db::Database>,
    /// Where the call a `requestState` continues is ([`crate::replicas`]).
    replicas: Arc<crate::replicas::Replicas>,
    /// Where what it serves is counted.
    pub(crate) metrics: crate::metrics::GatewayMetrics,
}

impl std::fmt::Debug for HttpFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFront").finish_non_exhaustive()
    }
}

impl HttpFront {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        primed: Inner,
        plain: Inner,
        sessions: Arc<Sessions>,
        max_body: usize,
        config_id: &str,
        store: Option<switchboard::store::db::Database>,
        replicas: Arc<crate::replicas::Replicas>,
        metrics: crate::metrics::GatewayMetrics,
    ) -> HttpFront {
        let config_id = config_id.into();
        HttpFront(Arc::new(Front {
            primed,
            plain,
            sessions,
            in_flight: Arc::default(),
            max_body,
            config_id,
            store,
            replicas,
            metrics,
        }))
    }

    /// Where a request of the session `id` is served, on a team's store: here (with the
    /// kind of streams to resume it with, when this process does not hold it), at the replica
    /// serving it, or nowhere (the 404 of an unknown session, for another caller's).
    /// `passed`: another replica sent it here as to the one serving it.
    async fn route(&self, id: &str, caller: &str, passed: bool) -> Result<Route, Response> {
        let Some(db) = &self.store else { return Ok(Route::Here(None)) };
        if self.sessions.holds(id).await {
            return Ok(Route::Here(None));
        }
        let kept = match db.session(id).await {
            Ok(Some(kept)) => kept,
            Ok(None) => return Ok(Route::Here(None)),
            Err(e) => {
                tracing::warn!("resuming a session: {e}");
                return Ok(Route::Here(None));
            }
        };
        if kept.owner.as_deref().is_some_and(|o| o != caller) {
            tracing::info!("a session of another caller was asked for: refused");
            return Err(unknown_session());
        }
        let me = self.replicas.id();
        if let Some(serving) = kept.replica.as_deref().filter(|r| *r != me && !passed) {
            match self.replicas.address(serving).await {
                Ok(url) => return Ok(Route::There { replica: serving.to_string(), url, primed: kept.primed }),
                Err(why) => tracing::info!("session {id}: its replica {serving} {why}: taken over here"),
            }
        }
        Ok(self.take_over(id, kept.replica.as_deref(), kept.primed).await)
    }

    /// Makes this replica the one serving the session `id` (served by `from` until now), or
    /// routes to the replica that took it over first.
    async fn take_over(&self, id: &str, from: Option<&str>, primed: bool) -> Route {
        let Some(db) = &self.store else { return Route::Here(Some(primed)) };
        let me = self.replicas.id();
        if from == Some(me) {
            return Route::Here(Some(primed));
        }
        match db.take_session(id, from, me).await {
            Ok(true) => Route::Here(Some(primed)),
            // Another replica was first: it serves the session.
            Ok(false) => match db.session(id).await {
                Ok(Some(kept)) => match kept.replica.filter(|r| r != me) {
                    Some(replica) => match self.replicas.address(&replica).await {
                        Ok(url) => Route::There { replica, url, primed },
                        Err(_) => Route::Here(Some(primed)),
                    },
                    None => Route::Here(Some(primed)),
                },
                _ => Route::Here(Some(primed)),
            },
            Err(e) => {
                tracing::warn!("taking session {id} over: {e}");
                Route::Here(Some(primed))
            }
        }
    }

    /// After an `initialize` that made a session, on a team's store: whose it is, and that
    /// this replica serves it.
    async fn claim(&self, response: &Response, caller: &str, primed: bool) {
        let Some(db) = &self.store else { return };
        let Some(id) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) else { return };
        if let Err(e) = db.claim_session(id, caller, primed, self.replicas.id()).await {
            tracing::warn!("the session {id} will not outlive this process: {e}");
        }
    }

    /// Sends a request of a session served by another replica on to it; if that replica
    /// does not take the connection (killed a moment ago), this one takes the session over
    /// and serves the request (`Err` gives the request back, with the kind of streams).
    async fn pass_session(
        &self,
        id: &str,
        (replica, url, primed): (String, String, bool),
        parts: &http::request::Parts,
        body: Bytes,
        request_id: Option<&RequestId>,
    ) -> Result<Response, Option<bool>> {
        match self.replicas.send_to(&url, parts, body.clone(), request_id).await {
            Ok(response) => Ok(response),
            Err(e) if e.is_connect() => {
                tracing::info!("session {id}: its replica {replica} at {url} refused the connection: taken over here");
                match self.take_over(id, Some(&replica), primed).await {
                    Route::Here(primed) => Err(primed),
                    // Another replica took it over meanwhile: one more try, there.
                    Route::There { url, .. } => match self.replicas.send_to(&url, parts, body, request_id).await {
                        Ok(response) => Ok(response),
                        Err(_) => Err(Some(primed)),
                    },
                }
            }
            Err(e) => Ok(crate::replicas::error(
                request_id,
                -32603,
                &format!("the replica serving this session, at {url}, did not answer: {e}"),
            )),
        }
    }

    /// The HTTP sessions kept now (clients of 2025-11-25 and earlier).
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Hands the request to rmcp's service that primes, or the one that does not; a session
    /// it makes (or resumes) primes the same way and is `owner`'s.
    async fn pass<B>(&self, primed: bool, owner: &Arc<str>, request: http::Request<B>) -> Response
    where
        B: http_body::Body + Send + 'static,
        B::Error: std::fmt::Display,
        B::Data: Send + 'static,
    {
        let mut service = if primed { self.primed.clone() } else { self.plain.clone() };
        let making = Making { primed, owner: owner.clone() };
        ok(MAKING.scope(making, service.call(request)).await)
    }

    /// A `DELETE`: ends the session (held here, or `resumed` from the store to be ended), 200
    /// as the SDKs expect.
    async fn end(&self, resumed: Option<bool>, caller: &Arc<str>, request: http::Request<Full<Bytes>>) -> Response {
        let mut response = self.pass(resumed.unwrap_or(true), caller, request).await;
        if response.status() == http::StatusCode::ACCEPTED {
            *response.status_mut() = http::StatusCode::OK;
        }
        response
    }

    async fn handle<B>(self, request: http::Request<B>) -> Response
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        // A switchboard whose hub reads this one's config, asking it: a loop (`switchboard::chain`).
        let chain = request.headers().get(switchboard::chain::CHAIN_HEADER).and_then(|v| v.to_str().ok());
        let refused =
            chain.and_then(|c| switchboard::chain::refusal(&switchboard::chain::Chain::parse(c), &self.config_id));
        if let Some(why) = refused {
            tracing::warn!("{why}");
            let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": why}});
            return json_response(http::StatusCode::LOOP_DETECTED, &body);
        }
        let header_version =
            request.headers().get("mcp-protocol-version").and_then(|v| v.to_str().ok()).map(str::to_string);
        let session = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(Arc::<str>::from);
        // Who calls (a principal's key; "" for a caller who did not sign in): a session of a
        // team's store is resumed for its owner only.
        let caller: Arc<str> =
            request.extensions().get::<switchboard::identity::Principal>().map(|p| p.key()).unwrap_or_default().into();
        // The body whole (none for a GET or a DELETE): a request may be sent on to another
        // replica, or looked at below.
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return too_large_or_bad(&e.to_string(), self.max_body),
        };
        let post = parts.method == http::Method::POST;
        let peek = if post { serde_json::from_slice::<Peek>(&bytes).ok() } else { None };
        // A request (a method and an id) is timed until its answer is sent ([`crate::metrics`]).
        let timing = peek.as_ref().filter(|p| p.id.is_some()).and_then(|p| p.method.clone());
        let started = std::time::Instant::now();
        let response: Response = async {
            // A session is its maker's: anyone else is told it does not exist.
            if let Some(id) = &session
                && self.sessions.owner(id).is_some_and(|owner| owner != caller)
            {
                tracing::info!("a request on a session of another caller: refused as unknown");
                return unknown_session();
            }
            // A session's requests are served by one replica (on a team's store): here, or there.
            let mut resumed = None;
            if let Some(id) = &session {
                let passed = self.replicas.passed_by(&parts.headers).is_some();
                match self.route(id, &caller, passed).await {
                    Err(refused) => return refused,
                    // Neither here nor in the store: one answer for every unknown session.
                    Ok(Route::Here(None)) if !self.sessions.holds(id).await => return unknown_session(),
                    Ok(Route::Here(kind)) => resumed = kind,
                    Ok(Route::There { replica, url, primed }) => {
                        let request_id = peek.as_ref().and_then(|p| p.id.as_ref());
                        match self.pass_session(id, (replica, url, primed), &parts, bytes.clone(), request_id).await {
                            Ok(response) => return response,
                            Err(kind) => resumed = kind,
                        }
                    }
                }
            }
            // A session resumed here catches up on its first request (`session/memory.rs`).
            if resumed.is_some()
                && let Some(id) = &session
            {
                self.replicas.resumed(id);
            }
            let mut parts = parts;
            if parts.method == http::Method::DELETE {
                return self.end(resumed, &caller, http::Request::from_parts(parts, Full::new(bytes))).await;
            }
            if !post {
                let primed = resumed.unwrap_or_else(|| header_version.is_some_and(|v| v.as_str() >= PRIMING_FROM));
                // A request's stream asked for again ([`crate::resume`]).
                let last = parts.headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_string);
                let Some(tagged) = last.as_deref().and_then(crate::resume::parse) else {
                    // The session's own stream: another replica's ids mean nothing here.
                    match last.as_deref().and_then(crate::resume::parse_stream) {
                        Some((rmcp, replica)) if replica == self.replicas.id() => {
                            if let Ok(value) = http::HeaderValue::from_str(rmcp) {
                                parts.headers.insert("last-event-id", value);
                            }
                        }
                        Some(_) => {
                            parts.headers.remove("last-event-id");
                        }
                        None => {}
                    }
                    let suffix = crate::resume::stream_tag(self.replicas.id());
                    let response = self.pass(primed, &caller, http::Request::from_parts(parts, Full::new(bytes))).await;
                    let events = response
                        .headers()
                        .get(http::header::CONTENT_TYPE)
                        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                    return response.map(|body| if events { crate::resume::tagged(body, suffix) } else { body });
                };
                if tagged.replica != self.replicas.id() {
                    return crate::resume::lost(&tagged);
                }
                let suffix = crate::resume::tag(self.replicas.id(), &tagged.request);
                if let Ok(value) = http::HeaderValue::from_str(tagged.rmcp) {
                    parts.headers.insert("last-event-id", value);
                }
                let response = self.pass(primed, &caller, http::Request::from_parts(parts, Full::new(bytes))).await;
                return response.map(|body| crate::resume::tagged(crate::resume::or_lost(body, &tagged), suffix));
            }
            let initialize = matches!(&peek, Some(Peek { method: Some(m), .. }) if m == "initialize");
            let version = match &peek {
                Some(Peek { method: Some(m), params: Some(p), .. }) if m == "initialize" => p.protocol_version.clone(),
                _ => header_version,
            };
            let primed = resumed.unwrap_or_else(|| version.is_some_and(|v| v.as_str() >= PRIMING_FROM));
            // Answers to a round of a call another replica holds: passed on to it.
            if let Some(state) = peek.as_ref().and_then(|p| p.params.as_ref()).and_then(|p| p.request_state.as_deref())
            {
                let id = peek.as_ref().and_then(|p| p.id.as_ref());
                match self.replicas.open(state, &caller) {
                    Err(e) => return crate::replicas::error(id, -32602, &e.to_string()),
                    Ok(place) if place.replica != self.replicas.id() => {
                        if self.replicas.passed_by(&parts.headers).is_some() {
                            let why =
                                format!("this requestState's call is held by replica {}, not here", place.replica);
                            return crate::replicas::error(id, -32602, &why);
                        }
                        return self.replicas.pass_on(&place.replica, &parts, bytes, id).await;
                    }
                    Ok(_) => {}
                }
            }
            let request = http::Request::from_parts(parts, Full::new(bytes));
            if initialize && session.is_none() {
                let response = self.pass(primed, &caller, request).await;
                self.claim(&response, &caller, primed).await;
                return response;
            }
            // A request (a method and an id) in a session: its id must not be one in flight.
            let key = match (session, peek) {
                (Some(session), Some(Peek { method: Some(_), id: Some(id), .. })) => Some((session, id)),
                _ => None,
            };
            let Some(key) = key else { return self.pass(primed, &caller, request).await };
            if !self.in_flight.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone()) {
                return in_flight(&key.1);
            }
            let suffix = crate::resume::tag(self.replicas.id(), &serde_json::to_string(&key.1).unwrap_or_default());
            let guard = Free { set: self.in_flight.clone(), key: Some(key) };
            let response = self.pass(primed, &caller, request).await;
            let events = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            response.map(|body| {
                let body = if events { crate::resume::tagged(body, suffix) } else { body };
                Holding::boxed(body, guard)
            })
        }
        .await;
        match timing {
            Some(method) => timed(response, method, started, self.metrics.clone()),
            None => response,
        }
    }
}

impl<B> Service<http::Request<B>> for HttpFront
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::fmt::Display + Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

fn ok(r: Result<Response, Infallible>) -> Response {
    match r {
        Ok(r) => r,
        Err(e) => match e {},
    }
}

/// `response` with its request timed in `metrics` until its body is sent or dropped.
fn timed(
    response: Response,
    method: String,
    started: std::time::Instant,
    metrics: crate::metrics::GatewayMetrics,
) -> Response {
    let status = response.status();
    let error = (status.is_client_error() || status.is_server_error()).then(|| status.as_u16().to_string());
    let done = Served { metrics, method, error: Some(error), started };
    response.map(|body| Holding::boxed(body, done))
}

/// Observes its request's duration when dropped.
struct Served {
    metrics: crate::metrics::GatewayMetrics,
    method: String,
    error: Option<Option<String>>,
    started: std::time::Instant,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(error) = self.error.take() {
            self.metrics.served(&self.method, error, self.started.elapsed());
        }
    }
}

/// Where a request of a session is served.
enum Route {
    /// Here; resumed with these streams (primed or not) when this process does not hold it.
    Here(Option<bool>),
    /// At the replica serving it.
    There { replica: String, url: String, primed: bool },
}

/// What is looked at in a request body (the rest is skipped, not kept).
#[derive(serde::Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<RequestId>,
    params: Option<PeekParams>,
}

#[derive(serde::Deserialize)]
struct PeekParams {
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
    /// The round a 2026-07-28 request answers.
    #[serde(rename = "requestState")]
    request_state: Option<String>,
}

/// The answer to a request whose id is in flight in its session.
fn in_flight(id: &RequestId) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32600,
        "message": format!("Invalid Request: a request with id {id} is still in flight in this session"),
    }});
    json_response(http::StatusCode::OK, &body)
}

fn too_large_or_bad(why: &str, max: usize) -> Response {
    let (status, message) = if why.contains("length limit") {
        (http::StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is over {max} bytes"))
    } else {
        (http::StatusCode::BAD_REQUEST, format!("the request body could not be read: {why}"))
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}});
    json_response(status, &body)
}

/// The 404 of a session this gateway does not know (its client starts a new one).
fn unknown_session() -> Response {
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Session not found"}});
    json_response(http::StatusCode::NOT_FOUND, &body)
}

fn json_response(status: http::StatusCode, body: &serde_json::Value) -> Response {
    let bytes = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
    let mut response = http::Response::new(BoxBody::new(Full::new(bytes)));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// Frees a request's id in its session when dropped.
struct Free {
    set: InFlight,
    key: Option<(Arc<str>, RequestId)>,
}

impl Drop for Free {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.set.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
        }
    }
}

/// A response body holding `T` until it has ended or been dropped (a request's id in flight,
/// a request being timed).
struct Holding<T> {
    body: BoxBody<Bytes, Infallible>,
    _held: T,
}

impl<T: Send + Sync + Unpin + 'static> Holding<T> {
    fn boxed(body: BoxBody<Bytes, Infallible>, held: T) -> BoxBody<Bytes, Infallible> {
        BoxBody::new(Holding { body, _held: held })
    }
}

impl<T: Unpin> http_body::Body for Holding<T> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_peeked_at_without_keeping_the_rest() {
        let p: Peek = serde_json::from_str(
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"x":[1,2]}}}"#,
        )
        .unwrap_or_else(|_| unreachable!());
        assert_eq!(p.method.as_deref(), Some("initialize"));
        assert_eq!(p.params.and_then(|p| p.protocol_version).as_deref(), Some("2025-06-18"));
        assert_eq!(p.id, Some(RequestId::String("a".into())));
        assert!("2025-06-18" < PRIMING_FROM && "2026-07-28" >= PRIMING_FROM && "2025-11-25" >= PRIMING_FROM);
    }
}

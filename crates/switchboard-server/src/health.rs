//! Liveness, readiness and the drain, for a load balancer and for Kubernetes.
//!
//! - `GET /healthz`: the process serves (200 while it does). Nothing else is looked at, so a
//!   store or a server that fails never gets a replica restarted for it.
//! - `GET /readyz`: whether to send it requests: 200 once every server's first attempt to
//!   connect is over and the team's store (if any) answers; 503 with the reasons while it
//!   starts, while the store does not answer, and from the moment it drains.
//!
//! Both answer without a token and on any `Host` (a load balancer or the kubelet asks by
//! address), and say nothing of the servers or the store beyond those words.
//!
//! The drain: [`Health::drain`] marks the server as draining (`/readyz` says 503 from then on,
//! so the balancer sends new requests elsewhere), and waits until no request is in flight and
//! no call waits for its client's answers, or the deadline. Requests in flight are counted
//! from their arrival to the end of their response's body; a stream that only waits for news
//! (a `GET` event stream, a 2026-07-28 `subscriptions/listen`) does not count: it ends with the
//! server, and its client opens it again elsewhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use switchboard::Hub;
use tokio_util::sync::CancellationToken;

/// How long the store's answer to a readiness check is kept (checks come every second or so
/// from each balancer; one query answers them all).
const STORE_KEEP: Duration = Duration::from_secs(1);
/// How long the store may take to answer a readiness check.
const STORE_WAIT: Duration = Duration::from_secs(2);

/// What the health routes and the drain look at.
pub(crate) struct Health {
    hub: Hub,
    gateway: Option<switchboard_gateway::Gateway>,
    draining: CancellationToken,
    in_flight: AtomicUsize,
    changed: tokio::sync::Notify,
    /// The store's last answer to a readiness check, and when.
    store_seen: tokio::sync::Mutex<Option<(Instant, bool)>>,
}

impl Health {
    pub(crate) fn new(hub: &Hub, gateway: Option<&switchboard_gateway::Gateway>) -> Arc<Health> {
        Arc::new(Health {
            hub: hub.clone(),
            gateway: gateway.cloned(),
            draining: CancellationToken::new(),
            in_flight: AtomicUsize::new(0),
            changed: tokio::sync::Notify::new(),
            store_seen: tokio::sync::Mutex::new(None),
        })
    }

    /// `/healthz` and `/readyz`.
    pub(crate) fn routes(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/healthz", axum::routing::get(live))
            .route("/readyz", axum::routing::get(ready))
            .with_state(self.clone())
    }

    /// Requests in flight and calls waiting for their client's answers.
    pub(crate) fn busy(&self) -> usize {
        self.in_flight.load(Ordering::Acquire) + self.gateway.as_ref().map_or(0, |g| g.parked())
    }

    /// Marks the server as draining, then waits until nothing is busy or `deadline` passed;
    /// says what was left.
    pub(crate) async fn drain(&self, deadline: Duration) {
        self.draining.cancel();
        if deadline.is_zero() {
            return;
        }
        let started = Instant::now();
        tracing::info!("draining: no new requests are sent here; waiting for {} in flight", self.busy());
        let waited = tokio::time::timeout(deadline, async {
            while self.busy() > 0 {
                // A parked call ends without a request: look again now and then as well.
                let _ = tokio::time::timeout(Duration::from_millis(50), self.changed.notified()).await;
            }
        })
        .await;
        match waited {
            Ok(()) => tracing::info!("drained in {:?}", started.elapsed()),
            Err(_) => {
                tracing::warn!("{} still in flight after the drain's {deadline:?}: they are cancelled", self.busy())
            }
        }
    }

    fn done(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Why it should not be sent requests now (empty: ready).
    async fn unready(&self) -> Vec<&'static str> {
        let mut why = Vec::new();
        if self.draining.is_cancelled() {
            why.push("draining: it is stopping");
        }
        if !self.hub.first_start_over() {
            why.push("servers are still starting");
        }
        if let Some(store) = self.hub.store() {
            let mut seen = self.store_seen.lock().await;
            let answered = match *seen {
                Some((at, answered)) if at.elapsed() < STORE_KEEP => answered,
                _ => {
                    let answered = match store.ping(STORE_WAIT).await {
                        Some(Ok(())) => true,
                        Some(Err(e)) => {
                            tracing::warn!("readiness: the team's store: {e}");
                            false
                        }
                        None => {
                            tracing::warn!("readiness: the team's store did not answer within {STORE_WAIT:?}");
                            false
                        }
                    };
                    *seen = Some((Instant::now(), answered));
                    answered
                }
            };
            if !answered {
                why.push("the team's store does not answer");
            }
        }
        why
    }
}

async fn live() -> Response {
    (no_store(), axum::Json(serde_json::json!({"live": true}))).into_response()
}

async fn ready(State(health): State<Arc<Health>>) -> Response {
    let why = health.unready().await;
    let status = if why.is_empty() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, no_store(), axum::Json(serde_json::json!({"ready": why.is_empty(), "why": why}))).into_response()
}

fn no_store() -> [(header::HeaderName, &'static str); 1] {
    [(header::CACHE_CONTROL, "no-store")]
}

/// Whether `request` only waits for news (it does not hold a drain up).
fn waits_for_news(request: &Request) -> bool {
    let headers = request.headers();
    let streams =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/event-stream"));
    (request.method() == Method::GET && streams)
        || headers.get("mcp-method").is_some_and(|m| m.as_bytes() == b"subscriptions/listen")
}

/// Counts a request in flight until its response's body has been sent (or dropped).
pub(crate) async fn count(State(health): State<Arc<Health>>, request: Request, next: Next) -> Response {
    if waits_for_news(&request) {
        return next.run(request).await;
    }
    health.in_flight.fetch_add(1, Ordering::AcqRel);
    let guard = InFlight(health);
    let response = next.run(request).await;
    response.map(|inner| axum::body::Body::new(Counted { inner, _guard: guard }))
}

/// A response's body, with its request counted in flight until it is dropped (sent whole,
/// or its connection gone). Its size is told on as it was, so a response keeps its
/// `Content-Length`.
struct Counted {
    inner: axum::body::Body,
    _guard: InFlight,
}

impl hyper::body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// One request in flight, counted until dropped.
struct InFlight(Arc<Health>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.done();
    }
}

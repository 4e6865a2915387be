//! Serving HTTP/1.1 on a listener within bounds, for `serve` and `gateway --http`.
//!
//! - `TCP_NODELAY` on every accepted socket. Without it, a response written in several pieces
//!   (an event stream's events, the headers then the body) meets the client's delayed ACK:
//!   Nagle's algorithm holds the second piece until the first is acknowledged, about 40 ms
//!   later, so a sequential client got one call per 44 ms.
//! - A time limit on a request's headers, which is also how long a keep-alive connection may
//!   sit idle between requests ([`Limits::header_timeout`]): a connection that never sends a
//!   byte, or sends its headers a byte at a time, is closed.
//! - A cap on connections ([`Limits::max_connections`], from the process's descriptor limit).
//!   At the cap, a new connection displaces the oldest connection that has not made an
//!   accepted request yet (the auth layers mark a connection once a request passed them:
//!   [`Proof::mark`]); only when every connection has made one is the newcomer refused. So
//!   anyone on the machine holding idle connections open cannot lock out the token's holder:
//!   each of its connections is displaced in turn, and the holder's own are kept.
//!
//! Stopping: no more connections are taken, every open one is asked to finish the request it
//! serves and close, and what is still open after the drain time is dropped.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the listener bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// How long a request's headers may take to arrive, counted from the end of the previous
    /// response (so also the longest a connection is kept idle).
    pub header_timeout: Duration,
}

/// The time a request's headers may take, and a connection may wait idle for the next one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Descriptors kept free for everything else (upstream servers' pipes and sockets, files).
const RESERVED_DESCRIPTORS: u64 = 128;

impl Limits {
    /// Three quarters of the descriptors the process may open, less a reserve for the
    /// rest of its work, between 16 and 8192 connections; headers within [`HEADER_TIMEOUT`].
    pub fn from_descriptors() -> Limits {
        let soft = descriptor_limit().unwrap_or(1024);
        let usable = soft.saturating_sub(RESERVED_DESCRIPTORS) * 3 / 4;
        let max_connections = usize::try_from(usable.clamp(16, 8192)).unwrap_or(8192);
        Limits { max_connections, header_timeout: HEADER_TIMEOUT }
    }
}

/// The soft `RLIMIT_NOFILE`.
fn descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some(limit.rlim_cur)
}

/// One open connection, as the registry knows it.
#[derive(Debug)]
struct Entry {
    /// A request on it passed the auth layers.
    proven: AtomicBool,
    /// Fired to close it (displaced by a newcomer).
    displaced: CancellationToken,
}

/// Marks a request's connection as one that made an accepted request. The auth layers find it
/// in the request's extensions.
#[derive(Debug, Clone)]
pub struct Proof(Arc<Entry>);

impl Proof {
    /// The connection made an accepted request: it is not displaced by newcomers.
    pub fn mark(&self) {
        self.0.proven.store(true, Ordering::Relaxed);
    }
}

/// Marks the connection of `request`, if it came through [`serve`].
pub(crate) fn mark<B>(request: &axum::http::Request<B>) {
    if let Some(proof) = request.extensions().get::<Proof>() {
        proof.mark();
    }
}

/// The open connections, oldest first.
#[derive(Debug, Default)]
struct Registry {
    open: Mutex<BTreeMap<u64, Arc<Entry>>>,
    next: std::sync::atomic::AtomicU64,
    /// When a refusal was last logged (at most one line in 10 s).
    refused_said: Mutex<Option<Instant>>,
}

impl Registry {
    /// Room for a new connection: its id and entry, or `None` when every connection open has
    /// made an accepted request.
    fn admit(&self, max: usize) -> Option<(u64, Arc<Entry>)> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= max {
            let oldest = open.iter().find(|(_, e)| !e.proven.load(Ordering::Relaxed)).map(|(id, _)| *id);
            match oldest.and_then(|id| open.remove(&id)) {
                Some(displaced) => displaced.displaced.cancel(),
                None => {
                    drop(open);
                    self.say_refused(max);
                    return None;
                }
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry { proven: AtomicBool::new(false), displaced: CancellationToken::new() });
        open.insert(id, entry.clone());
        Some((id, entry))
    }

    fn gone(&self, id: u64) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }

    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn say_refused(&self, max: usize) {
        let mut said = self.refused_said.lock().unwrap_or_else(PoisonError::into_inner);
        if said.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
            *said = Some(Instant::now());
            tracing::warn!(
                "{max} connections open, each of which made an accepted request: a new one was refused \
                 (the cap follows the process's descriptor limit, `ulimit -n`)"
            );
        }
    }
}

/// Serves `router` on `listener` until `stopping` fires, then drains for at most `drain`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stopping: CancellationToken,
    drain: Duration,
) -> std::io::Result<()> {
    let registry = Arc::new(Registry::default());
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopping.cancelled() => break,
        };
        let (tcp, _peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Out of descriptors (or another passing error): wait a moment rather than spin.
                tracing::warn!("accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let Some((id, entry)) = registry.admit(limits.max_connections) else {
            drop(tcp);
            continue;
        };
        let router = router.clone();
        let registry = registry.clone();
        let stopping = stopping.clone();
        connections.spawn(async move {
            connection(tcp, router, entry, limits, stopping).await;
            registry.gone(id);
        });
    }
    connections.close();
    if tokio::time::timeout(drain, connections.wait()).await.is_err() {
        tracing::info!("{} connections still open after {drain:?}: closed", registry.len());
    }
    Ok(())
}

/// One connection, until it ends, is displaced, or (once stopping) finishes what it serves.
async fn connection(
    tcp: tokio::net::TcpStream,
    router: Router,
    entry: Arc<Entry>,
    limits: Limits,
    stopping: CancellationToken,
) {
    let proof = Proof(entry.clone());
    let service = hyper::service::service_fn(move |mut request: axum::http::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(proof.clone());
        let router = router.clone();
        async move {
            use tower::ServiceExt;
            Ok::<_, Infallible>(router.oneshot(request.map(axum::body::Body::new)).await.unwrap_or_else(|e| match e {}))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let conn = builder.serve_connection(TokioIo::new(tcp), service).with_upgrades();
    tokio::pin!(conn);
    let mut asked_to_stop = false;
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            () = entry.displaced.cancelled() => {
                tracing::debug!("connection displaced by a newer one (connection cap reached)");
                return;
            }
            () = stopping.cancelled(), if !asked_to_stop => {
                asked_to_stop = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_unproven_connection_gives_way() {
        let registry = Registry::default();
        let (a, ea) = registry.admit(3).unwrap_or_else(|| unreachable!());
        let (_b, eb) = registry.admit(3).unwrap_or_else(|| unreachable!());
        let (_c, ec) = registry.admit(3).unwrap_or_else(|| unreachable!());
        Proof(ea.clone()).mark();
        // The fourth displaces the oldest that made no accepted request: b, not a.
        let (_d, ed) = registry.admit(3).unwrap_or_else(|| unreachable!());
        assert!(!ea.displaced.is_cancelled());
        assert!(eb.displaced.is_cancelled());
        assert_eq!(registry.len(), 3);
        Proof(ec.clone()).mark();
        Proof(ed.clone()).mark();
        // Every one proven: a newcomer is refused, none is closed.
        assert!(registry.admit(3).is_none());
        assert!(![&ea, &ec, &ed].iter().any(|e| e.displaced.is_cancelled()));
        registry.gone(a);
        assert!(registry.admit(3).is_some(), "room again once one closed");
    }

    #[test]
    fn the_cap_follows_the_descriptor_limit() {
        let limits = Limits::from_descriptors();
        let soft = descriptor_limit().unwrap_or(1024);
        assert!(
            limits.max_connections >= 16 && (limits.max_connections as u64) < soft.max(17),
            "{limits:?} for {soft}"
        );
    }
}

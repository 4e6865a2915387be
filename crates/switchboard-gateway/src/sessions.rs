//! The HTTP front's sessions (clients of 2025-11-25 and earlier): rmcp's `LocalSessionManager`
//! twice, one that primes each request's event stream (SEP-1699) and one that does not, each
//! session kept by the one chosen when it was made ([`PRIMED`], set by [`crate::http`] from
//! the client's `initialize`); and a cap on how many are kept ([`MAX_SESSIONS`]): at the cap,
//! the one used least recently is closed (its client gets 404 and starts a new one, as the
//! transport spec says), so a client that opens sessions without end cannot grow the gateway
//! without bound.
//!
//! Each session is its maker's: the caller whose `initialize` made it (or whose request
//! resumed it from a team's store, after [`crate::http`] checked that they own it) is kept
//! beside it ([`MAKING`]), and [`Sessions::owner`] says who that is, so that the front refuses
//! every request of the session by anyone else before rmcp sees it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};

/// Sessions kept at most (each one about 80 KB with its worker and buffers).
pub const MAX_SESSIONS: usize = 1024;

tokio::task_local! {
    /// How a session made (or resumed) by this request is made.
    pub(crate) static MAKING: Making;
}

/// How a session made (or resumed) by a request is made: whether it primes its streams, and
/// whose it is.
#[derive(Debug, Clone)]
pub(crate) struct Making {
    pub(crate) primed: bool,
    /// The principal's key of the caller (`""` for one who did not sign in).
    pub(crate) owner: Arc<str>,
}

/// What is kept of a session beside rmcp's.
struct Kept {
    primed: bool,
    last: Instant,
    made: Instant,
    owner: Arc<str>,
}

/// See the module.
pub(crate) struct Sessions {
    primed: LocalSessionManager,
    plain: LocalSessionManager,
    /// Session → whether it primes, when it was last used, when it was made, whose it is.
    kinds: Mutex<HashMap<SessionId, Kept>>,
    max: usize,
    metrics: crate::metrics::GatewayMetrics,
}

type Manager = LocalSessionManager;
type Error = <Manager as SessionManager>::Error;

impl Sessions {
    pub(crate) fn new(max: usize, metrics: crate::metrics::GatewayMetrics) -> Sessions {
        let mut plain = LocalSessionManager::default();
        plain.session_config.sse_retry = None;
        Sessions { primed: LocalSessionManager::default(), plain, kinds: Mutex::default(), max, metrics }
    }

    fn kinds(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Kept>> {
        self.kinds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `id`, made now as `making` says.
    fn add(&self, id: SessionId, making: Making) {
        let mut kinds = self.kinds();
        let now = Instant::now();
        kinds.insert(id, Kept { primed: making.primed, last: now, made: now, owner: making.owner });
        self.metrics.sessions_open(kinds.len());
    }

    /// Whose the session `id` is, while it is kept here.
    pub(crate) fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.kinds().get(id).map(|k| k.owner.clone())
    }

    /// Forgets `id` (closed, by its client, the cap or its manager).
    fn forget(&self, id: &SessionId) {
        let mut kinds = self.kinds();
        if let Some(kept) = kinds.remove(id) {
            self.metrics.session_ended(kept.made);
        }
        self.metrics.sessions_open(kinds.len());
    }

    /// The manager of `id`, its use noted.
    fn of(&self, id: &SessionId) -> &Manager {
        let mut kinds = self.kinds();
        match kinds.get_mut(id) {
            Some(kept) => {
                kept.last = Instant::now();
                if kept.primed { &self.primed } else { &self.plain }
            }
            None => &self.primed,
        }
    }

    /// Makes room for one more: forgets sessions their manager closed (idle expiry), then
    /// closes the one used least recently while at the cap.
    async fn make_room(&self) {
        if self.kinds().len() < self.max {
            return;
        }
        let known: Vec<(SessionId, bool)> = self.kinds().iter().map(|(id, k)| (id.clone(), k.primed)).collect();
        for (id, primed) in known {
            let manager = if primed { &self.primed } else { &self.plain };
            if !manager.sessions.read().await.contains_key(&id) {
                self.forget(&id);
            }
        }
        while self.kinds().len() >= self.max {
            let oldest = self.kinds().iter().min_by_key(|(_, k)| k.last).map(|(id, k)| (id.clone(), k.primed));
            let Some((id, primed)) = oldest else { break };
            tracing::info!("{} HTTP sessions open: the one used least recently is closed", self.max);
            self.forget(&id);
            let manager = if primed { &self.primed } else { &self.plain };
            let _ = manager.close_session(&id).await;
        }
    }

    /// How many sessions are kept.
    pub(crate) fn len(&self) -> usize {
        self.kinds().len()
    }

    /// Whether the session `id` is held here now (its manager has it: a session it closed
    /// for idleness is not, though it may still be listed in `kinds`).
    pub(crate) async fn holds(&self, id: &str) -> bool {
        let Some(primed) = self.kinds().get(id).map(|k| k.primed) else { return false };
        let manager = if primed { &self.primed } else { &self.plain };
        manager.sessions.read().await.contains_key(id)
    }
}

/// How the request being served makes a session: primed, and no one's in particular, when
/// the front set nothing (it always does).
fn making() -> Making {
    MAKING.try_with(Clone::clone).unwrap_or(Making { primed: true, owner: Arc::from("") })
}

impl SessionManager for Sessions {
    type Error = Error;
    type Transport = <Manager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await;
        let making = making();
        let manager = if making.primed { &self.primed } else { &self.plain };
        let (id, transport) = manager.create_session().await?;
        self.add(id.clone(), making);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.of(id).initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.of(id).has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let manager = self.of(id);
        let closed = manager.close_session(id).await;
        self.forget(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.of(id).create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.of(id).accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.of(id).create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.of(id).resume(id, last_event_id).await
    }

    /// A session of a team's store this process does not hold ([`crate::durable`]), made
    /// again here with the kind it was made with (the front sets [`MAKING`] from the store,
    /// and the caller it checked owns it).
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.make_room().await;
        let making = making();
        let manager = if making.primed { &self.primed } else { &self.plain };
        let restored = manager.restore_session(id.clone()).await?;
        if matches!(restored, RestoreOutcome::Restored(_)) {
            self.add(id, making);
        }
        Ok(restored)
    }
}

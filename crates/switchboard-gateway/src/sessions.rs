//! The HTTP front's sessions (clients of 2025-11-25 and earlier): rmcp's `LocalSessionManager`
//! twice, one that primes each request's event stream (SEP-1699) and one that does not, each
//! session kept by the one chosen when it was made ([`PRIMED`], set by [`crate::http`] from
//! the client's `initialize`); and a cap on how many are kept ([`MAX_SESSIONS`]): at the cap,
//! the one used least recently is closed (its client gets 404 and starts a new one, as the
//! transport spec says), so a client that opens sessions without end cannot grow the gateway
//! without bound.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};

/// Sessions kept at most (each one about 80 KB with its worker and buffers).
pub const MAX_SESSIONS: usize = 1024;

tokio::task_local! {
    /// Whether a session made by this request primes its streams.
    pub(crate) static PRIMED: bool;
}

/// See the module.
pub(crate) struct Sessions {
    primed: LocalSessionManager,
    plain: LocalSessionManager,
    /// Session → whether it primes, when it was last used, when it was made.
    kinds: Mutex<HashMap<SessionId, (bool, Instant, Instant)>>,
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

    fn kinds(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, (bool, Instant, Instant)>> {
        self.kinds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `id`, made now.
    fn add(&self, id: SessionId, primed: bool) {
        let mut kinds = self.kinds();
        kinds.insert(id, (primed, Instant::now(), Instant::now()));
        self.metrics.sessions_open(kinds.len());
    }

    /// Forgets `id` (closed, by its client, the cap or its manager).
    fn forget(&self, id: &SessionId) {
        let mut kinds = self.kinds();
        if let Some((_, _, made)) = kinds.remove(id) {
            self.metrics.session_ended(made);
        }
        self.metrics.sessions_open(kinds.len());
    }

    /// The manager of `id`, its use noted.
    fn of(&self, id: &SessionId) -> &Manager {
        let mut kinds = self.kinds();
        match kinds.get_mut(id) {
            Some((primed, last, _)) => {
                *last = Instant::now();
                if *primed { &self.primed } else { &self.plain }
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
        let known: Vec<(SessionId, bool)> = self.kinds().iter().map(|(id, (p, ..))| (id.clone(), *p)).collect();
        for (id, primed) in known {
            let manager = if primed { &self.primed } else { &self.plain };
            if !manager.sessions.read().await.contains_key(&id) {
                self.forget(&id);
            }
        }
        while self.kinds().len() >= self.max {
            let oldest =
                self.kinds().iter().min_by_key(|(_, (_, last, _))| *last).map(|(id, (p, ..))| (id.clone(), *p));
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
        let Some(primed) = self.kinds().get(id).map(|(p, ..)| *p) else { return false };
        let manager = if primed { &self.primed } else { &self.plain };
        manager.sessions.read().await.contains_key(id)
    }
}

impl SessionManager for Sessions {
    type Error = Error;
    type Transport = <Manager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await;
        let primed = PRIMED.try_with(|p| *p).unwrap_or(true);
        let manager = if primed { &self.primed } else { &self.plain };
        let (id, transport) = manager.create_session().await?;
        self.add(id.clone(), primed);
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
    /// again here with the kind it was made with (the front sets [`PRIMED`] from the store).
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.make_room().await;
        let primed = PRIMED.try_with(|p| *p).unwrap_or(true);
        let manager = if primed { &self.primed } else { &self.plain };
        let restored = manager.restore_session(id.clone()).await?;
        if matches!(restored, RestoreOutcome::Restored(_)) {
            self.add(id, primed);
        }
        Ok(restored)
    }
}

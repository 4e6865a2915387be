//! Server-to-client requests (elicitation, sampling) from upstreams, relayed to the downstream
//! session whose call caused them.
//!
//! The hub asks its [`Elicitor`] and [`Sampler`] with only the server's name: a stdio upstream
//! does not say which request a server-to-client request belongs to, and rmcp's task-local
//! association does not cross the hub's tasks. So: the session with the only call in flight
//! on that server; with several, the most recent of those calls; with none, the session that
//! most recently declared the capability. A session that did not declare it gets nothing
//! asked: the upstream receives a decline (elicitation) or a refusal (sampling), never a hang.
//! Without any session (`serve` with no MCP client) the fallback elicitor answers, if any.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};
use switchboard::sampling::{Sampler, SamplingRequest};

/// A session's part in relaying.
#[derive(Clone)]
pub(crate) struct SessionPeer {
    pub id: u64,
    pub peer: Peer<RoleServer>,
}

#[derive(Default)]
struct State {
    /// Calls in flight: call number → (server, session).
    calls: BTreeMap<u64, (String, SessionPeer)>,
    /// Sessions by the order they last declared a capability: session → (order, peer).
    sessions: BTreeMap<u64, (u64, SessionPeer)>,
}

/// The hub's elicitor and sampler when a gateway is in front of it.
#[derive(Default)]
pub struct Relay {
    state: Mutex<State>,
    next: AtomicU64,
    fallback: Mutex<Option<Arc<dyn Elicitor>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").finish_non_exhaustive()
    }
}

/// Removes a call from the relay when it ends.
pub(crate) struct CallGuard {
    relay: Arc<Relay>,
    call: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.relay.state().calls.remove(&self.call);
    }
}

impl Relay {
    /// A relay; give it to [`switchboard::HubOptions::elicitor`] and
    /// [`switchboard::HubOptions::sampler`], then to [`crate::Gateway::new`].
    pub fn new() -> Arc<Relay> {
        Arc::new(Relay::default())
    }

    /// Who answers when no MCP session can (the dashboard's questions, in `serve`).
    pub fn with_fallback(self: &Arc<Self>, elicitor: Arc<dyn Elicitor>) {
        *self.fallback.lock().unwrap_or_else(PoisonError::into_inner) = Some(elicitor);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn session_seen(&self, session: SessionPeer) {
        let order = self.next.fetch_add(1, Ordering::Relaxed);
        self.state().sessions.insert(session.id, (order, session));
    }

    pub(crate) fn session_gone(&self, id: u64) {
        let mut st = self.state();
        st.sessions.remove(&id);
        st.calls.retain(|_, (_, s)| s.id != id);
    }

    pub(crate) fn call_started(self: &Arc<Self>, server: &str, session: SessionPeer) -> CallGuard {
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        self.state().calls.insert(call, (server.to_string(), session));
        CallGuard { relay: self.clone(), call }
    }

    /// The session to ask on behalf of `server`; `None`: no session at all.
    fn route(&self, server: &str) -> Option<SessionPeer> {
        let st = self.state();
        if let Some((_, (_, s))) = st.calls.iter().rev().find(|(_, (srv, _))| srv == server) {
            return Some(s.clone());
        }
        st.sessions.values().max_by_key(|(order, _)| *order).map(|(_, s)| s.clone())
    }

    fn fallback(&self) -> Option<Arc<dyn Elicitor>> {
        self.fallback.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn answer(result: ElicitResult) -> ElicitationAnswer {
    match result.action {
        ElicitationAction::Accept => {
            ElicitationAnswer::Accept(result.content.and_then(|c| c.as_object().cloned()).unwrap_or_default())
        }
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    }
}

fn params(request: &ElicitationRequest) -> Option<ElicitRequestParams> {
    let wire = match (&request.url, &request.elicitation_id) {
        (Some(url), Some(id)) => {
            serde_json::json!({"mode": "url", "message": request.message, "url": url, "elicitationId": id})
        }
        _ => serde_json::json!({"mode": "form", "message": request.message, "requestedSchema": request.schema}),
    };
    serde_json::from_value(wire).ok()
}

impl Elicitor for Relay {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(async move {
            let Some(session) = self.route(&request.server) else {
                return match self.fallback() {
                    Some(f) => f.elicit(request).await,
                    None => ElicitationAnswer::Decline,
                };
            };
            let caps = session.peer.peer_info().and_then(|i| i.capabilities.elicitation.clone());
            let Some(caps) = caps else {
                tracing::info!(server = %request.server, "elicitation declined: the client did not declare the capability");
                return ElicitationAnswer::Decline;
            };
            if request.url.is_some() && caps.url.is_none() && caps.form.is_some() {
                return ElicitationAnswer::Decline;
            }
            let Some(params) = params(&request) else {
                tracing::info!(server = %request.server, "elicitation declined: its schema is not one a client can take");
                return ElicitationAnswer::Decline;
            };
            match session.peer.create_elicitation(params).await {
                Ok(result) => answer(result),
                Err(e) => {
                    tracing::info!(server = %request.server, "the client did not answer an elicitation: {e}");
                    ElicitationAnswer::Cancel
                }
            }
        })
    }

    fn takes_urls(&self) -> bool {
        true
    }
}

impl Sampler for Relay {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn Future<Output = Result<CreateMessageResult, String>> + Send + '_>> {
        Box::pin(async move {
            let session = self.route(&request.server).ok_or("no MCP client is connected to the gateway")?;
            if session.peer.peer_info().and_then(|i| i.capabilities.sampling.clone()).is_none() {
                return Err("the client in front of the gateway does not offer sampling".into());
            }
            #[allow(deprecated)]
            session.peer.create_message(request.params).await.map_err(|e| format!("the client refused: {e}"))
        })
    }
}

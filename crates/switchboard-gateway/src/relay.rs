//! Server-to-client requests (elicitation, sampling, roots) from upstreams, relayed to the
//! downstream client they belong to, by one rule:
//!
//! 1. The call in flight on that server, if there is one (with several, the most recent): a
//!    stdio upstream does not say which request a server-to-client request belongs to, and
//!    rmcp's task-local association does not cross the hub's tasks, so the hub asks with only
//!    the server's name. The question is handed to that call's own handler task
//!    ([`crate::call`]), which asks its client in the client's era: a request sent from the
//!    handler task rides the call's own HTTP response stream (rmcp's SEP-2260 routing), and a
//!    2026-07-28 client, which takes no server-to-client requests, gets an `input_required`
//!    result instead.
//! 2. With no call in flight (a question the server asks on its own: roots after it starts, a
//!    later question about earlier work): the session of an earlier revision that can answer
//!    it (it declared the capability the question needs) and that most recently made a request
//!    to that server; if none did, the one that most recently made any request. A session that
//!    only connected, or one that cannot answer, is not asked.
//! 3. Else the fallback (`serve`'s dashboard), else a decline (elicitation), a refusal
//!    (sampling), no roots: never a hang.
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult};
use rmcp::service::{Peer, RoleServer};
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};
use switchboard::roots::RootsSource;
use switchboard::sampling::{Sampler, SamplingRequest};
use tokio::sync::{mpsc, oneshot};

/// A session's part in relaying.
#[derive(Clone)]
pub(crate) struct SessionPeer {
    pub id: u64,
    pub peer: Peer<RoleServer>,
    /// Who signed in for it ([`switchboard::identity::Principal::key`]), on a protected front.
    pub person: Option<Arc<str>>,
}

/// The name a call on `server` is known by to the relay: a server each person gets their own
/// of is told apart by whose it is, so no question of one person's server reaches another's
/// call.
pub(crate) fn route(server: &str, person: Option<&str>) -> String {
    match person {
        Some(key) => format!("{server}\u{1f}{key}"),
        None => server.to_string(),
    }
}

/// Where a call's questions go, boxed: a channel takes room for 32 of its items when it is
/// made (11.5 KB of `Ask`s, for every call), and a call is rarely asked anything.
pub(crate) type AskSender = mpsc::UnboundedSender<Box<Ask>>;
/// What a call reads its questions from.
pub(crate) type AskReceiver = mpsc::UnboundedReceiver<Box<Ask>>;

/// A question from an upstream, for the call that caused it.
pub(crate) enum Ask {
    Elicit {
        request: ElicitationRequest,
        reply: oneshot::Sender<ElicitationAnswer>,
    },
    Sample {
        request: SamplingRequest,
        reply: oneshot::Sender<Result<CreateMessageResult, String>>,
    },
    /// `None`: the client has no roots to give (the upstream then sees none).
    Roots {
        input_key: Option<String>,
        reply: oneshot::Sender<ListRootsResult>,
    },
}

impl Ask {
    /// The upstream's key for the question, when it came in an `input_required` round.
    pub(crate) fn input_key(&self) -> Option<&str> {
        match self {
            Ask::Elicit { request, .. } => request.input_key.as_deref(),
            Ask::Sample { request, .. } => request.input_key.as_deref(),
            Ask::Roots { input_key, .. } => input_key.as_deref(),
        }
    }

    /// Answers it with "no": a decline, or a refused sampling.
    pub(crate) fn refuse(self, why: &str) {
        match self {
            Ask::Elicit { reply, .. } => {
                let _ = reply.send(ElicitationAnswer::Decline);
            }
            Ask::Sample { reply, .. } => {
                let _ = reply.send(Err(why.to_string()));
            }
            Ask::Roots { reply, .. } => {
                let _ = reply.send(ListRootsResult::new(Vec::new()));
            }
        }
    }
}

#[derive(Default)]
struct State {
    /// Calls in flight: call number → (server, who made it, where its questions go).
    calls: BTreeMap<u64, (String, Option<Arc<str>>, AskSender)>,
    /// Sessions known, by id.
    sessions: BTreeMap<u64, Known>,
}

/// A session, and when it last made a request (a number from the relay's count: higher is
/// later), overall and to each server.
struct Known {
    peer: SessionPeer,
    last: u64,
    servers: std::collections::HashMap<String, u64>,
}

/// What a question needs its client to have declared.
#[derive(Clone, Copy)]
enum Need {
    Elicitation,
    Sampling,
    Roots,
}

impl Need {
    fn met_by(self, peer: &Peer<RoleServer>) -> bool {
        let Some(info) = peer.peer_info() else { return false };
        // Only sessions of earlier revisions take requests outside a call.
        if !info.protocol_version.has_initialize() {
            return false;
        }
        let caps = &info.capabilities;
        match self {
            Need::Elicitation => caps.elicitation.is_some(),
            Need::Sampling => caps.sampling.is_some(),
            Need::Roots => caps.roots.is_some(),
        }
    }
}

/// The hub's elicitor and sampler when a gateway is in front of it.
#[derive(Default)]
pub struct Relay {
    state: Mutex<State>,
    next: AtomicU64,
    fallback: Mutex<Option<Arc<dyn Elicitor>>>,
    sampling_fallback: Mutex<Option<Arc<dyn Sampler>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").finish_non_exhaustive()
    }
}

/// Takes a call out of the relay when it ends.
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

    /// Who answers a server's request for a completion when no MCP session can (the
    /// dashboard's person, in `serve`).
    pub fn with_sampling_fallback(self: &Arc<Self>, sampler: Arc<dyn Sampler>) {
        *self.sampling_fallback.lock().unwrap_or_else(PoisonError::into_inner) = Some(sampler);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A session made a request (the first one registers it).
    pub(crate) fn session_used(&self, session: &SessionPeer) {
        let order = self.next.fetch_add(1, Ordering::Relaxed);
        let mut st = self.state();
        let known = st.sessions.entry(session.id).or_insert_with(|| Known {
            peer: session.clone(),
            last: order,
            servers: std::collections::HashMap::new(),
        });
        known.last = order;
    }

    pub(crate) fn session_gone(&self, id: u64) {
        self.state().sessions.remove(&id);
    }

    /// Registers a call on `server` made by `session` for `caller` (a principal's key; `None`
    /// where no one signs in); its questions arrive on the receiver until the guard drops. The
    /// sender is the call's own (the gateway's approver asks through it).
    pub(crate) fn call_started(
        self: &Arc<Self>,
        server: &str,
        session: u64,
        caller: Option<&str>,
    ) -> (CallGuard, AskSender, AskReceiver) {
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut st = self.state();
        st.calls.insert(call, (server.to_string(), caller.map(Arc::from), tx.clone()));
        if let Some(known) = st.sessions.get_mut(&session) {
            match known.servers.get_mut(server) {
                Some(last) => *last = call,
                None => {
                    known.servers.insert(server.to_string(), call);
                }
            }
            known.last = call;
        }
        drop(st);
        (CallGuard { relay: self.clone(), call }, tx, rx)
    }

    /// The call a question of `server` belongs to: the most recent call in flight on it. A
    /// server shared by everyone does not say which call a question is for (a stdio server
    /// cannot): while calls of more than one person are in flight on it, the question is
    /// nobody's to take ([`Found::Ambiguous`]), for it must never reach another person.
    fn call_for(&self, server: &str) -> Found {
        let st = self.state();
        let mut live = st.calls.values().rev().filter(|(srv, _, tx)| srv == server && !tx.is_closed());
        let Some((_, caller, tx)) = live.next() else { return Found::None };
        if live.any(|(_, other, _)| other != caller) {
            return Found::Ambiguous;
        }
        Found::Call(tx.clone())
    }

    /// Who answers a question of `server` that no call in flight can take (rule 2 of the
    /// module): among the sessions that can answer it, the one that most recently made a
    /// request to `server`, else the one that most recently made any. A question of a server
    /// shared by everyone (`person` is `None`) goes to no session someone signed in for: it
    /// is no one person's.
    fn recent_session(&self, server: &str, need: Need, person: Option<&str>) -> Option<SessionPeer> {
        let st = self.state();
        st.sessions
            .values()
            .filter(|k| k.peer.person.as_deref() == person)
            .filter(|k| need.met_by(&k.peer.peer))
            .max_by_key(|k| (k.servers.get(server).copied(), k.last))
            .map(|k| k.peer.clone())
    }

    fn fallback(&self) -> Option<Arc<dyn Elicitor>> {
        self.fallback.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Which call a question is for.
enum Found {
    /// This one.
    Call(AskSender),
    /// Calls of more than one person are in flight on its server.
    Ambiguous,
    /// No call is in flight on its server.
    None,
}

/// What a question no one person can be given gets.
const AMBIGUOUS: &str = "calls of several people are in flight on this shared server, and it did not say which one \
                         asks: no one is asked (give it `\"sharing\": \"per_principal\"` to ask each caller)";

fn ambiguous(server: &str, what: &str) {
    tracing::warn!("server `{server}` sent {what} while calls of several people were in flight on it: {AMBIGUOUS}");
}

/// The client's answer as the hub takes it.
pub(crate) fn answer(result: ElicitResult) -> ElicitationAnswer {
    match result.action {
        ElicitationAction::Accept => {
            ElicitationAnswer::Accept(result.content.and_then(|c| c.as_object().cloned()).unwrap_or_default())
        }
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    }
}

/// The request as it goes to the client (form or URL mode), if it can be sent.
pub(crate) fn params(request: &ElicitationRequest) -> Option<ElicitRequestParams> {
    let wire = match (&request.url, &request.elicitation_id) {
        (Some(url), Some(id)) => {
            serde_json::json!({"mode": "url", "message": request.message, "url": url, "elicitationId": id})
        }
        _ => serde_json::json!({"mode": "form", "message": request.message, "requestedSchema": request.schema}),
    };
    serde_json::from_value(wire).ok()
}

/// Asks a client of an earlier revision for input, directly (from a call's own task, or with
/// no call in flight to carry the question): declined when it did not declare elicitation,
/// cancelled when it did not answer.
pub(crate) async fn elicit_peer(peer: &Peer<RoleServer>, request: &ElicitationRequest) -> ElicitationAnswer {
    let caps = peer.peer_info().and_then(|i| i.capabilities.elicitation.clone());
    let (Some(_), Some(params)) = (caps, params(request)) else {
        return ElicitationAnswer::Decline;
    };
    match peer.create_elicitation(params).await {
        Ok(result) => answer(result),
        Err(e) => {
            tracing::info!(server = %request.server, "the client did not answer an elicitation: {e}");
            ElicitationAnswer::Cancel
        }
    }
}

impl Relay {
    /// `options` with this relay answering servers' questions, and, for each person's own
    /// servers ([`switchboard::Hub::person`]), the relay for that person.
    pub fn answering(self: &Arc<Self>, options: switchboard::HubOptions) -> switchboard::HubOptions {
        let relay = self.clone();
        options.elicitor(self.clone()).sampler(self.clone()).roots_source(self.clone()).person_options(Arc::new(
            move |principal, options| {
                let theirs = relay.for_person(principal);
                options.elicitor(theirs.clone()).sampler(theirs.clone()).roots_source(theirs)
            },
        ))
    }

    /// Who answers the questions of `principal`'s own servers ([`switchboard::Hub::person`]):
    /// their calls, else their sessions, never another person's (nor the fallback, which is
    /// the host's person).
    pub fn for_person(self: &Arc<Self>, principal: &switchboard::identity::Principal) -> Arc<PersonRelay> {
        Arc::new(PersonRelay { relay: self.clone(), person: principal.key().into() })
    }

    async fn elicit_as(&self, request: ElicitationRequest, person: Option<&str>) -> ElicitationAnswer {
        match self.call_for(&route(&request.server, person)) {
            Found::Call(call) => {
                let (reply, answer) = oneshot::channel();
                if call.send(Box::new(Ask::Elicit { request, reply })).is_ok() {
                    return answer.await.unwrap_or(ElicitationAnswer::Cancel);
                }
                return ElicitationAnswer::Cancel;
            }
            Found::Ambiguous => {
                ambiguous(&request.server, "a question");
                return ElicitationAnswer::Decline;
            }
            Found::None => {}
        }
        if let Some(session) = self.recent_session(&route(&request.server, person), Need::Elicitation, person) {
            return elicit_peer(&session.peer, &request).await;
        }
        match self.fallback().filter(|_| person.is_none()) {
            Some(f) => f.elicit(request).await,
            None => ElicitationAnswer::Decline,
        }
    }

    async fn sample_as(&self, request: SamplingRequest, person: Option<&str>) -> Result<CreateMessageResult, String> {
        match self.call_for(&route(&request.server, person)) {
            Found::Call(call) => {
                let (reply, answer) = oneshot::channel();
                call.send(Box::new(Ask::Sample { request, reply })).map_err(|_| "the call ended".to_string())?;
                return answer.await.map_err(|_| "the call ended".to_string())?;
            }
            Found::Ambiguous => {
                ambiguous(&request.server, "a request for a completion");
                return Err(AMBIGUOUS.to_string());
            }
            Found::None => {}
        }
        if let Some(session) = self.recent_session(&route(&request.server, person), Need::Sampling, person) {
            return session.peer.create_message(request.params).await.map_err(|e| format!("the client refused: {e}"));
        }
        let fallback = self.sampling_fallback.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let connected = !self.state().sessions.is_empty();
        match (fallback.filter(|_| person.is_none()), connected) {
            (Some(f), _) => f.create_message(request).await,
            (None, true) => Err("no client in front of the gateway offers sampling".into()),
            (None, false) => Err("no MCP client is connected to the gateway".into()),
        }
    }

    async fn roots_as(&self, server: &str, input_key: Option<String>, person: Option<&str>) -> ListRootsResult {
        let empty = || ListRootsResult::new(Vec::new());
        match self.call_for(&route(server, person)) {
            Found::Call(call) => {
                let (reply, answer) = oneshot::channel();
                if call.send(Box::new(Ask::Roots { input_key, reply })).is_ok() {
                    return answer.await.unwrap_or_else(|_| empty());
                }
                return empty();
            }
            Found::Ambiguous => {
                ambiguous(server, "a request for roots");
                return empty();
            }
            Found::None => {}
        }
        let Some(session) = self.recent_session(&route(server, person), Need::Roots, person) else { return empty() };
        session.peer.list_roots().await.unwrap_or_else(|_| empty())
    }
}

impl Elicitor for Relay {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(self.elicit_as(request, None))
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
        Box::pin(self.sample_as(request, None))
    }
}

/// The client's roots are what upstreams see, from the client the module's rule picks; with
/// none that offers roots, the upstream sees an empty list (never the gateway's own folder).
impl RootsSource for Relay {
    fn roots(
        &self,
        server: &str,
        input_key: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Option<ListRootsResult>> + Send + '_>> {
        let server = server.to_string();
        Box::pin(async move { Some(self.roots_as(&server, input_key, None).await) })
    }
}

/// The relay for one person's own servers ([`Relay::for_person`]).
pub struct PersonRelay {
    relay: Arc<Relay>,
    person: Arc<str>,
}

impl std::fmt::Debug for PersonRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersonRelay").finish_non_exhaustive()
    }
}

impl Elicitor for PersonRelay {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(self.relay.elicit_as(request, Some(&self.person)))
    }

    fn takes_urls(&self) -> bool {
        true
    }
}

impl Sampler for PersonRelay {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn Future<Output = Result<CreateMessageResult, String>> + Send + '_>> {
        Box::pin(self.relay.sample_as(request, Some(&self.person)))
    }
}

impl RootsSource for PersonRelay {
    fn roots(
        &self,
        server: &str,
        input_key: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Option<ListRootsResult>> + Send + '_>> {
        let server = server.to_string();
        Box::pin(async move { Some(self.relay.roots_as(&server, input_key, Some(&self.person)).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_of_a_shared_server_goes_to_no_one_while_several_people_call_it() {
        let relay = Relay::new();
        let (alice, _, _rx_a) = relay.call_started("fx", 1, Some("alice"));
        assert!(matches!(relay.call_for("fx"), Found::Call(_)), "one person's call: theirs");
        let (again, _, _rx_a2) = relay.call_started("fx", 1, Some("alice"));
        assert!(matches!(relay.call_for("fx"), Found::Call(_)), "two calls of one person: still theirs");
        let (bob, _, _rx_b) = relay.call_started("fx", 2, Some("bob"));
        assert!(matches!(relay.call_for("fx"), Found::Ambiguous), "Alice's and Bob's: no one's");
        assert!(matches!(relay.call_for("other"), Found::None));
        drop((alice, again));
        assert!(matches!(relay.call_for("fx"), Found::Call(_)), "Bob's alone again");
        drop(bob);
        assert!(matches!(relay.call_for("fx"), Found::None));
    }
}

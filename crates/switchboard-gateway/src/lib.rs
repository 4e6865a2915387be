//! `switchboard gateway`: every server a [`Hub`] manages, re-exposed as one MCP server.
//!
//! One entry in an agent's config (`{"command": "switchboard", "args": ["gateway"]}`) gives
//! it every server switchboard manages, with switchboard's trust, OAuth, reconnection and
//! naming. Built on rmcp's server side: [`Session`] is an rmcp `ServerHandler`, served over
//! stdio by [`serve_stdio`] and over Streamable HTTP by [`http_service`] (a tower service to
//! mount at `/mcp`).
//!
//! The path of a call: a downstream session's `tools/call` → its [`View`](view) of the
//! catalog (names, profile) → [`Hub::call_tool`] (the upstream connection, reconnected if
//! need be) → the result as the upstream sent it (or switchboard's model-ready form with
//! [`GatewayOptions::model_results`]). Progress goes back to the session with the
//! downstream's own token; the downstream's cancellation cancels exactly that upstream
//! request; upstream elicitation and sampling go to the session whose call caused them
//! ([`Relay`]); list changes, logs and resource updates fan out from the hub's events
//! ([`pump`]).

// Logging, sampling and roots are deprecated by SEP-2577 (2026-07-28), but the clients of
// every earlier revision use them: the gateway serves both.
#![allow(deprecated)]

mod approve;
mod call;
mod caller;
mod durable;
pub mod http;
mod metrics;
mod pages;
mod people;
mod pump;
mod relay;
mod replicas;
mod resume;
pub mod search;
mod servers;
mod session;
mod sessions;
mod signin;
pub mod stdio;
mod traced;
pub mod view;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use switchboard::Hub;
use switchboard::config::Profile;
use switchboard::events::LogLevel;

pub use metrics::GatewayMetrics;
pub use pages::{PageHeld, callback_state};
pub use relay::Relay;
pub use search::ToolSearch;
pub use session::{FIRST_LIST_WAIT, START_WAIT, Session};
pub use sessions::MAX_SESSIONS;
pub use signin::{InputAsked, PageRefusal};
pub use view::{Names, Scope};

/// How the gateway presents the hub.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Tool and prompt names.
    pub names: Names,
    /// The servers and tools every client sees unless it asks for a profile (HTTP
    /// `?profile=NAME`).
    pub scope: Scope,
    /// Profiles a client may ask for by name (the config's `profiles`).
    pub profiles: BTreeMap<String, Profile>,
    /// Apply switchboard's result budgets and spill files instead of passing results raw.
    pub model_results: bool,
    /// Defer tool definitions behind `search_tools` / `describe_tools` / `call_tool`.
    pub tool_search: ToolSearch,
}

impl GatewayOptions {
    /// Short names, every server, raw results.
    pub fn new() -> GatewayOptions {
        GatewayOptions::default()
    }
    /// With these names.
    pub fn names(mut self, names: Names) -> Self {
        self.names = names;
        self
    }
    /// With this default scope.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }
    /// With the config's profiles.
    pub fn profiles(mut self, profiles: BTreeMap<String, Profile>) -> Self {
        self.profiles = profiles;
        self
    }
    /// With model-ready results.
    pub fn model_results(mut self, on: bool) -> Self {
        self.model_results = on;
        self
    }
    /// With tool search.
    pub fn tool_search(mut self, mode: ToolSearch) -> Self {
        self.tool_search = mode;
        self
    }
}

/// What the gateway knows of one downstream session.
#[derive(Default)]
struct SessionState {
    peer: Option<Peer<RoleServer>>,
    /// The lowest level of log messages it wants (`logging/setLevel`); all until it says.
    level: Option<LogLevel>,
    /// `(server, upstream uri)` it subscribed to (`resources/subscribe`).
    subscribed: HashSet<(String, String)>,
    /// Its `subscriptions/listen` streams (2026-07-28).
    listens: Vec<SubscriptionSink>,
    /// The profile it asked for (`None`: the gateway's default scope).
    profile: Option<String>,
    /// The names it asked for (HTTP `?names=`; `None`: the gateway's).
    names: Option<Names>,
    /// The view it was last told about (it listed, or it started listening): list changes
    /// are told against it, and only when a list it can see changed.
    seen: Option<Arc<view::View>>,
    /// Who signed in for it (a protected front): the session is theirs alone.
    caller: Option<switchboard::identity::Principal>,
}

/// Which view: the profile asked for, the names asked for (`None`: the gateway's), and who
/// calls when the policy has rules for some callers (issuer, subject, groups; else `None`).
type ViewKey = (Option<String>, Option<Names>, Option<(String, String, Vec<String>)>);

pub(crate) struct Shared {
    hub: Hub,
    options: GatewayOptions,
    relay: Option<Arc<Relay>>,
    sessions: Mutex<BTreeMap<u64, SessionState>>,
    next_session: AtomicU64,
    /// Views per profile (`None`: the default scope), names asked for (`None`: the
    /// gateway's) and caller where it matters, rebuilt when the catalog changes, at most
    /// [`view::MAX_VIEWS`].
    views: Mutex<HashMap<ViewKey, view::Cached>>,
    filters: Mutex<HashMap<Option<String>, Arc<view::Filter>>>,
    /// Upstream resource subscriptions, counted over sessions.
    subscriptions: Mutex<HashMap<(String, String), usize>>,
    /// Calls waiting for a 2026-07-28 client's answers, by the key their sealed
    /// `requestState` holds.
    parked: Mutex<HashMap<String, call::Call>>,
    /// Makes parked calls' keys no one can guess.
    state_keys: std::collections::hash_map::RandomState,
    /// This gateway as one of several behind a load balancer ([`replicas`]).
    replicas: Arc<replicas::Replicas>,
    /// What its HTTP front serves, counted ([`metrics`]).
    metrics: metrics::GatewayMetrics,
    /// The token counter for `--tool-search auto:N`, loaded on first need (`None`: it failed).
    tokens: std::sync::OnceLock<Option<switchboard::catalog::tokens::TokenCounter>>,
    /// The names in use now (`options.names` until [`Gateway::set_names`]).
    names: Mutex<Names>,
    /// How a server's name is said to clients ([`Gateway::say_server_as`]).
    aliases: Mutex<Vec<(String, String)>>,
    /// List changes are held while this is above zero ([`Gateway::hold_list_changes`]).
    held: std::sync::atomic::AtomicUsize,
    /// People's sign-ins to their own upstreams under way ([`signin`]).
    signins: signin::SignIns,
    /// What the gateway said of itself last, kept while the servers' statuses stay.
    info: Mutex<Option<session::InfoCache>>,
}

/// The gateway: shared by every downstream session of one hub.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

/// Holds `list_changed` notifications while it lives ([`Gateway::hold_list_changes`]).
pub struct ListChangesHeld {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ListChangesHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListChangesHeld").finish_non_exhaustive()
    }
}

impl Drop for ListChangesHeld {
    fn drop(&mut self) {
        if self.shared.held.fetch_sub(1, Ordering::AcqRel) == 1
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let shared = self.shared.clone();
            rt.spawn(async move { pump::list_changed(&shared).await });
        }
    }
}

/// A profile a client asked for that the config does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl Gateway {
    /// A gateway over `hub`. `relay` is the one given to the hub's options as its elicitor
    /// and sampler (without it, upstreams' questions are declined). Starts the task that
    /// fans the hub's events out to sessions (it ends with the hub's event channel).
    pub fn new(hub: Hub, options: GatewayOptions, relay: Option<Arc<Relay>>) -> Gateway {
        let replicas = Arc::new(replicas::Replicas::new(hub.store().cloned()));
        let shared = Arc::new(Shared {
            hub,
            options: options.clone(),
            relay,
            sessions: Mutex::default(),
            next_session: AtomicU64::new(1),
            views: Mutex::default(),
            filters: Mutex::default(),
            subscriptions: Mutex::default(),
            parked: Mutex::default(),
            state_keys: std::collections::hash_map::RandomState::new(),
            replicas: replicas.clone(),
            metrics: metrics::GatewayMetrics::default(),
            tokens: std::sync::OnceLock::new(),
            names: Mutex::new(options.names),
            aliases: Mutex::default(),
            held: std::sync::atomic::AtomicUsize::new(0),
            signins: signin::SignIns::new(replicas.clone()),
            info: Mutex::default(),
        });
        pump::start(&shared);
        Gateway { shared }
    }

    /// Serves as one of several replicas behind a load balancer, reached directly by the
    /// others at `url` (`http://10.0.0.5:7342`; empty: they cannot reach it, and a request
    /// for a call it holds that reaches another fails saying so). On a team's store it
    /// registers there, says it is alive every few seconds until `stop`, then leaves.
    pub fn join_replicas(&self, url: &str, stop: tokio_util::sync::CancellationToken) {
        self.shared.replicas.join(url, stop);
    }

    /// What it served and its hub did, counted for Prometheus.
    pub fn metrics(&self) -> &GatewayMetrics {
        &self.shared.metrics
    }

    /// This gateway's id among the replicas of its store (random, made when it started).
    pub fn replica_id(&self) -> &str {
        self.shared.replicas.id()
    }

    /// How many calls wait for a 2026-07-28 client to come back with its answers (a drain
    /// waits for them as for requests in flight).
    pub fn parked(&self) -> usize {
        self.shared.parked.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The hub behind it.
    pub fn hub(&self) -> &Hub {
        &self.shared.hub
    }

    /// A handler for one new downstream session over HTTP.
    pub fn session(&self) -> Session {
        Session::new(self.shared.clone(), switchboard::telemetry::Transport::Tcp)
    }

    /// Whether `profile` is one a client may ask for.
    pub fn check_profile(&self, profile: &str) -> Result<(), UnknownProfile> {
        if self.shared.options.profiles.contains_key(profile) {
            Ok(())
        } else {
            Err(UnknownProfile(profile.to_string()))
        }
    }

    /// Number of downstream sessions known now.
    pub fn sessions(&self) -> usize {
        self.shared.sessions().len()
    }

    /// Names tools and prompts another way from now on (an attached gateway that starts its
    /// own servers names them as the hub it was attached to did): views are made again, and
    /// sessions are told of the lists that changed.
    pub fn set_names(&self, names: Names) {
        *self.shared.names.lock().unwrap_or_else(PoisonError::into_inner) = names;
    }

    /// Holds `list_changed` notifications until the guard is dropped, then tells sessions of
    /// the lists that differ from what they saw: servers replaced as one (an attached gateway
    /// starting its own) are told once, and not at all when the lists end up as they were.
    pub fn hold_list_changes(&self) -> ListChangesHeld {
        self.shared.held.fetch_add(1, Ordering::AcqRel);
        ListChangesHeld { shared: self.shared.clone() }
    }

    /// The address browsers reach this gateway by (`http://127.0.0.1:PORT`, or its public
    /// URL): a person's sign-in to their own upstream comes back to `/oauth/callback` there.
    pub fn set_public_url(&self, base: &str) {
        self.shared.signins.set_base(base);
    }

    /// Says `server` as `shown` in what clients read (errors): an attached gateway's one
    /// upstream is the workspace's hub, not a server the client knows.
    pub fn say_server_as(&self, server: &str, shown: &str) {
        let mut aliases = self.shared.aliases.lock().unwrap_or_else(PoisonError::into_inner);
        aliases.retain(|(s, _)| s != server);
        aliases.push((server.to_string(), shown.to_string()));
    }
}

impl Shared {
    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, SessionState>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn new_session_id(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh, unguessable key for a parked call.
    fn new_park_key(&self) -> String {
        use std::hash::{BuildHasher, Hasher};
        let n = self.new_session_id();
        let mut a = self.state_keys.build_hasher();
        a.write_u64(n);
        let mut b = self.state_keys.build_hasher();
        b.write_u64(!n);
        format!("sb1-{n:x}-{:016x}{:016x}", a.finish(), b.finish())
    }

    fn park(&self, state: String, parked: call::Call) {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner).insert(state, parked);
    }

    fn parked_remove(&self, state: &str) -> Option<call::Call> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner).remove(state)
    }

    /// The compiled filter of a profile (`None`: the default scope).
    fn filter(&self, profile: Option<&str>) -> Result<Arc<view::Filter>, UnknownProfile> {
        let key = profile.map(str::to_string);
        let mut filters = self.filters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = filters.get(&key) {
            return Ok(f.clone());
        }
        let scope = match profile {
            None => self.options.scope.clone(),
            Some(name) => {
                let profile = self.options.profiles.get(name).ok_or_else(|| UnknownProfile(name.to_string()))?;
                Scope { only: self.options.scope.only.clone(), profile: Some(profile.clone()) }
            }
        };
        let f = Arc::new(view::Filter::new(&scope));
        filters.insert(key, f.clone());
        Ok(f)
    }

    /// The names in use now.
    fn names(&self) -> Names {
        *self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What clients read of the hub's words: servers said as [`Gateway::say_server_as`] asks.
    fn said(&self, text: String) -> String {
        let aliases = self.aliases.lock().unwrap_or_else(PoisonError::into_inner);
        aliases.iter().fold(text, |t, (server, shown)| t.replace(&format!("server `{server}`"), shown))
    }

    /// The view of the current catalog for a profile, with the names asked for (`None`: the
    /// gateway's).
    fn view(
        &self,
        profile: Option<&str>,
        asked: Option<Names>,
        caller: Option<&switchboard::identity::Principal>,
    ) -> Result<Arc<view::View>, UnknownProfile> {
        let filter = self.filter(profile)?;
        let catalog = self.hub.catalog_for(caller);
        let names = asked.unwrap_or_else(|| self.names());
        // One view per caller only where what callers see differs: rules for some callers,
        // or servers each person gets their own of.
        let caller = caller.filter(|_| self.hub.rules_depend_on_caller() || self.hub.has_personal_servers());
        let who = caller.map(|p| (p.issuer.clone(), p.subject.clone(), p.groups.clone()));
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (profile.map(str::to_string), asked, who);
        view::make_room(&mut views, &key, &catalog);
        let cached = views.entry(key).or_default();
        // Rebuilt only when the catalog changed (not on every call: this is every call's path).
        if !cached.catalog.as_ref().is_some_and(|c| Arc::ptr_eq(c, &catalog)) || cached.names != names {
            let repair = self.transparent_server().is_none();
            let hub = &self.hub;
            let denied = |e: &switchboard::catalog::ToolEntry| hub.denied_by_for(e, caller).is_some();
            cached.view = Arc::new(view::View::build(&catalog, &filter, names, repair, denied));
            cached.catalog = Some(catalog);
            cached.names = names;
        }
        Ok(cached.view.clone())
    }

    /// Whether this view's tool definitions are deferred behind search.
    fn defers(&self, view: &view::View) -> bool {
        match self.options.tool_search {
            ToolSearch::Off => false,
            ToolSearch::On => true,
            ToolSearch::Auto(limit) => *view.deferred.get_or_init(|| {
                let counter = self.tokens.get_or_init(|| {
                    switchboard::catalog::tokens::TokenCounter::o200k()
                        .inspect_err(|e| tracing::warn!("--tool-search auto: {e}; tools are listed in full"))
                        .ok()
                });
                let Some(counter) = counter else { return false };
                // Counted until the limit is passed: a catalog of 10,000 tools stops early.
                let mut total = 0usize;
                for t in &view.tools {
                    let tool = &t.tool;
                    total += counter.definition(
                        &tool.name,
                        tool.title.as_deref(),
                        tool.description.as_deref(),
                        &tool.input_schema,
                    );
                    if total > limit {
                        return true;
                    }
                }
                false
            }),
        }
    }

    /// The one upstream the gateway stands for transparently (`--names bare` and a scope of
    /// exactly one configured server), if so.
    fn transparent_server(&self) -> Option<String> {
        if self.names() != Names::Bare {
            return None;
        }
        let filter = self.filter(None).ok()?;
        let mut seen = self.hub.servers().into_iter().filter(|s| filter.server(&s.name));
        let only = seen.next()?;
        seen.next().is_none().then_some(only.name)
    }

    /// What `caller` sees of the servers: the host's, with those each person gets their own of
    /// as the caller's own are (not started yet: as the host has them).
    fn servers_for(&self, caller: Option<&switchboard::identity::Principal>) -> Vec<switchboard::ServerInfo> {
        let host = self.hub.servers();
        let Some(person) = caller.and_then(|p| self.hub.person(p)) else { return host };
        let own = person.servers();
        host.into_iter().map(|s| own.iter().find(|o| o.name == s.name).cloned().unwrap_or(s)).collect()
    }

    /// The key a subscription to `uri` of `server` is counted under: a server each person gets
    /// their own of is told apart by whose it is.
    fn subscription_key(
        &self,
        server: &str,
        uri: &str,
        caller: Option<&switchboard::identity::Principal>,
    ) -> (String, String) {
        let person = caller.filter(|_| self.hub.is_personal(server)).map(|p| p.key());
        (relay::route(server, person.as_deref()), uri.to_string())
    }

    /// Counts a session's subscription to an upstream resource; the first one subscribes
    /// upstream (in the caller's own hub, for a server each person gets their own of).
    async fn subscribe(
        &self,
        session: u64,
        server: &str,
        uri: &str,
        caller: Option<&switchboard::identity::Principal>,
    ) -> Result<(), switchboard::Error> {
        let key = self.subscription_key(server, uri, caller);
        let hub = self.hub.route(server, caller)?;
        let first = {
            let mut subs = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
            let n = subs.entry(key.clone()).or_default();
            *n += 1;
            *n == 1
        };
        if first && let Err(e) = hub.subscribe_resource(server, uri).await {
            self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
            return Err(e);
        }
        if let Some(s) = self.sessions().get_mut(&session) {
            s.subscribed.insert(key);
        }
        Ok(())
    }

    /// Takes back one count; the last one unsubscribes upstream.
    async fn unsubscribe(&self, server: &str, uri: &str, caller: Option<&switchboard::identity::Principal>) {
        let key = self.subscription_key(server, uri, caller);
        let last = {
            let mut subs = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
            match subs.get_mut(&key) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    subs.remove(&key);
                    true
                }
                None => false,
            }
        };
        let hub = self.hub.route(server, caller);
        if last && let Err(e) = async { hub?.unsubscribe_resource(server, uri).await }.await {
            tracing::debug!(server, "unsubscribing from {uri}: {e}");
        }
    }

    /// Forgets a session: its subscriptions are taken back, the relay stops routing to it.
    fn session_gone(self: &Arc<Self>, id: u64) {
        let Some(state) = self.sessions().remove(&id) else { return };
        if let Some(relay) = &self.relay {
            relay.session_gone(id);
        }
        if state.subscribed.is_empty() {
            return;
        }
        let shared = self.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for (key, uri) in state.subscribed {
                    // The server's own name, without whose it is.
                    let server = key.split('\u{1f}').next().unwrap_or_default();
                    shared.unsubscribe(server, &uri, state.caller.as_ref()).await;
                }
            });
        }
    }
}

/// Serves one session over stdin/stdout (newline-delimited JSON-RPC) until the client closes
/// stdin, or `cancel` fires.
pub async fn serve_stdio(gateway: &Gateway, cancel: tokio_util::sync::CancellationToken) -> std::io::Result<()> {
    use rmcp::ServiceExt;
    let transport = stdio::Front::new(stdio::streams());
    let running = Session::new(gateway.shared.clone(), switchboard::telemetry::Transport::Pipe)
        .serve_with_ct(transport, cancel)
        .await
        .map_err(|e| std::io::Error::other(format!("the client did not start a session: {e}")))?;
    running.waiting().await.map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(())
}

/// The Streamable HTTP service for `/mcp` (both eras: sessions for 2025 clients, stateless
/// for 2026-07-28 ones; see [`http::HttpFront`] for what it decides per client). Host checks,
/// the token and body limits are the mounting server's (rmcp's own `Host` check is off: the
/// caller checks `Host` against its bound address and names); `cancel` ends every session.
pub fn http_service(
    gateway: &Gateway,
    cancel: tokio_util::sync::CancellationToken,
    max_body: usize,
) -> http::HttpFront {
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    let mut config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(cancel)
        .with_max_request_body_bytes(max_body);
    // On a team's store, sessions outlive the process ([`durable`]).
    let store = gateway.hub().store().cloned();
    if let Some(db) = &store {
        config.session_store = Some(Arc::new(durable::DurableSessions::new(db.clone())));
    }
    let sessions = Arc::new(sessions::Sessions::new(sessions::MAX_SESSIONS, gateway.shared.metrics.clone()));
    let service = |config: StreamableHttpServerConfig| {
        let gateway = gateway.clone();
        rmcp::transport::StreamableHttpService::new(move || Ok(gateway.session()), sessions.clone(), config)
    };
    let plain = service(config.clone().with_sse_retry(None));
    let replicas = gateway.shared.replicas.clone();
    let metrics = gateway.shared.metrics.clone();
    http::HttpFront::new(
        service(config),
        plain,
        sessions,
        max_body,
        gateway.hub().config_id(),
        store,
        replicas,
        metrics,
    )
}

//! The [`Hub`]: one facade over every configured server.
//!
//! Each server has a slot holding its status, its live connection and its last good lists.
//! All enabled, trusted servers start in parallel; each start is bounded by its own timeout,
//! so one slow or broken server never delays another beyond that. Every change to a slot's
//! lists rebuilds the [`Catalog`] snapshot, which readers get as an `Arc` without locking.
//!
//! A server that goes away (its process exits, it fails to start, a remote one stops
//! answering) is tried again with backoff ([`retry`]); what watches a live connection is in
//! [`connect`].

mod approve;
mod auth;
mod calls;
mod complete;
mod connect;
mod follow;
mod health;
mod info;
mod lease;
mod manage;
mod options;
mod people;
mod pipeline;
mod reload;
mod remember;
mod request;
mod retry;
mod scan;
mod signals;
mod slot;
mod subscriptions;
mod view;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

pub use crate::events::ReloadReport;
pub use auth::Comeback;
pub use calls::{CallOptions, ToolOutput};
pub use complete::Completing;
pub use follow::ConfigWatch;
pub use info::ServerInfo;
pub use options::{HubOptions, PersonOptions};
pub use people::{PersonEvent, PersonInfo};
pub use request::RequestOptions;
pub use retry::Reconnect;
pub use view::{HubView, ViewFilter};

use crate::catalog::{Catalog, CompiledFilter, ServerLists};
use crate::config::{LoadedConfig, ServerConfig};
use crate::connection::Connection;
use crate::deadline::Watchdog;
use crate::error::Error;
use crate::events::Event;
use crate::paths::Paths;
use crate::process::ProcessTree;
use crate::status::{FailureKind, ServerStatus};
use crate::transport::progress::Publish;
use crate::trust::TrustStore;
use connect::connect;
use info::info;
use slot::Slot;

pub(crate) struct Inner {
    options: HubOptions,
    project_root: PathBuf,
    host_env: Arc<HashMap<String, String>>,
    /// The servers, by name (servers can be added and removed at run time).
    slots: RwLock<BTreeMap<String, Arc<Slot>>>,
    catalog: RwLock<Arc<Catalog>>,
    /// Held across snapshot, build and store, so a rebuild that read older lists can never
    /// overwrite one that read newer lists (two servers connecting at once raced here).
    rebuild: Mutex<()>,
    /// Deadlines of every request in flight.
    watchdog: Watchdog,
    events: crate::events::EventBus,
    changed: watch::Sender<u64>,
    trees: Arc<crate::process::Trees>,
    /// Where this hub's running supervisors are recorded.
    record: Option<Arc<crate::process::record::Record>>,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// Counts the config reloads other processes on the store asked for ([`signals`]), which
    /// [`Hub::watch_config`]'s loop follows.
    remote_reload: watch::Sender<u64>,
    shutting_down: AtomicBool,
    id: String,
    /// Numbers tool calls for [`Event::Progress`].
    calls: AtomicU64,
    /// Where cut results are kept (`<data>/results`).
    spill_dir: Arc<std::path::Path>,
    /// Policy, approvals and the audit log (one for a hub and its people's).
    gate: Arc<crate::policy::gate::Gate>,
    /// Whose servers these are: `None` for the host's hub, a person for theirs
    /// ([`Hub::person`]), which holds only the servers each person gets their own of.
    person: Option<Arc<crate::identity::Principal>>,
    /// A person's folder (their input values, their logins without a team's store):
    /// `<data>/people/<key>`; the data folder for the host's hub.
    credentials: PathBuf,
    /// Where this hub's logins are kept: `credentials/auth.json`, or its owner's rows of the
    /// team's store ([`HubOptions::store`]).
    tokens: crate::auth::TokenStore,
    /// The hubs of the people who signed in ([`people`]); none in a person's hub.
    people: people::People,
    /// A person's hub: their current access token (the organisation's), which a server of
    /// `grant: token_exchange` exchanges; in memory only.
    subject: Mutex<Option<String>>,
    /// The scanner's rules and the secret patterns, each made when first needed
    /// ([`crate::screen::compiled`]).
    checks: Arc<crate::screen::compiled::Compiled>,
    /// The catalog's tool names for the shadowing check, made once per catalog snapshot.
    tool_names: Mutex<(std::sync::Weak<Catalog>, Arc<crate::screen::ToolNames>)>,
    /// The chain this hub passes on to its servers (see [`crate::chain`]).
    chain: String,
    /// Its config's id in chains ([`crate::workspace::config_key`]).
    config_id: String,
}

/// The host runtime: start it with a loaded config, then read statuses and the catalog, call
/// tools, read resources, get prompts, subscribe to events, and shut it down.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.inner.all_slots().iter().map(|s| s.name.clone()).collect::<Vec<_>>())
            .finish()
    }
}

static HUB_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Hub {
    /// Creates the hub and starts every enabled, trusted server in parallel. Returns at once;
    /// use [`Hub::ready`] to wait until every start has settled.
    pub fn start(config: &LoadedConfig, options: HubOptions) -> Hub {
        Hub::start_part(config, options, Part::Host)
    }

    /// A hub of the host's servers ([`Part::Host`]), or of one person's own.
    fn start_part(config: &LoadedConfig, options: HubOptions, part: Part) -> Hub {
        let trust = TrustStore::open(&options.paths.data_dir);
        if let Err(e) = &trust {
            tracing::warn!("{e}; project servers stay untrusted");
        }
        let events = crate::events::EventBus::default();
        let (changed, _) = watch::channel(0);
        let mut slots = BTreeMap::new();
        let person = match &part {
            Part::Host => None,
            Part::Person { principal, .. } => Some(principal.clone()),
        };
        for (name, entry) in &config.servers {
            if !wanted(&options, person.is_some(), name, entry) {
                continue;
            }
            let trusted = |c: &ServerConfig| trust.as_ref().is_ok_and(|t| t.is_trusted(&config.project_root, c));
            let slot = Slot::new(entry.clone(), trusted);
            // The host makes no connection of a server each person gets their own of.
            if person.is_none() && personal(&options, entry) && matches!(slot.state().status, ServerStatus::Connecting)
            {
                slot.state().status = ServerStatus::PerPerson;
                slot.mark_started();
            }
            slots.insert(name.clone(), Arc::new(slot));
        }
        let n = HUB_COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{n}", std::process::id());
        // The data folder holds tokens, trust and outputs: 0700, tightened if it is looser.
        if let Err(e) = crate::fsutil::create_private_dir(&options.paths.data_dir) {
            tracing::warn!("the data folder: {e}");
        }
        let results = options.paths.data_dir.join("results");
        let (keep, max) = (options.results_keep, options.results_max_bytes);
        if results.is_dir() {
            let _ = crate::fsutil::create_private_dir(&results);
            tokio::task::spawn_blocking(move || {
                let (n, bytes) = crate::output::clean_spills(&results, keep, max);
                if n > 0 {
                    tracing::info!("removed {n} kept output(s) ({bytes} bytes) from {}", results.display());
                }
            });
        }
        for line in crate::process::record::sweep_stale(&options.paths.data_dir) {
            tracing::warn!("{line}");
        }
        let record = crate::process::record::Record::new(&options.paths.data_dir, &id);
        let spill_dir = Arc::from(options.paths.data_dir.join("results"));
        let (gate, checks, credentials) = match part {
            Part::Host => (
                Arc::new(crate::policy::gate::Gate::new(config, &options.paths.data_dir, options.store.as_ref())),
                crate::screen::compiled::Compiled::new(),
                options.paths.data_dir.clone(),
            ),
            Part::Person { gate, checks, credentials, .. } => (gate, checks, credentials),
        };
        // Its servers learn which configs the connection passed through, itself included.
        let config_id = crate::workspace::config_key(config);
        let chain = crate::chain::Chain::inherited(&options.host_env).with(&config_id).to_value();
        let inner = Arc::new(Inner {
            chain,
            config_id,
            gate,
            checks,
            tokens: match (&options.store, &person) {
                (Some(db), Some(p)) => crate::auth::TokenStore::in_database(db.clone(), &p.key()),
                (Some(db), None) => crate::auth::TokenStore::in_database(db.clone(), ""),
                (None, _) => crate::auth::TokenStore::in_dir(&credentials),
            }
            .counted(options.metrics.clone()),
            person,
            credentials,
            people: people::People::new(config),
            subject: Mutex::new(None),
            tool_names: Mutex::default(),
            spill_dir,
            host_env: Arc::new(options.host_env.clone()),
            options,
            project_root: config.project_root.clone(),
            slots: RwLock::new(slots),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            rebuild: Mutex::new(()),
            watchdog: Watchdog::start(),
            events,
            changed,
            trees: Arc::default(),
            record,
            tasks: Mutex::new(Vec::new()),
            remote_reload: watch::Sender::new(0),
            shutting_down: AtomicBool::new(false),
            id,
            calls: AtomicU64::new(0),
        });
        // What each server listed last stands in for its lists while it starts: in a
        // long-running host (a short-lived one, a command, waits for its servers anyway, and
        // would only hold each list twice).
        if inner.options.remember_lists && inner.options.reconnect.background {
            for slot in inner.all_slots() {
                if let Some(place) = inner.lists_place(&slot) {
                    slot.stand_in(&place);
                }
            }
            inner.rebuild_catalog();
        }
        // A long-running hub stops servers nobody uses (a short-lived one ends first).
        if inner.options.reconnect.background {
            lease::spawn(&inner);
        }
        signals::spawn(&inner);
        for slot in inner.all_slots() {
            if matches!(slot.state().status, ServerStatus::Connecting) {
                let (inner2, slot2) = (inner.clone(), slot.clone());
                let handle = tokio::spawn(async move {
                    let _ = connect(&inner2, &slot2).await;
                });
                inner.track(handle.abort_handle());
            }
        }
        Hub { inner }
    }

    /// A count that grows whenever a server's status changes or servers are added or
    /// removed: what was made from [`Hub::servers`] is current while it stays the same (a
    /// status that names a retry time, said relative to now, ages all the same).
    pub fn status_epoch(&self) -> u64 {
        *self.inner.changed.borrow()
    }

    /// Waits until no server is `connecting`.
    pub async fn ready(&self) {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if !self.inner.all_slots().iter().any(|s| matches!(s.state().status, ServerStatus::Connecting)) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until every server `wanted` names has finished its first attempt to connect
    /// (connected, failed, or not to be started); a server reconnecting later, or started
    /// again after an idle stop, is not waited for. What a gateway's first list waits on,
    /// within a bound: a request should wait only for the server it needs.
    pub async fn started(&self, wanted: impl Fn(&str) -> bool) {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if self.inner.all_slots().iter().all(|s| !wanted(&s.name) || s.started()) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until every server `wanted` names has finished its first attempt to connect or
    /// has its lists remembered from its last run standing in ([`HubOptions::remember_lists`]):
    /// until a list of them holds every server's tools.
    pub async fn listed(&self, wanted: impl Fn(&str) -> bool) {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if !self.unlisted(&wanted) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Whether some server `wanted` names is on its first attempt to connect with nothing
    /// remembered to stand in for its lists.
    pub fn unlisted(&self, wanted: impl Fn(&str) -> bool) -> bool {
        self.inner.all_slots().iter().any(|s| wanted(&s.name) && !s.started() && !s.state().remembered)
    }

    /// Whether `server`'s lists in the catalog are the ones remembered from its last run,
    /// standing in while it starts ([`HubOptions::remember_lists`]).
    pub fn remembered(&self, server: &str) -> bool {
        self.inner.slot(server).is_ok_and(|s| s.state().remembered)
    }

    /// Whether some server `wanted` names is still in its first attempt to connect.
    pub fn starting(&self, wanted: impl Fn(&str) -> bool) -> bool {
        self.inner.all_slots().iter().any(|s| wanted(&s.name) && !s.started())
    }

    /// The id of the config this hub was started with, as [`crate::chain`] passes it on: a
    /// gateway over this hub refuses a request that passed through it already.
    pub fn config_id(&self) -> &str {
        &self.inner.config_id
    }

    /// Every server with its status, by name.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.inner.all_slots().iter().map(|s| info(s)).collect()
    }

    /// Whether every server's first attempt to connect is over (each connected, failed, or
    /// waits for something such as a login): what a load balancer's readiness check waits for
    /// (a reconnection later does not count; a server that fails would fail on every replica).
    pub fn first_start_over(&self) -> bool {
        self.inner.all_slots().iter().all(|s| s.started())
    }

    /// What this hub (and each person's, made from it) counted ([`crate::metrics`]).
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.inner.options.metrics
    }

    /// One server's status.
    pub fn status(&self, name: &str) -> Option<ServerStatus> {
        self.inner.slot(name).ok().map(|s| s.state().status.clone())
    }

    /// The last lines a server wrote on stderr (its live process, if any).
    pub fn stderr_tail(&self, name: &str) -> Vec<String> {
        let conn = self.inner.slot(name).ok().and_then(|s| s.state().conn.clone());
        conn.and_then(|c| c.tree.as_ref().map(|t| t.stderr.lines())).unwrap_or_default()
    }

    /// The process id of a connected stdio server (its supervisor's child), if it has one.
    pub fn server_pid(&self, name: &str) -> Option<i32> {
        let conn = self.inner.slot(name).ok().and_then(|s| s.state().conn.clone())?;
        conn.tree.as_ref().map(|t| t.pid())
    }

    /// What a connected server said about itself (its `initialize` result or discovery):
    /// protocol version, capabilities, implementation, instructions, screened as the hub's
    /// [`Screening`](crate::screen::Screening) says (the instructions as screened when it
    /// connected; the implementation's name, title, version and description here).
    pub fn server_peer_info(&self, name: &str) -> Option<rmcp::model::ServerPeerInfo> {
        let conn = self.inner.slot(name).ok().and_then(|s| s.state().conn.clone())?;
        let mut info = conn.peer.peer_info().map(|i| (*i).clone())?;
        info.instructions = conn.identity.instructions.clone();
        if self.inner.options.screening == crate::screen::Screening::Remove
            && let Some(implementation) = info.server_info.as_mut()
        {
            let words = [Some(&mut implementation.name), Some(&mut implementation.version)]
                .into_iter()
                .chain([implementation.title.as_mut(), implementation.description.as_mut()]);
            for text in words.flatten() {
                let clean = match crate::screen::strip(text) {
                    (clean, Some(_)) => clean.into_owned(),
                    (_, None) => continue,
                };
                *text = clean;
            }
        }
        Some(info)
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Changes of state from now on: every event but those of single tool calls
    /// ([`Event::is_per_call`]). While only such subscribers listen, the hub builds no
    /// per-call events at all.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe_changes()
    }

    /// The user's config file and the data folder this hub uses.
    pub fn paths(&self) -> &Paths {
        &self.inner.options.paths
    }

    /// The host environment `${VAR}` in server entries expands from.
    pub fn host_env(&self) -> &HashMap<String, String> {
        &self.inner.host_env
    }

    /// The project root this hub runs in.
    pub fn project_root(&self) -> &std::path::Path {
        &self.inner.project_root
    }

    /// Closes a server's connection (if any) and connects it again.
    pub async fn reconnect(&self, name: &str) -> Result<(), Error> {
        let slot = self.inner.slot(name)?;
        retry::reset(&slot);
        let old = slot.state().conn.take();
        if let Some(conn) = old {
            conn.close().await;
        }
        connect(&self.inner, &slot).await.map(|_| ()).map_err(|f| Error::failed_start(name, f.message.clone(), f))
    }

    /// Closes a server's connection (and ends its process tree) and keeps it closed: its
    /// status is `stopped` and calls fail until [`Hub::connect`] or [`Hub::reconnect`].
    pub async fn disconnect(&self, name: &str) -> Result<(), Error> {
        let slot = self.inner.slot(name)?.clone();
        retry::reset(&slot);
        let _guard = slot.connect_lock.lock().await;
        let conn = slot.state().conn.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
        if slot.config().is_some() {
            self.inner.set_status(&slot, ServerStatus::Stopped);
        }
        Ok(())
    }

    /// Connects a server that is not connected (stopped, disconnected, failed, in a crash
    /// loop: the count starts again); a connected one is left as it is. Returns its status
    /// afterwards.
    pub async fn connect(&self, name: &str) -> Result<ServerStatus, Error> {
        let slot = self.inner.slot(name)?.clone();
        if slot.config().is_none() {
            let status = slot.state().status.clone();
            return Err(Error::not_connected(name, &status));
        }
        retry::reset(&slot);
        let _ = connect(&self.inner, &slot).await;
        Ok(slot.state().status.clone())
    }

    /// Closes every server in parallel and ends their process trees. Returns within about
    /// 2 s even when servers ignore signals.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let people = self.inner.people.take_all();
        let people = futures::future::join_all(people.iter().map(|hub| Box::pin(hub.shutdown())));
        for task in self.inner.tasks.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
            task.abort();
        }
        let conns: Vec<Arc<Connection>> = self.inner.all_slots().iter().filter_map(|s| s.state().conn.take()).collect();
        let trees: Vec<Arc<ProcessTree>> = self.inner.trees.take();
        let bound = self.inner.all_slots().iter().filter_map(|s| s.config()).map(|c| c.shutdown_grace).max();
        let bound = crate::process::Shutdown { grace: bound.unwrap_or_default() }.bound() + Duration::from_millis(200);
        let closes = futures::future::join_all(conns.iter().map(|c| c.close()));
        let kills = futures::future::join_all(trees.iter().map(|t| t.terminate()));
        // Past the bound the supervisors finish on their own (they see this process go).
        let _ = tokio::time::timeout(bound, futures::future::join3(closes, kills, people)).await;
        // Calls that ended with their servers are in the log too. A person's hub shares the
        // host's gate: the host's end closes the log.
        if self.inner.person.is_some() {
            self.inner.gate.flush().await;
        } else {
            self.inner.gate.close().await;
        }
    }
}

/// Which servers a hub holds.
enum Part {
    /// The host's: every server (those each person gets their own of, unconnected).
    Host,
    /// One person's own servers, sharing the host's policy, audit and checks.
    Person {
        principal: Arc<crate::identity::Principal>,
        gate: Arc<crate::policy::gate::Gate>,
        checks: Arc<crate::screen::compiled::Compiled>,
        /// Their folder, where their logins are kept.
        credentials: PathBuf,
    },
}

/// Whether `entry` is a server each person gets a connection of their own of, in a hub run
/// with `options`.
fn personal(options: &HubOptions, entry: &crate::config::ServerEntry) -> bool {
    entry.per_person(options.team)
}

/// Whether a hub (a person's: `person`) holds the server `name`: the host's holds every one
/// `only` lets in, a person's those of them each person gets their own of.
fn wanted(options: &HubOptions, person: bool, name: &str, entry: &crate::config::ServerEntry) -> bool {
    options.only.as_ref().is_none_or(|only| only.contains(name)) && (!person || personal(options, entry))
}

impl Inner {
    /// The owner this hub's logins and instances are told as (`""`: the host's).
    fn owner(&self) -> String {
        self.person.as_ref().map(|p| p.key()).unwrap_or_default()
    }

    /// Tells the other processes on the team's store `signal` ([`signals`]; nothing without a
    /// store; a failure is logged: what is told is a hint, the store holds the truth).
    async fn tell(&self, signal: crate::store::signals::Signal) {
        if let Some(db) = &self.options.store {
            db.tell(&signal).await;
        }
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>, Error> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        slots.get(name).cloned().ok_or_else(|| Error::unknown_server(name, slots.keys().map(String::as_str)))
    }

    fn all_slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    /// The catalog's tool names for the shadowing check, made once per catalog snapshot.
    fn tool_names(&self) -> Arc<crate::screen::ToolNames> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner).clone();
        let mut cached = self.tool_names.lock().unwrap_or_else(PoisonError::into_inner);
        // The weak reference keeps the snapshot's allocation, so its address is never reused.
        if !std::sync::Weak::ptr_eq(&cached.0, &Arc::downgrade(&catalog)) {
            let names = catalog.tools().iter().map(|t| (t.server.as_str(), t.tool.name.as_ref()));
            *cached = (Arc::downgrade(&catalog), Arc::new(crate::screen::ToolNames::new(names)));
        }
        cached.1.clone()
    }

    fn track(&self, handle: tokio::task::AbortHandle) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    fn set_status(&self, slot: &Slot, status: ServerStatus) {
        if !matches!(status, ServerStatus::Connecting) {
            slot.mark_started();
        }
        slot.state().status = status.clone();
        let auth = match &status {
            ServerStatus::Failed {
                kind: kind @ (FailureKind::NeedsAuth | FailureKind::NeedsClientRegistration),
                message,
                auth_challenge,
                ..
            } => Some(Event::AuthNeeded {
                server: slot.name.clone(),
                reason: match kind {
                    FailureKind::NeedsClientRegistration => format!("{message} (needs a registered client)"),
                    _ => message.clone(),
                },
                scope: auth_challenge.as_deref().and_then(crate::auth::challenge_scope),
            }),
            _ => None,
        };
        self.events.send(Event::StatusChanged { server: slot.name.clone(), remedy: status.remedy(&slot.name), status });
        if let Some(auth) = auth {
            self.events.send(auth);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// How a tool call's progress is published as [`Event::Progress`]: only while anyone
    /// listens to the hub's events.
    pub(crate) fn publish_progress(&self, server: &str, tool: &str) -> Option<Publish> {
        self.events.wants_calls().then(|| Publish {
            events: self.events.clone(),
            server: server.to_string(),
            tool: tool.to_string(),
            call: self.calls.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Where `slot`'s lists are remembered ([`remember`]), when they are and it has a config.
    fn lists_place(&self, slot: &Slot) -> Option<PathBuf> {
        if !self.options.remember_lists {
            return None;
        }
        let config = slot.config()?;
        Some(remember::place(&self.options.paths.data_dir, &config, self.person.as_deref()))
    }

    /// `slot`'s lists, as they now are, remembered for its next start.
    fn remember_lists(&self, slot: &Slot) {
        if let Some(place) = self.lists_place(slot) {
            let (lists, findings) = {
                let st = slot.state();
                (st.lists.clone(), st.findings.clone())
            };
            remember::keep(place, lists, findings);
        }
    }

    fn rebuild_catalog(&self) {
        let _serial = self.rebuild.lock().unwrap_or_else(PoisonError::into_inner);
        let slots = self.all_slots();
        let snapshot: Vec<(&str, Arc<ServerLists>, Arc<CompiledFilter>)> =
            slots.iter().map(|s| (s.name.as_str(), s.state().lists.clone(), s.filter())).collect();
        let catalog = Catalog::build(snapshot.iter().map(|(n, l, f)| (*n, &**l, &**f)));
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
    }

    fn publish_catalog(&self, slot: &Slot) {
        let lists = slot.state().lists.clone();
        let filter = slot.filter();
        let tools = lists.tools.iter().filter(|t| filter.allows(&t.name)).count();
        self.events.send(Event::CatalogChanged {
            server: slot.name.clone(),
            tools,
            resources: lists.resources.len(),
            prompts: lists.prompts.len(),
        });
    }
}

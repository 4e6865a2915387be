//! One server's place in the hub: its config entry, tool filter, status, live connection,
//! last good lists, and the resources subscribed to (kept across reconnects).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use crate::catalog::{CompiledFilter, ServerLists};
use crate::config::{ServerConfig, ServerEntry};
use crate::connection::Connection;
use crate::connection::handler::ListChange;
use crate::status::{FailureKind, ServerStatus};

pub(super) struct SlotState {
    pub(super) status: ServerStatus,
    pub(super) conn: Option<Arc<Connection>>,
    pub(super) lists: Arc<ServerLists>,
    /// `lists` are the ones remembered from its last run ([`super::remember`]), standing in
    /// until it is up.
    pub(super) remembered: bool,
    pub(super) applied: HashMap<ListChange, u64>,
    /// The `WWW-Authenticate` challenge of the last request refused for want of a login or a
    /// scope: the next login starts from it (step-up asks for the scopes it names).
    pub(super) auth_challenge: Option<String>,
    /// Resources subscribed to through the hub: subscribed again on every new connection.
    pub(super) subscribed: BTreeSet<String>,
    /// What screening its lists and instructions found ([`crate::screen`]), as last listed.
    pub(super) findings: Arc<Vec<crate::screen::Finding>>,
}

pub(super) struct Slot {
    pub(super) name: String,
    /// Its config entry, replaced in place by a reload that needs no restart.
    entry: RwLock<Arc<ServerEntry>>,
    /// The entry's config when it is valid (read on every call: timeouts, checks).
    config: RwLock<Option<Arc<ServerConfig>>>,
    filter: RwLock<Arc<CompiledFilter>>,
    pub(super) state: Mutex<SlotState>,
    pub(super) connect_lock: tokio::sync::Mutex<()>,
    pub(super) epoch: AtomicU64,
    pub(super) list_seq: AtomicU64,
    /// When it went away lately and when it is tried again.
    backoff: Mutex<super::retry::Backoff>,
    /// Requests in flight and when it was last used (for the idle lease).
    pub(super) usage: Mutex<Usage>,
    /// Its first attempt to connect is over (connected, failed, or never meant to start).
    started: std::sync::atomic::AtomicBool,
    /// What its sandbox refused (across restarts).
    pub(super) refusals: Arc<crate::sandbox::Refusals>,
    /// The secrets its config hands the server, worked out once for the config in force.
    secrets: Mutex<Option<SecretsOf>>,
}

/// A config, and the secrets it hands the server.
type SecretsOf = (Arc<ServerConfig>, Arc<[String]>);

/// How a server is being used.
pub(super) struct Usage {
    pub(super) in_flight: usize,
    pub(super) last: std::time::Instant,
}

/// A request to a server under way: it counts as used until the guard goes.
pub(super) struct InUse(Arc<Slot>);

impl Drop for InUse {
    fn drop(&mut self) {
        let mut u = self.0.usage.lock().unwrap_or_else(PoisonError::into_inner);
        u.in_flight = u.in_flight.saturating_sub(1);
        u.last = std::time::Instant::now();
    }
}

impl Slot {
    /// A slot for `entry`: failed if invalid, disabled, untrusted (by `trusted`), or about to
    /// connect.
    pub(super) fn new(entry: ServerEntry, trusted: impl FnOnce(&ServerConfig) -> bool) -> Slot {
        let status = match &entry {
            ServerEntry::Invalid(i) => ServerStatus::Failed {
                kind: if i.denied { FailureKind::PolicyDenied } else { FailureKind::ConfigInvalid },
                message: i.message.clone(),
                stderr_tail: vec![],
                auth_challenge: None,
                retry: None,
            },
            ServerEntry::Valid(c) if !c.enabled => ServerStatus::Disabled,
            ServerEntry::Valid(c) if !trusted(c) => ServerStatus::Untrusted,
            ServerEntry::Valid(_) => ServerStatus::Connecting,
        };
        let (filter, config) = parts(&entry);
        let started = !matches!(status, ServerStatus::Connecting);
        Slot {
            name: entry.name().to_string(),
            entry: RwLock::new(Arc::new(entry)),
            config: RwLock::new(config),
            filter: RwLock::new(filter),
            state: Mutex::new(SlotState {
                status,
                conn: None,
                lists: Arc::default(),
                remembered: false,
                applied: HashMap::new(),
                auth_challenge: None,
                subscribed: BTreeSet::new(),
                findings: Arc::default(),
            }),
            connect_lock: tokio::sync::Mutex::new(()),
            epoch: AtomicU64::new(0),
            list_seq: AtomicU64::new(0),
            backoff: Mutex::default(),
            usage: Mutex::new(Usage { in_flight: 0, last: std::time::Instant::now() }),
            started: std::sync::atomic::AtomicBool::new(started),
            refusals: Arc::default(),
            secrets: Mutex::new(None),
        }
    }

    /// Its lease ([`super::lease`]): how long it may go unused in a long-running hub; `None`:
    /// for ever.
    pub(super) fn lease(&self) -> Option<std::time::Duration> {
        let config = self.config()?;
        if !config.enabled {
            return None;
        }
        // Zero: added at run time without its own; the default applies.
        config.idle_shutdown.map(|d| if d.is_zero() { crate::config::DEFAULT_IDLE_SHUTDOWN } else { d })
    }

    /// Whether its first attempt to connect is over (a reconnection later does not count).
    pub(super) fn started(&self) -> bool {
        self.started.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Its lists as remembered from its last run stand in for them while it starts (when it
    /// is about to connect and any are kept at `place`).
    pub(super) fn stand_in(&self, place: &std::path::Path) {
        let mut st = self.state();
        if !matches!(st.status, ServerStatus::Connecting) {
            return;
        }
        if let Some(kept) = super::remember::recall(place) {
            st.lists = Arc::new(kept.lists);
            st.findings = Arc::new(kept.findings);
            st.remembered = true;
        }
    }

    /// Its first attempt to connect is over.
    pub(super) fn mark_started(&self) {
        self.started.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Marks a request to it under way (until the guard is dropped).
    pub(super) fn begin_use(self: &Arc<Self>) -> InUse {
        let mut u = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        u.in_flight += 1;
        u.last = std::time::Instant::now();
        InUse(self.clone())
    }

    /// How long it has gone unused; `None` while a request is under way.
    pub(super) fn idle_for(&self) -> Option<std::time::Duration> {
        let u = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        (u.in_flight == 0).then(|| u.last.elapsed())
    }

    /// Starts its idle time afresh (it was just connected).
    pub(super) fn touch(&self) {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner).last = std::time::Instant::now();
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
    pub(super) fn backoff(&self) -> std::sync::MutexGuard<'_, super::retry::Backoff> {
        self.backoff.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry as configured now.
    pub(super) fn entry(&self) -> Arc<ServerEntry> {
        self.entry.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The config, when the entry is valid.
    pub(super) fn config(&self) -> Option<Arc<ServerConfig>> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The secrets its config hands the server (env values, headers, a bearer token from
    /// `host_env`): what a result must not carry back. Worked out once per config.
    pub(super) fn secrets(&self, host_env: &HashMap<String, String>) -> Arc<[String]> {
        let Some(config) = self.config() else { return Arc::from([]) };
        let mut cache = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((of, secrets)) = cache.as_ref()
            && Arc::ptr_eq(of, &config)
        {
            return secrets.clone();
        }
        let secrets: Arc<[String]> = config_secrets(&config, host_env).into();
        *cache = Some((config, secrets.clone()));
        secrets
    }

    /// The tool filter.
    pub(super) fn filter(&self) -> Arc<CompiledFilter> {
        self.filter.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Takes `entry` in place of the current one (a change that needs no restart: tool
    /// filters, timeouts, checks).
    pub(super) fn replace(&self, entry: ServerEntry) {
        let (filter, config) = parts(&entry);
        *self.filter.write().unwrap_or_else(PoisonError::into_inner) = filter;
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = config;
        *self.entry.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(entry);
    }
}

fn parts(entry: &ServerEntry) -> (Arc<CompiledFilter>, Option<Arc<ServerConfig>>) {
    match entry {
        ServerEntry::Valid(c) => (Arc::new(CompiledFilter::new(&c.tools)), Some(Arc::new(c.clone()))),
        ServerEntry::Invalid(_) => (Arc::new(CompiledFilter::new(&Default::default())), None),
    }
}

/// The values of `config` that are secrets handed to the server (those long enough to find).
fn config_secrets(config: &ServerConfig, host_env: &HashMap<String, String>) -> Vec<String> {
    let mut v: Vec<String> = match &config.transport {
        crate::config::TransportConfig::Stdio(s) => s.env.values().cloned().collect(),
        crate::config::TransportConfig::Http(h) => {
            let mut v: Vec<String> = h.headers.values().cloned().collect();
            v.extend(h.bearer_token_env_var.as_ref().and_then(|k| host_env.get(k)).cloned());
            v
        }
    };
    v.retain(|s| s.len() >= crate::screen::secrets::MIN_KNOWN);
    // The longest first, so a secret that holds a shorter one is taken whole.
    v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    v.dedup();
    v
}

/// How long a health check waits for the server's answer.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// Takes `conn` out of the slot (if it is still the slot's) and closes it.
pub(super) async fn drop_connection(slot: &Slot, conn: &std::sync::Arc<crate::connection::Connection>) {
    let current = {
        let mut st = slot.state();
        let same = st.conn.as_ref().is_some_and(|c| std::sync::Arc::ptr_eq(c, conn));
        if same {
            st.conn = None;
        }
        same
    };
    if current {
        conn.close().await;
    }
}

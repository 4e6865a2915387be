//! Each signed-in person's own servers. In a hub run for callers who sign in
//! ([`HubOptions::team`](super::HubOptions)), a server whose `sharing` is `per_principal` (by
//! default a remote one: its login is a person's) gets no connection of the host's; each
//! person gets a hub of their own for such servers, made on their first request
//! ([`Hub::person`]): their logins kept in `<data>/people/<key>/` (never the host's, never
//! another person's), their processes started on first use and stopped by the same idle lease
//! as any, the host's policy, audit and checks shared. What they see is the host's catalog
//! and their own ([`Hub::catalog_for`]); a request names its caller and goes to the hub that
//! holds the server ([`Hub::route`]). Their hub's events go to the host's subscribers of
//! people's events ([`Hub::subscribe_people`]), marked as theirs, never to the host's bus.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use tokio::sync::broadcast;

use super::{Hub, Part};
use crate::catalog::{Catalog, CompiledFilter, ServerLists};
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::events::{Event, ReloadReport};
use crate::identity::Principal;
use crate::status::ServerStatus;

/// An event of one person's hub.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PersonEvent {
    /// Whose ([`Principal::key`]).
    pub person: Arc<str>,
    /// What happened.
    pub event: Event,
}

/// The people's hubs of a host's hub.
pub(super) struct People {
    /// The config their hubs start from (the host's, as last loaded).
    config: RwLock<Arc<LoadedConfig>>,
    hubs: Mutex<HashMap<String, Arc<Person>>>,
    /// Made by the first subscriber or the first person's hub (a host with neither, the
    /// default, does not pay for its slots).
    events: std::sync::OnceLock<broadcast::Sender<PersonEvent>>,
}

struct Person {
    hub: Hub,
    /// The host's catalog and theirs as one, for the snapshots it was made of.
    merged: Mutex<Merged>,
    /// When a request of theirs last asked for their hub.
    used: Mutex<std::time::Instant>,
}

#[derive(Default)]
struct Merged {
    host: Weak<Catalog>,
    own: Weak<Catalog>,
    catalog: Arc<Catalog>,
}

impl People {
    /// Their hubs' events from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<PersonEvent> {
        self.events().subscribe()
    }

    fn events(&self) -> &broadcast::Sender<PersonEvent> {
        self.events.get_or_init(|| broadcast::channel(1024).0)
    }

    pub(super) fn new(config: &LoadedConfig) -> People {
        People {
            config: RwLock::new(Arc::new(config.clone())),
            hubs: Mutex::default(),
            events: std::sync::OnceLock::new(),
        }
    }

    fn hubs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Person>>> {
        self.hubs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The hub of the person `key`, while it runs.
    pub(super) fn running(&self, key: &str) -> Option<Hub> {
        self.hubs().get(key).map(|p| p.hub.clone())
    }

    /// The config as it is now.
    pub(super) fn config(&self) -> Arc<LoadedConfig> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Takes a new config (a hub's, as it runs now).
    pub(super) fn set_config(&self, config: &LoadedConfig) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config.clone());
    }

    /// Every person's hub.
    pub(super) fn all(&self) -> Vec<Hub> {
        self.hubs().values().map(|p| p.hub.clone()).collect()
    }

    /// Forgets every person's hub (the host's is shutting down); returns them, to shut down.
    pub(super) fn take_all(&self) -> Vec<Hub> {
        self.hubs().drain().map(|(_, p)| p.hub.clone()).collect()
    }
}

impl Hub {
    /// Whether some server gets a connection of each person's own (in a hub for callers who
    /// sign in: [`HubOptions::team`](super::HubOptions)).
    pub fn has_personal_servers(&self) -> bool {
        self.inner.person.is_none() && self.inner.all_slots().iter().any(|s| self.is_personal_slot(s))
    }

    /// Whether `server` is one each person gets their own connection of.
    pub fn is_personal(&self, server: &str) -> bool {
        self.inner.person.is_none() && self.inner.slot(server).is_ok_and(|s| self.is_personal_slot(&s))
    }

    pub(super) fn is_personal_slot(&self, slot: &super::Slot) -> bool {
        slot.entry().per_person(self.inner.options.team)
    }

    /// Whose servers this hub holds: `None` for the host's hub.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.person.as_deref()
    }

    /// The hub of `principal`'s own servers, made (its servers starting) on first need;
    /// `None` when no server is each person's own. Their logins are kept in
    /// `<data>/people/<key>/`; their statuses, logins and logouts are this hub's.
    pub fn person(&self, principal: &Principal) -> Option<Hub> {
        self.person_entry(principal).map(|p| p.hub.clone())
    }

    fn person_entry(&self, principal: &Principal) -> Option<Arc<Person>> {
        if !self.has_personal_servers() || self.inner.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        let key = principal.key();
        let people = &self.inner.people;
        if let Some(p) = people.hubs().get(&key) {
            *p.used.lock().unwrap_or_else(PoisonError::into_inner) = std::time::Instant::now();
            return Some(p.clone());
        }
        let credentials = self.inner.options.paths.data_dir.join("people").join(&key);
        if let Err(e) = crate::fsutil::create_private_dir(&credentials) {
            tracing::warn!("the folder of {}'s logins: {e}", principal.shown());
        }
        let config = self.config_of(&credentials);
        let part = Part::Person {
            principal: Arc::new(principal.clone()),
            gate: self.inner.gate.clone(),
            checks: self.inner.checks.clone(),
            credentials,
        };
        let mut hubs = people.hubs();
        // Another request may have made it meanwhile.
        if let Some(p) = hubs.get(&key) {
            return Some(p.clone());
        }
        // Who the folder is theirs, for the people's list (never a token): in the team's
        // store when there is one, else in their folder.
        let record = serde_json::json!({"principal": principal, "seen_ms": crate::status::now_ms()});
        match &self.inner.options.store {
            Some(db) => {
                let (db, key, shown) = (db.clone(), key.clone(), principal.shown().to_string());
                let task = tokio::spawn(async move {
                    if let Err(e) = db.record_person(&key, &record["principal"]).await {
                        tracing::warn!("the record of {shown}: {e}");
                    }
                });
                self.inner.track(task.abort_handle());
            }
            None => {
                if let Err(e) =
                    crate::write_private(&part_folder(&part).join("person.json"), record.to_string().as_bytes())
                {
                    tracing::warn!("the record of {}'s folder: {e}", principal.shown());
                }
            }
        }
        let mut options = self.inner.options.clone();
        options.elicitor = None;
        options.sampler = None;
        options.roots_source = None;
        if let Some(make) = self.inner.options.person_options.clone() {
            options = make(principal, options);
        }
        let hub = Hub::start_part(&config, options, part);
        forward(&hub, key.clone().into(), people.events().clone());
        tracing::info!(person = %principal.shown(), "started the servers of a person's own");
        let person = Arc::new(Person { hub, merged: Mutex::default(), used: Mutex::new(std::time::Instant::now()) });
        hubs.insert(key, person.clone());
        Some(person)
    }

    /// The config as the person whose folder is `folder` has it: loaded again with their input
    /// values when the host says how ([`HubOptions::person_config`](super::HubOptions)).
    fn config_of(&self, folder: &Path) -> Arc<LoadedConfig> {
        match &self.inner.options.person_config {
            Some(options) => {
                let mut options = options.clone();
                match (&self.inner.options.store, folder.file_name().and_then(|k| k.to_str())) {
                    (Some(db), Some(key)) => {
                        options.inputs_file = None;
                        options.input_values = Some(Arc::new(db.input_values(key)));
                    }
                    _ => options.inputs_file = Some(folder.join("inputs.json")),
                }
                Arc::new(crate::config::load(&options))
            }
            None => self.inner.people.config(),
        }
    }

    /// The inputs (`${input:ID}`) this hub's servers use that have no value yet: for a
    /// person's hub, theirs, of their own servers.
    pub fn inputs_missing(&self) -> Vec<crate::config::MissingInput> {
        let mut missing = self.inner.people.config().inputs_missing.clone();
        missing.retain(|m| m.servers.iter().any(|s| self.inner.slot(s).is_ok()));
        missing
    }

    /// Keeps `value` for the input `id` of `file` as this person's own (a person's hub only:
    /// `<data>/people/<key>/inputs.json`, 0600), then loads their config again so that their
    /// servers that waited for it start.
    pub async fn give_input(&self, file: &Path, id: &str, value: &str) -> Result<ReloadReport, Error> {
        if self.inner.person.is_none() || self.inner.options.person_config.is_none() {
            return Err(Error::Invalid {
                message: "only a person's own hub, on a host that loads their config, keeps their inputs".into(),
            });
        }
        if let (Some(db), Some(person)) = (&self.inner.options.store, &self.inner.person) {
            db.set_input(&person.key(), file, id, value)
                .await
                .map_err(|e| Error::storage(format!("keeping an input: {e}"), e))?;
        } else {
            let store = crate::config::InputStore::at(self.inner.credentials.join("inputs.json"));
            let (file, id, value) = (file.to_path_buf(), id.to_string(), value.to_string());
            tokio::task::spawn_blocking(move || store.set(&file, &id, &value))
                .await
                .map_err(|e| Error::storage(format!("keeping an input: {e}"), e))?
                .map_err(|e| Error::storage(format!("keeping an input: {e}"), e))?;
        }
        let config = self.config_of(&self.inner.credentials);
        Ok(self.reload(&config).await)
    }

    /// A person's hub: their access token as their latest request carried it (the
    /// organisation's), which their servers of `oauth.grant: token_exchange` exchange for a
    /// token of the server's (never sent to the server itself). Kept in memory only.
    pub fn set_caller_token(&self, token: &str) {
        if self.inner.person.is_none() {
            return;
        }
        {
            let mut subject = self.inner.subject.lock().unwrap_or_else(PoisonError::into_inner);
            if subject.as_deref() == Some(token) {
                return;
            }
            *subject = Some(token.to_string());
        }
        // A server that could not exchange (no token yet, or an expired one) tries again now.
        for slot in self.inner.all_slots() {
            let exchanges = slot.config().is_some_and(|c| match &c.transport {
                crate::config::TransportConfig::Http(h) => h.oauth.grant == crate::config::OAuthGrant::TokenExchange,
                _ => false,
            });
            let refused =
                matches!(slot.state().status, ServerStatus::Failed { kind: crate::status::FailureKind::NeedsAuth, .. });
            if exchanges && refused {
                let inner = self.inner.clone();
                let handle = tokio::spawn(async move {
                    super::retry::reset(&slot);
                    let _ = super::connect::connect(&inner, &slot).await;
                });
                self.inner.track(handle.abort_handle());
            }
        }
    }

    /// The people whose hubs run now, each with their servers.
    pub fn people(&self) -> Vec<(Principal, Vec<super::ServerInfo>)> {
        let mut all: Vec<_> = self
            .inner
            .people
            .all()
            .into_iter()
            .filter_map(|hub| Some((hub.principal()?.clone(), hub.servers())))
            .collect();
        all.sort_by(|a, b| (&a.0.issuer, &a.0.subject).cmp(&(&b.0.issuer, &b.0.subject)));
        all
    }

    /// What `principal` sees: the host's catalog and their own servers' as one (the host's
    /// alone when they have none, for no one, or while their hub does not run: it is made by
    /// their requests, [`Hub::person`]).
    pub fn catalog_for(&self, principal: Option<&Principal>) -> Arc<Catalog> {
        let host = self.catalog();
        // Only a hub that runs: a look at the catalog (a list change told to an old session)
        // never starts a person's servers again; their request does ([`Hub::person`]).
        let running = principal.and_then(|p| self.inner.people.hubs().get(&p.key()).cloned());
        let Some(person) = running else { return host };
        let own = person.hub.catalog();
        let mut merged = person.merged.lock().unwrap_or_else(PoisonError::into_inner);
        // The weak references keep the snapshots' allocations, so no address is reused.
        if Weak::ptr_eq(&merged.host, &Arc::downgrade(&host)) && Weak::ptr_eq(&merged.own, &Arc::downgrade(&own)) {
            return merged.catalog.clone();
        }
        let mut lists: Vec<(String, Arc<ServerLists>, Arc<CompiledFilter>)> = Vec::new();
        for hub in [self, &person.hub] {
            for slot in hub.inner.all_slots() {
                if hub.inner.person.is_none() && self.is_personal_slot(&slot) {
                    continue;
                }
                lists.push((slot.name.clone(), slot.state().lists.clone(), slot.filter()));
            }
        }
        let catalog = Arc::new(Catalog::build(lists.iter().map(|(n, l, f)| (n.as_str(), &**l, &**f))));
        *merged = Merged { host: Arc::downgrade(&host), own: Arc::downgrade(&own), catalog: catalog.clone() };
        catalog
    }

    /// The hub that holds `server` for `principal`: theirs for a server each person gets their
    /// own of (an error naming why for no one), else this one.
    pub fn route(&self, server: &str, principal: Option<&Principal>) -> Result<Hub, Error> {
        if !self.is_personal(server) {
            return Ok(self.clone());
        }
        match principal.and_then(|p| self.person(p)) {
            Some(hub) => Ok(hub),
            None => Err(Error::not_connected(server, &ServerStatus::PerPerson)),
        }
    }

    /// Why `name` is not in what `principal` sees ([`Hub::missing_tool`], in their own hub for
    /// a name of a server each person gets their own of).
    pub fn missing_tool_for(&self, name: &str, principal: Option<&Principal>) -> Error {
        let theirs = self
            .inner
            .all_slots()
            .iter()
            .any(|s| self.is_personal_slot(s) && crate::catalog::naming::may_belong(name, &s.name));
        match principal.filter(|_| theirs).and_then(|p| self.person(p)) {
            Some(person) => person.missing_tool(name),
            None => self.missing_tool(name),
        }
    }

    /// Applies the host's new config to every person's hub (each loaded again with their
    /// input values when the host says how).
    pub(super) async fn reload_people(&self) {
        for hub in self.inner.people.all() {
            let config = hub.config_of(&hub.inner.credentials);
            Box::pin(hub.reload(&config)).await;
        }
    }

    /// Events of the people's hubs from now on (changes of state, not single calls), each
    /// marked with whose it is.
    pub fn subscribe_people(&self) -> broadcast::Receiver<PersonEvent> {
        self.inner.people.subscribe()
    }
}

/// Ends the hubs of people who have not used them for the longest lease of their servers
/// (`idle_shutdown_ms`; those are stopped by then), and whose servers have nothing live: a hub per person who ever came would otherwise be kept for ever. Their
/// logins and values stay in their folder; their next request makes their hub again.
pub(super) fn sweep(inner: &Arc<super::Inner>) {
    let idle = |p: &Person| {
        let slots = p.hub.inner.all_slots();
        let Some(longest) = slots.iter().filter_map(|s| s.lease()).max() else { return false };
        let unused = p.used.lock().unwrap_or_else(PoisonError::into_inner).elapsed() >= longest;
        unused
            && slots.iter().all(|s| {
                let st = s.state();
                st.conn.as_ref().is_none_or(|c| c.is_closed()) && st.subscribed.is_empty() && s.idle_for().is_some()
            })
    };
    let gone: Vec<(String, Hub)> = {
        let mut hubs = inner.people.hubs();
        let keys: Vec<String> = hubs.iter().filter(|(_, p)| idle(p)).map(|(k, _)| k.clone()).collect();
        keys.into_iter().filter_map(|k| hubs.remove(&k).map(|p| (k, p.hub.clone()))).collect()
    };
    for (_, hub) in gone {
        tracing::info!(person = %hub.principal().map(Principal::shown).unwrap_or_default(), "their servers unused: ending their hub");
        tokio::spawn(async move { hub.shutdown().await });
    }
}

/// The shortest lease of the people's servers (how often [`sweep`] should look).
pub(super) fn shortest_lease(inner: &super::Inner) -> Option<std::time::Duration> {
    let hubs: Vec<Hub> = inner.people.all();
    hubs.iter().flat_map(|h| h.inner.all_slots()).filter_map(|s| s.lease()).min()
}

/// The folder of a person's part.
fn part_folder(part: &Part) -> &Path {
    match part {
        Part::Person { credentials, .. } => credentials,
        Part::Host => Path::new(""),
    }
}

/// A person who signed in to this host's gateway at some time (their folder in
/// `<data>/people/`), as the people's list shows them: never a token.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct PersonInfo {
    /// Their folder's name under `<data>/people/` ([`Principal::key`]): how the API names them.
    pub key: String,
    /// Who.
    pub principal: Principal,
    /// Their servers run in this process now (they made a request since it started).
    pub active: bool,
    /// When their servers were last started for them (Unix milliseconds).
    pub seen_ms: Option<u64>,
    /// Their own servers and each one's status, while active.
    pub servers: Vec<super::ServerInfo>,
    /// Their logins to their own servers (which, granted scopes, expiry; never the tokens).
    pub logins: Vec<crate::auth::LoginInfo>,
}

impl Hub {
    /// Everyone who signed in here at some time (a folder in `<data>/people/`, or a record in
    /// the team's store), the active first, then by name: their servers while active, their
    /// logins (never a token).
    pub async fn known_people(&self) -> Vec<PersonInfo> {
        let folder = self.inner.options.paths.data_dir.join("people");
        let running: HashMap<String, Hub> =
            self.inner.people.hubs().iter().map(|(k, p)| (k.clone(), p.hub.clone())).collect();
        // The URLs of the servers each person gets their own of, to name their logins by.
        let servers: Vec<(String, String)> = self
            .inner
            .all_slots()
            .iter()
            .filter(|s| self.is_personal_slot(s))
            .filter_map(|s| match &s.config()?.transport {
                crate::config::TransportConfig::Http(h) => Some((s.name.clone(), h.url.clone())),
                _ => None,
            })
            .collect();
        // (key, principal, seen) of each, from the store or the folders.
        let records: Vec<(String, serde_json::Value, Option<u64>)> = match &self.inner.options.store {
            Some(db) => match db.people().await {
                Ok(all) => all.into_iter().map(|(k, p, seen)| (k, p, Some(seen))).collect(),
                Err(e) => {
                    tracing::warn!("the people's records: {e}");
                    Vec::new()
                }
            },
            None => std::fs::read_dir(&folder)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|entry| {
                    let bytes = std::fs::read(entry.path().join("person.json")).ok()?;
                    let record: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
                    let key = entry.file_name().to_string_lossy().into_owned();
                    Some((key, record["principal"].clone(), record["seen_ms"].as_u64()))
                })
                .collect(),
        };
        let mut all = Vec::new();
        for (key, principal, seen_ms) in records {
            let Ok(principal) = serde_json::from_value::<Principal>(principal) else { continue };
            let hub = running.get(&key).cloned();
            let logins = crate::auth::list_logins(&self.person_tokens(&key), &servers).await.unwrap_or_default();
            all.push(PersonInfo {
                key,
                principal,
                active: hub.is_some(),
                seen_ms,
                servers: hub.as_ref().map(Hub::servers).unwrap_or_default(),
                logins,
            });
        }
        all.sort_by(|a, b| (!a.active, a.principal.shown()).cmp(&(!b.active, b.principal.shown())));
        all
    }
}

impl Hub {
    /// Logs the person whose folder is `key` out of their own server `server`: their tokens
    /// for it are deleted (the client registered is kept), and, while their servers run, it is
    /// connected again, which asks them to sign in again. Returns whether tokens were held.
    pub async fn logout_person(&self, key: &str, server: &str) -> Result<bool, Error> {
        if !self.is_personal(server) {
            return Err(Error::Invalid {
                message: format!("`{server}` is not a server each person gets their own of"),
            });
        }
        if let Some(hub) = self.inner.people.running(key) {
            return hub.logout(server).await;
        }
        let folder = self.inner.options.paths.data_dir.join("people").join(key);
        let well_formed = key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit());
        let known = well_formed
            && match &self.inner.options.store {
                Some(db) => db.people().await.is_ok_and(|all| all.iter().any(|(k, ..)| k == key)),
                None => folder.join("person.json").is_file(),
            };
        if !known {
            return Err(Error::Invalid { message: format!("no person `{key}` signed in here") });
        }
        let url = match self.inner.slot(server)?.config().map(|c| c.transport.clone()) {
            Some(crate::config::TransportConfig::Http(h)) => h.url,
            _ => return Err(Error::Invalid { message: format!("`{server}` has no login (not a remote server)") }),
        };
        crate::auth::logout(&self.person_tokens(key), &url, server).await.map_err(|e| Error::auth(server, e))
    }

    /// Where the logins of the person `key` are kept: their rows of the team's store, or
    /// their folder.
    fn person_tokens(&self, key: &str) -> crate::auth::TokenStore {
        match &self.inner.options.store {
            Some(db) => crate::auth::TokenStore::in_database(db.clone(), key),
            None => crate::auth::TokenStore::in_dir(&self.inner.options.paths.data_dir.join("people").join(key)),
        }
    }
}

/// Sends a person's hub's changes on to the host's subscribers of people's events, for as
/// long as their hub lives.
fn forward(hub: &Hub, person: Arc<str>, to: broadcast::Sender<PersonEvent>) {
    let mut events = hub.subscribe_changes();
    let task = tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    Event::CatalogChanged { server: String::new(), tools: 0, resources: 0, prompts: 0 }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let _ = to.send(PersonEvent { person: person.clone(), event });
        }
    });
    hub.inner.track(task.abort_handle());
}

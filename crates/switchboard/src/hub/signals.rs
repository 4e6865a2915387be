//! A long-running hub on a team's store and the other processes on it ([`crate::store::signals`]):
//! what it learns it tells them, what they tell it it acts on.
//!
//! - A logout (`auth::logout`, whoever calls it: [`Hub::logout`], [`Hub::logout_person`],
//!   `switchboard logout`) is told by the token store; a hub told of one connects that
//!   server again (the host's, or the person's own while their hub runs here), which reads the
//!   store and finds no tokens, so the tokens it held in memory serve no further request.
//! - A server's `list_changed` is told once its lists were taken again; a hub told lists that
//!   server again (a server that tells only the session that changed it reaches every replica).
//! - A server's `resources/updated` is told (a shared server's, and a person's own server's with
//!   the person's key); a hub told publishes it as if the server had said it (in the person's
//!   hub while it runs here), unless it heard the same from the server itself within [`ECHO`]
//!   (at least once: a client may be told twice, which is a hint to read again).
//! - A config that changed (a reload that applied something) is told; a hub told loads its
//!   config files again ([`Hub::watch_config`]'s loop).
//!
//! The follower is one task per long-running host hub with a store; one-shot commands tell
//! (`switchboard logout` on a team's store) but do not listen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Hub, Inner};
use crate::events::Event;
use crate::store::signals::{Heard, Signal};

/// How long a resource update heard one way makes the same one heard the other way an echo.
pub const ECHO: Duration = Duration::from_secs(1);

/// A resource update: whose instance (`""`: the host's), the server, the resource.
type Update = (String, String, String);

/// What the follower remembers of resource updates: when each was last heard from the server
/// itself, and which ones it published itself (not to be told back).
#[derive(Default)]
pub(super) struct Echoes {
    heard: HashMap<Update, Instant>,
    published: HashMap<Update, Instant>,
}

impl Echoes {
    fn prune(&mut self) {
        self.heard.retain(|_, at| at.elapsed() < ECHO);
        self.published.retain(|_, at| at.elapsed() < ECHO);
    }
}

impl Hub {
    /// The hub whose instance of a server `owner` names: this one for `""`, a person's while it
    /// runs here.
    fn owned_by(&self, owner: &str) -> Option<Hub> {
        if owner.is_empty() {
            return Some(self.clone());
        }
        self.inner.people.running(owner)
    }

    /// Acts on another process's signal.
    async fn heard(&self, signal: Signal, echoes: &Mutex<Echoes>, reload: &tokio::sync::watch::Sender<u64>) {
        match signal {
            Signal::Logout { owner, server } => {
                let Some(hub) = self.owned_by(&owner) else { return };
                if hub.inner.slot(&server).is_ok() {
                    tracing::info!(server = %server, "logged out elsewhere: connecting again without the tokens held");
                    let _ = hub.reconnect(&server).await;
                }
            }
            Signal::ListChanged { owner, server } => {
                let Some(hub) = self.owned_by(&owner) else { return };
                hub.relist(&server).await;
            }
            Signal::ResourceUpdated { owner, server, uri } => {
                let Some(hub) = self.owned_by(&owner) else { return };
                let key = (owner, server.clone(), uri.clone());
                {
                    let mut e = echoes.lock().unwrap_or_else(PoisonError::into_inner);
                    e.prune();
                    if e.heard.contains_key(&key) {
                        return;
                    }
                    e.published.insert(key, Instant::now());
                }
                hub.inner.events.send(Event::ResourceUpdated { server, uri });
            }
            Signal::Reload => {
                reload.send_modify(|n| *n += 1);
            }
            // `serve`'s approvals: its own listener's.
            Signal::ApprovalAsked { .. } | Signal::ApprovalAnswer { .. } | Signal::ApprovalSettled { .. } => {}
        }
    }

    /// Lists `server` again (each kind), when it is connected.
    pub(super) async fn relist(&self, server: &str) {
        let Ok(slot) = self.inner.slot(server) else { return };
        let Some(conn) = slot.state().conn.clone() else { return };
        let epoch = slot.epoch.load(std::sync::atomic::Ordering::SeqCst);
        for kind in [
            crate::connection::handler::ListChange::Tools,
            crate::connection::handler::ListChange::Resources,
            crate::connection::handler::ListChange::Prompts,
        ] {
            super::connect::refresh(&self.inner, &slot, &conn, kind, epoch).await;
        }
    }
}

/// Starts the follower of `inner`'s store (a long-running host hub with one), and the tellers
/// of its servers' resource updates and of its people's.
pub(super) fn spawn(inner: &Arc<Inner>) {
    let Some(db) = inner.options.store.clone() else { return };
    if !inner.options.reconnect.background || inner.person.is_some() {
        return;
    }
    let echoes = Arc::new(Mutex::new(Echoes::default()));
    let hub = Hub { inner: inner.clone() };
    let heard = echoes.clone();
    let follow = tokio::spawn(async move {
        let mut wait = Duration::from_millis(200);
        loop {
            let mut signals = match db.signals().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot listen to the other processes on the store (trying again): {e}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(10));
                    continue;
                }
            };
            wait = Duration::from_millis(200);
            loop {
                match signals.next().await {
                    Ok(Heard::Signal(signal)) => hub.heard(signal, &heard, &hub.inner.remote_reload).await,
                    Ok(Heard::Missed) => {
                        // What was told meanwhile is lost: list every server again.
                        tracing::info!("listening to the store again; signals sent meanwhile may be lost");
                        for slot in hub.inner.all_slots() {
                            hub.relist(&slot.name).await;
                        }
                    }
                    Err(e) => {
                        tracing::warn!("lost the store's signals (listening again): {e}");
                        tokio::time::sleep(wait).await;
                        break;
                    }
                }
            }
        }
    });
    inner.track(follow.abort_handle());
    // The host's servers' resource updates, and the people's, told as they come (not those it
    // published from a signal).
    let mut events = inner.events.subscribe_changes();
    let mut people = inner.people.subscribe();
    let weak = Arc::downgrade(inner);
    let tell_task = tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let (owner, event) = tokio::select! {
                event = events.recv() => match event {
                    Ok(e) => (String::new(), e),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                },
                event = people.recv() => match event {
                    Ok(e) => (e.person.to_string(), e.event),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                },
            };
            let Event::ResourceUpdated { server, uri } = event else { continue };
            let key = (owner.clone(), server.clone(), uri.clone());
            {
                let mut e = echoes.lock().unwrap_or_else(PoisonError::into_inner);
                e.prune();
                if e.published.remove(&key).is_some() {
                    continue;
                }
                e.heard.insert(key, Instant::now());
            }
            let Some(inner) = weak.upgrade() else { return };
            inner.tell(Signal::ResourceUpdated { owner, server, uri }).await;
        }
    });
    inner.track(tell_task.abort_handle());
}

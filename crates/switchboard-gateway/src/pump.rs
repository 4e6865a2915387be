//! The hub's events, fanned out to downstream sessions: list changes (debounced, to every
//! session and every `subscriptions/listen` stream), log messages (with the server's name as
//! `logger`, at or above each session's level), resource updates (to the sessions that
//! subscribed). A person's own servers' events ([`switchboard::Hub::subscribe_people`]) go
//! to that person's sessions only.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{LoggingMessageNotificationParam, ResourceUpdatedNotificationParam};
use switchboard::events::{Event, LogLevel};
use tokio::sync::broadcast::error::RecvError;

use crate::Shared;

/// Changes that arrive within this long are told once.
const DEBOUNCE: Duration = Duration::from_millis(50);

pub(crate) fn start(shared: &Arc<Shared>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
    let mut events = shared.hub.subscribe_changes();
    let mut people = shared.hub.subscribe_people();
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let theirs = weak.clone();
    rt.spawn(async move {
        loop {
            let switchboard::PersonEvent { person, event, .. } = match people.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => {
                    let Some(shared) = theirs.upgrade() else { return };
                    list_changed(&shared).await;
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let Some(shared) = theirs.upgrade() else { return };
            match event {
                // Each session's view is compared with what it saw: only this person's change.
                Event::CatalogChanged { .. } | Event::ServerRemoved { .. } => {
                    tokio::time::sleep(DEBOUNCE).await;
                    list_changed(&shared).await;
                }
                Event::Log { server, level, data, .. } => log(&shared, &server, level, data, Some(&person)).await,
                Event::ResourceUpdated { server, uri } => {
                    updated(&shared, &crate::relay::route(&server, Some(&person)), &server, &uri).await
                }
                // Their server needs their login (again): their sessions are asked.
                Event::AuthNeeded { .. } => {
                    let principal = shared.hub.people().into_iter().map(|(p, _)| p).find(|p| *p.key() == *person);
                    if let Some(principal) = principal {
                        let shared = shared.clone();
                        tokio::spawn(async move { shared.ask_sign_ins(&principal, None).await });
                    }
                }
                _ => {}
            }
        }
    });
    rt.spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => {
                    Event::CatalogChanged { server: String::new(), tools: 0, resources: 0, prompts: 0 }
                }
                Err(RecvError::Closed) => return,
            };
            let Some(shared) = weak.upgrade() else { return };
            match event {
                Event::CatalogChanged { .. } | Event::ServerRemoved { .. } => {
                    // Let a burst (several servers connecting) settle, then tell once.
                    tokio::time::sleep(DEBOUNCE).await;
                    while let Ok(more) = events.try_recv() {
                        other(&shared, more).await;
                    }
                    list_changed(&shared).await;
                }
                e => other(&shared, e).await,
            }
        }
    });
}

async fn other(shared: &Shared, event: Event) {
    match event {
        Event::Log { server, level, data, .. } => log(shared, &server, level, data, None).await,
        Event::ResourceUpdated { server, uri } => updated(shared, &server, &server, &uri).await,
        _ => {}
    }
}

/// Tells each session which of the lists it saw have changed since (a session that never
/// listed has nothing to be told: its first list is current).
pub(crate) async fn list_changed(shared: &Shared) {
    // Held while the gateway's servers change over as one (told once it is done).
    if shared.held.load(std::sync::atomic::Ordering::Acquire) > 0 {
        return;
    }
    type Seen = (
        u64,
        Option<String>,
        Option<crate::view::Names>,
        Option<switchboard::identity::Principal>,
        Arc<crate::view::View>,
    );
    let sessions: Vec<Seen> = shared
        .sessions()
        .iter()
        .filter_map(|(id, s)| Some((*id, s.profile.clone(), s.names, s.caller.clone(), s.seen.clone()?)))
        .collect();
    for (id, profile, names, caller, seen) in sessions {
        let Ok(now) = shared.view(profile.as_deref(), names, caller.as_ref()) else { continue };
        let (tools, prompts, resources) = now.changes(&seen);
        if !(tools || prompts || resources) {
            continue;
        }
        let (peer, sinks) = {
            let mut all = shared.sessions();
            let Some(s) = all.get_mut(&id) else { continue };
            s.seen = Some(now.clone());
            (s.peer.clone(), s.listens.clone())
        };
        // 2026-07-28 clients hear of changes only on their listen streams.
        if let Some(peer) = peer.filter(|p| p.peer_info().is_none_or(|i| i.protocol_version.has_initialize())) {
            if tools {
                let _ = peer.notify_tool_list_changed().await;
            }
            if prompts {
                let _ = peer.notify_prompt_list_changed().await;
            }
            if resources {
                let _ = peer.notify_resource_list_changed().await;
            }
        }
        for sink in sinks {
            let accepted = sink.accepted().clone();
            if tools && accepted.tools_list_changed == Some(true) {
                let _ = sink.notify_tool_list_changed().await;
            }
            if prompts && accepted.prompts_list_changed == Some(true) {
                let _ = sink.notify_prompt_list_changed().await;
            }
            if resources && accepted.resources_list_changed == Some(true) {
                let _ = sink.notify_resource_list_changed().await;
            }
        }
    }
}

/// A log message of `server` to the sessions that want its level (of `person`'s, for a
/// person's own server).
async fn log(shared: &Shared, server: &str, level: LogLevel, data: serde_json::Value, person: Option<&str>) {
    let peers: Vec<_> = shared
        .sessions()
        .values()
        .filter(|s| person.is_none_or(|p| s.caller.as_ref().is_some_and(|c| *c.key() == *p)))
        .filter(|s| s.level.is_none_or(|min| level >= min))
        .filter_map(|s| s.peer.clone())
        .collect();
    tracing::debug!(server, sessions = peers.len(), "forwarding a log message");
    for peer in peers {
        let mut param = LoggingMessageNotificationParam::new(level.into(), data.clone());
        param.logger = Some(server.to_string());
        #[allow(deprecated)]
        let _ = peer.notify_logging_message(param).await;
    }
}

/// `uri` of `server` changed: told to the sessions subscribed under `key` (the server, told
/// apart by whose it is for a person's own).
async fn updated(shared: &Shared, key: &str, server: &str, uri: &str) {
    let key = (key.to_string(), uri.to_string());
    let targets: Vec<_> = shared
        .sessions()
        .values()
        .filter(|s| s.subscribed.contains(&key))
        .map(|s| (s.peer.clone(), s.listens.clone(), s.profile.clone(), s.names, s.caller.clone()))
        .collect();
    for (peer, listens, profile, names, caller) in targets {
        let exposed = match shared.view(profile.as_deref(), names, caller.as_ref()) {
            Ok(view) => view.exposed_uri(server, uri),
            Err(_) => uri.to_string(),
        };
        if listens.is_empty() {
            if let Some(peer) = peer {
                let _ = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(exposed)).await;
            }
        } else {
            for sink in listens {
                let _ = sink.notify_resource_updated(exposed.clone()).await;
            }
        }
    }
}

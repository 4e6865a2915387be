//! The hub's events, fanned out to downstream sessions: list changes (debounced, to every
//! session and every `subscriptions/listen` stream), log messages (with the server's name as
//! `logger`, at or above each session's level), resource updates (to the sessions that
//! subscribed).

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
    let weak: Weak<Shared> = Arc::downgrade(shared);
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
        Event::Log { server, level, data, .. } => log(shared, &server, level, data).await,
        Event::ResourceUpdated { server, uri } => updated(shared, &server, &uri).await,
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

async fn log(shared: &Shared, server: &str, level: LogLevel, data: serde_json::Value) {
    let peers: Vec<_> = shared
        .sessions()
        .values()
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

async fn updated(shared: &Shared, server: &str, uri: &str) {
    let key = (server.to_string(), uri.to_string());
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

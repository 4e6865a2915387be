//! List changes and resource updates on protocol 2026-07-28. A stateless server has no
//! session to push notifications on: the client opens a `subscriptions/listen` request whose
//! response stream carries the kinds of notification it opted in to, and cancels it to stop.
//! One listener per connection keeps that stream open: the lists the server says may change,
//! plus the resources the hub subscribed to. When the set of resources changes, or the stream
//! ends while the server is still there, it listens again (and, after a gap, refreshes every
//! list, since a change may have been missed).

use std::collections::BTreeSet;
use std::time::Duration;

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::handler::{Handler, ListChange};
use crate::events::Event;

/// The lists a server said may change (its `listChanged` capabilities).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Changing {
    pub tools: bool,
    pub resources: bool,
    pub prompts: bool,
}

/// What the hub asked for, numbered so that a request can wait until the stream carries it.
#[derive(Debug, Clone, Default)]
struct Wanted {
    generation: u64,
    resources: BTreeSet<String>,
}

/// How far the listener got: the last generation it established (or failed to).
#[derive(Debug, Clone, Default)]
struct Established {
    generation: u64,
    /// Resources the server accepted on that stream.
    accepted: BTreeSet<String>,
    error: Option<String>,
}

/// The listener of one connection; dropping it stops the stream.
pub(crate) struct Listener {
    wanted: watch::Sender<Wanted>,
    established: watch::Receiver<Established>,
    task: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a change of subscriptions may take to be acknowledged.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);

impl Listener {
    pub(crate) fn start(peer: Peer<RoleClient>, handler: Handler, changing: Changing) -> Listener {
        let (wanted, wanted_rx) = watch::channel(Wanted::default());
        let (established_tx, established) = watch::channel(Established::default());
        let task = tokio::spawn(run(peer, handler, changing, wanted_rx, established_tx));
        Listener { wanted, established, task }
    }

    /// Stops listening.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }

    /// Adds or removes a resource and waits until the server acknowledged the new stream.
    pub(crate) async fn set_resource(&self, uri: &str, on: bool) -> Result<(), String> {
        let mut generation = 0;
        self.wanted.send_modify(|w| {
            let changed = if on { w.resources.insert(uri.to_string()) } else { w.resources.remove(uri) };
            if changed {
                w.generation += 1;
            }
            generation = w.generation;
        });
        let mut established = self.established.clone();
        let reached = tokio::time::timeout(ACK_TIMEOUT, established.wait_for(|e| e.generation >= generation)).await;
        let e = match reached {
            Ok(Ok(e)) => e.clone(),
            Ok(Err(_)) => return Err("the connection closed".into()),
            Err(_) => return Err(format!("`subscriptions/listen` was not acknowledged within {ACK_TIMEOUT:?}")),
        };
        if let Some(error) = e.error {
            return Err(format!("subscriptions/listen failed: {error}"));
        }
        if on && !e.accepted.contains(uri) {
            return Err(format!("the server does not offer updates for `{uri}` (it left it out of the subscription)"));
        }
        Ok(())
    }
}

async fn run(
    peer: Peer<RoleClient>,
    handler: Handler,
    changing: Changing,
    mut wanted: watch::Receiver<Wanted>,
    established: watch::Sender<Established>,
) {
    let mut backoff = Duration::from_millis(250);
    let mut gap = false;
    loop {
        let now = wanted.borrow_and_update().clone();
        let mut filter = SubscriptionFilter::builder();
        if changing.tools {
            filter = filter.tools_list_changed();
        }
        if changing.resources {
            filter = filter.resources_list_changed();
        }
        if changing.prompts {
            filter = filter.prompts_list_changed();
        }
        for uri in &now.resources {
            filter = filter.resource_subscription(uri.clone());
        }
        let filter = filter.build();
        if filter == SubscriptionFilter::default() {
            // Nothing to listen for (yet).
            established.send_replace(Established { generation: now.generation, ..Default::default() });
            if wanted.changed().await.is_err() {
                return;
            }
            continue;
        }
        match peer.listen(filter).await {
            Ok(mut subscription) => {
                let accepted = subscription.acknowledged().resource_subscriptions.clone().unwrap_or_default();
                established.send_replace(Established {
                    generation: now.generation,
                    accepted: accepted.into_iter().collect(),
                    error: None,
                });
                backoff = Duration::from_millis(250);
                if gap {
                    // The stream was down for a while: a change may have gone by.
                    for change in [ListChange::Tools, ListChange::Resources, ListChange::Prompts] {
                        let _ = handler.changes.send(change);
                    }
                }
                loop {
                    tokio::select! {
                        next = subscription.next() => match next {
                            Ok(Some(notification)) => deliver(&handler, notification),
                            Ok(None) => break,
                            Err(e) => {
                                tracing::debug!(server = %handler.server, "subscriptions/listen stream failed: {e}");
                                break;
                            }
                        },
                        changed = wanted.changed() => {
                            let _ = subscription.cancel_with_reason(Some("subscriptions changed".into())).await;
                            if changed.is_err() {
                                return;
                            }
                            break;
                        }
                    }
                }
                gap = true;
            }
            Err(e) => {
                tracing::debug!(server = %handler.server, "subscriptions/listen failed: {e}");
                established.send_replace(Established {
                    generation: now.generation,
                    accepted: BTreeSet::new(),
                    error: Some(super::describe_error(&e)),
                });
                gap = true;
            }
        }
        if peer.is_transport_closed() {
            return;
        }
        // A stream that ended or failed while the server is there: listen again, soon (or at
        // once when the hub changed what it wants).
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            changed = wanted.changed() => if changed.is_err() { return },
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

fn deliver(handler: &Handler, notification: ServerNotification) {
    let change = match notification {
        ServerNotification::ToolListChangedNotification(_) => ListChange::Tools,
        ServerNotification::ResourceListChangedNotification(_) => ListChange::Resources,
        ServerNotification::PromptListChangedNotification(_) => ListChange::Prompts,
        ServerNotification::ResourceUpdatedNotification(n) => {
            handler.events.send(Event::ResourceUpdated { server: handler.server.clone(), uri: n.params.uri });
            return;
        }
        _ => return,
    };
    let _ = handler.changes.send(change);
}

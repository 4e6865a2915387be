//! `GET /api/events`: everything the hub publishes, as Server-Sent Events with increasing ids.
//! The last events are kept, so a client that reconnects with `Last-Event-ID` gets what it
//! missed (or, if it fell too far behind, a `reset` event saying so) before the live ones.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use switchboard::Hub;
use switchboard::events::Event;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// How many past events are kept for clients that reconnect.
const KEPT: usize = 1024;

/// One published event: its id, its kind (`status_changed`...), its JSON.
#[derive(Debug, Clone)]
pub struct Published {
    id: u64,
    kind: String,
    data: String,
}

/// The numbered event log.
#[derive(Debug)]
pub struct EventLog {
    kept: Mutex<VecDeque<Published>>,
    live: broadcast::Sender<Published>,
    /// Cancelled when the server stops: every stream gets a last `shutdown` event and ends.
    stopping: CancellationToken,
}

impl EventLog {
    /// Starts numbering `hub`'s events (and those the server publishes itself, such as a
    /// server's question for the person: [`EventLog::publish_value`]).
    pub fn start(hub: &Hub) -> Arc<EventLog> {
        let (live, _) = broadcast::channel(KEPT);
        let log = Arc::new(EventLog { kept: Mutex::default(), live, stopping: CancellationToken::new() });
        let mut events = hub.subscribe();
        let weak = Arc::downgrade(&log);
        tokio::spawn(async move {
            loop {
                let event = match events.recv().await {
                    Ok(e) => e,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("the event log missed {n} hub events");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(log) = weak.upgrade() else { return };
                log.publish(&event);
            }
        });
        log
    }

    fn publish(&self, event: &Event) {
        self.publish_value(serde_json::to_value(event).unwrap_or_default());
    }

    /// Publishes an event the server makes itself: a JSON object whose `type` names its kind.
    pub fn publish_value(&self, value: serde_json::Value) {
        let kind = value["type"].as_str().unwrap_or("event").to_string();
        let data = value.to_string();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let id = kept.back().map_or(1, |p| p.id + 1);
        let published = Published { id, kind, data };
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back(published.clone());
        // Sent under the lock: a subscriber that took the lock to read the kept events sees
        // every later event live, none twice.
        let _ = self.live.send(published);
    }

    /// Cancelled when the server stops (streams end, calls are cancelled, questions go).
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// How many clients follow the events now.
    pub fn watchers(&self) -> usize {
        self.live.receiver_count()
    }

    /// The stream for one client that has seen events up to `last` (none: only new ones).
    pub fn stream(&self, last: Option<u64>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>> + use<>> {
        let (backlog, mut live, reset) = {
            let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            let live = self.live.subscribe();
            let (backlog, reset) = match last {
                None => (Vec::new(), false),
                Some(last) => {
                    let oldest = kept.front().map_or(last + 1, |p| p.id);
                    (kept.iter().filter(|p| p.id > last).cloned().collect(), last + 1 < oldest)
                }
            };
            (backlog, live, reset)
        };
        let stopping = self.stopping.clone();
        let stream = async_stream(move |tx| async move {
            if reset {
                let _ = tx.send(SseEvent::default().event("reset").data("events were missed; reload the state")).await;
            }
            for p in backlog {
                if tx.send(to_sse(&p)).await.is_err() {
                    return;
                }
            }
            loop {
                let next = tokio::select! {
                    next = live.recv() => next,
                    () = stopping.cancelled() => {
                        let _ = tx.send(SseEvent::default().event("shutdown").data("switchboard is stopping")).await;
                        return;
                    }
                };
                match next {
                    Ok(p) => {
                        if tx.send(to_sse(&p)).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx
                            .send(SseEvent::default().event("reset").data("events were missed; reload the state"))
                            .await;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
    }
}

fn to_sse(p: &Published) -> SseEvent {
    SseEvent::default().id(p.id.to_string()).event(&p.kind).data(&p.data)
}

/// A stream fed by a task: `body` gets a sender; the stream ends when the task does, and the
/// task's sends fail once the client is gone.
pub fn async_stream<F, Fut>(body: F) -> impl Stream<Item = Result<SseEvent, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<SseEvent>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let task = tokio::spawn(body(tx));
    let abort = task.abort_handle();
    futures::stream::unfold((rx, AbortOnDrop(abort)), |(mut rx, guard)| async move {
        rx.recv().await.map(|e| (Ok(e), (rx, guard)))
    })
}

/// Ends the feeding task when the client's stream is dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

//! What `serve` asks the person, one queue per kind: servers' questions (elicitation), calls
//! the policy asks about (approval), servers' requests for a completion (sampling). Each item
//! is published as a `<kind>_requested` event (the item, with `type`), waits for its answer by
//! id (at most the queue's `wait`), and ends with a `<kind>_settled` event that says how
//! (`{"type", "id", "<key>": "..."}`: the answer, `withdrawn` when its asker stopped waiting).
//! With nobody following the events there is nobody to ask: [`Queue::ask`] says so at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use tokio::sync::oneshot;

use crate::events::EventLog;

/// How asking went.
pub(crate) enum Asked<A> {
    /// Answered.
    Answer(A),
    /// Nobody follows the events: nobody was asked.
    Nobody,
    /// Nobody answered in time, or `serve` is stopping.
    NoAnswer,
}

/// Items of one kind waiting for the person.
pub(crate) struct Queue<S, A> {
    /// `elicitation`, `approval`, `sampling`: the events' names.
    kind: &'static str,
    /// The field of `<kind>_settled` that says how it ended.
    key: &'static str,
    wait: Duration,
    pending: Mutex<BTreeMap<u64, (S, oneshot::Sender<A>)>>,
    next: AtomicU64,
    log: Mutex<Weak<EventLog>>,
    /// Told of every item that ends (`id`, how), besides the `<kind>_settled` event.
    on_settled: Mutex<Option<Settled>>,
}

/// What [`Queue::on_settled`] tells.
pub(crate) type Settled = Arc<dyn Fn(u64, &str) + Send + Sync>;

impl<S: Serialize + Clone, A> Queue<S, A> {
    pub(crate) fn new(kind: &'static str, key: &'static str, wait: Duration) -> Self {
        Queue {
            kind,
            key,
            wait,
            pending: Mutex::default(),
            next: AtomicU64::new(0),
            log: Mutex::new(Weak::new()),
            on_settled: Mutex::default(),
        }
    }

    /// Tells `tell` of every item that ends.
    pub(crate) fn on_settled(&self, tell: Settled) {
        *self.on_settled.lock().unwrap_or_else(PoisonError::into_inner) = Some(tell);
    }

    /// The event log it publishes on, while it exists.
    pub(crate) fn log(&self) -> Option<Arc<EventLog>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).upgrade()
    }

    /// Publishes on `log`.
    pub(crate) fn attach(&self, log: &Arc<EventLog>) {
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(log);
    }

    /// The event log, when someone follows it.
    pub(crate) fn watched(&self) -> Option<Arc<EventLog>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).upgrade().filter(|l| l.watchers() > 0)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (S, oneshot::Sender<A>)>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The items waiting, oldest first.
    pub(crate) fn waiting(&self) -> Vec<S> {
        self.pending().values().map(|(s, _)| s.clone()).collect()
    }

    /// Answers item `id` if `accept` takes the answer for it (`Err` keeps it waiting).
    /// `None`: no such item waits.
    pub(crate) fn answer<E>(
        &self,
        id: u64,
        answer: A,
        how: &str,
        accept: impl FnOnce(&S, &A) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        let mut pending = self.pending();
        let (item, _) = pending.get(&id)?;
        if let Err(e) = accept(item, &answer) {
            return Some(Err(e));
        }
        let (_, tx) = pending.remove(&id)?;
        drop(pending);
        // The asker may have gone a moment ago: then nothing waits.
        let _ = tx.send(answer);
        self.settled(id, how);
        Some(Ok(()))
    }

    fn settled(&self, id: u64, how: &str) {
        self.publish_settled(id, how);
        let tell = self.on_settled.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(tell) = tell {
            tell(id, how);
        }
    }

    /// Publishes that item `id` ended (`how`): its own, or one that waited elsewhere.
    pub(crate) fn publish_settled(&self, id: u64, how: &str) {
        if let Some(log) = self.log() {
            log.publish_value(json!({"type": format!("{}_settled", self.kind), "id": id, self.key: how}));
        }
    }

    /// The `<kind>_requested` event of `item`: its own, or one that waits elsewhere.
    pub(crate) fn requested(&self, item: &impl Serialize) -> serde_json::Value {
        let mut event = serde_json::to_value(item).unwrap_or_default();
        event["type"] = json!(format!("{}_requested", self.kind));
        event
    }

    /// Puts the item `make(id)` to the person and waits for the answer. Dropping the future
    /// (the asker stopped waiting) takes the item back.
    pub(crate) async fn ask(&self, make: impl FnOnce(u64) -> S) -> Asked<A> {
        if self.watched().is_none() {
            return Asked::Nobody;
        }
        let id = self.next_id();
        self.ask_item(id, make(id), false, std::future::ready(false)).await
    }

    /// The next id of this queue's own numbering.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// [`Queue::ask`] with the item made and numbered already; `elsewhere`: someone follows
    /// the events of another process that shows it, so it waits even when nobody follows
    /// these; `announce` runs once it waits (an answer may come from then on) and says whether
    /// the other process shows it: when it does not and nobody follows these events, nobody
    /// can answer and the item is taken back at once.
    pub(crate) async fn ask_item(
        &self,
        id: u64,
        item: S,
        elsewhere: bool,
        announce: impl Future<Output = bool>,
    ) -> Asked<A> {
        let log = match self.watched() {
            Some(log) => log,
            None if elsewhere => match self.log() {
                Some(log) => log,
                None => return Asked::Nobody,
            },
            None => return Asked::Nobody,
        };
        let (tx, rx) = oneshot::channel();
        let event = self.requested(&item);
        self.pending().insert(id, (item, tx));
        let _guard = Withdraw { queue: self, id };
        log.publish_value(event);
        if !announce.await && log.watchers() == 0 {
            return Asked::Nobody;
        }
        let stopping = log.stopping().clone();
        drop(log);
        tokio::select! {
            answer = tokio::time::timeout(self.wait, rx) => match answer {
                Ok(Ok(answer)) => Asked::Answer(answer),
                _ => Asked::NoAnswer,
            },
            () = stopping.cancelled() => Asked::NoAnswer,
        }
    }
}

impl<S, A> std::fmt::Debug for Queue<S, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.pending.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Queue").field("kind", &self.kind).field("waiting", &waiting).finish_non_exhaustive()
    }
}

/// Takes an item back when its asker stops waiting.
struct Withdraw<'a, S: Serialize + Clone, A> {
    queue: &'a Queue<S, A>,
    id: u64,
}

impl<S: Serialize + Clone, A> Drop for Withdraw<'_, S, A> {
    fn drop(&mut self) {
        if self.queue.pending().remove(&self.id).is_some() {
            self.queue.settled(self.id, "withdrawn");
        }
    }
}

//! Deadlines for requests in flight, without a timer per request.
//!
//! Every tool call has an idle timeout (reset by progress) and a hard maximum. Giving each
//! call its own tokio timers costs a timer-wheel insert and removal per call, and each insert
//! that lands before the driver's next wake-up makes tokio wake a parked worker: measured on
//! the echo benchmark, that was most of the hub's overhead over a bare client. Here one task
//! per hub watches every call: registering a call is a map insert under a short lock, and the
//! task is only woken when a new deadline is earlier than the one it already sleeps until
//! (with equal timeouts, never). Progress touches an atomic timestamp; the task rechecks it
//! when the old deadline comes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// Why a watched request ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    /// No response and no progress for this long.
    Idle(Duration),
    /// The hard maximum passed, progress or not.
    Total(Duration),
}

impl Expired {
    /// The limit that was reached.
    pub(crate) fn after(self) -> Duration {
        match self {
            Expired::Idle(d) | Expired::Total(d) => d,
        }
    }
}

/// When a request last showed signs of life (sent, or progress reported).
#[derive(Debug)]
pub(crate) struct Activity {
    epoch: Instant,
    last_ns: AtomicU64,
}

impl Activity {
    fn new(epoch: Instant) -> Self {
        let a = Activity { epoch, last_ns: AtomicU64::new(0) };
        a.touch();
        a
    }

    /// An activity clock watched by no watchdog (for tests of what touches it).
    #[cfg(test)]
    pub(crate) fn unwatched() -> Arc<Activity> {
        Arc::new(Activity::new(Instant::now()))
    }

    /// Records activity now (resets the idle timeout).
    pub(crate) fn touch(&self) {
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_ns.fetch_max(ns, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.last_ns.load(Ordering::Relaxed))
    }
}

struct Entry {
    activity: Arc<Activity>,
    idle: Duration,
    total: Duration,
    hard: Instant,
    fire: oneshot::Sender<Expired>,
}

impl Entry {
    fn deadline(&self) -> Instant {
        self.activity.last().checked_add(self.idle).map_or(self.hard, |d| d.min(self.hard))
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    calls: HashMap<u64, Entry>,
    /// When the watcher task will next look; `None` while it waits for a request.
    armed: Option<Instant>,
}

struct Shared {
    epoch: Instant,
    state: Mutex<State>,
    wake: Notify,
    closed: AtomicBool,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Watches the deadlines of a hub's requests. Dropping it ends its task.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog").field("watched", &self.shared.state().calls.len()).finish()
    }
}

impl Watchdog {
    /// Creates the watchdog and spawns its task (needs a tokio runtime).
    pub(crate) fn start() -> Watchdog {
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(run(shared.clone()));
        Watchdog { shared }
    }

    /// Starts watching a request: it expires after `idle` without activity or after `total`
    /// in all. The returned guard stops watching when dropped.
    pub(crate) fn watch(&self, idle: Duration, total: Duration) -> Watched {
        let now = Instant::now();
        let activity = Arc::new(Activity::new(self.shared.epoch));
        let (fire, expired) = oneshot::channel();
        let hard = now.checked_add(total).unwrap_or_else(|| now + Duration::from_secs(86_400 * 365));
        let entry = Entry { activity: activity.clone(), idle, total, hard, fire };
        let deadline = entry.deadline();
        let (id, wake) = {
            let mut st = self.shared.state();
            let id = st.next_id;
            st.next_id += 1;
            st.calls.insert(id, entry);
            let wake = st.armed.is_none_or(|armed| deadline < armed);
            if wake {
                // Set here so a burst of new requests wakes the task once, not once each.
                st.armed = Some(deadline);
            }
            (id, wake)
        };
        if wake {
            self.shared.wake.notify_one();
        }
        Watched { id, shared: self.shared.clone(), activity, expired }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }
}

/// One watched request. Await [`Watched::expired`]; drop to stop watching.
pub(crate) struct Watched {
    id: u64,
    shared: Arc<Shared>,
    /// Touch on progress to reset the idle timeout.
    pub(crate) activity: Arc<Activity>,
    /// Resolves when the request runs out of time.
    pub(crate) expired: oneshot::Receiver<Expired>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.shared.state().calls.remove(&self.id);
    }
}

async fn run(shared: Arc<Shared>) {
    loop {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let next = {
            let mut st = shared.state();
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            let mut done = Vec::new();
            for (id, entry) in &st.calls {
                if now >= entry.hard {
                    done.push((*id, Expired::Total(entry.total)));
                } else if now >= entry.activity.last() + entry.idle {
                    done.push((*id, Expired::Idle(entry.idle)));
                } else {
                    let d = entry.deadline();
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
            for (id, why) in done {
                if let Some(entry) = st.calls.remove(&id) {
                    let _ = entry.fire.send(why);
                }
            }
            // With nothing to watch, keep the wake-up already promised: requests that start
            // before it with later deadlines rely on it and did not wake this task. Dropping
            // it would make every new request wake the task (measured: +1 context switch
            // per sequential call).
            let next = next.or(st.armed.filter(|&armed| armed > now));
            st.armed = next;
            next
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = shared.wake.notified() => {}
                }
            }
            None => shared.wake.notified().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_expires_and_progress_resets_it() {
        let dog = Watchdog::start();
        let mut w = dog.watch(Duration::from_secs(10), Duration::from_secs(100));
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert!(w.expired.try_recv().is_err());
        w.activity.touch();
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert!(w.expired.try_recv().is_err(), "progress at 8 s moved the deadline to 18 s");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(w.expired.try_recv().ok(), Some(Expired::Idle(Duration::from_secs(10))));
    }

    #[tokio::test(start_paused = true)]
    async fn the_hard_maximum_wins_over_progress() {
        let dog = Watchdog::start();
        let mut w = dog.watch(Duration::from_secs(10), Duration::from_secs(25));
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_secs(7)).await;
            w.activity.touch();
        }
        assert_eq!(w.expired.try_recv().ok(), Some(Expired::Total(Duration::from_secs(25))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_deadline_after_a_longer_one_is_still_kept() {
        let dog = Watchdog::start();
        let mut long = dog.watch(Duration::from_secs(300), Duration::from_secs(600));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut short = dog.watch(Duration::from_secs(2), Duration::from_secs(600));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(short.expired.try_recv().ok(), Some(Expired::Idle(Duration::from_secs(2))));
        assert!(long.expired.try_recv().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn finished_requests_leave_nothing_behind() {
        let dog = Watchdog::start();
        for _ in 0..100 {
            drop(dog.watch(Duration::from_secs(1), Duration::from_secs(2)));
        }
        assert_eq!(dog.shared.state().calls.len(), 0);
        let mut w = dog.watch(Duration::from_secs(1), Duration::from_secs(2));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(w.expired.try_recv().ok(), Some(Expired::Idle(Duration::from_secs(1))));
    }
}

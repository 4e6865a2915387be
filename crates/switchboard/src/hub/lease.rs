//! Leases, as ZCode's connection pool has them: in a long-running hub a server that nobody
//! has used (no call, read, prompt or completion under way or made) for its
//! `idle_shutdown_ms` — and that no resource subscription holds — is stopped, its process tree
//! ended; its tools, resources and prompts stay listed, its status is `idle`, and the next
//! request starts it again. `"keep_alive": true` exempts a server.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Inner, Slot};
use crate::status::ServerStatus;

/// The shortest and longest time between two looks.
const TICK: (Duration, Duration) = (Duration::from_millis(25), Duration::from_secs(15));

/// Starts looking after the leases of `inner`'s servers (for as long as the hub lives).
pub(super) fn spawn(inner: &Arc<Inner>) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let task = tokio::spawn(async move {
        loop {
            let tick = {
                let Some(inner) = weak.upgrade() else { return };
                let own = inner.all_slots().iter().filter_map(|s| s.lease()).min();
                let shortest = own.into_iter().chain(super::people::shortest_lease(&inner)).min();
                shortest.map_or(TICK.1, |d| (d / 4).clamp(TICK.0, TICK.1))
            };
            tokio::time::sleep(tick).await;
            let Some(inner) = weak.upgrade() else { return };
            if inner.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            for slot in inner.all_slots() {
                if expired(&slot).is_some() {
                    stop(&inner, &slot).await;
                }
            }
            super::people::sweep(&inner);
        }
    });
    inner.track(task.abort_handle());
}

/// How long past its lease the server has gone unused, if it has.
fn expired(slot: &Slot) -> Option<Duration> {
    let limit = slot.lease()?;
    {
        let st = slot.state();
        if !matches!(st.status, ServerStatus::Connected { .. }) || !st.subscribed.is_empty() {
            return None;
        }
    }
    let idle = slot.idle_for()?;
    idle.checked_sub(limit)
}

/// Stops a server whose lease ran out (unless it was used meanwhile).
async fn stop(inner: &Arc<Inner>, slot: &Arc<Slot>) {
    let _guard = slot.connect_lock.lock().await;
    // Looked at again under the lock: a call may have begun.
    if expired(slot).is_none() {
        return;
    }
    let conn = slot.state().conn.take();
    super::retry::reset(slot);
    if let Some(conn) = conn {
        tracing::info!(server = %slot.name, "stopping: unused for its idle_shutdown_ms; the next call starts it again");
        conn.close().await;
    }
    inner.set_status(slot, ServerStatus::Idle);
}

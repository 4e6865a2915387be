//! Trying servers again, the same for every transport. A server that goes away (its process
//! exits, it fails to start, a remote one fails a request or a health check) is marked
//! `disconnected` or `failed` with the cause at once and tried again:
//!
//! - a server that was connected is tried again at once; each failed attempt after that
//!   waits 1 s, doubling to 5 minutes, ±20 % jitter ([`Reconnect`]);
//! - in a long-running host (`Reconnect::background`) on a timer, and remote servers are
//!   checked every `health_interval`; in a short-lived one (a CLI command) at the next call;
//! - a crash loop (5 times within 60 s) stops it: `failed` / `crash_loop`, until the server
//!   is connected by hand ([`crate::Hub::connect`]), which starts the count again.
//!
//! Calls made meanwhile wait for an attempt that is under way or due within 2 s (within their
//! own timeout, [`super::calls`]); later ones fail at once and say when the next attempt is.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::{Inner, Slot};
use crate::connection::Connection;
use crate::status::{FailureKind, Retry, ServerStatus, now_ms};

/// How servers that go away are tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconnect {
    /// Try again on timers and check remote servers' health (a long-running host); `false`
    /// tries again only when a call needs the server (a short-lived host).
    pub background: bool,
    /// The wait after the first failed attempt; it doubles after each one.
    pub first_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
    /// This many times gone within `crash_window` is a crash loop: no more attempts.
    pub crash_loop: u32,
    /// See `crash_loop`.
    pub crash_window: Duration,
    /// How often a connected remote server is asked whether it is there (background only).
    pub health_interval: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            background: true,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(300),
            crash_loop: 5,
            crash_window: Duration::from_secs(60),
            health_interval: Duration::from_secs(30),
        }
    }
}

/// A call waits for an attempt due within this long.
pub(super) const WAIT_FOR_DUE: Duration = Duration::from_secs(2);

/// One server's record of going away.
#[derive(Default)]
pub(super) struct Backoff {
    /// When it went away lately, for the crash-loop check.
    recent: VecDeque<Instant>,
    /// Attempts that failed in a row since it was last connected.
    attempt: u32,
    /// When the next attempt is due (background), and its timer.
    due: Option<Instant>,
    timer: Option<tokio::task::AbortHandle>,
}

impl Backoff {
    /// When the next attempt is due, if one is scheduled.
    pub(super) fn due(&self) -> Option<Instant> {
        self.due
    }

    fn cancel(&mut self) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        self.due = None;
    }
}

/// The wait before attempt `attempt` (0: the first after a connected server went away).
fn delay(policy: &Reconnect, attempt: u32, seed: u64) -> Duration {
    if attempt == 0 {
        return Duration::ZERO;
    }
    let base = policy.first_delay.saturating_mul(1u32 << (attempt - 1).min(20)).min(policy.max_delay);
    // ±20 %: many servers lost at once do not all come back at the same instant.
    let jitter = 0.8 + 0.4 * ((splitmix(seed) >> 11) as f64 / (1u64 << 53) as f64);
    base.mul_f64(jitter).min(policy.max_delay)
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The server went away, as `status` (`disconnected` or `failed`) says: records it, decides
/// when it is tried again (or that it is a crash loop), publishes the status and, in a
/// long-running host, sets the timer.
pub(super) fn lost(inner: &Arc<Inner>, slot: &Arc<Slot>, status: ServerStatus) {
    let policy = inner.options.reconnect;
    let retryable = match &status {
        ServerStatus::Failed { kind, .. } => kind.is_retryable(),
        ServerStatus::Disconnected { .. } => true,
        _ => false,
    };
    if !retryable || inner.shutting_down.load(Ordering::SeqCst) {
        slot.backoff().cancel();
        inner.set_status(slot, status);
        return;
    }
    let now = Instant::now();
    let (attempt, crash) = {
        let mut b = slot.backoff();
        b.cancel();
        if matches!(status, ServerStatus::Failed { .. }) {
            b.attempt = b.attempt.saturating_add(1);
        } else {
            b.attempt = 0;
        }
        // A remote server that cannot be reached is away, not crashing: it is tried on with
        // backoff (up to the longest delay) however long it takes; only exits and failed starts
        // count towards a crash loop.
        let unreachable = matches!(&status, ServerStatus::Failed { kind: FailureKind::NetworkUnreachable, .. });
        if !unreachable {
            b.recent.push_back(now);
        }
        while b.recent.front().is_some_and(|t| now.duration_since(*t) > policy.crash_window) {
            b.recent.pop_front();
        }
        (b.attempt, b.recent.len() >= policy.crash_loop as usize)
    };
    if crash {
        let (what, stderr_tail) = match &status {
            ServerStatus::Failed { message, stderr_tail, .. } => (message.clone(), stderr_tail.clone()),
            other => (other.summary(), tail_of(other)),
        };
        let message = format!(
            "went away {} times within {} s (last: {}); not tried again by itself: connect it to try again",
            policy.crash_loop,
            policy.crash_window.as_secs(),
            what.lines().next().unwrap_or_default()
        );
        tracing::warn!(server = %slot.name, "{message}");
        let status = ServerStatus::Failed {
            kind: FailureKind::CrashLoop,
            message,
            stderr_tail,
            auth_challenge: None,
            retry: None,
        };
        inner.set_status(slot, status);
        return;
    }
    if !policy.background {
        // A short-lived host tries again when a call needs the server.
        inner.set_status(slot, with_retry(status, Some(Retry { attempt, at_ms: None })));
        return;
    }
    let wait = delay(
        &policy,
        attempt,
        now_ms() ^ u64::from(attempt) ^ slot.name.len() as u64 ^ slot.epoch.load(Ordering::Relaxed),
    );
    let retry = Retry { attempt, at_ms: Some(now_ms() + u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)) };
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let slot2 = slot.clone();
    let epoch = slot.epoch.load(Ordering::SeqCst);
    let timer = tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let Some(inner) = weak.upgrade() else { return };
        // Connected meanwhile (a call did it, or a person): nothing to do.
        if slot2.epoch.load(Ordering::SeqCst) != epoch || inner.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        slot2.backoff().due = None;
        tracing::info!(server = %slot2.name, "trying again (attempt {})", attempt + 1);
        let _ = super::connect::connect(&inner, &slot2).await;
    });
    {
        let mut b = slot.backoff();
        b.due = Some(now + wait);
        b.timer = Some(timer.abort_handle());
    }
    inner.track(timer.abort_handle());
    inner.set_status(slot, with_retry(status, Some(retry)));
}

fn tail_of(status: &ServerStatus) -> Vec<String> {
    match status {
        ServerStatus::Disconnected { stderr_tail, .. } | ServerStatus::Failed { stderr_tail, .. } => {
            stderr_tail.clone()
        }
        _ => Vec::new(),
    }
}

fn with_retry(mut status: ServerStatus, next: Option<Retry>) -> ServerStatus {
    match &mut status {
        ServerStatus::Disconnected { retry, .. } | ServerStatus::Failed { retry, .. } => *retry = next,
        _ => {}
    }
    status
}

/// The server is connected: the next loss starts the backoff from the start.
pub(super) fn connected(slot: &Slot) {
    let mut b = slot.backoff();
    b.attempt = 0;
    b.due = None;
    b.timer = None;
}

/// A person asked (connect, reconnect, disconnect): no timer runs, and the crash-loop count
/// starts again.
pub(super) fn reset(slot: &Slot) {
    let mut b = slot.backoff();
    b.cancel();
    b.recent.clear();
    b.attempt = 0;
}

/// A remote connection that is gone (a request failed with its transport closed, or a health
/// check failed): takes it out of the slot and tries again.
pub(super) async fn remote_gone(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Arc<Connection>, reason: String) {
    let current = slot.state().conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn));
    if !current {
        return;
    }
    super::health::drop_connection(slot, conn).await;
    tracing::warn!(server = %slot.name, "{reason}");
    let status = ServerStatus::Disconnected {
        exit_code: None,
        signal: None,
        stderr_tail: Vec::new(),
        reason: Some(reason),
        retry: None,
    };
    lost(inner, slot, status);
}

/// In a long-running host, asks a connected remote server every `health_interval` whether it
/// is there; the first failure (or a minute without answer) is [`remote_gone`].
pub(super) fn watch_health(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Arc<Connection>) {
    let policy = inner.options.reconnect;
    if !policy.background || conn.tree.is_some() {
        return;
    }
    let (weak, slot2, conn2) = (Arc::downgrade(inner), slot.clone(), Arc::downgrade(conn));
    let h = tokio::spawn(async move {
        loop {
            tokio::time::sleep(policy.health_interval).await;
            let (Some(inner), Some(conn)) = (weak.upgrade(), conn2.upgrade()) else { return };
            if conn.is_closed() || !slot2.state().conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                return;
            }
            let checked = tokio::time::timeout(super::health::PING_TIMEOUT, conn.check()).await;
            let reason = match checked {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => format!("stopped answering: {}", crate::connection::describe_error(&e)),
                Err(_) => {
                    format!("stopped answering (no answer to a health check within {:?})", super::health::PING_TIMEOUT)
                }
            };
            remote_gone(&inner, &slot2, &conn, reason).await;
            return;
        }
    });
    inner.track(h.abort_handle());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_with_jitter_up_to_the_maximum() {
        let p = Reconnect::default();
        assert_eq!(delay(&p, 0, 1), Duration::ZERO);
        for seed in 0..50 {
            let d1 = delay(&p, 1, seed);
            assert!(d1 >= Duration::from_millis(800) && d1 <= Duration::from_millis(1200), "{d1:?}");
            let d3 = delay(&p, 3, seed);
            assert!(d3 >= Duration::from_millis(3200) && d3 <= Duration::from_millis(4800), "{d3:?}");
            assert!(delay(&p, 40, seed) <= Duration::from_secs(300));
        }
        let spread: std::collections::BTreeSet<_> = (0..20).map(|s| delay(&p, 2, s).as_millis()).collect();
        assert!(spread.len() > 10, "jitter spreads attempts: {spread:?}");
    }
}

//! When servers are tried again (the policy; `connect.rs` acts on it), the same for every
//! transport. A server that goes away (its process
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
use std::time::{Duration, Instant};

use super::Slot;
use crate::status::{FailureKind, Retry, ServerStatus};

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

    pub(super) fn cancel(&mut self) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        self.due = None;
    }

    /// Records that the server went away at `now`, as `status` says: counts the attempt (a
    /// failed one adds to the count; a connected server that went away starts it again) and the
    /// loss (for the crash-loop check). Returns the attempt and whether it is a crash loop.
    pub(super) fn record(&mut self, policy: &Reconnect, status: &ServerStatus, now: Instant) -> (u32, bool) {
        self.cancel();
        if matches!(status, ServerStatus::Failed { .. }) {
            self.attempt = self.attempt.saturating_add(1);
        } else {
            self.attempt = 0;
        }
        // A remote server that cannot be reached is away, not crashing: it is tried on with
        // backoff (up to the longest delay) however long it takes; only exits and failed starts
        // count towards a crash loop.
        let unreachable = matches!(status, ServerStatus::Failed { kind: FailureKind::NetworkUnreachable, .. });
        if !unreachable {
            self.recent.push_back(now);
        }
        while self.recent.front().is_some_and(|t| now.duration_since(*t) > policy.crash_window) {
            self.recent.pop_front();
        }
        (self.attempt, self.recent.len() >= policy.crash_loop as usize)
    }

    /// The next attempt is due at `due`, on `timer`.
    pub(super) fn schedule(&mut self, due: Instant, timer: tokio::task::AbortHandle) {
        self.due = Some(due);
        self.timer = Some(timer);
    }

    /// The attempt that was due is being made.
    pub(super) fn started(&mut self) {
        self.due = None;
    }
}

/// The wait before attempt `attempt` (0: the first after a connected server went away).
pub(super) fn delay(policy: &Reconnect, attempt: u32, seed: u64) -> Duration {
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

/// The last lines of stderr a status carries.
pub(super) fn tail_of(status: &ServerStatus) -> Vec<String> {
    match status {
        ServerStatus::Disconnected { stderr_tail, .. } | ServerStatus::Failed { stderr_tail, .. } => {
            stderr_tail.clone()
        }
        _ => Vec::new(),
    }
}

/// `status` with when it is tried next.
pub(super) fn with_retry(mut status: ServerStatus, next: Option<Retry>) -> ServerStatus {
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

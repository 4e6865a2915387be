//! A token bucket over one server's notifications: a burst of twice the rate, then the rate
//! (`HubOptions::notification_rate`, 1000 a second by default; 0 takes every one). Beyond it,
//! progress, log and resource-update notifications are dropped, and a note is due at most once
//! a second, saying how many. `list_changed` is never dropped (the refresh worker coalesces it).

use std::time::{Duration, Instant};

/// The default rate, in notifications a second.
pub const DEFAULT_RATE: u32 = 1000;

/// One server's bucket.
#[derive(Debug)]
pub(crate) struct Flood {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
    dropped: u64,
    noted: Option<Instant>,
}

impl Default for Flood {
    fn default() -> Self {
        Flood::new(DEFAULT_RATE)
    }
}

impl Flood {
    /// A bucket for `rate` a second (0: no limit).
    pub(crate) fn new(rate: u32) -> Flood {
        let rate = f64::from(rate);
        Flood { rate, burst: rate * 2.0, tokens: rate * 2.0, at: Instant::now(), dropped: 0, noted: None }
    }

    /// The rate, for messages.
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// Whether one more notification is taken; `Some(n)` as the second value when a note
    /// about `n` dropped ones is due.
    pub(crate) fn admit(&mut self) -> (bool, Option<u64>) {
        if self.rate <= 0.0 {
            return (true, None);
        }
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.rate).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return (true, None);
        }
        self.dropped += 1;
        let due = self.noted.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
        if due {
            self.noted = Some(now);
            return (false, Some(std::mem::take(&mut self.dropped)));
        }
        (false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_to_the_rate_with_one_note_a_second() {
        let mut f = Flood::default();
        let taken = (0..3000).filter(|_| f.admit().0).count();
        // The burst, and what trickled in while counting.
        assert!((2000..2100).contains(&taken), "{taken}");
        f.noted = Some(Instant::now() - Duration::from_secs(2));
        f.tokens = 0.0;
        f.at = Instant::now();
        let (taken, note) = f.admit();
        assert!(!taken);
        assert!(note.is_some_and(|n| n >= 900), "{note:?}");
        assert_eq!(f.admit().1, None, "at most one note a second");
        let mut open = Flood::new(0);
        assert!((0..100_000).all(|_| open.admit().0), "0 takes every one");
    }
}

//! The compiled checks a hub screens with: the scanner's rules ([`Scanner`], about 9 ms of
//! regex compilation in a release build, most of a cold start's own work) and the secret
//! patterns ([`SecretFinder`], about 1 ms). A hub starts compiling both on a thread of their
//! own as it starts, so the work overlaps its servers' start-up; whoever needs one first waits
//! for it (or compiles it, if that thread has not begun).

use std::sync::{Arc, OnceLock};

use super::Scanner;
use super::secrets::SecretFinder;

/// The checks, compiled once per hub.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    scanner: OnceLock<Scanner>,
    secrets: OnceLock<SecretFinder>,
}

impl Compiled {
    /// The checks, compiling in the background from now on.
    pub(crate) fn warming() -> Arc<Compiled> {
        let compiled = Arc::new(Compiled::default());
        let warm = compiled.clone();
        let started = std::thread::Builder::new().name("switchboard-checks".into()).spawn(move || {
            warm.scanner();
            warm.secrets();
        });
        if let Err(e) = started {
            tracing::debug!("the checks are compiled when first needed (no thread: {e})");
        }
        compiled
    }

    /// The scanner's rules (waited for, or compiled here).
    pub(crate) fn scanner(&self) -> &Scanner {
        self.scanner.get_or_init(Scanner::new)
    }

    /// The secret patterns (waited for, or compiled here).
    pub(crate) fn secrets(&self) -> &SecretFinder {
        self.secrets.get_or_init(SecretFinder::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checks_are_the_same_however_they_are_reached() {
        let c = Compiled::warming();
        // Asked at once: waited for, or compiled here; either way one of each.
        let a: *const Scanner = c.scanner();
        let b: *const Scanner = c.scanner();
        assert_eq!(a, b);
        assert!(std::ptr::eq(c.secrets(), c.secrets()));
        // Never warmed: compiled where first asked, with every rule.
        let cold = Compiled::default();
        assert_eq!(format!("{:?}", cold.scanner()), format!("{:?}", Scanner::new()));
    }
}

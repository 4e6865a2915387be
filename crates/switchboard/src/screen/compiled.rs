//! The checks a hub screens with: the scanner's rules ([`Scanner`]) and the secret patterns
//! ([`SecretFinder`]), each made when first needed. Making them costs microseconds (their
//! anchors, searched in one pass); a rule's regular expression is compiled the first time a
//! text holds its anchors (all of them would take about 10 ms in a release build, most of what
//! a cold start once cost; a hub whose servers' definitions and results hold no anchor never
//! compiles one).

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
    /// The checks, none made yet.
    pub(crate) fn new() -> Arc<Compiled> {
        Arc::new(Compiled::default())
    }

    /// The scanner's rules (made here the first time).
    pub(crate) fn scanner(&self) -> &Scanner {
        self.scanner.get_or_init(Scanner::new)
    }

    /// The secret patterns (made here the first time).
    pub(crate) fn secrets(&self) -> &SecretFinder {
        self.secrets.get_or_init(SecretFinder::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checks_are_the_same_however_they_are_reached() {
        let c = Compiled::new();
        // Asked twice: one of each.
        let a: *const Scanner = c.scanner();
        let b: *const Scanner = c.scanner();
        assert_eq!(a, b);
        assert!(std::ptr::eq(c.secrets(), c.secrets()));
        // Made where first asked, with every rule.
        let cold = Compiled::default();
        assert_eq!(format!("{:?}", cold.scanner()), format!("{:?}", Scanner::new()));
    }
}

//! Access tokens (JWTs) verified lately: a client sends the same token with every request of
//! its session, and checking its signature, claims and scopes each time was most of what a
//! signed-in caller's request cost over the local token's. A token that passed is kept under
//! its SHA-256 (never the token itself) with the caller it names, until its `exp` (with the
//! same [`SKEW`] the check allows), so it is refused at the same moment as without the cache.
//! A refusal is never kept.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::{Principal, SKEW};

/// The most tokens kept (past it, expired ones are dropped, then all).
const MAX_KEPT: usize = 10_000;

/// Tokens that passed, by digest: the second (since the epoch) they stop being accepted, and
/// whom they name.
#[derive(Debug, Default)]
pub(super) struct Verified {
    kept: Mutex<HashMap<[u8; 32], (u64, Principal)>>,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Verified {
    /// The digest a token is kept under.
    pub(super) fn digest(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    /// The caller of a token that passed and has not expired since.
    pub(super) fn get(&self, digest: &[u8; 32]) -> Option<Principal> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let (until, principal) = kept.get(digest)?;
        (now() <= *until).then(|| principal.clone())
    }

    /// Keeps `principal` for the token of `digest`, which expires at `exp`.
    pub(super) fn keep(&self, digest: [u8; 32], exp: u64, principal: &Principal) {
        let until = exp.saturating_add(SKEW.as_secs());
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_KEPT {
            let at = now();
            kept.retain(|_, (until, _)| *until >= at);
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
        }
        kept.insert(digest, (until, principal.clone()));
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

//! Rate limits per caller and tool (`policy.rate_limits`, read by `config/rate.rs`): a token
//! bucket per (limit, caller, tool), checked by the gate after the policy lets a call through
//! and before anyone is asked or anything is sent.
//!
//! The buckets live in this process's memory: a hub (a gateway, `serve`) counts the calls it
//! gates. Several replicas of a gateway each keep their own, so a caller spread over N of them
//! may make up to N times the rate; a restart fills every bucket. Callers who did not sign in
//! share one bucket per tool (the person at this machine, scripts, a stdio gateway). A bucket
//! that is full again is the same as none, and is dropped when the table grows past
//! [`PRUNE_AT`], so a gateway with many callers keeps only those who called lately.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ToolRef;
use crate::config::{PolicyLayer, RateLimit};
use crate::glob::GlobList;

/// Buckets kept before full ones are dropped.
pub(crate) const PRUNE_AT: usize = 100_000;

/// A call the limits refused: the limit, its file, and when a call would get through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limited {
    pub(crate) rule: String,
    pub(crate) file: PathBuf,
    pub(crate) retry_after: Duration,
}

struct Limit {
    spec: RateLimit,
    file: PathBuf,
    glob: GlobList,
    text: String,
}

impl Limit {
    /// Tokens refilled per second.
    fn rate(&self) -> f64 {
        f64::from(self.spec.calls) / self.spec.per.as_secs_f64()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    limit: usize,
    /// The caller's issuer and subject (empty: who did not sign in).
    caller: String,
    tool: String,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every file's rate limits, and their buckets.
pub(crate) struct RateLimiter {
    limits: Vec<Limit>,
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl RateLimiter {
    pub(crate) fn new(layers: &[PolicyLayer]) -> RateLimiter {
        let limits = layers
            .iter()
            .flat_map(|l| l.rules.rate_limits.iter().map(move |r| (l, r)))
            .map(|(layer, spec)| Limit {
                text: spec.to_string(),
                glob: GlobList::lenient(std::slice::from_ref(&spec.tool)),
                spec: spec.clone(),
                file: layer.file.clone(),
            })
            .collect();
        RateLimiter { limits, buckets: Mutex::new(HashMap::new()) }
    }

    /// Whether `layers` say what these limits say (a reload that keeps them keeps the buckets).
    pub(crate) fn same_as(&self, layers: &[PolicyLayer]) -> bool {
        let theirs: Vec<(&PathBuf, &RateLimit)> =
            layers.iter().flat_map(|l| l.rules.rate_limits.iter().map(move |r| (&l.file, r))).collect();
        theirs.len() == self.limits.len()
            && self.limits.iter().zip(theirs).all(|(a, (f, r))| &a.file == f && &a.spec == r)
    }

    /// Takes a call of `tool` (by its caller) from every bucket of a limit that holds for it,
    /// at `now`; or, when one of them is empty, takes none and says which limit and for how
    /// long.
    pub(crate) fn take(&self, tool: &ToolRef<'_>, now: Instant) -> Result<(), Limited> {
        if self.limits.is_empty() {
            return Ok(());
        }
        let spellings = tool.spellings();
        let names = spellings.each_ref().map(String::as_str);
        let holding: Vec<usize> = self
            .limits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.spec.who.holds_for(tool.caller) && l.glob.matching(&names).next().is_some())
            .map(|(i, _)| i)
            .collect();
        if holding.is_empty() {
            return Ok(());
        }
        let caller = tool.caller.map(|p| format!("{}\u{0}{}", p.issuer, p.subject)).unwrap_or_default();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut refused: Option<(usize, Duration)> = None;
        let mut filled = Vec::with_capacity(holding.len());
        for &i in &holding {
            let limit = &self.limits[i];
            let key = Key { limit: i, caller: caller.clone(), tool: tool.name.to_string() };
            let burst = f64::from(limit.spec.burst);
            let tokens = match buckets.get(&key) {
                Some(b) => (b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * limit.rate()).min(burst),
                None => burst,
            };
            if tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - tokens) / limit.rate());
                if refused.is_none_or(|(_, w)| wait > w) {
                    refused = Some((i, wait));
                }
            }
            filled.push((key, tokens));
        }
        if let Some((i, retry_after)) = refused {
            let limit = &self.limits[i];
            return Err(Limited { rule: limit.text.clone(), file: limit.file.clone(), retry_after });
        }
        for (key, tokens) in filled {
            buckets.insert(key, Bucket { tokens: tokens - 1.0, at: now });
        }
        if buckets.len() > PRUNE_AT {
            let limits = &self.limits;
            buckets.retain(|k, b| {
                let l = &limits[k.limit];
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * l.rate() < f64::from(l.spec.burst)
            });
        }
        Ok(())
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::config::{PolicyRules, RuleSource};
    use crate::identity::Principal;

    fn limiter(limits: serde_json::Value) -> RateLimiter {
        let rules =
            PolicyRules { rate_limits: crate::config::rate::rate_limits(&limits).unwrap(), ..PolicyRules::default() };
        RateLimiter::new(&[PolicyLayer::new(RuleSource::User, PathBuf::from("/u.json"), rules)])
    }

    fn person(subject: &str, groups: &[&str]) -> Principal {
        serde_json::from_value(json!({"subject": subject, "issuer": "https://idp.example", "groups": groups})).unwrap()
    }

    #[test]
    fn each_caller_has_a_bucket_per_tool_refilled_at_the_rate() {
        let l = limiter(json!([{"tool": "mcp__gh__*", "calls": 2, "per": "second"}]));
        let (alice, bob) = (person("alice", &[]), person("bob", &[]));
        let t0 = Instant::now();
        let call = |name: &'static str, who: Option<&Principal>, at: Instant| {
            l.take(&ToolRef::new(name, "gh", name.trim_start_matches("mcp__gh__")).by(who), at)
        };
        assert!(call("mcp__gh__list", Some(&alice), t0).is_ok());
        assert!(call("mcp__gh__list", Some(&alice), t0).is_ok());
        let refused = call("mcp__gh__list", Some(&alice), t0).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_millis(500));
        assert!(refused.rule.contains("2 calls a second"), "{}", refused.rule);
        // Bob, another tool, and callers who did not sign in have buckets of their own.
        assert!(call("mcp__gh__list", Some(&bob), t0).is_ok());
        assert!(call("mcp__gh__get", Some(&alice), t0).is_ok());
        assert!(call("mcp__gh__list", None, t0).is_ok());
        // Refilled at 2 a second: one more after half a second.
        assert!(call("mcp__gh__list", Some(&alice), t0 + Duration::from_millis(500)).is_ok());
        assert!(call("mcp__gh__list", Some(&alice), t0 + Duration::from_millis(500)).is_err());
        // A tool no limit names is never counted.
        assert!((0..10).all(|_| l.take(&ToolRef::new("mcp__fs__read", "fs", "read"), t0).is_ok()));
    }

    #[test]
    fn every_limit_that_holds_must_have_room_and_a_refusal_takes_nothing() {
        let l = limiter(json!([
            {"tool": "mcp__gh__*", "calls": 10, "per": "minute"},
            {"tool": "mcp__gh__delete_*", "calls": 1, "per": "hour", "unless_groups": ["admins"]},
        ]));
        let (alice, admin) = (person("alice", &["devs"]), person("root", &["admins"]));
        let t0 = Instant::now();
        let del =
            |who: &Principal| l.take(&ToolRef::new("mcp__gh__delete_repo", "gh", "delete_repo").by(Some(who)), t0);
        assert!(del(&alice).is_ok());
        let refused = del(&alice).unwrap_err();
        assert!(refused.rule.contains("`mcp__gh__delete_*`: 1 call an hour"), "{refused:?}");
        assert_eq!(refused.retry_after, Duration::from_secs(3600));
        // The refusal took nothing from the minute's bucket: 9 more of the broad limit remain.
        assert!(
            (0..9).all(|_| l
                .take(&ToolRef::new("mcp__gh__delete_repo", "gh", "delete_repo").by(Some(&admin)), t0)
                .is_ok())
        );
        assert!(del(&admin).is_ok(), "the admin's minute bucket is theirs");
        let list = |n: usize| {
            (0..n).filter(|_| l.take(&ToolRef::new("mcp__gh__list", "gh", "list").by(Some(&alice)), t0).is_ok()).count()
        };
        assert_eq!(list(12), 10, "alice's list bucket is apart from her delete bucket");
    }

    #[test]
    fn full_buckets_are_dropped_when_the_table_grows() {
        let l = limiter(json!([{"tool": "*", "calls": 1000, "per": "second"}]));
        let t0 = Instant::now();
        let people: Vec<Principal> = (0..PRUNE_AT + 1).map(|i| person(&format!("p{i}"), &[])).collect();
        for p in &people {
            l.take(&ToolRef::new("mcp__a__b", "a", "b").by(Some(p)), t0).unwrap();
        }
        assert_eq!(l.kept(), PRUNE_AT + 1);
        let later = t0 + Duration::from_secs(1);
        l.take(&ToolRef::new("mcp__a__b", "a", "b").by(Some(&people[0])), later).unwrap();
        assert_eq!(l.kept(), 1, "full again: the same as none");
    }

    #[test]
    fn a_reload_with_the_same_limits_keeps_the_buckets() {
        let spec = json!([{"tool": "*", "calls": 1, "per": "day"}]);
        let l = limiter(spec.clone());
        let layer = |v: serde_json::Value| {
            let rules =
                PolicyRules { rate_limits: crate::config::rate::rate_limits(&v).unwrap(), ..PolicyRules::default() };
            vec![PolicyLayer::new(RuleSource::User, PathBuf::from("/u.json"), rules)]
        };
        assert!(l.same_as(&layer(spec)));
        assert!(!l.same_as(&layer(json!([{"tool": "*", "calls": 2, "per": "day"}]))));
        assert!(!l.same_as(&[]));
    }
}

//! `policy.rate_limits`: how often each caller may call a tool.
//!
//! ```json
//! "policy": {"rate_limits": [
//!   {"tool": "mcp__github__*", "calls": 60, "per": "minute"},
//!   {"tool": "mcp__search__*", "calls": 10, "per": "second", "burst": 20, "unless_groups": ["admins"]}
//! ]}
//! ```
//!
//! Each entry is a token bucket per caller (who signed in; callers who did not share one) and
//! per tool the glob matches: `burst` calls at once (default `calls`), refilled at `calls` per
//! `per` (`second`, `minute`, `hour`, `day`). `groups`, `unless_groups` and `principals` say
//! whom it holds for, as for rules ([`super::who`]). Every entry that matches a call must have
//! room for it, so a file cannot loosen another's limit (a project's included: a limit only
//! tightens). The buckets are [`crate::policy::rate`]'s.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::who::Who;

/// One entry of `policy.rate_limits`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RateLimit {
    /// The glob over tool names (as rules match them).
    pub tool: String,
    /// Calls refilled per `per`.
    pub calls: u32,
    /// The refill period.
    #[serde(serialize_with = "per_word")]
    pub per: Duration,
    /// Calls at once (a full bucket).
    pub burst: u32,
    /// Whom it holds for.
    pub who: Who,
}

impl std::fmt::Display for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per = period_word(self.per);
        let a = if per == "hour" { "an" } else { "a" };
        let calls = if self.calls == 1 { "call" } else { "calls" };
        write!(f, "rate limit `{}`: {} {calls} {a} {per}", self.tool, self.calls)?;
        if self.burst != self.calls {
            write!(f, ", {} at once", self.burst)?;
        }
        if self.who != Who::default() {
            write!(f, " ({})", self.who)?;
        }
        f.write_str(", per caller and tool")
    }
}

fn period_word(per: Duration) -> &'static str {
    match per.as_secs() {
        1 => "second",
        60 => "minute",
        3600 => "hour",
        _ => "day",
    }
}

fn per_word<S: serde::Serializer>(per: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(period_word(*per))
}

/// Reads `policy.rate_limits`: the entries, or the first mistake (`[i]`: what is wrong).
pub(crate) fn rate_limits(v: &Value) -> Result<Vec<RateLimit>, String> {
    let list = v.as_array().ok_or("`rate_limits` must be a list of {\"tool\", \"calls\", \"per\"}")?;
    list.iter().enumerate().map(|(i, item)| rate_limit(item).map_err(|e| format!("[{i}]: {e}"))).collect()
}

fn rate_limit(item: &Value) -> Result<RateLimit, String> {
    let obj = item.as_object().ok_or("an entry is {\"tool\": GLOB, \"calls\": N, \"per\": \"minute\"}")?;
    let tool = obj.get("tool").and_then(Value::as_str).ok_or("needs `tool`: a glob")?;
    globset::Glob::new(tool).map_err(|e| format!("bad glob `{}`: {e}", crate::text::excerpt(tool, 80)))?;
    let count = |key: &str| -> Result<Option<u32>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be a whole number from 1")),
        }
    };
    let calls = count("calls")?.ok_or("needs `calls`: how many per `per`")?;
    let burst = count("burst")?.unwrap_or(calls);
    let per = match obj.get("per").and_then(Value::as_str) {
        Some("second") => Duration::from_secs(1),
        Some("minute") => Duration::from_secs(60),
        Some("hour") => Duration::from_secs(3600),
        Some("day") => Duration::from_secs(86_400),
        _ => return Err("`per` must be \"second\", \"minute\", \"hour\" or \"day\"".into()),
    };
    let mut who = Who::default();
    for (key, v) in obj {
        match key.as_str() {
            "tool" | "calls" | "per" | "burst" => {}
            _ if who.read_field(key, v)? => {}
            other => {
                return Err(format!(
                    "unknown field `{}`: use `tool`, `calls`, `per`, `burst`, `groups`, `unless_groups`, `principals`",
                    crate::text::excerpt(other, 60)
                ));
            }
        }
    }
    Ok(RateLimit { tool: tool.to_string(), calls, per, burst, who })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn limits_are_read_and_their_mistakes_named() {
        let limits = rate_limits(&json!([
            {"tool": "mcp__gh__*", "calls": 60, "per": "minute"},
            {"tool": "mcp__s__*", "calls": 10, "per": "second", "burst": 20, "unless_groups": ["admins"]},
        ]))
        .unwrap();
        assert_eq!((limits[0].calls, limits[0].burst, limits[0].per), (60, 60, Duration::from_secs(60)));
        assert_eq!(limits[1].who.unless_groups, ["admins"]);
        assert_eq!(
            limits[1].to_string(),
            "rate limit `mcp__s__*`: 10 calls a second, 20 at once (unless in group admins), per caller and tool"
        );
        let err = |v: Value| rate_limits(&json!([v])).unwrap_err();
        assert!(err(json!({"calls": 1, "per": "minute"})).starts_with("[0]: needs `tool`"));
        assert!(err(json!({"tool": "x", "per": "minute"})).contains("needs `calls`"));
        assert!(err(json!({"tool": "x", "calls": 0, "per": "minute"})).contains("from 1"));
        assert!(err(json!({"tool": "x", "calls": 1, "per": "fortnight"})).contains("`per` must be"));
        assert!(err(json!({"tool": "x", "calls": 1, "per": "day", "group": ["a"]})).contains("unknown field `group`"));
        assert!(err(json!({"tool": "[", "calls": 1, "per": "day"})).contains("bad glob"));
        assert!(rate_limits(&json!({})).is_err());
    }
}

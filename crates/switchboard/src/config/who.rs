//! Rules for some callers only: an entry of a policy list written as an object,
//! `{"tool": GLOB, "groups" | "unless_groups" | "principals": [...]}`, holds only for the
//! callers it names, by who signed in ([`crate::identity::Principal`]).

use serde::Serialize;
use serde_json::Value;

use crate::policy::Verdict;

/// A rule of a list written as an object: it holds only for the callers `who` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ConditionalRule {
    /// The list it is in.
    pub verdict: crate::policy::Verdict,
    /// The glob (`tool`).
    pub tool: String,
    /// Whom it holds for.
    pub who: Who,
}

/// Whom a rule holds for, by who signed in ([`crate::identity::Principal`]): callers in one of
/// `groups` (none given: anyone), not in any of `unless_groups`, and, when `principals` is
/// given, one of those subjects. A caller who did not sign in is in no group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Who {
    /// `groups`: only callers in one of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// `unless_groups`: not callers in any of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unless_groups: Vec<String>,
    /// `principals`: only these subjects (`sub`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub principals: Vec<String>,
}

impl Who {
    /// Takes `key` into this if it is one of `groups`, `unless_groups` and `principals`
    /// (`Ok(false)`: another key).
    pub(crate) fn read_field(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        let names = || -> Result<Vec<String>, String> {
            v.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                .filter(|a| !a.is_empty())
                .ok_or_else(|| format!("`{key}` must be a non-empty list of names"))
        };
        match key {
            "groups" => self.groups = names()?,
            "unless_groups" => self.unless_groups = names()?,
            "principals" => self.principals = names()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the rule holds for `caller`.
    pub fn holds_for(&self, caller: Option<&crate::identity::Principal>) -> bool {
        let groups: &[String] = caller.map_or(&[], |p| p.groups.as_slice());
        (self.groups.is_empty() || self.groups.iter().any(|g| groups.contains(g)))
            && !self.unless_groups.iter().any(|g| groups.contains(g))
            && (self.principals.is_empty() || caller.is_some_and(|p| self.principals.contains(&p.subject)))
    }
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.principals.is_empty() {
            parts.push(format!("for {}", self.principals.join(", ")));
        }
        if !self.groups.is_empty() {
            parts.push(format!("for group {}", self.groups.join(" or ")));
        }
        if !self.unless_groups.is_empty() {
            parts.push(format!("unless in group {}", self.unless_groups.join(" or ")));
        }
        f.write_str(&parts.join(", "))
    }
}

/// `{"tool": GLOB, "groups" | "unless_groups" | "principals": [...]}`.
pub(crate) fn conditional_rule(item: &Value, verdict: Verdict) -> Result<ConditionalRule, String> {
    let obj = item.as_object().ok_or("a rule is a glob or an object")?;
    let tool = obj.get("tool").and_then(Value::as_str).ok_or("a rule written as an object needs `tool`: a glob")?;
    globset::Glob::new(tool).map_err(|e| format!("bad glob `{}`: {e}", crate::text::excerpt(tool, 80)))?;
    let mut who = Who::default();
    for (key, v) in obj {
        match key.as_str() {
            "tool" => {}
            _ if who.read_field(key, v)? => {}
            other => {
                return Err(format!(
                    "unknown field `{}` in a rule: use `tool` with `groups`, `unless_groups` or `principals`",
                    crate::text::excerpt(other, 60)
                ));
            }
        }
    }
    if who == Who::default() {
        return Err(format!(
            "the rule for `{tool}` says no `groups`, `unless_groups` or `principals`: write the glob alone"
        ));
    }
    Ok(ConditionalRule { verdict, tool: tool.to_string(), who })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_rule_for_some_callers_is_read_and_its_mistakes_named() {
        let rule = conditional_rule(
            &serde_json::json!({"tool": "mcp__gh__delete_*", "unless_groups": ["admins"]}),
            Verdict::Deny,
        )
        .unwrap();
        assert_eq!(rule.who.unless_groups, ["admins"]);
        assert_eq!(rule.who.to_string(), "unless in group admins");
        let err = |v: Value| conditional_rule(&v, Verdict::Deny).unwrap_err();
        assert!(err(serde_json::json!({"groups": ["a"]})).contains("needs `tool`"));
        assert!(err(serde_json::json!({"tool": "x", "group": ["a"]})).contains("unknown field `group`"));
        assert!(err(serde_json::json!({"tool": "x", "groups": []})).contains("non-empty list"));
        assert!(err(serde_json::json!({"tool": "x"})).contains("write the glob alone"));
        assert!(err(serde_json::json!({"tool": "[", "groups": ["a"]})).contains("bad glob"));
    }
}

//! Blocked, then told: what a server's sandbox refused (a path it logged a permission error
//! on, a name the proxy would not reach), each with the config line that would allow it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use super::{Rules, carve};

/// The most refusals kept per server (the first ones: the rest are counted).
const KEPT: usize = 32;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RefusedKind {
    /// Reading a hidden path.
    Read,
    /// Writing outside the writable folders.
    Write,
    /// Reaching a name not in `allowedDomains`.
    Domain,
}

/// One thing a sandbox refused, and how to allow it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Refusal {
    /// What.
    pub kind: RefusedKind,
    /// The path (`~` for the home folder) or the name.
    pub target: String,
    /// The entry's `sandbox` block that allows it, to put in the server's entry.
    pub allow: String,
    /// How many times.
    pub count: u32,
}

/// A server's refusals (shared by its stderr reader, the proxy and the hub).
#[derive(Debug, Default)]
pub struct Refusals {
    state: Mutex<State>,
    /// Where each refusal is counted, and the server's name there (set by the hub).
    counted: std::sync::OnceLock<(crate::metrics::Metrics, String)>,
}

#[derive(Debug, Default)]
struct State {
    rules: Option<Rules>,
    home: Option<PathBuf>,
    kept: Vec<Refusal>,
}

impl Refusals {
    /// The rules the server runs under now (refusals are judged against them).
    pub(crate) fn set_rules(&self, rules: Option<Rules>, home: Option<&Path>) {
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        s.rules = rules;
        s.home = home.map(Path::to_path_buf);
    }

    /// From now on each refusal is counted in `metrics` as `server`'s
    /// (`switchboard_sandbox_refusals_total`); the first call holds.
    pub(crate) fn count_in(&self, metrics: &crate::metrics::Metrics, server: &str) {
        let _ = self.counted.set((metrics.clone(), server.to_string()));
    }

    fn count(&self, kind: RefusedKind) {
        if let Some((metrics, server)) = self.counted.get() {
            let kind = match kind {
                RefusedKind::Read => "read",
                RefusedKind::Write => "write",
                RefusedKind::Domain => "domain",
            };
            metrics.sandbox_refusal(server, kind);
        }
    }

    /// The refusals so far.
    pub fn list(&self) -> Vec<Refusal> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).kept.clone()
    }

    /// Reads one line the server logged: a permission error on a path the sandbox keeps from
    /// it is a refusal.
    pub(crate) fn line(&self, line: &str) {
        const SAID: &[&str] = &["EACCES", "EPERM", "ermission denied", "Operation not permitted", "PermissionError"];
        if !SAID.iter().any(|s| line.contains(s)) {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(rules) = s.rules.clone() else { return };
        let home = s.home.clone();
        let mut found = Vec::new();
        for path in paths_in(line, home.as_deref()) {
            if let Some(kind) = judge(&rules, &path) {
                let target = shown(&path, home.as_deref());
                let key = match kind {
                    RefusedKind::Read => "filesystem\": {\"allowRead",
                    _ => "filesystem\": {\"allowWrite",
                };
                let allow = format!("\"sandbox\": {{\"{key}\": [{}]}}}}", serde_json::json!(target));
                add(&mut s.kept, kind, target, allow);
                found.push(kind);
            }
        }
        drop(s);
        for kind in found {
            self.count(kind);
        }
    }

    /// The proxy refused `name`.
    pub(crate) fn domain(&self, name: &str) {
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let allow = format!("\"sandbox\": {{\"network\": {{\"allowedDomains\": [{}]}}}}", serde_json::json!(name));
        add(&mut s.kept, RefusedKind::Domain, name.to_string(), allow);
        drop(s);
        self.count(RefusedKind::Domain);
    }
}

fn add(kept: &mut Vec<Refusal>, kind: RefusedKind, target: String, allow: String) {
    if let Some(r) = kept.iter_mut().find(|r| r.kind == kind && r.target == target) {
        r.count = r.count.saturating_add(1);
    } else if kept.len() < KEPT {
        kept.push(Refusal { kind, target, allow, count: 1 });
    }
}

/// Whether `rules` keep `path` from the server: unreadable (a hidden path no root names on
/// purpose), or readable but outside every writable folder. `None`: the sandbox allows it (the
/// error was the system's own). A root grants a path as `carve` does: unless a hidden path
/// lying strictly inside the root holds it.
fn judge(rules: &Rules, path: &Path) -> Option<RefusedKind> {
    let p = carve::real(path);
    let hidden: Vec<PathBuf> = rules.hidden.iter().map(|h| carve::real(h)).collect();
    let grants = |roots: &[PathBuf]| {
        roots.iter().any(|r| {
            let r = carve::real(r);
            p.starts_with(&r) && !hidden.iter().any(|h| h.starts_with(&r) && *h != r && p.starts_with(h))
        })
    };
    if !grants(&rules.read) && !grants(&rules.write) {
        return Some(RefusedKind::Read);
    }
    (!grants(&rules.write)).then_some(RefusedKind::Write)
}

/// Absolute paths (and `~/…`) a line names: runs of path characters starting with `/` or
/// `~/`, cut at quotes, spaces and the punctuation around them in messages.
fn paths_in(line: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for token in line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ',' | '(' | ')' | '[' | ']'))
    {
        let token = token.trim_end_matches([':', '.', ';']);
        let path = match (token.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ if token.starts_with('/') && token.len() > 1 => PathBuf::from(token),
            _ => continue,
        };
        if !out.contains(&path) && out.len() < 4 {
            out.push(path);
        }
    }
    out
}

/// A path as a person writes it in a config: under the home folder with `~`.
fn shown(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".into(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{Network, Rules};

    fn rules() -> Rules {
        Rules {
            read: vec!["/".into()],
            write: vec!["/w".into(), "/tmp".into()],
            hidden: vec!["/h/.ssh".into(), "/tmp/secret".into()],
            network: Network::Open,
            state_dir: None,
        }
    }

    #[test]
    fn a_permission_error_on_a_hidden_path_names_the_line_that_allows_it() {
        let r = Refusals::default();
        let metrics = crate::metrics::Metrics::new();
        r.count_in(&metrics, "s");
        r.set_rules(Some(rules()), Some(Path::new("/h")));
        r.line("Error: EACCES: permission denied, open '/h/.ssh/id_rsa'");
        r.line("PermissionError: [Errno 13] Permission denied: '/etc/out.txt'");
        r.line("EACCES: permission denied, open '/h/.ssh/id_rsa'");
        r.line("ENOENT: no such file, open '/h/.ssh/other'");
        r.line("EACCES: permission denied, open '/w/mine.txt'");
        r.line("EACCES: permission denied, open '/tmp/secret'");
        let got = r.list();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            (got[2].kind, got[2].target.as_str()),
            (RefusedKind::Read, "/tmp/secret"),
            "hidden inside a writable folder"
        );
        assert_eq!((got[0].kind, got[0].target.as_str(), got[0].count), (RefusedKind::Read, "~/.ssh/id_rsa", 2));
        assert_eq!(got[0].allow, r#""sandbox": {"filesystem": {"allowRead": ["~/.ssh/id_rsa"]}}"#);
        assert_eq!((got[1].kind, got[1].target.as_str()), (RefusedKind::Write, "/etc/out.txt"));
        assert_eq!(got[1].allow, r#""sandbox": {"filesystem": {"allowWrite": ["/etc/out.txt"]}}"#);
        // Each refusal counted, whatever is kept.
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_default();
        assert!(text.contains(r#"switchboard_sandbox_refusals_total{server="s",kind="read"} 3"#), "{text}");
        assert!(text.contains(r#"switchboard_sandbox_refusals_total{server="s",kind="write"} 1"#), "{text}");
    }

    #[test]
    fn without_a_sandbox_nothing_is_a_refusal_and_domains_are_told() {
        let r = Refusals::default();
        r.line("EACCES: permission denied, open '/h/.ssh/id_rsa'");
        assert!(r.list().is_empty());
        r.domain("evil.example");
        assert_eq!(r.list()[0].allow, r#""sandbox": {"network": {"allowedDomains": ["evil.example"]}}"#);
    }
}

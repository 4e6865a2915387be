//! The `sandbox` block: what a stdio server may read, write and reach, with VS Code's keys
//! where they exist.
//!
//! ```json
//! {"sandbox": {"filesystem": {"allowWrite": ["~/notes"], "denyRead": ["~/work/secrets"],
//!                             "allowRead": ["~/.kube"]},
//!              "network": false}}
//! ```
//!
//! The block may stand at the top of a file (for every server) and in a server's entry (for
//! it); `"sandbox": false` turns the sandbox off. Layers add up: lists are joined, `network`
//! and `false` of the nearer layer win. A project's file may narrow a sandbox (`denyRead`,
//! `network`), never widen it: its `sandbox: false`, `allowWrite` and `allowRead` are ignored
//! with a warning, so a repository cannot take a server out of the sandbox by shipping a file.

use serde::Serialize;
use serde_json::{Map, Value};

use super::values::{FieldError, as_strings, err, kind, take};
use super::{Scope, Severity};

/// A `sandbox` block as written (paths after `${VAR}` expansion, `~` and relative paths kept
/// for the start of the server, where the home folder and its `cwd` are known).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SandboxSpec {
    /// `"sandbox": false`: the server runs with the person's full rights (their explicit
    /// choice, shown in `list` and `get`).
    pub off: bool,
    /// Where it may write besides the defaults (`filesystem.allowWrite`).
    pub allow_write: Vec<String>,
    /// What it may read although a default or a `denyRead` hides it (`filesystem.allowRead`).
    pub allow_read: Vec<String>,
    /// What it may not read besides the default secrets (`filesystem.denyRead`).
    pub deny_read: Vec<String>,
    /// `network`, when said.
    pub network: Option<NetworkSpec>,
    /// `limits`: what the server's whole tree may take (they hold with the sandbox off too).
    pub limits: Limits,
}

/// Limits on a server's tree (`"limits": {"memoryMB": 512, "processes": 64, "openFiles": 1024}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Limits {
    /// The resident memory of all its processes together, in MiB (past it: ended).
    pub memory_mb: Option<u64>,
    /// How many processes its tree may have at once (past it: ended).
    pub processes: Option<u32>,
    /// Open files per process (`RLIMIT_NOFILE`: past it, opening fails with `EMFILE`).
    pub open_files: Option<u32>,
}

impl Limits {
    /// The tighter of two: a layer may lower a limit, not lift it.
    fn tighter(self, other: Limits) -> Limits {
        fn min<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        Limits {
            memory_mb: min(self.memory_mb, other.memory_mb),
            processes: min(self.processes, other.processes),
            open_files: min(self.open_files, other.open_files),
        }
    }
}

/// What a server may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NetworkSpec {
    /// Everything (`"network": true`; the default).
    Open,
    /// Nothing but its own loopback (`"network": false`).
    Off,
    /// Only these names, through switchboard's proxy (`"network": {"allowedDomains": [...]}`).
    Domains(Vec<String>),
}

impl SandboxSpec {
    /// `self` (for every server) with `nearer` (a server's own block) laid over it: lists
    /// joined, `network` of `nearer` when it says, and `nearer` decides whether it is on (a
    /// block of its own turns back on a sandbox that the outer layer turned off).
    pub fn layered(&self, nearer: &SandboxSpec) -> SandboxSpec {
        let join = |a: &[String], b: &[String]| a.iter().chain(b).cloned().collect::<Vec<_>>();
        SandboxSpec {
            off: nearer.off,
            allow_write: join(&self.allow_write, &nearer.allow_write),
            allow_read: join(&self.allow_read, &nearer.allow_read),
            deny_read: join(&self.deny_read, &nearer.deny_read),
            network: nearer.network.clone().or_else(|| self.network.clone()),
            limits: self.limits.tighter(nearer.limits),
        }
    }
}

/// A parsed block and the warnings about what a project's file may not set.
pub(super) struct Parsed {
    pub spec: SandboxSpec,
    pub ignored: Vec<(String, String)>,
}

/// Reads a `sandbox` value (`field`: where it stands, for messages) from a file of `scope`;
/// `x` expands `${VAR}` in a path.
pub(super) fn parse(
    field: &str,
    value: Value,
    scope: Scope,
    x: &dyn Fn(&str, &str) -> Result<String, FieldError>,
) -> Result<Parsed, FieldError> {
    let mut ignored = Vec::new();
    let widening = |what: &str| {
        (
            format!("{field}.{what}"),
            format!(
                "a project's file may narrow a server's sandbox, not widen it: `{what}` ignored (set it in your \
                 own file if you want it)"
            ),
        )
    };
    let obj: Map<String, Value> = match value {
        Value::Bool(true) => return Ok(Parsed { spec: SandboxSpec::default(), ignored }),
        Value::Bool(false) if scope == Scope::Project => {
            ignored.push((field.to_string(), widening("false").1.replace("`false`", "`sandbox: false`")));
            return Ok(Parsed { spec: SandboxSpec::default(), ignored });
        }
        Value::Bool(false) => return Ok(Parsed { spec: SandboxSpec { off: true, ..SandboxSpec::default() }, ignored }),
        Value::Object(m) => m,
        other => return err(field, format!("must be false or an object, found {}", kind(&other))),
    };
    let mut obj = obj;
    let mut spec = SandboxSpec::default();
    if let Some((f, fs)) = take(&mut obj, &["filesystem"])? {
        let f = format!("{field}.{f}");
        let Value::Object(mut fs) = fs else {
            return err(&f, format!("must be an object, found {}", kind(&fs)));
        };
        let mut list = |names: &[&str]| -> Result<Vec<String>, FieldError> {
            match take(&mut fs, names)? {
                Some((name, v)) => {
                    let name = format!("{f}.{name}");
                    as_strings(&name, v)?
                        .iter()
                        .enumerate()
                        .map(|(i, p)| {
                            let at = format!("{name}[{i}]");
                            let p = x(&at, p)?;
                            if p.trim().is_empty() {
                                return err(&at, "must not be empty");
                            }
                            Ok(p)
                        })
                        .collect()
                }
                None => Ok(Vec::new()),
            }
        };
        let allow_write = list(&["allowWrite", "allow_write"])?;
        let allow_read = list(&["allowRead", "allow_read"])?;
        spec.deny_read = list(&["denyRead", "deny_read"])?;
        if let Some(unknown) = fs.keys().next() {
            return err(&format!("{f}.{unknown}"), "unknown key: use allowWrite, allowRead or denyRead");
        }
        if scope == Scope::Project {
            for (name, set) in
                [("filesystem.allowWrite", !allow_write.is_empty()), ("filesystem.allowRead", !allow_read.is_empty())]
            {
                if set {
                    ignored.push(widening(name));
                }
            }
        } else {
            spec.allow_write = allow_write;
            spec.allow_read = allow_read;
        }
    }
    if let Some((f, net)) = take(&mut obj, &["network"])? {
        let f = format!("{field}.{f}");
        spec.network = Some(match net {
            Value::Bool(true) => NetworkSpec::Open,
            Value::Bool(false) => NetworkSpec::Off,
            Value::Object(mut m) => {
                let domains = match take(&mut m, &["allowedDomains", "allowed_domains"])? {
                    Some((name, v)) => as_strings(&format!("{f}.{name}"), v)?,
                    None => return err(&f, "needs `allowedDomains` (or write true or false)"),
                };
                if let Some(unknown) = m.keys().next() {
                    return err(&format!("{f}.{unknown}"), "unknown key: use allowedDomains");
                }
                for (i, d) in domains.iter().enumerate() {
                    if !valid_domain(d) {
                        return err(
                            &format!("{f}.allowedDomains[{i}]"),
                            format!(
                                "`{}` is not a domain name (write `example.com` or `*.example.com`)",
                                crate::text::excerpt(d, 60)
                            ),
                        );
                    }
                }
                NetworkSpec::Domains(domains.into_iter().map(|d| d.to_ascii_lowercase()).collect())
            }
            other => {
                return err(
                    &f,
                    format!("must be true, false or {{\"allowedDomains\": [...]}}, found {}", kind(&other)),
                );
            }
        });
    }
    if let Some((f, limits)) = take(&mut obj, &["limits"])? {
        spec.limits = parse_limits(&format!("{field}.{f}"), limits)?;
    }
    if let Some(unknown) = obj.keys().next() {
        return err(&format!("{field}.{unknown}"), "unknown key: use filesystem, network or limits");
    }
    Ok(Parsed { spec, ignored })
}

fn parse_limits(field: &str, value: Value) -> Result<Limits, FieldError> {
    let Value::Object(mut m) = value else {
        return err(field, format!("must be an object, found {}", kind(&value)));
    };
    let mut number = |names: &[&str], max: u64| -> Result<Option<u64>, FieldError> {
        match take(&mut m, names)? {
            Some((name, v)) => match v.as_u64() {
                Some(n) if n >= 1 && n <= max => Ok(Some(n)),
                _ => err(&format!("{field}.{name}"), format!("must be a whole number from 1 to {max}")),
            },
            None => Ok(None),
        }
    };
    let memory_mb = number(&["memoryMB", "memory_mb"], 1 << 30)?;
    let processes = number(&["processes"], 1 << 20)?.and_then(|n| u32::try_from(n).ok());
    let open_files = number(&["openFiles", "open_files"], 1 << 20)?.and_then(|n| u32::try_from(n).ok());
    if let Some(unknown) = m.keys().next() {
        return err(&format!("{field}.{unknown}"), "unknown key: use memoryMB, processes or openFiles");
    }
    Ok(Limits { memory_mb, processes, open_files })
}

/// A name `allowedDomains` takes: `example.com`, `*.example.com`, `localhost`, or an IP.
fn valid_domain(d: &str) -> bool {
    let name = d.strip_prefix("*.").unwrap_or(d);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Reports what a project's file may not set.
pub(super) fn report(ignored: Vec<(String, String)>, server: Option<&str>, ctx: &mut super::file::FileCtx<'_>) {
    for (field, message) in ignored {
        ctx.diag(Severity::Warning, server, Some(&field), message);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(v: Value, scope: Scope) -> Result<Parsed, FieldError> {
        parse("sandbox", v, scope, &|_, s| Ok(s.to_string()))
    }

    #[test]
    fn a_block_reads_vs_code_keys() {
        let p = read(
            json!({"filesystem": {"allowWrite": ["~/notes"], "denyRead": ["~/x"], "allowRead": ["~/.kube"]},
                   "network": {"allowedDomains": ["API.github.com", "*.npmjs.org"]}}),
            Scope::User,
        )
        .unwrap();
        assert_eq!(p.spec.allow_write, ["~/notes"]);
        assert_eq!(p.spec.deny_read, ["~/x"]);
        assert_eq!(p.spec.allow_read, ["~/.kube"]);
        assert_eq!(p.spec.network, Some(NetworkSpec::Domains(vec!["api.github.com".into(), "*.npmjs.org".into()])));
        assert!(p.ignored.is_empty());
    }

    #[test]
    fn a_project_file_narrows_but_does_not_widen() {
        let p = read(json!(false), Scope::Project).unwrap();
        assert!(!p.spec.off);
        assert_eq!(p.ignored.len(), 1);
        let p =
            read(json!({"filesystem": {"allowWrite": ["/"], "denyRead": ["~/x"]}, "network": false}), Scope::Project)
                .unwrap();
        assert!(p.spec.allow_write.is_empty());
        assert_eq!(p.spec.deny_read, ["~/x"]);
        assert_eq!(p.spec.network, Some(NetworkSpec::Off));
        assert_eq!(p.ignored[0].0, "sandbox.filesystem.allowWrite");
    }

    #[test]
    fn mistakes_name_the_field() {
        let e = read(json!({"filesystem": {"allowwrite": []}}), Scope::User).err().unwrap();
        assert_eq!(e.0.as_deref(), Some("sandbox.filesystem.allowwrite"));
        let e = read(json!({"network": {"allowedDomains": ["https://x.com"]}}), Scope::User).err().unwrap();
        assert_eq!(e.0.as_deref(), Some("sandbox.network.allowedDomains[0]"));
        let e = read(json!("off"), Scope::User).err().unwrap();
        assert!(e.1.contains("must be false or an object"), "{e:?}");
    }

    #[test]
    fn limits_are_read_and_a_layer_only_lowers_them() {
        let p = read(json!({"limits": {"memoryMB": 512, "processes": 64, "openFiles": 256}}), Scope::Project).unwrap();
        assert_eq!(p.spec.limits, Limits { memory_mb: Some(512), processes: Some(64), open_files: Some(256) });
        let e = read(json!({"limits": {"memoryMB": 0}}), Scope::User).err().unwrap();
        assert_eq!(e.0.as_deref(), Some("sandbox.limits.memoryMB"));
        let e = read(json!({"limits": {"cpu": 1}}), Scope::User).err().unwrap();
        assert_eq!(e.0.as_deref(), Some("sandbox.limits.cpu"));
        let all = SandboxSpec { limits: Limits { memory_mb: Some(256), ..Limits::default() }, ..Default::default() };
        let own = SandboxSpec {
            limits: Limits { memory_mb: Some(1024), processes: Some(8), open_files: None },
            ..Default::default()
        };
        assert_eq!(all.layered(&own).limits, Limits { memory_mb: Some(256), processes: Some(8), open_files: None });
    }

    #[test]
    fn layers_join_lists_and_the_nearer_decides() {
        let all = SandboxSpec { deny_read: vec!["a".into()], network: Some(NetworkSpec::Off), ..Default::default() };
        let own = SandboxSpec { deny_read: vec!["b".into()], ..Default::default() };
        let l = all.layered(&own);
        assert_eq!(l.deny_read, ["a", "b"]);
        assert_eq!(l.network, Some(NetworkSpec::Off));
        let off = SandboxSpec { off: true, ..Default::default() };
        assert!(!off.layered(&SandboxSpec::default()).off, "a block of its own turns it back on");
        assert!(all.layered(&off).off);
    }
}

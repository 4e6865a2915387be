//! The sandbox of stdio servers: what a server may read, write and reach, decided in the host
//! and enforced by the kernel on the server before it execs (on by default).
//!
//! - **Files** (Landlock, unprivileged, inherited by every descendant): read everywhere but
//!   the person's secrets ([`DEFAULT_SECRETS`], switchboard's data folder and its config,
//!   `denyRead`); write only the server's `cwd`, the workspace, temporary folders, the caches
//!   that `npx`, `uvx`, `pip` and `npm` need, a state folder of its own and `allowWrite`.
//!   Landlock only allows (rules grant whole subtrees), so "everything but `~/.ssh`" is built
//!   by [`carve`]: the ancestors of a hidden path are granted entry by entry, never as a
//!   whole. What that costs: such an ancestor (`/`, `/home`, `~`) cannot be listed, and an
//!   entry made in it after the server started is out of reach.
//! - **Network** `false`: a network namespace of its own (with a user namespace, so no
//!   privilege is needed), where only its own loopback exists: no TCP, UDP or raw socket
//!   reaches anything outside, the host's loopback included.
//! - Signals and abstract Unix sockets are scoped (Landlock ABI 6): the server cannot signal
//!   or connect to what is outside its sandbox; nor can it `ptrace` it (any ABI).
//!
//! A kernel that cannot enforce what is asked stops the server with
//! [`crate::status::FailureKind::SandboxUnavailable`], saying why and how to opt out: never a
//! silent run without it.

mod carve;
#[cfg(target_os = "linux")]
pub(crate) mod confine;
#[cfg(target_os = "linux")]
pub(crate) mod landlock;
pub mod proxy;
mod refusals;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use carve::carve;
pub use refusals::{Refusal, Refusals, RefusedKind};

use crate::config::{NetworkSpec, SandboxSpec};

/// Files under the home folder that hold secrets: never readable (nor writable) by a
/// sandboxed server unless `allowRead` names them.
pub const DEFAULT_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".password-store",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".config/op",
    ".local/share/keyrings",
    // Browser profiles (cookies, saved passwords).
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    // Other agents' credentials and MCP configs (which hold servers' env secrets).
    ".claude.json",
    ".claude/.credentials.json",
    ".codex",
    ".cursor/mcp.json",
    ".config/Code/User/mcp.json",
    ".local/share/opencode/auth.json",
    // Shell histories: tokens typed on command lines.
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
];

/// Folders under the home folder that package runners write (`npx`, `uvx`, `pip`, `npm`,
/// `pnpm`, `yarn`, `bun`).
pub const DEFAULT_CACHES: &[&str] =
    &[".npm", ".cache", ".local/share/uv", ".local/share/pnpm", ".yarn", ".bun/install/cache"];

/// Folders every sandboxed server may write (and the devices it may open for writing).
const SYSTEM_WRITABLE: &[&str] = &[
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Where a server runs, for resolving its sandbox's paths.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The person's home folder (`HOME`), if known.
    pub home: Option<&'a Path>,
    /// The server's working directory.
    pub cwd: &'a Path,
    /// The workspace (project root).
    pub workspace: &'a Path,
    /// switchboard's data folder (tokens, trust records): hidden.
    pub data_dir: Option<&'a Path>,
    /// switchboard's user config file: hidden (its `env` values may be secrets).
    pub config_file: Option<&'a Path>,
    /// `TMPDIR` of the server, if set.
    pub tmpdir: Option<&'a Path>,
}

impl<'a> Place<'a> {
    /// Where `server` runs in `cwd`, for a host whose environment is `env` (`HOME`, `TMPDIR`)
    /// and whose files are `data_dir` and `config_file`.
    pub fn new(
        server: &'a str,
        cwd: &'a Path,
        workspace: &'a Path,
        env: &'a std::collections::HashMap<String, String>,
        data_dir: Option<&'a Path>,
        config_file: Option<&'a Path>,
    ) -> Place<'a> {
        let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(Path::new);
        Place { server, home: var("HOME"), cwd, workspace, data_dir, config_file, tmpdir: var("TMPDIR") }
    }
}

/// A server's effective rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Rules {
    /// Readable (and executable) subtrees, less what `hidden` holds inside them.
    pub read: Vec<PathBuf>,
    /// Writable (and readable) subtrees, less what `hidden` holds inside them.
    pub write: Vec<PathBuf>,
    /// Neither readable nor writable (unless a root of `read` or `write` lies inside).
    pub hidden: Vec<PathBuf>,
    /// What it may reach.
    pub network: Network,
    /// Its own state folder (writable; `SWITCHBOARD_STATE_DIR` in its environment).
    pub state_dir: Option<PathBuf>,
}

/// What a sandboxed server may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "domains")]
#[non_exhaustive]
pub enum Network {
    /// Everything.
    Open,
    /// Only its own loopback.
    Off,
    /// These names only, through switchboard's proxy.
    Domains(Vec<String>),
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Network::Open => f.write_str("open"),
            Network::Off => f.write_str("off (its own loopback only)"),
            Network::Domains(d) => write!(f, "only {} (through switchboard's proxy)", d.join(", ")),
        }
    }
}

/// Why a sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel lacks what the rules need.
    #[error("{what} is not available on this kernel ({why})")]
    Unavailable {
        /// What was needed.
        what: &'static str,
        /// What the kernel said.
        why: String,
    },
    /// Building the rules failed.
    #[error("could not build the sandbox's rules: {0}")]
    Rules(String),
}

/// `path` as written in a `sandbox` block, resolved: `~` from the home folder, relative paths
/// from the server's `cwd`, `.` and `..` taken out.
pub fn resolve(path: &str, place: &Place<'_>) -> PathBuf {
    let raw = match (path.strip_prefix('~'), place.home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(rest.trim_start_matches('/')),
        _ => place.cwd.join(path),
    };
    normalize(&raw)
}

/// Takes `.` and `..` out of an absolute path without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The effective rules of a server with `spec` (the default when `None`) running at `place`;
/// `None` when its sandbox is off.
pub fn rules(spec: Option<&SandboxSpec>, place: &Place<'_>) -> Option<Rules> {
    let default = SandboxSpec::default();
    let spec = spec.unwrap_or(&default);
    if spec.off {
        return None;
    }
    let in_home = |rel: &&str| place.home.map(|h| h.join(rel));
    // The person's own first (shown first), then the defaults.
    let mut hidden: Vec<PathBuf> = spec.deny_read.iter().map(|p| resolve(p, place)).collect();
    hidden.extend(DEFAULT_SECRETS.iter().filter_map(in_home));
    hidden.extend(place.data_dir.map(Path::to_path_buf));
    hidden.extend(place.config_file.map(Path::to_path_buf));

    let mut read = vec![PathBuf::from("/")];
    read.extend(spec.allow_read.iter().map(|p| resolve(p, place)));

    let state_dir = place.data_dir.map(|d| d.join("sandbox").join(place.server));
    // The server's folders, unless one is `/` or the home folder (or above it): a host started
    // there (a desktop app's `/`) must not hand out the whole disk; `allowWrite` can.
    let too_wide = |p: &Path| p == Path::new("/") || place.home.is_some_and(|h| h.starts_with(p));
    let mut write: Vec<PathBuf> =
        [place.cwd, place.workspace].into_iter().filter(|p| !too_wide(p)).map(Path::to_path_buf).collect();
    write.extend(SYSTEM_WRITABLE.iter().map(PathBuf::from));
    write.extend(place.tmpdir.map(Path::to_path_buf));
    write.extend(DEFAULT_CACHES.iter().filter_map(in_home));
    write.extend(state_dir.clone());
    write.extend(spec.allow_write.iter().map(|p| resolve(p, place)));
    for list in [&mut hidden, &mut read, &mut write] {
        let mut seen = std::collections::HashSet::new();
        list.retain(|p| seen.insert(p.clone()));
    }
    let network = match &spec.network {
        None | Some(NetworkSpec::Open) => Network::Open,
        Some(NetworkSpec::Off) => Network::Off,
        Some(NetworkSpec::Domains(d)) => Network::Domains(d.clone()),
    };
    Some(Rules { read, write, hidden, network, state_dir })
}

/// A server's sandbox as `list`, `get` and the API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SandboxInfo {
    /// Whether it runs in one (`false`: the person's `"sandbox": false`).
    pub on: bool,
    /// What it may reach, when on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// What it was refused, each with the config line that allows it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refusal>,
    /// Its limits, when it has any (`memory_mb`, `processes`, `open_files`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::config::Limits>,
}

impl SandboxInfo {
    /// The sandbox of a server with `spec`, and what it refused.
    pub fn of(spec: Option<&SandboxSpec>, refusals: &Refusals) -> SandboxInfo {
        let off = spec.is_some_and(|s| s.off);
        let network = (!off).then(|| match spec.and_then(|s| s.network.as_ref()) {
            None | Some(NetworkSpec::Open) => Network::Open,
            Some(NetworkSpec::Off) => Network::Off,
            Some(NetworkSpec::Domains(d)) => Network::Domains(d.clone()),
        });
        let limits = spec.map(|s| s.limits).filter(|l| *l != crate::config::Limits::default());
        SandboxInfo { on: !off, network, refused: refusals.list(), limits }
    }
}

/// What this kernel can enforce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Kernel {
    /// The Landlock ABI version (0: none; 1 is enough for the file system rules, 6 scopes
    /// signals and abstract Unix sockets).
    pub landlock_abi: i32,
    /// Whether a user and network namespace can be made without privilege (`network: false`).
    pub network_namespace: Result<(), String>,
    /// Whether this process's cgroup v2 has the `memory` and `pids` controllers and may be
    /// written (its folder), or why not. Limits are kept by the supervisor's watch of the tree
    /// either way (see ARCHITECTURE, "Limits"); this says what a cgroup could add here.
    pub cgroup: Result<PathBuf, String>,
}

impl Kernel {
    /// Asks this kernel (on Linux: a Landlock version query, and a throwaway process that
    /// makes a user and network namespace).
    pub fn probe() -> Kernel {
        #[cfg(target_os = "linux")]
        {
            Kernel {
                landlock_abi: landlock::abi(),
                network_namespace: landlock::probe_namespaces(),
                cgroup: own_cgroup(
                    &std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
                    &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
                    |dir| std::fs::read_to_string(dir.join("cgroup.controllers")).ok(),
                    |dir| nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok(),
                ),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Kernel { landlock_abi: 0, network_namespace: Err("not Linux".into()), cgroup: Err("not Linux".into()) }
        }
    }
}

/// This process's cgroup v2 folder if it offers `memory` and `pids` and may be written, from
/// `/proc/self/cgroup` and `/proc/self/mountinfo` (`controllers` reads a folder's
/// `cgroup.controllers`, `writable` asks for write access).
fn own_cgroup(
    cgroup: &str,
    mountinfo: &str,
    controllers: impl Fn(&Path) -> Option<String>,
    writable: impl Fn(&Path) -> bool,
) -> Result<PathBuf, String> {
    let Some(path) = cgroup.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("no cgroup v2 hierarchy for this process (cgroup v1 only)".into());
    };
    // mountinfo: "id parent major:minor root mountpoint options ... - fstype source superoptions".
    let Some(mount) = mountinfo.lines().find_map(|l| {
        let (fields, rest) = l.split_once(" - ")?;
        (rest.split(' ').next() == Some("cgroup2")).then(|| fields.split(' ').nth(4).map(PathBuf::from)).flatten()
    }) else {
        return Err("cgroup v2 is not mounted".into());
    };
    let below = path.trim().trim_start_matches('/');
    let dir = if below.is_empty() { mount } else { mount.join(below) };
    let offered = controllers(&dir).unwrap_or_default();
    let offered: Vec<&str> = offered.split_whitespace().collect();
    let missing: Vec<&str> = ["memory", "pids"].into_iter().filter(|c| !offered.contains(c)).collect();
    if !missing.is_empty() {
        let has = if offered.is_empty() { "none".to_string() } else { offered.join(", ") };
        return Err(format!(
            "cgroup v2 at {} offers {has}: no {} controller here",
            dir.display(),
            missing.join(" or ")
        ));
    }
    if !writable(&dir) {
        return Err(format!("cgroup v2 at {} is not delegated to this user", dir.display()));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_is_usable_only_with_memory_and_pids_delegated() {
        let mountinfo = "35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n\
                         36 25 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory";
        let hybrid = own_cgroup("4:memory:/x\n0::/\n", mountinfo, |_| Some("hugetlb\n".into()), |_| true);
        assert_eq!(
            hybrid.unwrap_err(),
            "cgroup v2 at /sys/fs/cgroup/unified offers hugetlb: no memory or pids controller here"
        );
        let user = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/sb.scope\n";
        let mounted = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate";
        let controllers = |_: &Path| Some("cpu memory pids".to_string());
        let dir = own_cgroup(user, mounted, controllers, |_| true).unwrap();
        assert_eq!(dir, Path::new("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/sb.scope"));
        let denied = own_cgroup(user, mounted, controllers, |_| false).unwrap_err();
        assert!(denied.ends_with("is not delegated to this user"), "{denied}");
        assert!(own_cgroup("1:name=systemd:/\n", mounted, controllers, |_| true).is_err());
        assert_eq!(own_cgroup(user, "", controllers, |_| true).unwrap_err(), "cgroup v2 is not mounted");
    }

    fn place<'a>(home: &'a Path, cwd: &'a Path) -> Place<'a> {
        Place {
            server: "s",
            home: Some(home),
            cwd,
            workspace: cwd,
            data_dir: Some(Path::new("/data/sb")),
            config_file: Some(Path::new("/conf/sb/config.json")),
            tmpdir: None,
        }
    }

    #[test]
    fn paths_resolve_from_home_and_cwd() {
        let p = place(Path::new("/home/a"), Path::new("/w/p"));
        assert_eq!(resolve("~", &p), PathBuf::from("/home/a"));
        assert_eq!(resolve("~/x/../y", &p), PathBuf::from("/home/a/y"));
        assert_eq!(resolve("out", &p), PathBuf::from("/w/p/out"));
        assert_eq!(resolve("/abs", &p), PathBuf::from("/abs"));
        assert_eq!(resolve("~other", &p), PathBuf::from("/w/p/~other"));
    }

    #[test]
    fn the_default_hides_secrets_and_writes_only_where_servers_work() {
        let p = place(Path::new("/home/a"), Path::new("/w/p"));
        let r = rules(None, &p).unwrap();
        for secret in ["/home/a/.ssh", "/home/a/.aws", "/data/sb", "/conf/sb/config.json"] {
            assert!(r.hidden.contains(&PathBuf::from(secret)), "{secret}");
        }
        assert_eq!(r.read, [PathBuf::from("/")]);
        for w in ["/w/p", "/tmp", "/home/a/.npm", "/home/a/.cache", "/data/sb/sandbox/s"] {
            assert!(r.write.contains(&PathBuf::from(w)), "{w}");
        }
        assert!(!r.write.iter().any(|w| w == Path::new("/home/a")));
        assert_eq!(r.network, Network::Open);
        // A host started in `/` or in the home folder does not hand either out.
        for wide in ["/", "/home/a", "/home"] {
            let r = rules(None, &place(Path::new("/home/a"), Path::new(wide))).unwrap();
            assert!(!r.write.contains(&PathBuf::from(wide)), "{wide}");
            assert!(r.write.contains(&PathBuf::from("/tmp")));
        }
    }

    #[test]
    fn a_spec_adds_and_can_turn_it_off() {
        let p = place(Path::new("/home/a"), Path::new("/w/p"));
        let spec = SandboxSpec {
            allow_write: vec!["~/notes".into()],
            allow_read: vec!["~/.kube".into()],
            deny_read: vec!["secret".into()],
            network: Some(NetworkSpec::Off),
            ..SandboxSpec::default()
        };
        let r = rules(Some(&spec), &p).unwrap();
        assert!(r.write.contains(&PathBuf::from("/home/a/notes")));
        assert!(r.read.contains(&PathBuf::from("/home/a/.kube")));
        assert!(r.hidden.contains(&PathBuf::from("/w/p/secret")));
        assert_eq!(r.network, Network::Off);
        let off = SandboxSpec { off: true, ..SandboxSpec::default() };
        assert!(rules(Some(&off), &p).is_none());
    }
}

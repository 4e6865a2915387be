//! Which files are read, in which order, and how they merge.
//!
//! Lowest to highest precedence: project files (farther folders first; within a folder
//! `.mcp.json`, then `.switchboard/config.json`, then `switchboard.json`), then the user file,
//! then `--config` files in the order given. A later file replaces a whole entry of the same
//! name; fields are never merged.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{FileCtx, Parsed, parse_file};
use super::jsonc;
use super::{Diagnostic, LoadedConfig, Scope, Severity};

/// File names looked for in each project folder, highest precedence first.
pub const PROJECT_FILES: [&str; 3] = ["switchboard.json", ".switchboard/config.json", ".mcp.json"];

/// What [`load`] needs to know; nothing is read from the process implicitly.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Where to start looking for project files.
    pub cwd: PathBuf,
    /// The user file; `None` means no user file.
    pub user_file: Option<PathBuf>,
    /// Files given with `--config`.
    pub extra_files: Vec<PathBuf>,
    /// Variables for `${VAR}` expansion.
    pub env: HashMap<String, String>,
    /// The managed file (its policy cannot be loosened; it says which servers may start);
    /// `None`: none.
    pub managed_file: Option<PathBuf>,
}

impl LoadOptions {
    /// Options for `cwd` with the user file from `paths` and the host environment.
    pub fn from_env(cwd: PathBuf, paths: &crate::Paths) -> Self {
        let env = super::host_env();
        let managed_file = Some(managed_file(&env));
        LoadOptions { cwd, user_file: Some(paths.config_file.clone()), extra_files: Vec::new(), env, managed_file }
    }
}

/// Where the managed file is: `SWITCHBOARD_MANAGED_CONFIG`, else `/etc/switchboard/managed.json`.
pub fn managed_file(env: &HashMap<String, String>) -> PathBuf {
    match env.get("SWITCHBOARD_MANAGED_CONFIG").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from("/etc/switchboard/managed.json"),
    }
}

/// One file looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FileLook {
    /// The path.
    pub path: PathBuf,
    /// Its scope.
    pub scope: Scope,
    /// Whether it exists.
    pub found: bool,
}

/// Walks up from `cwd` to the folder holding `.git`; without one, `cwd` is the root.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map_or_else(|| cwd.to_path_buf(), Path::to_path_buf)
}

/// Loads and merges every config file. Never fails: problems become diagnostics.
pub fn load(options: &LoadOptions) -> LoadedConfig {
    let root = project_root(&options.cwd);
    let mut looks = Vec::new();
    // Folders from the root down to cwd (farther first, so nearer files win).
    let mut dirs: Vec<&Path> = options.cwd.ancestors().take_while(|d| d.starts_with(&root)).collect();
    dirs.reverse();
    for dir in dirs {
        for name in PROJECT_FILES.iter().rev() {
            looks.push((dir.join(name), Scope::Project));
        }
    }
    if let Some(user) = &options.user_file {
        looks.push((user.clone(), Scope::User));
    }
    for extra in &options.extra_files {
        looks.push((extra.clone(), Scope::Cli));
    }

    let mut loaded = LoadedConfig {
        project_root: root,
        user_file: options.user_file.clone().unwrap_or_default(),
        ..LoadedConfig::default()
    };
    let managed = options.managed_file.as_deref().and_then(|p| super::policy::read_managed(p, &mut loaded.diagnostics));
    let mut managed_audit = None;
    if let Some(m) = managed {
        if let Some(rules) = m.policy {
            loaded.policy.push(super::PolicyLayer::new(super::RuleSource::Managed, m.managed.file.clone(), rules));
        }
        managed_audit = m.audit.map(|a| (m.managed.file.clone(), a));
        loaded.managed = Some(m.managed);
    }
    for (path, scope) in looks {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                loaded.diagnostics.push(file_error(&path, None, format!("cannot read: {e}")));
                None
            }
        };
        // A `--config` file that is missing is an error: the person asked for it.
        if text.is_none() && scope == Scope::Cli && !path.exists() {
            loaded.diagnostics.push(file_error(&path, None, "file not found".into()));
        }
        loaded.files.push(FileLook { path: path.clone(), scope, found: text.is_some() });
        let Some(text) = text else { continue };
        let value: serde_json::Value = match serde_json::from_str(&jsonc::strip(&text)) {
            Ok(v) => v,
            Err(e) => {
                loaded.diagnostics.push(file_error(
                    &path,
                    Some((e.line(), e.column())),
                    format!("not valid JSON: {e}"),
                ));
                continue;
            }
        };
        let mut ctx =
            FileCtx { path: &path, text: &text, scope, env: &options.env, diagnostics: &mut loaded.diagnostics };
        for parsed in parse_file(&value, &mut ctx) {
            match parsed {
                Parsed::Server(entry) => {
                    loaded.servers.insert(entry.name().to_string(), *entry);
                }
                Parsed::Toggle { name, enabled } => match loaded.servers.get_mut(&name) {
                    Some(super::ServerEntry::Valid(c)) => c.enabled = enabled,
                    Some(super::ServerEntry::Invalid(_)) => {}
                    None => ctx.lone_toggle(&name),
                },
                // A profile of a file of higher precedence replaces the whole profile.
                Parsed::Profile { name, profile } => {
                    loaded.profiles.insert(name, profile);
                }
                Parsed::Policy(rules) => loaded.policy.push(super::PolicyLayer::new(scope.into(), path.clone(), rules)),
                Parsed::Audit(value) if scope != Scope::Project => {
                    super::policy::parse_audit(&value, &mut loaded.audit, &mut ctx)
                }
                // The file of highest precedence that says decides.
                Parsed::McpSwitch(on) => loaded.mcp_off = (!on).then(|| path.clone()),
                Parsed::Audit(_) => ctx.diag(
                    Severity::Warning,
                    None,
                    Some("audit"),
                    "a project file cannot change the audit log: `audit` ignored (set it in your user file)".into(),
                ),
            }
        }
    }
    if let Some((file, value)) = managed_audit {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut ctx = FileCtx {
            path: &file,
            text: &text,
            scope: Scope::User,
            env: &options.env,
            diagnostics: &mut loaded.diagnostics,
        };
        super::policy::parse_audit(&value, &mut loaded.audit, &mut ctx);
    }
    refuse_managed(&mut loaded);
    // MCP turned off as a whole: every server is listed, none starts.
    if loaded.mcp_off.is_some() {
        for entry in loaded.servers.values_mut() {
            if let super::ServerEntry::Valid(c) = entry {
                c.enabled = false;
            }
        }
    }
    loaded.secrets = secret_values(&loaded, &options.env);
    loaded
}

/// Servers the managed file does not let start become invalid entries that say why.
fn refuse_managed(loaded: &mut LoadedConfig) {
    let Some(managed) = &loaded.managed else { return };
    for entry in loaded.servers.values_mut() {
        let super::ServerEntry::Valid(c) = entry else { continue };
        let why = match &managed.error {
            Some(e) => Some(format!("the managed file could not be used ({e}); no server starts until it is fixed")),
            None => managed.servers.refuses(c),
        };
        if let Some(why) = why {
            *entry = super::ServerEntry::Invalid(super::InvalidServer {
                name: c.name.clone(),
                scope: c.scope,
                source: c.source.clone(),
                message: format!("denied by the managed file {}: {why}", managed.file.display()),
                denied: true,
            });
        }
    }
}

/// What must never be shown of the servers: the values of their `env` and `headers`, and what
/// variables put into their command, arguments, folder and URL (at least 4 characters: shorter
/// ones would hide every such string in a log).
fn secret_values(loaded: &LoadedConfig, env: &std::collections::HashMap<String, String>) -> Vec<String> {
    let mut found = std::collections::BTreeSet::new();
    for entry in loaded.servers.values() {
        let super::ServerEntry::Valid(c) = entry else { continue };
        let written: Vec<&str> = match &c.transport {
            super::TransportConfig::Stdio(s) => {
                found.extend(s.env.values().cloned());
                let mut w = vec![s.command_as_written.as_str()];
                w.extend(s.args_as_written.iter().map(String::as_str));
                w.extend(s.cwd_as_written.as_deref());
                w
            }
            super::TransportConfig::Http(h) => {
                found.extend(h.headers.values().cloned());
                if let Some(var) = &h.bearer_token_env_var {
                    found.extend(env.get(var).cloned());
                }
                vec![h.url_as_written.as_str()]
            }
        };
        for w in written {
            found.extend(super::expand::substitutions(w, env));
        }
    }
    found.into_iter().filter(|s| s.chars().count() >= 4).collect()
}

fn file_error(path: &Path, at: Option<(usize, usize)>, message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        file: path.to_path_buf(),
        line: at.map(|a| a.0),
        column: at.map(|a| a.1),
        server: None,
        field: None,
        message,
    }
}

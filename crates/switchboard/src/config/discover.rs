//! Which files are read, in which order, and how they merge.
//!
//! Lowest to highest precedence: project files (farther folders first; within a folder
//! `.mcp.json`, then `.switchboard/config.json`, then `switchboard.json`), then the user file,
//! then `--config` files in the order given. A later file replaces a whole entry of the same
//! name; fields are never merged.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{Parsed, parse_file};
use super::file::FileCtx;
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
    /// Where the values given for `${input:ID}` are kept ([`super::InputStore`]); `None`:
    /// nowhere (every input is missing).
    pub inputs_file: Option<PathBuf>,
    /// The values given for `${input:ID}`, already read (config file → id → value): a
    /// person's, from a team's store. Used instead of `inputs_file` when set.
    pub input_values: Option<std::sync::Arc<crate::store::db::InputValues>>,
}

impl LoadOptions {
    /// Options for `cwd` with the user file from `paths` and the host environment.
    pub fn from_env(cwd: PathBuf, paths: &crate::Paths) -> Self {
        let env = super::host_env();
        let managed_file = Some(managed_file(&env));
        LoadOptions {
            cwd,
            user_file: Some(paths.config_file.clone()),
            extra_files: Vec::new(),
            env,
            managed_file,
            inputs_file: Some(super::InputStore::new(&paths.data_dir).path().to_path_buf()),
            input_values: None,
        }
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
    /// The tool whose file it is (read as that tool writes it), if not switchboard's own.
    pub tool: Option<super::Tool>,
    /// The file whose `include` names it, if it was included.
    pub included_by: Option<PathBuf>,
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
        if let Some(config) = m.identity {
            loaded.identity = Some(config);
            loaded.identity_source = Some(super::IdentitySource { file: m.managed.file.clone(), is_managed: true });
        }
        if let Some(config) = m.store {
            loaded.store = Some(config);
            loaded.store_source = Some(super::IdentitySource { file: m.managed.file.clone(), is_managed: true });
        }
        loaded.managed = Some(m.managed);
    }
    let base = base_vars(options, &loaded.project_root);
    let mut loader = Loader { options, loaded, base, vars: HashMap::new(), seen: Vec::new() };
    for (path, scope) in looks {
        loader.file(&path, scope, None, 0);
    }
    let Loader { mut loaded, vars, .. } = loader;
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
    persons_own_inputs(&mut loaded);
    // `Some(0)`: no `idle_shutdown_ms` of its own; the files' (or the default) applies.
    let idle = loaded.idle_shutdown.unwrap_or(super::DEFAULT_IDLE_SHUTDOWN);
    for entry in loaded.servers.values_mut() {
        if let super::ServerEntry::Valid(c) = entry
            && c.idle_shutdown == Some(std::time::Duration::ZERO)
        {
            c.idle_shutdown = Some(idle);
        }
    }
    // The files' sandbox under each stdio server's own.
    for entry in loaded.servers.values_mut() {
        if let super::ServerEntry::Valid(c) = entry
            && let super::TransportConfig::Stdio(s) = &mut c.transport
        {
            s.sandbox = Some(match &s.sandbox {
                Some(own) => loaded.sandbox.layered(own),
                None => loaded.sandbox.clone(),
            });
        }
    }
    // MCP turned off as a whole: every server is listed, none starts.
    if loaded.mcp_off.is_some() {
        for entry in loaded.servers.values_mut() {
            if let super::ServerEntry::Valid(c) = entry {
                c.enabled = false;
            }
        }
    }
    loaded.secrets = secret_values(&loaded, &vars, &options.env);
    loaded
}

/// How deep `include` may nest.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The variables every file sees: the environment and the [`super::expand::BUILTINS`].
fn base_vars(options: &LoadOptions, root: &Path) -> HashMap<String, String> {
    let mut vars = options.env.clone();
    if let Some(home) = options.env.get("HOME") {
        vars.insert("userHome".into(), home.clone());
    }
    let root_s = root.display().to_string();
    vars.insert("workspaceFolder".into(), root_s.clone());
    vars.insert("workspaceRoot".into(), root_s);
    let base = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    vars.insert("workspaceFolderBasename".into(), base);
    vars.insert("pathSeparator".into(), "/".into());
    vars
}

/// One load in progress.
struct Loader<'a> {
    options: &'a LoadOptions,
    loaded: LoadedConfig,
    /// The variables every file sees.
    base: HashMap<String, String>,
    /// The variables each file was read with (its inputs added), for the secrets.
    vars: HashMap<PathBuf, HashMap<String, String>>,
    /// Files read so far (an include of one of them again is skipped).
    seen: Vec<PathBuf>,
}

impl Loader<'_> {
    /// Reads one file (first the files it includes) into the config.
    fn file(&mut self, path: &Path, scope: Scope, included_by: Option<&Path>, depth: usize) {
        let loaded = &mut self.loaded;
        let text = match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                loaded.diagnostics.push(file_error(path, None, format!("cannot read: {e}")));
                None
            }
        };
        // A `--config` file that is missing is an error: the person asked for it. An included
        // one is followed: its servers appear when it does.
        if text.is_none() && !path.exists() {
            if scope == Scope::Cli && included_by.is_none() {
                loaded.diagnostics.push(file_error(path, None, "file not found".into()));
            } else if let Some(by) = included_by {
                let mut d = file_error(by, None, format!("included file {} not found (yet)", path.display()));
                d.severity = Severity::Warning;
                d.field = Some("include".into());
                loaded.diagnostics.push(d);
            }
        }
        let dialect = super::foreign::detect(path);
        loaded.files.push(FileLook {
            path: path.to_path_buf(),
            scope,
            found: text.is_some(),
            tool: dialect.tool(),
            included_by: included_by.map(Path::to_path_buf),
        });
        let Some(text) = text else { return };
        self.seen.push(path.to_path_buf());
        let value = match super::foreign::parse_text(dialect, &text) {
            Ok(v) => v,
            Err((at, message)) => {
                loaded.diagnostics.push(file_error(path, at, message));
                return;
            }
        };
        if dialect == super::foreign::Dialect::Own {
            self.includes(path, &text, &value, scope, depth);
        }
        let loaded = &mut self.loaded;
        let canonical = super::foreign::canonical(dialect, &value, &loaded.project_root);
        for note in canonical.notes {
            let mut ctx = FileCtx { path, text: &text, scope, env: &self.base, diagnostics: &mut loaded.diagnostics };
            ctx.diag(Severity::Warning, note.server.as_deref(), note.field.as_deref(), note.message);
        }
        let root = canonical.root;
        // The inputs this file's servers use, with the values given so far.
        let mut vars = self.base.clone();
        let given = match self.options.inputs_file.as_ref().map(|p| super::InputStore::at(p.clone())) {
            _ if self.options.input_values.is_some() => {
                self.options.input_values.as_ref().and_then(|v| v.get(path).cloned()).unwrap_or_default()
            }
            Some(store) => store.values_for(path).unwrap_or_else(|e| {
                loaded.diagnostics.push(file_error(path, None, format!("the values of its inputs: {e}")));
                Default::default()
            }),
            None => Default::default(),
        };
        let declared = super::inputs::declared(&root);
        let users = super::inputs::users(&root);
        for id in super::inputs::referenced(&root) {
            match given.get(&id) {
                Some(v) => {
                    vars.insert(super::expand::input_key(&id), v.clone());
                }
                None => {
                    let input = declared.iter().find(|d| d.id == id).cloned().unwrap_or(super::InputDecl {
                        id: id.clone(),
                        description: None,
                        password: true,
                        default: None,
                        options: Vec::new(),
                    });
                    let servers = users.get(&id).cloned().unwrap_or_default();
                    loaded.inputs_missing.push(super::MissingInput {
                        file: path.to_path_buf(),
                        input,
                        servers,
                        each_persons: false,
                    });
                }
            }
        }
        let mut ctx = FileCtx { path, text: &text, scope, env: &vars, diagnostics: &mut loaded.diagnostics };
        let parsed = parse_file(&root, &mut ctx);
        merge(loaded, parsed, FileCtx { path, text: &text, scope, env: &vars, diagnostics: &mut Vec::new() });
        self.vars.insert(path.to_path_buf(), vars);
    }

    /// Reads the files `value`'s `include` names (before the file itself, so its own entries
    /// win over theirs).
    fn includes(&mut self, path: &Path, text: &str, value: &serde_json::Value, scope: Scope, depth: usize) {
        let Some(include) = value.get("include") else { return };
        let diag = |this: &mut Self, severity, message: String| {
            let mut ctx = FileCtx { path, text, scope, env: &this.base, diagnostics: &mut this.loaded.diagnostics };
            ctx.diag(severity, None, Some("include"), message);
        };
        let Some(items) = include.as_array().filter(|a| a.iter().all(serde_json::Value::is_string)) else {
            diag(self, Severity::Error, "`include` must be an array of file paths".into());
            return;
        };
        if depth >= MAX_INCLUDE_DEPTH {
            diag(self, Severity::Error, format!("includes nest deeper than {MAX_INCLUDE_DEPTH}: not followed"));
            return;
        }
        let base = path.parent().unwrap_or(Path::new("."));
        for item in items.iter().filter_map(serde_json::Value::as_str) {
            let expanded = match super::expand::expand(item, &self.base) {
                Ok(p) => p,
                Err(e) => {
                    diag(self, Severity::Error, format!("`{}`: {e}", crate::text::excerpt(item, 60)));
                    continue;
                }
            };
            let target = match (expanded.strip_prefix("~/"), self.options.env.get("HOME")) {
                (Some(rest), Some(home)) => Path::new(home).join(rest),
                _ => base.join(&expanded),
            };
            if self.seen.contains(&target) || target == path {
                diag(self, Severity::Warning, format!("{} is read already: not included again", target.display()));
                continue;
            }
            self.file(&target, scope, Some(path), depth + 1);
        }
    }
}

/// Puts one file's entries into the config (`ctx`: the file; its diagnostics go to
/// `loaded`'s).
fn merge(loaded: &mut LoadedConfig, parsed: Vec<Parsed>, ctx: FileCtx<'_>) {
    let (scope, path) = (ctx.scope, ctx.path);
    let mut ctx = FileCtx { diagnostics: &mut loaded.diagnostics, ..ctx };
    for parsed in parsed {
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
            Parsed::Policy(rules) => {
                loaded.policy.push(super::PolicyLayer::new(scope.into(), path.to_path_buf(), rules))
            }
            Parsed::Audit(value) if scope != Scope::Project => {
                super::policy::parse_audit(&value, &mut loaded.audit, &mut ctx)
            }
            // The file of highest precedence that says decides.
            Parsed::McpSwitch(on) => loaded.mcp_off = (!on).then(|| path.to_path_buf()),
            Parsed::IdleShutdown(d) => loaded.idle_shutdown = Some(d),
            Parsed::Sandbox(spec) => {
                let all = loaded.sandbox.layered(&spec);
                // Only a server's own block turns its sandbox on or off; a file's turns it for all.
                loaded.sandbox = super::SandboxSpec { off: spec.off, ..all };
            }
            Parsed::Audit(_) => ctx.diag(
                Severity::Warning,
                None,
                Some("audit"),
                "a project file cannot change the audit log: `audit` ignored (set it in your user file)".into(),
            ),
            // The file of highest precedence that says decides (the managed file's, read
            // before, is not replaced).
            Parsed::Identity(value) if scope != Scope::Project => {
                let managed = loaded.identity_source.as_ref().is_some_and(|s| s.is_managed);
                if !managed && let Some(config) = super::identity::parse(&value, &mut ctx) {
                    loaded.identity = Some(config);
                    loaded.identity_source =
                        Some(super::IdentitySource { file: path.to_path_buf(), is_managed: false });
                }
            }
            Parsed::Store(value) if scope != Scope::Project => {
                let managed = loaded.store_source.as_ref().is_some_and(|s| s.is_managed);
                if !managed && let Some(config) = super::store::parse(&value, &mut ctx) {
                    loaded.store = Some(config);
                    loaded.store_source = Some(super::IdentitySource { file: path.to_path_buf(), is_managed: false });
                }
            }
            Parsed::Store(_) => ctx.diag(
                Severity::Warning,
                None,
                Some("store"),
                "a project file cannot say where a team's state is kept: `store` ignored (set it in your user or managed file)"
                    .into(),
            ),
            Parsed::Identity(_) => ctx.diag(
                Severity::Warning,
                None,
                Some("identity"),
                "a project file cannot say who may call: `identity` ignored (set it in your user or managed file)"
                    .into(),
            ),
        }
    }
}

/// Servers the managed file does not let start become invalid entries that say why.
/// In a team's config (`identity`), a server of each person's own that waits for an input
/// waits for each person's value, not the host's: said so (a note, not an error, and never
/// "`switchboard inputs set`", which would give the host a value meant to be each person's).
fn persons_own_inputs(loaded: &mut LoadedConfig) {
    if loaded.identity.is_none() {
        return;
    }
    for missing in loaded.inputs_missing.iter_mut() {
        missing.each_persons = !missing.servers.is_empty()
            && missing.servers.iter().all(|server| match loaded.servers.get(server) {
                Some(super::ServerEntry::Invalid(entry)) => entry.source == missing.file && entry.per_person(true),
                _ => false,
            });
        if !missing.each_persons {
            continue;
        }
        for server in &missing.servers {
            let Some(super::ServerEntry::Invalid(entry)) = loaded.servers.get_mut(server) else { continue };
            let said = format!(
                "takes `{}` from each person who signs in (it is each person's own: `sharing`): each gives \
                 their own on the gateway's values page when they first use it; the host keeps none",
                missing.input.id
            );
            let old = std::mem::replace(&mut entry.message, said.clone());
            for d in loaded.diagnostics.iter_mut() {
                if d.severity == Severity::Error
                    && d.file == missing.file
                    && d.server.as_deref() == Some(server.as_str())
                    && old.ends_with(&d.message)
                {
                    d.severity = Severity::Note;
                    d.message = said.clone();
                }
            }
        }
    }
}

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
                sharing: c.sharing,
                remote: matches!(c.transport, super::TransportConfig::Http(_)),
            });
        }
    }
}

/// What must never be shown of the servers: the values of their `env` and `headers`, and what
/// variables put into their command, arguments, folder and URL (at least 4 characters: shorter
/// ones would hide every such string in a log).
fn secret_values(
    loaded: &LoadedConfig,
    vars: &HashMap<PathBuf, HashMap<String, String>>,
    env: &HashMap<String, String>,
) -> Vec<String> {
    let mut found = std::collections::BTreeSet::new();
    for entry in loaded.servers.values() {
        let super::ServerEntry::Valid(c) = entry else { continue };
        let file_vars = vars.get(&c.source).unwrap_or(env);
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
                    found.extend(file_vars.get(var).cloned());
                }
                vec![h.url_as_written.as_str()]
            }
        };
        for w in written {
            found.extend(super::expand::substitutions(w, file_vars));
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

//! Workspace trust: a server from a project file does not start until the person trusts it.
//!
//! A trust record is keyed by project root and server name, and holds a digest of the launch
//! configuration (command, args, cwd, env, url, headers): any change to what would run needs
//! trust again. Records live in `<data>/trust.json` (mode 0600, written atomically; refused
//! if someone else could have written it). Changes are read-modify-write under a lock
//! (`trust.json.lock`, [`TrustStore::update`]), so processes trusting at once lose nothing.
//! User-file and `--config` servers are trusted by definition.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::JsonStore;

use crate::config::{Scope, ServerConfig, TransportConfig};

/// Why the trust file could not be used.
pub type TrustError = crate::store::StoreError;

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    projects: BTreeMap<String, BTreeMap<String, Record>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    digest: String,
    trusted_at: u64,
}

/// The trust records.
#[derive(Debug)]
pub struct TrustStore {
    store: JsonStore,
    file: TrustFile,
}

/// The digest of what a server would launch.
pub fn launch_digest(config: &ServerConfig) -> String {
    let launch = match &config.transport {
        TransportConfig::Stdio(s) => serde_json::json!({
            "command": s.command, "args": s.args, "cwd": s.cwd, "env": s.env,
            "env_passthrough": s.env_passthrough, "inherit_env": s.inherit_env,
        }),
        TransportConfig::Http(h) => serde_json::json!({"url": h.url, "headers": h.headers}),
    };
    let digest = Sha256::digest(launch.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl TrustStore {
    /// Opens `<data_dir>/trust.json` (an absent file is an empty store) for reading.
    pub fn open(data_dir: &Path) -> Result<Self, TrustError> {
        let store = JsonStore::new(data_dir.join("trust.json"), "trust file");
        Ok(TrustStore { file: store.read()?, store })
    }

    /// Changes the records with `change` under the store's lock: read, changed and written
    /// while no other process can, so concurrent changes all land. Returns what `change` does.
    pub fn update<R>(data_dir: &Path, change: impl FnOnce(&mut TrustStore) -> R) -> Result<R, TrustError> {
        let store = JsonStore::new(data_dir.join("trust.json"), "trust file");
        store.clone().update(|file: &mut TrustFile| {
            let mut trust = TrustStore { store, file: std::mem::take(file) };
            let out = change(&mut trust);
            *file = trust.file;
            out
        })
    }

    /// Whether `config` may start in the project at `root`.
    pub fn is_trusted(&self, root: &Path, config: &ServerConfig) -> bool {
        if config.scope != Scope::Project {
            return true;
        }
        self.file
            .projects
            .get(&root.to_string_lossy().into_owned())
            .and_then(|p| p.get(&config.name))
            .is_some_and(|r| r.digest == launch_digest(config))
    }

    /// Records trust in `config` for the project at `root`.
    pub fn trust(&mut self, root: &Path, config: &ServerConfig) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        self.file
            .projects
            .entry(root.to_string_lossy().into_owned())
            .or_default()
            .insert(config.name.clone(), Record { digest: launch_digest(config), trusted_at: now });
    }

    /// Forgets trust in `name` for the project at `root`; returns whether there was any.
    pub fn untrust(&mut self, root: &Path, name: &str) -> bool {
        let key = root.to_string_lossy().into_owned();
        let removed = self.file.projects.get_mut(&key).and_then(|p| p.remove(name)).is_some();
        if self.file.projects.get(&key).is_some_and(BTreeMap::is_empty) {
            self.file.projects.remove(&key);
        }
        removed
    }

    /// Writes the store (mode 0600, atomically; folder 0700). Between [`TrustStore::open`]
    /// and this another process may have changed the file: [`TrustStore::update`] holds the
    /// lock across both.
    pub fn save(&self) -> Result<(), TrustError> {
        self.store.write(&self.file)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{StdioConfig, ToolFilter};

    fn server(scope: Scope, arg: &str) -> ServerConfig {
        ServerConfig {
            name: "s".into(),
            protocol_version: None,
            transport: TransportConfig::Stdio(StdioConfig {
                command: "node".into(),
                command_as_written: "node".into(),
                cwd_as_written: None,
                env_file: None,
                env_file_as_written: None,
                args: vec![arg.into()],
                args_as_written: vec![arg.into()],
                env: BTreeMap::new(),
                cwd: None,
                env_passthrough: vec![],
                inherit_env: false,
                sandbox: None,
            }),
            enabled: true,
            startup_timeout: crate::config::DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: crate::config::DEFAULT_TOOL_TIMEOUT,
            shutdown_grace: crate::config::DEFAULT_SHUTDOWN_GRACE,
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
            tools: ToolFilter::default(),
            validate_arguments: true,
            idle_shutdown: None,
            always_load: false,
            sharing: None,
            scope,
            source: PathBuf::from("/p/switchboard.json"),
        }
    }

    #[test]
    fn trust_is_per_project_and_per_launch() {
        let dir = tempfile::tempdir().ok();
        let data = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let root = Path::new("/p");
        let mut store = TrustStore::open(&data).unwrap();
        let store = &mut store;
        assert!(store.is_trusted(root, &server(Scope::User, "a")));
        assert!(!store.is_trusted(root, &server(Scope::Project, "a")));
        store.trust(root, &server(Scope::Project, "a"));
        assert!(store.is_trusted(root, &server(Scope::Project, "a")));
        assert!(!store.is_trusted(Path::new("/q"), &server(Scope::Project, "a")));
        assert!(!store.is_trusted(root, &server(Scope::Project, "b")), "changed args need trust again");
        assert!(store.save().is_ok());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("trust.json")).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        let reopened = TrustStore::open(&data).ok();
        assert!(reopened.is_some_and(|s| s.is_trusted(root, &server(Scope::Project, "a"))));
        let mut s2 = TrustStore::open(&data).ok();
        assert!(s2.as_mut().is_some_and(|s| s.untrust(root, "s")));
    }
}

//! Helpers for the end-to-end tests: the fixture server, real peers installed on demand into
//! `<workspace>/.peers` (ignored by git), and hubs over a config written to a temp folder.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use switchboard::config::{self, LoadOptions, LoadedConfig};
use switchboard::events::Event;
use switchboard::{Hub, HubOptions, Paths};
use tempfile::TempDir;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn target_dir() -> PathBuf {
    // target/<profile>/deps/<test binary>
    std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

/// A binary of the workspace (`package`'s `bin`), built once per test binary.
fn workspace_bin(package: &str, bin: &str, built: &'static OnceLock<PathBuf>) -> PathBuf {
    built
        .get_or_init(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-q", "-p", package])
                .current_dir(workspace())
                .status()
                .expect("cargo build");
            assert!(status.success(), "building {package} failed");
            let path = target_dir().join(bin);
            assert!(path.exists(), "no {bin} at {}", path.display());
            path
        })
        .clone()
}

/// The fixture server binary.
pub fn fixture() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    workspace_bin("switchboard-fixture", "switchboard-fixture", &BUILT)
}

/// The `switchboard` command-line binary.
pub fn cli() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    workspace_bin("switchboard-cli", "switchboard", &BUILT)
}

/// Pinned versions of the npm peers.
pub const NPM_PEERS: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/server-memory@2026.8.31",
    // Its examples include a Streamable HTTP server with a demo OAuth authorization server.
    "@modelcontextprotocol/sdk@1.32.2",
];

/// `<workspace>/.peers/node`, with the npm peers installed (once).
pub fn node_peers() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = workspace().join(".peers/node");
        let marker = dir.join(".installed-v1");
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(NPM_PEERS.join("\n").as_str()) {
            std::fs::create_dir_all(&dir).unwrap();
            let status = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&dir)
                .args(NPM_PEERS)
                .status()
                .expect("npm");
            assert!(status.success(), "npm install of the peers failed");
            std::fs::write(&marker, NPM_PEERS.join("\n")).unwrap();
        }
        dir
    })
    .clone()
}

/// The entry script of an npm peer (`server-everything` ...).
pub fn node_peer(name: &str) -> String {
    node_peers().join(format!("node_modules/@modelcontextprotocol/{name}/dist/index.js")).display().to_string()
}

/// A Python with the `mcp` package (a venv in `<workspace>/.peers/py`, made once).
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let dir = workspace().join(".peers/py");
        let py = dir.join("bin/python");
        let marker = dir.join(".installed-v1");
        if !marker.exists() {
            let status = Command::new("python3").args(["-m", "venv"]).arg(&dir).status().expect("python3");
            assert!(status.success(), "python3 -m venv failed");
            let status = Command::new(&py).args(["-m", "pip", "install", "-q", "mcp==2.3.0"]).status().expect("pip");
            assert!(status.success(), "pip install mcp failed");
            std::fs::write(&marker, "mcp==2.3.0").unwrap();
        }
        py
    })
    .clone()
}

/// A temp folder holding `config.json` (given as `--config`) and a data folder.
pub struct TestEnv {
    pub dir: TempDir,
    pub paths: Paths,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("user.json"), dir.path().join("data"));
        TestEnv { dir, paths }
    }

    pub fn load(&self, config_json: &Value) -> LoadedConfig {
        let file = self.dir.path().join("config.json");
        std::fs::write(&file, serde_json::to_string_pretty(config_json).unwrap()).unwrap();
        let mut options = LoadOptions::from_env(self.dir.path().to_path_buf(), &self.paths);
        options.extra_files = vec![file];
        config::load(&options)
    }

    pub async fn hub(&self, config_json: &Value) -> Hub {
        self.hub_with(config_json, self.options()).await
    }

    /// The hub options these tests start with.
    pub fn options(&self) -> HubOptions {
        HubOptions::new(self.paths.clone())
    }

    /// Starts a hub with `options` and waits until it settles.
    pub async fn hub_with(&self, config_json: &Value, options: HubOptions) -> Hub {
        let loaded = self.load(config_json);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let hub = Hub::start(&loaded, options);
        tokio::time::timeout(Duration::from_secs(120), hub.ready()).await.expect("servers did not settle");
        hub
    }

    /// Starts a hub on a config that may hold invalid entries, and waits until it settles.
    pub async fn start(&self, loaded: &LoadedConfig) -> Hub {
        let hub = Hub::start(loaded, self.options());
        tokio::time::timeout(Duration::from_secs(120), hub.ready()).await.expect("servers did not settle");
        hub
    }
}

/// A fixture server entry with extra flags.
pub fn fixture_server(args: &[&str]) -> Value {
    serde_json::json!({"command": fixture().display().to_string(), "args": args})
}

/// Waits (up to 20 s) for an event matching `pred`.
pub async fn wait_event(rx: &mut tokio::sync::broadcast::Receiver<Event>, pred: impl Fn(&Event) -> bool) -> Event {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match rx.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    })
    .await
    .expect("event did not arrive")
}

/// Whether a process is alive (zombies count as dead).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).is_some_and(|s| s != "Z"),
        Err(_) => false,
    }
}

/// The text of a tool output for the model.
pub fn text(out: &switchboard::ToolOutput) -> String {
    out.model.text()
}

pub fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// Calls server-everything's `trigger-long-running-operation` on `server` with `steps` steps
/// and returns how many progress notifications reached the caller.
pub async fn long_running_progress(hub: &switchboard::Hub, server: &str, steps: u32) -> usize {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = hub
        .call_tool(
            &format!("mcp__{server}__trigger-long-running-operation"),
            args(serde_json::json!({"duration": 1, "steps": steps})),
            switchboard::CallOptions::new().progress(tx),
        )
        .await
        .unwrap();
    assert!(!out.is_error(), "{}", text(&out));
    let mut seen = 0;
    while rx.recv().await.is_some() {
        seen += 1;
    }
    seen
}

/// Waits (up to `limit`) until something listens on `127.0.0.1:port`.
pub fn wait_listening(port: u16, what: &str, limit: Duration) {
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < limit, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A free loopback port (free when asked; tests bind it soon after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A peer server process, killed when dropped.
pub struct Peer(pub std::process::Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the Python peer (`mcp` package, `tests/peers/py_server.py`) in `mode`
/// (`streamable-http` or `sse`) on a free port.
pub fn python_peer(mode: &str) -> (Peer, u16) {
    let port = free_port();
    let child = Command::new(python())
        .arg(workspace().join("tests/peers/py_server.py"))
        .args([mode, &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let peer = Peer(child);
    wait_listening(port, &format!("the Python peer ({mode})"), Duration::from_secs(60));
    (peer, port)
}

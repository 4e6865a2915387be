//! Helpers for the end-to-end tests: the fixture server, real peers installed on demand into
//! `<workspace>/.peers` (ignored by git), and hubs over a config written to a temp folder.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;
use switchboard::config::{self, LoadOptions, LoadedConfig};
use switchboard::events::Event;
use switchboard::{Hub, HubOptions, Paths};
use tempfile::TempDir;

pub use switchboard_testkit::*;

/// A temp folder holding `config.json` (given as `--config`) and a data folder.
pub struct TestEnv {
    pub dir: TempDir,
    pub paths: Paths,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().join("user.json"), switchboard_testkit::data_dir(dir.path()));
        TestEnv { dir, paths }
    }

    pub fn load(&self, config_json: &Value) -> LoadedConfig {
        let file = self.dir.path().join("config.json");
        std::fs::write(&file, serde_json::to_string_pretty(config_json).unwrap()).unwrap();
        config::load(&self.load_options())
    }

    /// How `load` loads: `config.json` here as `--config`, `managed.json` here as the managed
    /// file.
    pub fn load_options(&self) -> LoadOptions {
        let mut options = LoadOptions::from_env(self.dir.path().to_path_buf(), &self.paths);
        options.extra_files = vec![self.dir.path().join("config.json")];
        // Hermetic: the machine's managed file is not these tests'; `managed.json` here is.
        options.managed_file = Some(self.dir.path().join("managed.json"));
        options
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

/// A server's status once no attempt is under way: a failed server is tried again on a timer
/// in a long-running hub, so a test that reads its status right away may catch it
/// `connecting`; this waits (up to 30 s) for the attempt to end.
pub async fn settled(hub: &Hub, name: &str) -> Option<switchboard::status::ServerStatus> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = hub.status(name);
        let connecting = matches!(status, Some(switchboard::status::ServerStatus::Connecting));
        if !connecting || tokio::time::Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The text of a tool output for the model.
pub fn text(out: &switchboard::ToolOutput) -> String {
    out.model().text()
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

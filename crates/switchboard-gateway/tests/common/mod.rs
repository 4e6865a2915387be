//! What the gateway's end-to-end tests share: a config with two real upstreams (the fixture
//! and `server-everything`), the `switchboard gateway` binary on stdio or HTTP, and an rmcp
//! client that records every notification and answers elicitation.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::json;
use switchboard_testkit::{fixture, node_peer};
use tokio::sync::mpsc;

pub mod upstream;

/// What the client saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Progress { token: String, progress: f64 },
    ToolsChanged,
    ResourceUpdated(String),
    Log { logger: Option<String>, data: String },
}

/// A client that records and answers `name: Ada` to every form.
#[derive(Clone)]
pub struct Recorder {
    pub seen: mpsc::UnboundedSender<Seen>,
    pub elicitation: bool,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicitation {
            let mut e = ElicitationCapability::new();
            e.form = Some(FormElicitationCapability::default());
            caps.elicitation = Some(e);
            caps.roots = Some(Default::default());
        }
        ClientConfig::new(caps, Implementation::new("gateway-test", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = Some(json!({"name": "Ada"}));
        Ok(r)
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(vec![rmcp::model::Root::new("file:///home/ada/project")]))
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _ctx: NotificationContext<RoleClient>) {
        let token = serde_json::to_value(&p.progress_token).unwrap().to_string();
        let _ = self.seen.send(Seen::Progress { token, progress: p.progress });
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.seen.send(Seen::ToolsChanged);
    }

    async fn on_resource_updated(&self, p: ResourceUpdatedNotificationParam, _ctx: NotificationContext<RoleClient>) {
        let _ = self.seen.send(Seen::ResourceUpdated(p.uri));
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        p: rmcp::model::LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let _ = self.seen.send(Seen::Log { logger: p.logger, data: p.data.to_string() });
    }
}

/// A private home: user file, data folder, and a `--config` file with the upstreams.
pub struct Home {
    pub dir: tempfile::TempDir,
    /// Holds `config`.
    pub conf: tempfile::TempDir,
    pub config: PathBuf,
    pub call_log: PathBuf,
    pub marker: String,
}

impl Home {
    /// `fx` (the fixture, with a call log and `marker` in argv) and, with `everything`,
    /// `ev` (server-everything over stdio).
    pub fn new(everything: bool) -> Home {
        Home::with(everything, json!({}))
    }

    /// With more servers or top-level keys merged in (`{"servers": {...}, "profiles": {...}}`),
    /// and more flags for the fixture (`{"fixture_args": ["--slow-requests"]}`).
    pub fn with(everything: bool, extra: serde_json::Value) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let call_log = dir.path().join("calls.log");
        let marker = switchboard_testkit::unique_marker("gateway");
        let mut servers = json!({
            "fx": {"command": fixture(), "args": ["--name", "fx", "--call-log", call_log, "--marker", marker, "--forks", "hostile"]},
        });
        if let Some(args) = extra.get("fixture_args").and_then(|a| a.as_array())
            && let Some(fx) = servers["fx"]["args"].as_array_mut()
        {
            fx.extend(args.iter().cloned());
        }
        if everything {
            servers["ev"] = json!({"command": "node", "args": [node_peer("server-everything"), "stdio"]});
        }
        if let Some(more) = extra.get("servers").and_then(|s| s.as_object()) {
            for (k, v) in more {
                servers[k] = v.clone();
            }
        }
        let mut file = json!({"servers": servers});
        for key in ["profiles", "policy"] {
            if let Some(p) = extra.get(key) {
                file[key] = p.clone();
            }
        }
        // The config is kept apart from the folder the servers work in, as a person's is: some
        // tests use it as the user file, which the sandbox hides from servers, and a folder
        // holding a hidden file takes no new files from them. Not under /tmp either, which
        // then stays whole for them.
        let outside = switchboard_testkit::target_dir().join("tmp");
        std::fs::create_dir_all(&outside).unwrap();
        let conf = tempfile::tempdir_in(outside).unwrap();
        let config = conf.path().join("gateway.json");
        std::fs::write(&config, file.to_string()).unwrap();
        Home { dir, conf, config, call_log, marker }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `switchboard --config <config> gateway <args>` with this home.
    pub fn gateway(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.switchboard(&["gateway"]));
        c.args(args);
        c
    }

    /// `switchboard --config <config> <args>` with this home (its user file, data folder and
    /// folder: the same workspace as its gateways).
    pub fn switchboard(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(switchboard_testkit::cli());
        c.env("SWITCHBOARD_CONFIG", self.path().join("user.json"))
            .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(self.path()))
            .env_remove("RUST_LOG")
            .current_dir(self.path())
            .arg("--config")
            .arg(&self.config)
            .args(args);
        c
    }

    /// Lines of the fixture's call log.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.call_log).unwrap_or_default().lines().map(str::to_string).collect()
    }

    /// Waits until the call log has `line`.
    pub async fn wait_call(&self, line: &str, limit: Duration) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if self.calls().iter().any(|l| l == line) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Changes the `--config` file (before a gateway starts, or for its reload).
    pub fn edit(&self, change: impl FnOnce(&mut serde_json::Value)) {
        let mut config: serde_json::Value = serde_json::from_slice(&std::fs::read(&self.config).unwrap()).unwrap();
        change(&mut config);
        std::fs::write(&self.config, config.to_string()).unwrap();
    }

    /// Puts its state in the team's store at `url` (`store` in the `--config` file), with a new
    /// key ring in a file of its own (0600); returns the ring.
    /// A service account's key, made by `switchboard keys create NAME` (printed once).
    pub fn api_key(&self, name: &str) -> String {
        let made = self.switchboard(&["keys", "create", name]).stdin(Stdio::null()).output().unwrap();
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        String::from_utf8_lossy(&made.stdout).trim().to_string()
    }

    /// A home whose callers sign in (`identity` trusting `issuer`, scope `mcp`, and `more`
    /// merged into the block) on the team's store at `url`.
    pub fn team_on_store(issuer: &str, url: &str, more: serde_json::Value) -> Home {
        let home = Home::new(false);
        home.edit(|config| {
            let mut identity = json!({"issuers": [issuer], "scopes": ["mcp"]});
            if let (Some(block), Some(extra)) = (identity.as_object_mut(), more.as_object()) {
                block.extend(extra.clone());
            }
            config["identity"] = identity;
        });
        home.use_store(url);
        home
    }

    pub fn use_store(&self, url: &str) -> String {
        let keys = switchboard::store::seal::KeyRing::new_key_line("k1").unwrap();
        let file = self.path().join("store.keys");
        std::fs::write(&file, format!("{keys}\n")).unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        self.edit(|config| config["store"] = json!({"url": url, "key_file": file}));
        keys
    }

    /// The audit log's records so far, oldest first, as `switchboard audit --json` reads them
    /// (its day files, or the team's store when the config names one), with `args`
    /// (`--principal alice`).
    pub fn audit_records_of(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let out = self.switchboard(&[&["audit", "--json"], args].concat()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        read["calls"].as_array().cloned().unwrap_or_default()
    }

    /// The audit log's records so far ([`Home::audit_records_of`] all).
    pub fn audit_records(&self) -> Vec<serde_json::Value> {
        self.audit_records_of(&[])
    }

    /// Waits (up to 10 s: the log is written in batches) for the last record that `want` holds.
    pub async fn audit_record(&self, want: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let started = std::time::Instant::now();
        loop {
            if let Some(r) = self.audit_records().into_iter().rev().find(|r| want(r)) {
                return r;
            }
            assert!(started.elapsed().as_secs() < 10, "no such record in the audit log: {:?}", self.audit_records());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The API token (made by the first gateway or serve).
    pub fn token(&self) -> String {
        std::fs::read_to_string(switchboard_testkit::data_dir(self.path()).join("serve-token"))
            .unwrap()
            .trim()
            .to_string()
    }
}

/// A child process killed when dropped (a failing test leaves nothing running).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Killed {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Killed {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// Starts `switchboard gateway --http 127.0.0.1:0 <args>` and returns it with its `/mcp` URL.
pub fn http_gateway(home: &Home, args: &[&str]) -> (Killed, String) {
    let mut c = home.switchboard(&["gateway", "--http", "127.0.0.1:0"]);
    c.args(args);
    until_said(c, "switchboard gateway: MCP (Streamable HTTP) at ")
}

/// The same with more environment variables.
pub fn http_gateway_env(home: &Home, args: &[&str], env: &[(&str, &str)]) -> (Killed, String) {
    let mut c = home.switchboard(&["gateway", "--http", "127.0.0.1:0"]);
    c.args(args).envs(env.iter().copied());
    until_said(c, "switchboard gateway: MCP (Streamable HTTP) at ")
}

/// The same on `addr` (`127.0.0.1:PORT`).
pub fn http_gateway_at(home: &Home, addr: &str, args: &[&str]) -> (Killed, String) {
    let mut c = home.switchboard(&["gateway", "--http", addr]);
    c.args(args);
    until_said(c, "switchboard gateway: MCP (Streamable HTTP) at ")
}

/// Runs `c` until dropped, reading its stdout to the line that starts with `prefix`: the rest of
/// that line (an address).
fn until_said(mut c: std::process::Command, prefix: &str) -> (Killed, String) {
    use std::io::{BufRead, BufReader};
    // `SWITCHBOARD_TEST_STDERR=<RUST_LOG filter>` shows what the process logs (to debug a test).
    let stderr = match std::env::var("SWITCHBOARD_TEST_STDERR") {
        Ok(filter) => {
            c.env("RUST_LOG", filter);
            Stdio::inherit()
        }
        Err(_) => Stdio::null(),
    };
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
    let mut child = Killed(c.spawn().unwrap());
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let said = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "{c:?} printed no line starting {prefix:?}");
        if let Some(rest) = line.trim().strip_prefix(prefix) {
            break rest.to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, said)
}

/// One JSON-RPC message POSTed to a gateway's `/mcp` as a Streamable HTTP client sends it,
/// with a bearer token and a session when given.
pub async fn post_mcp(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.send().await.unwrap()
}

/// The same with a token and the `MCP-Protocol-Version` header of `version`, waiting at most
/// 30 s for the answer's headers.
pub async fn post_mcp_as(
    url: &str,
    token: &str,
    session: Option<&str>,
    version: &str,
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", version)
        .body(body.to_string())
        .timeout(Duration::from_secs(30));
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.send().await.unwrap()
}

/// A client-credentials token from an OpenID provider of the tests
/// (`switchboard_testkit::oidc`) for `client` (its secret is `<client>-secret`) and `resource`.
pub async fn client_token(token_endpoint: &str, client: &str, resource: &str) -> String {
    let r: serde_json::Value = reqwest::Client::new()
        .post(token_endpoint)
        .basic_auth(client, Some(format!("{client}-secret")))
        .form(&[("grant_type", "client_credentials"), ("scope", "mcp"), ("resource", resource)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["access_token"].as_str().unwrap_or_else(|| panic!("no token for {client}: {r}")).to_string()
}

/// A request of a 2026-07-28 client (no session), with `token`: the JSON-RPC answer.
pub async fn modern(url: &str, token: &str, method: &str, mut params: serde_json::Value) -> serde_json::Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    answered(&request.body(body.to_string()).send().await.unwrap().text().await.unwrap())
}

/// A person's access token for `resource` from the organisation's provider at `issuer`, as
/// their browser gets one (signed in as `login` on the provider's own pages).
pub async fn person_token(issuer: &str, login: &str, resource: &str) -> String {
    let mut c = std::process::Command::new(switchboard_testkit::node22_bin().join("node"));
    c.arg(script("person_token.mjs")).args([issuer, login, resource]);
    let said = tokio::task::spawn_blocking(move || report(c)).await.unwrap_or_default();
    said["access_token"].as_str().unwrap_or_else(|| panic!("no token for {login}: {said}")).to_string()
}

/// The JSON-RPC message of an answer's body (a JSON body, or the first `data:` of an event
/// stream).
pub fn answered(said: &str) -> serde_json::Value {
    said.lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
        .or_else(|| serde_json::from_str(said).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// An `initialize` request of the 2025-11-25 revision.
pub fn initialize() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
           "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
}

/// Receives until `want` matches (or `limit` passes); returns whether it did.
pub async fn wait_seen(rx: &mut mpsc::UnboundedReceiver<Seen>, limit: Duration, want: impl Fn(&Seen) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(s)) if want(&s) => return true,
            Ok(Some(_)) => {}
            _ => return false,
        }
    }
}

/// A client script of `tests/peers/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// A client script's environment: the home's config and data folder, no `RUST_LOG`.
pub fn env(c: &mut std::process::Command, home: &Home) {
    c.env("SWITCHBOARD_CONFIG", &home.config)
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG");
}

/// Runs a client script; its last stdout line is its JSON report.
pub fn report(mut c: std::process::Command) -> serde_json::Value {
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("no report: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && v.get("error").is_none(), "{v}\n{}", String::from_utf8_lossy(&out.stderr));
    v
}

/// The stdio form, as in an agent's config: SDK clients start servers with a minimal
/// environment, so the config goes on the command line.
pub fn stdio(home: &Home) -> Vec<String> {
    vec![
        "stdio".into(),
        switchboard_testkit::cli().display().to_string(),
        "--config".into(),
        home.config.display().to_string(),
        "gateway".into(),
    ]
}

/// Runs `serve` (a `switchboard … serve --port 0` command) until dropped; its base URL.
pub fn served(c: std::process::Command) -> (Killed, String) {
    until_said(c, "switchboard is serving on ")
}

/// Waits (up to 30 s) until every server behind a gateway has finished its first start, as its
/// `switchboard://servers` says (none `connecting`): for a test that needs them all, since a
/// first list holds only the servers that started at once or were seen before.
pub async fn servers_up(peer: &rmcp::Peer<rmcp::RoleClient>) {
    let started = std::time::Instant::now();
    loop {
        let read = peer.read_resource(rmcp::model::ReadResourceRequestParams::new("switchboard://servers")).await;
        let text = serde_json::to_string(&read.map(|r| r.contents).unwrap_or_default()).unwrap_or_default();
        if !text.contains(r#"\"state\": \"connecting\""#) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "servers still starting: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (up to 30 s) until the HTTP gateway whose `/mcp` is `url` is ready (`/readyz`: every
/// server's first start over).
pub fn wait_ready(url: &str) {
    let base = url.trim_end_matches("/mcp");
    let port: u16 = base.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{url}"));
    let started = std::time::Instant::now();
    loop {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
            let mut head = [0u8; 12];
            if s.read_exact(&mut head).is_ok() && head.ends_with(b"200") {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{base} never ready");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A server-memory that starts 6 s late (`sh -c "sleep 6; exec node …"`), with `marker` in the
/// command line of its shell and of the server, so that `/proc` finds it at every stage, and
/// its memory file in `dir`.
pub fn slow_memory(marker: &str, dir: &Path) -> serde_json::Value {
    let script = format!("sleep 6; exec node {} \"$0\"", node_peer("server-memory"));
    json!({"command": "sh", "args": ["-c", script, marker], "env": {"MEMORY_FILE_PATH": dir.join("memory.json")}})
}

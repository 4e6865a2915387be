//! The conformance suite's reference server (vendored in `tests/conformance-server`), the
//! gateway in front of it in either upstream era, and the facts about the reference server
//! itself that explain what no gateway can pass through, each checked against it directly
//! ([`Evidence`]).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::{free_port, node22_bin, wait_listening, workspace};

/// `.peers/conf-server`: the vendored reference server, installed from its lockfile once.
fn reference_server() -> PathBuf {
    let dir = workspace().join(".peers/conf-server");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-server");
    let lock = dir.join(".install.lock");
    std::fs::create_dir_all(&dir).unwrap();
    // Tests of several binaries may install at once: one does, the others wait (flock).
    let file = std::fs::File::create(&lock).unwrap();
    // SAFETY: a plain syscall on a file this function holds open.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
    if !dir.join("node_modules/.bin/tsx").exists() {
        for f in std::fs::read_dir(&src).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
        }
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .env("PATH", path_with_node22())
            .status()
            .unwrap();
        assert!(status.success(), "npm ci of the reference server failed");
    }
    drop(file);
    dir
}

fn path_with_node22() -> String {
    format!("{}:{}", node22_bin().display(), std::env::var("PATH").unwrap_or_default())
}

/// A process in a group of its own, ended with its whole group when dropped (`tsx` runs the
/// server in a child `node`, which a kill of `tsx` alone left running).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: a plain syscall; the group is the one this test made.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The reference server on a free port; its `/mcp` URL.
pub fn start_reference() -> (Killed, String) {
    let dir = reference_server();
    let port = free_port();
    let child = Command::new(dir.join("node_modules/.bin/tsx"))
        .arg("everything-server.ts")
        .current_dir(&dir)
        .env("PORT", port.to_string())
        .env("PATH", path_with_node22())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_listening(port, "the reference server", Duration::from_secs(60));
    (Killed(child), format!("http://localhost:{port}/mcp"))
}

/// The upstream's era, as a person configures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// `"protocol_version": "2025-11-25"`.
    Pinned,
    /// Nothing said: switchboard negotiates, and gets 2026-07-28 from this server.
    Negotiated,
}

impl Upstream {
    pub fn name(self) -> &'static str {
        match self {
            Upstream::Pinned => "pinned 2025-11-25",
            Upstream::Negotiated => "negotiated",
        }
    }
}

/// A gateway process (`--http 127.0.0.1:0 --no-auth --names bare`), killed when dropped.
pub struct Gateway {
    pub child: Child,
    pub url: String,
    _home: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gateway as a new user runs it, with `servers` as its only config.
pub fn gateway_with(servers: Value) -> Gateway {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gateway.json");
    std::fs::write(&config, json!({ "servers": servers }).to_string()).unwrap();
    let mut child = Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(&config)
        .args(["gateway", "--http", "127.0.0.1:0", "--no-auth", "--names", "bare"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Gateway { child, url, _home: home }
}

/// The gateway in front of the reference server at `upstream`, in the given era.
pub fn gateway(upstream: &str, era: Upstream) -> Gateway {
    let server = match era {
        Upstream::Pinned => json!({"url": upstream, "protocol_version": "2025-11-25"}),
        Upstream::Negotiated => json!({"url": upstream}),
    };
    gateway_with(json!({ "ref": server }))
}

// ---- The reference server, spoken to directly (JSON-RPC over HTTP, no SDK in between) ----

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap()
}

/// The JSON-RPC messages of a body: one JSON text, or the `data:` of each SSE event.
fn messages(body: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => vec![v],
        Err(_) => body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect(),
    }
}

/// The `result` answering `id` in `body`.
fn result_of(body: &str, id: u64) -> Option<Value> {
    messages(body).into_iter().find(|m| m["id"] == id).and_then(|m| m.get("result").cloned())
}

/// A session of 2025-11-25 with the reference server: its id.
fn legacy_session(url: &str) -> (String, Value) {
    let response = http()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}, "elicitation": {}},
            "clientInfo": {"name": "evidence", "version": "1"}}}))
        .send()
        .unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let init = result_of(&response.text().unwrap(), 1).expect("an initialize result");
    legacy_post(url, &session, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    (session, init)
}

fn legacy_post(url: &str, session: &str, body: &Value) -> String {
    http()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(body)
        .send()
        .unwrap()
        .text()
        .unwrap()
}

fn legacy_call(url: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let body = legacy_post(url, session, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    result_of(&body, id).unwrap_or_else(|| panic!("no result for {method}: {body}"))
}

/// A 2026-07-28 request (per-request `_meta`, no session): the content type and the body.
fn modern_post(url: &str, id: u64, method: &str, mut params: Value) -> (String, String) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "evidence", "version": "1"},
    });
    let response = http()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .send()
        .unwrap();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    (kind, response.text().unwrap())
}

fn modern_call(url: &str, id: u64, method: &str, params: Value) -> Value {
    let (_, body) = modern_post(url, id, method, params);
    result_of(&body, id).unwrap_or_else(|| panic!("no result for {method}: {body}"))
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

fn first_text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

/// Why a scenario that passes against the reference server directly cannot pass through a
/// gateway in some pairing of eras: a fact about the reference server, checked against it.
#[derive(Debug, Clone, Copy)]
pub enum Evidence {
    /// These tools and prompts exist only on its 2026-07-28 path (`app.post('/mcp')`'s
    /// stateless branch adds them); its 2025-11-25 session does not list them, so a
    /// gateway pinned to that era cannot call them.
    Only2026 { tools: &'static [&'static str], prompts: &'static [&'static str] },
    /// On its 2026-07-28 path this tool runs in an in-memory client
    /// (`getStatelessDispatchClient`) with no request handlers, so the tool's own
    /// `elicitation/create` or `sampling/createMessage` is answered "Method not found" there
    /// and never reaches any client: the tool returns that text.
    NoRequestsIn2026 { tool: &'static str, arguments: &'static str },
    /// Its 2026-07-28 `server/discover` declares `resources: {}` (no `subscribe`), its
    /// `subscriptions/listen` acknowledges only tool and prompt list changes, and
    /// `resources/subscribe` is 404 there; its 2025-11-25 session declares `subscribe`.
    NoSubscribeIn2026,
    /// Its `test_streaming_elicitation` answers with two JSON texts (a progress notification,
    /// then the result) in one `application/json` body; the transport spec allows one JSON-RPC
    /// message there (several go in an event stream). The gateway's upstream client fails
    /// that request with what came (the suite's own client reads the body leniently).
    TwoJsonTexts,
    /// Its `test_trigger_tool_change` and `test_trigger_prompt_change` send `list_changed`
    /// without changing a list; the gateway tells its clients of changes to what they see,
    /// and there is none.
    FakeMutation,
    /// Its `test_reconnection` closes the call's stream at once and answers 100 ms later; a
    /// client that waits the `retry: 5000` the server sets before resuming with
    /// `Last-Event-ID` (as the spec says it should, and as rmcp does) gets nothing: only a
    /// client that ignores `retry` and comes back within those 100 ms gets the result, as the
    /// suite's own client does.
    LostAfterRetry,
    /// rmcp 3.11's Streamable HTTP server routes `notifications/message` to the standalone
    /// GET stream only (`LocalSessionWorker::resolve_outbound_channel` routes progress,
    /// cancellation and requests to a request's stream, not logs); the suite's client looks
    /// 200 ms after the call's result, so this passes when the gateway's GET stream was open
    /// and the log forwarded in time. Not checked at run time (a property of rmcp's code).
    RmcpLogRouting,
}

impl Evidence {
    /// Checks the fact against the reference server at `url`; `Err` says how it no longer
    /// holds (the gap must then be looked at again).
    pub fn check(self, url: &str) -> Result<(), String> {
        match self {
            Evidence::Only2026 { tools, prompts } => {
                let (session, _) = legacy_session(url);
                let legacy_tools = names(&legacy_call(url, &session, 2, "tools/list", json!({})), "tools");
                let legacy_prompts = names(&legacy_call(url, &session, 3, "prompts/list", json!({})), "prompts");
                let modern_tools = names(&modern_call(url, 4, "tools/list", json!({})), "tools");
                let modern_prompts = names(&modern_call(url, 5, "prompts/list", json!({})), "prompts");
                for t in tools {
                    if legacy_tools.iter().any(|n| n == t) || !modern_tools.iter().any(|n| n == t) {
                        return Err(format!(
                            "tool {t}: 2025-11-25 lists {legacy_tools:?}, 2026-07-28 {modern_tools:?}"
                        ));
                    }
                }
                for p in prompts {
                    if legacy_prompts.iter().any(|n| n == p) || !modern_prompts.iter().any(|n| n == p) {
                        return Err(format!("prompt {p}: 2025-11-25 lists {legacy_prompts:?}"));
                    }
                }
                Ok(())
            }
            Evidence::NoRequestsIn2026 { tool, arguments } => {
                let arguments: Value = serde_json::from_str(arguments).unwrap();
                let result = modern_call(url, 6, "tools/call", json!({"name": tool, "arguments": arguments}));
                let text = first_text(&result);
                if text.contains("Method not found") { Ok(()) } else { Err(format!("{tool} answered {result}")) }
            }
            Evidence::NoSubscribeIn2026 => {
                let discovered = modern_call(url, 7, "server/discover", json!({}));
                let modern = discovered["capabilities"]["resources"]["subscribe"] == true;
                let (_, init) = legacy_session(url);
                let legacy = init["capabilities"]["resources"]["subscribe"] == true;
                if !modern && legacy {
                    Ok(())
                } else {
                    Err(format!("subscribe declared: 2026-07-28 {modern}, 2025-11-25 {legacy}"))
                }
            }
            Evidence::TwoJsonTexts => {
                let (kind, body) =
                    modern_post(url, 8, "tools/call", json!({"name": "test_streaming_elicitation", "arguments": {}}));
                let texts = body.lines().filter(|l| serde_json::from_str::<Value>(l).is_ok()).count();
                if kind.starts_with("application/json") && texts == 2 && serde_json::from_str::<Value>(&body).is_err() {
                    Ok(())
                } else {
                    Err(format!("{kind}: {body}"))
                }
            }
            Evidence::FakeMutation => {
                for (list, key, trigger) in [
                    ("tools/list", "tools", "test_trigger_tool_change"),
                    ("prompts/list", "prompts", "test_trigger_prompt_change"),
                ] {
                    let before = modern_call(url, 9, list, json!({}))[key].clone();
                    modern_call(url, 10, "tools/call", json!({"name": trigger, "arguments": {}}));
                    let after = modern_call(url, 11, list, json!({}))[key].clone();
                    if before != after {
                        return Err(format!("{trigger} changed {list}"));
                    }
                }
                Ok(())
            }
            Evidence::LostAfterRetry => {
                let (session, _) = legacy_session(url);
                let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "test_reconnection", "arguments": {}}});
                let body = legacy_post(url, &session, &call);
                let id = body.lines().find_map(|l| l.strip_prefix("id:")).map(str::trim).map(str::to_string);
                let retry =
                    body.lines().find_map(|l| l.strip_prefix("retry:")).and_then(|r| r.trim().parse::<u64>().ok());
                let (Some(id), Some(retry)) = (id, retry) else { return Err(format!("no priming event: {body}")) };
                if result_of(&body, 2).is_some() || retry < 1000 {
                    return Err(format!("the stream was not closed before the result, or retry is short: {body}"));
                }
                // Well within `retry`, well after the tool answered.
                std::thread::sleep(Duration::from_millis(1000));
                let resumed = sse_for(url, &session, &id, Duration::from_secs(3));
                match result_of(&resumed, 2) {
                    Some(r) => Err(format!("the result came on resumption: {r}")),
                    None => Ok(()),
                }
            }
            Evidence::RmcpLogRouting => Ok(()),
        }
    }
}

/// What a GET resuming after `last` brings within `wait`.
fn sse_for(url: &str, session: &str, last: &str, wait: Duration) -> String {
    let response = reqwest::blocking::Client::builder()
        .timeout(wait)
        .build()
        .unwrap()
        .get(url)
        .header("Accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", last)
        .send();
    let mut got = Vec::new();
    if let Ok(mut r) = response {
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

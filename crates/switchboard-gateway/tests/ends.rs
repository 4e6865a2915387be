//! However the gateway ends, no upstream process is left: stdin closed by the agent (the
//! usual end of a stdio MCP server), SIGTERM, SIGINT, SIGHUP, SIGKILL; and an HTTP gateway
//! under SIGTERM. Counted through `/proc` by a marker in argv, the fixture's hostile forks
//! (a `setsid` grandchild, an env-cleared one, a double-forked daemon) included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Home;
use switchboard_testkit::{wait_count, wait_gone};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A stdio gateway with the session started, its upstream's forks all running.
fn started(home: &Home) -> (std::process::Child, std::process::ChildStdin, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(&home.config)
        .arg("gateway")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{INIT}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    // The fixture and its hostile forks: the server, 2 sleepers, the env-cleared one, the daemon.
    let up = wait_count(&home.marker, 5, Duration::from_secs(20));
    assert!(up.len() >= 5, "the forks did not all start: {up:?}");
    (child, stdin, stdout)
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn stdin_closed_ends_the_gateway_and_every_upstream_process() {
    let home = Home::new(false);
    let (mut child, stdin, _out) = started(&home);
    drop(stdin);
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the gateway did not exit when stdin closed");
    assert_eq!(status.code(), Some(0));
    let left = wait_gone(&home.marker, Duration::from_secs(5));
    assert!(left.is_empty(), "left after stdin closed: {left:?}");
}

#[test]
fn signals_end_the_gateway_and_every_upstream_process() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130), (libc::SIGHUP, 129), (libc::SIGKILL, -1)] {
        let home = Home::new(false);
        let (mut child, _stdin, _out) = started(&home);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the gateway did not exit");
        if code >= 0 {
            assert_eq!(status.code(), Some(code), "signal {signal}");
        }
        let left = wait_gone(&home.marker, Duration::from_secs(10));
        assert!(left.is_empty(), "left after signal {signal}: {left:?}");
    }
}

#[test]
fn an_http_gateway_stops_on_sigterm_with_a_session_open_and_leaves_nothing() {
    let home = Home::new(false);
    let (mut child, url) = common::http_gateway(&home, &[]);
    let token = home.token();
    // A session open, a call in flight.
    let client = reqwest::blocking::Client::new();
    let init = client
        .post(&url)
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(INIT)
        .send()
        .unwrap();
    assert!(init.status().is_success(), "{}", init.status());
    let up = wait_count(&home.marker, 5, Duration::from_secs(20));
    assert!(up.len() >= 5, "{up:?}");
    let started = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the HTTP gateway did not exit");
    assert_eq!(status.code(), Some(143));
    assert!(started.elapsed() < Duration::from_secs(10));
    let left = wait_gone(&home.marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left after SIGTERM: {left:?}");
}

/// `/healthz` and `/readyz` answer a load balancer: no token, any `Host`.
fn health(url: &str, path: &str) -> (u16, serde_json::Value) {
    let base = url.strip_suffix("/mcp").unwrap();
    let r = reqwest::blocking::Client::new()
        .get(format!("{base}{path}"))
        .header("host", "10.1.2.3:8080")
        .timeout(Duration::from_secs(5))
        .send();
    match r {
        Ok(r) => (r.status().as_u16(), r.json().unwrap()),
        // Gone already (a drain that did not wait).
        Err(e) => (0, serde_json::json!(e.to_string())),
    }
}

/// A session of the fixture's gateway, and a `tools/call` of `slow` for `ms` milliseconds on
/// a thread: its response's text.
fn slow_call(url: &str, token: &str, ms: u64) -> std::thread::JoinHandle<String> {
    let client = reqwest::blocking::Client::new();
    let init = client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(INIT)
        .send()
        .unwrap();
    assert!(init.status().is_success(), "{}", init.status());
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = init.text();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"ms": ms / 2, "steps": 2}}});
    let (url, token) = (url.to_string(), token.to_string());
    std::thread::spawn(move || {
        let r = client
            .post(&url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(call.to_string())
            .send();
        match r {
            Ok(r) => r.text().unwrap_or_else(|e| format!("(body cut: {e})")),
            Err(e) => format!("(no response: {e})"),
        }
    })
}

/// SIGTERM drains an HTTP gateway, the default a service manager gets: `/readyz` says 503 at
/// once, a call in flight finishes with its result, then the process ends (143) and leaves
/// nothing; with `--drain 1`, a call longer than that is cancelled when the second is up.
#[test]
fn sigterm_drains_an_http_gateway_then_stops() {
    let home = Home::new(false);
    let (mut child, url) = common::http_gateway(&home, &[]);
    let token = home.token();
    let started = std::time::Instant::now();
    while health(&url, "/readyz").0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(20), "never ready: {:?}", health(&url, "/readyz"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(health(&url, "/healthz"), (200, serde_json::json!({"live": true})));
    assert_eq!(health(&url, "/readyz"), (200, serde_json::json!({"ready": true, "why": []})));
    let call = slow_call(&url, &token, 2000);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let signalled = std::time::Instant::now();
    let mut seen = None;
    while seen.is_none() && signalled.elapsed() < Duration::from_secs(1) {
        let (status, body) = health(&url, "/readyz");
        if status == 503 {
            seen = Some(body);
        }
    }
    let seen = seen.expect("/readyz never said 503 while draining");
    assert_eq!(seen["why"], serde_json::json!(["draining: it is stopping"]), "{seen}");
    assert_eq!(health(&url, "/healthz").0, 200, "live while it drains");
    let text = call.join().unwrap();
    assert!(text.contains("\"result\"") && !text.contains("\"isError\":true"), "the call did not finish: {text}");
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the HTTP gateway did not exit");
    assert_eq!(status.code(), Some(143));
    let took = signalled.elapsed();
    assert!(took >= Duration::from_millis(1200), "it stopped before the call ended: {took:?}");
    let left = wait_gone(&home.marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left after SIGTERM: {left:?}");

    // A call longer than the drain: cancelled when it is up.
    let home = Home::new(false);
    let (mut child, url) = common::http_gateway(&home, &["--drain", "1"]);
    let token = home.token();
    let started = std::time::Instant::now();
    while health(&url, "/readyz").0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(20), "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let call = slow_call(&url, &token, 60_000);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let signalled = std::time::Instant::now();
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("the HTTP gateway did not exit");
    assert_eq!(status.code(), Some(143));
    let took = signalled.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(8), "{took:?}");
    let text = call.join().unwrap();
    assert!(!text.contains("\"isError\":false"), "a 60 s call cannot have finished: {text}");
    let left = wait_gone(&home.marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left after SIGTERM: {left:?}");
}

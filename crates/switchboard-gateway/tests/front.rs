//! The HTTP front's bounds, on `switchboard gateway --http` and on `serve`'s `/mcp` (one
//! listener serves both): sequential calls are not held back by Nagle's algorithm meeting the
//! client's delayed ACK, idle connections cannot lock the token's holder out, and the bearer
//! scheme is matched as RFC 7235 says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Home, Killed};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

fn client_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url).auth_header(token))
}

/// Calls made one after the other.
const SEQUENTIAL: u32 = 500;

/// `SEQUENTIAL` calls, one after the other, with rmcp's client over a reqwest client that
/// keeps its connection (as most HTTP clients do; one that opens a connection per request
/// hides the stall, since a new connection acknowledges at once): how long they took.
async fn sequential_calls(url: &str, token: &str) -> Duration {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = ().serve(transport).await.unwrap();
    let args = json!({"text": "hi"}).as_object().cloned().unwrap();
    // One to warm up (the upstream connects, the view is built).
    client.call_tool(CallToolRequestParams::new("fx__echo").with_arguments(args.clone())).await.unwrap();
    let start = Instant::now();
    for _ in 0..SEQUENTIAL {
        client.call_tool(CallToolRequestParams::new("fx__echo").with_arguments(args.clone())).await.unwrap();
    }
    let took = start.elapsed();
    client.cancel().await.unwrap();
    took
}

/// With Nagle's algorithm on the accepted sockets every exchange waited for the client's
/// delayed ACK, about 44 ms: 500 calls took 22 s. A generous bound, not a benchmark: a debug
/// build on a loaded machine does them in well under one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_are_not_held_back_on_either_http_front() {
    let bound = Duration::from_secs(10);
    let home = Home::new(false);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let took = sequential_calls(&url, &home.token()).await;
    drop(gateway);
    assert!(took < bound, "{SEQUENTIAL} sequential calls through gateway --http took {took:?}");
    println!("gateway --http: {SEQUENTIAL} sequential calls in {took:?}");

    std::fs::copy(&home.config, home.path().join("user.json")).unwrap();
    let mut serve = switchboard_testkit::switchboard(home.path())
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = switchboard_testkit::serve_address(&mut serve);
    let serve = Killed(serve);
    let took = sequential_calls(&format!("http://{addr}/mcp"), &home.token()).await;
    drop(serve);
    assert!(took < bound, "{SEQUENTIAL} sequential calls through serve's /mcp took {took:?}");
    println!("serve /mcp: {SEQUENTIAL} sequential calls in {took:?}");
}

/// Open descriptors of `pid`.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Anyone on the machine opened more idle connections than the gateway has descriptors for
/// (1,100 against a limit of 1,024, none sending a byte): the token's holder is still served
/// at once, a client without the token gets its 401 at once, and the gateway stays under its
/// descriptor limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_lock_out_the_token_s_holder() {
    let home = Home::new(false);
    let mut c = std::process::Command::new(switchboard_testkit::cli());
    c.env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(&home.config)
        .args(["gateway", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec only setrlimit, a plain system call.
    unsafe {
        c.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1024, rlim_max: 1024 };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    let url = {
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        line.trim().rsplit(' ').next().unwrap().to_string()
    };
    let pid = child.id();
    let gateway = Killed(child);
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();

    // This test's own process needs the descriptors for them.
    let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on a struct of ours.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut own);
        own.rlim_cur = own.rlim_max.min(4096);
        libc::setrlimit(libc::RLIMIT_NOFILE, &own);
    }
    let idle: Vec<std::net::TcpStream> = (0..1100).filter_map(|_| std::net::TcpStream::connect(addr).ok()).collect();
    assert!(idle.len() > 1024, "only {} idle connections opened", idle.len());
    tokio::time::sleep(Duration::from_millis(500)).await;

    let start = Instant::now();
    let client = tokio::time::timeout(Duration::from_secs(10), ().serve(client_transport(&url, &home.token())))
        .await
        .expect("the token's holder got no session within 10 s")
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fx__echo"));
    let served = start.elapsed();
    assert!(served < Duration::from_secs(10), "{served:?}");

    let no_token = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("a client without the token got no answer");
    assert_eq!(no_token.status(), 401);
    // The session made before still works (its connection was not displaced by the 401's).
    client
        .call_tool(
            CallToolRequestParams::new("fx__echo")
                .with_arguments(json!({"text": "again"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let open = descriptors(pid);
    assert!(open < 1024, "the gateway holds {open} descriptors of 1024");
    println!("with {} idle connections: served in {served:?}, {open} descriptors open", idle.len());
    client.cancel().await.unwrap();
    drop(idle);
    drop(gateway);
}

/// `Authorization: bearer <token>`: the scheme is case-insensitive (RFC 7235).
#[test]
fn a_lower_case_bearer_scheme_is_accepted() {
    let home = Home::new(false);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let client = reqwest::blocking::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    for scheme in ["bearer", "BEARER"] {
        let response = client
            .post(&url)
            .header("authorization", format!("{scheme} {}", home.token()))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
    }
    drop(gateway);
}

/// Gemini CLI 0.61 got no tools over HTTP: its SDK (`@modelcontextprotocol/sdk` 1.23.0, newest
/// revision 2025-06-18) runs `JSON.parse` on the SSE priming event's empty data and drops the
/// server. That SDK's own client now lists and calls; a client of 2025-11-25 still gets the
/// priming event (SEP-1699), one of 2025-06-18 does not.
#[test]
fn priming_only_for_clients_that_take_it() {
    let home = Home::new(false);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let sdk = switchboard_testkit::npm_folder("sdk-1.23", &["@modelcontextprotocol/sdk@1.23.0"]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/old_sdk_client.mjs");
    let out = std::process::Command::new("node")
        .arg(script)
        .arg(&sdk)
        .arg(&url)
        .arg(home.token())
        .arg("fx__echo")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{v}");
    assert_eq!(v["protocol"], "2025-06-18", "{v}");
    assert!(v["tools"].as_array().is_some_and(|t| t.iter().any(|n| n == "fx__echo")), "{v}");
    assert!(v["text"].as_str().unwrap_or_default().contains("from an old client"), "{v}");

    let client = reqwest::blocking::Client::new();
    let first_event = |version: &str| {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let body = client
            .post(&url)
            .bearer_auth(home.token())
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .unwrap()
            .text()
            .unwrap();
        body.split("\n\n").next().unwrap_or_default().to_string()
    };
    let newer = first_event("2025-11-25");
    assert!(newer.contains("retry:") && !newer.contains("\"result\""), "a priming event first: {newer:?}");
    let older = first_event("2025-06-18");
    assert!(!older.contains("retry:") && older.contains("\"result\""), "the answer first: {older:?}");
    drop(gateway);
}

/// Two requests with the same id in one session: the second is refused at once (before, its
/// POST stayed open for good with keep-alive comments only), the first answered; the id may be
/// used again once the first is answered.
#[test]
fn over_http_a_request_whose_id_is_in_flight_is_refused() {
    let home = Home::new(false);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut r = client
            .post(&url)
            .bearer_auth(home.token())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r.json(&body).send().unwrap()
    };
    let init = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    drop(init.text());
    post(Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"ms": 500, "steps": 1}}});
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| post(Some(&session), slow.clone()).text().unwrap());
        std::thread::sleep(Duration::from_millis(150));
        let started = Instant::now();
        let second = post(Some(&session), slow.clone()).text().unwrap();
        assert!(started.elapsed() < Duration::from_millis(400), "the duplicate waited {:?}", started.elapsed());
        (first.join().unwrap(), second)
    });
    assert!(second.contains("-32600") && second.contains("still in flight"), "{second}");
    assert!(first.contains("slept"), "{first}");
    let again = post(Some(&session), slow).text().unwrap();
    assert!(again.contains("slept"), "{again}");
    drop(gateway);
}

/// A client that opens sessions without end (before: 5,000 took 380 MB, given back only after
/// five idle minutes): at most `MAX_SESSIONS` are kept, the least recently used one gives way
/// (its client is told 404, as for any session the server forgot), and the newest works.
#[test]
fn sessions_are_capped_and_the_least_recently_used_gives_way() {
    let home = Home::new(false);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let client = reqwest::blocking::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let open = || {
        let r = client
            .post(&url)
            .bearer_auth(home.token())
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .unwrap();
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        drop(r.text());
        id
    };
    let list = |session: &str| {
        client
            .post(&url)
            .bearer_auth(home.token())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .send()
            .unwrap()
            .status()
    };
    let pid = gateway.id();
    let first = open();
    assert_eq!(list(&first), 200);
    let before = switchboard_testkit::rss_kib(pid);
    let total = switchboard_gateway::MAX_SESSIONS * 2;
    let mut last = String::new();
    for _ in 0..total {
        last = open();
    }
    let after = switchboard_testkit::rss_kib(pid);
    assert_eq!(list(&first), 404, "the least recently used session is closed at the cap");
    assert_eq!(list(&last), 200);
    println!("{total} sessions opened: rss {before} KiB before, {after} KiB after");
    assert!(after < before + 200 * 1024, "the gateway grew from {before} to {after} KiB");
    drop(gateway);
}

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
    client.call_tool(CallToolRequestParams::new("mcp__fx__echo").with_arguments(args.clone())).await.unwrap();
    let start = Instant::now();
    for _ in 0..SEQUENTIAL {
        client.call_tool(CallToolRequestParams::new("mcp__fx__echo").with_arguments(args.clone())).await.unwrap();
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
        .env("SWITCHBOARD_DATA_DIR", home.path().join("data"))
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
    assert!(tools.iter().any(|t| t.name == "mcp__fx__echo"));
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
            CallToolRequestParams::new("mcp__fx__echo")
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

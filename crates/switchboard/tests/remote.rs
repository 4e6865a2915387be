//! Remote servers over Streamable HTTP: the official `server-everything` in its
//! `streamableHttp` mode, and small loopback HTTP responders for each way a connection can
//! fail (refused, HTTP status, authorisation asked for).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    Peer, TestEnv, args, free_port, long_running_progress, node_peer, python_peer, settled, text, wait_event,
    wait_listening,
};
use serde_json::json;
use switchboard::CallOptions;
use switchboard::events::Event;
use switchboard::status::{FailureKind, ServerStatus};

/// Starts `server-everything <mode>` on a free port and waits until it accepts connections.
fn everything(mode: &str) -> (Peer, u16) {
    let port = free_port();
    (everything_on(mode, port), port)
}

fn everything_on(mode: &str, port: u16) -> Peer {
    everything_logging(mode, port, Stdio::null())
}

/// Starts `server-everything <mode>` on `port` with its stdout (where it logs sessions) going
/// to `log`.
fn everything_logging(mode: &str, port: u16, log: impl Into<Stdio>) -> Peer {
    let child = Command::new("node")
        .args([node_peer("server-everything").as_str(), mode])
        .env("PORT", port.to_string())
        .stdout(log)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let peer = Peer::new(child);
    wait_listening(port, &format!("server-everything {mode}"), Duration::from_secs(30));
    peer
}

fn failure(status: Option<ServerStatus>) -> (FailureKind, String, Option<String>) {
    match status {
        Some(ServerStatus::Failed { kind, message, auth_challenge, .. }) => (kind, message, auth_challenge),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_over_streamable_http_matches_stdio() {
    let (_peer, port) = everything("streamableHttp");
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            "web": {"url": format!("http://127.0.0.1:{port}/mcp")},
            "local": {"command": "node", "args": [node_peer("server-everything"), "stdio"]},
        }}))
        .await;
    let status = hub.status("web");
    let Some(ServerStatus::Connected { protocol_version, .. }) = &status else { panic!("{status:?}") };
    assert!(!protocol_version.is_empty());
    let catalog = hub.catalog();
    let names = |server: &str| {
        let mut v: Vec<String> = catalog.tools_of(server).map(|t| t.tool.name.to_string()).collect();
        v.sort();
        v
    };
    assert!(!names("web").is_empty());
    assert_eq!(names("web"), names("local"), "the same catalog over HTTP as over stdio");
    let resources = |server: &str| catalog.resources().iter().filter(|r| r.server == server).count();
    assert_eq!(resources("web"), resources("local"));

    let out = hub.call_tool("mcp__web__echo", args(json!({"message": "over http"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("over http"), "{}", text(&out));
    let seen = long_running_progress(&hub, "web", 4).await;
    assert!(seen >= 3, "saw {seen} progress notifications over HTTP");
    let read = hub.read_resource("web", &catalog.resources().iter().find(|r| r.server == "web").unwrap().resource.uri);
    assert!(!read.await.unwrap().contents.is_empty());
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_over_legacy_sse_pinned_and_by_fallback() {
    let (_peer, port) = everything("sse");
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            "pinned": {"url": format!("http://127.0.0.1:{port}/sse"), "transport": "sse"},
            // `auto` (the default): the initialize POST to /sse gets a 404, so SSE is tried.
            "auto": {"url": format!("http://127.0.0.1:{port}/sse")},
            "streamable": {"url": format!("http://127.0.0.1:{port}/sse"), "transport": "streamable-http"},
        }}))
        .await;
    for name in ["pinned", "auto"] {
        let status = hub.status(name);
        let Some(ServerStatus::Connected { protocol_version, .. }) = &status else { panic!("{name}: {status:?}") };
        assert!(!protocol_version.is_empty());
        let out = hub
            .call_tool(&format!("mcp__{name}__echo"), args(json!({"message": "over sse"})), CallOptions::new())
            .await
            .unwrap();
        assert!(text(&out).contains("over sse"), "{}", text(&out));
    }
    assert!(hub.catalog().tools_of("auto").count() >= 5);
    // Progress arrives on the event stream too.
    let seen = long_running_progress(&hub, "pinned", 3).await;
    assert!(seen >= 2, "saw {seen} progress notifications over SSE");
    // Pinned to Streamable HTTP, the same URL fails with the HTTP status (no fallback).
    let (kind, msg, _) = failure(settled(&hub, "streamable").await);
    assert_eq!(kind, FailureKind::HttpStatus, "{msg}");
    assert!(!msg.contains("legacy SSE"), "{msg}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn revalidate_notices_a_remote_server_gone_and_back() {
    let (peer, port) = everything("streamableHttp");
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}})).await;
    assert_eq!(hub.revalidate("web").await.unwrap().state(), "connected");
    drop(peer);
    let (kind, msg, _) = failure(Some(hub.revalidate("web").await.unwrap()));
    assert_eq!(kind, FailureKind::NetworkUnreachable, "{msg}");
    // Back on the same port (a new process: every old session is gone).
    let _peer = everything_on("streamableHttp", port);
    assert_eq!(hub.revalidate("web").await.unwrap().state(), "connected");
    let out = hub.call_tool("mcp__web__echo", args(json!({"message": "back"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("back"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_restarted_mid_session_is_reconnected_on_the_next_call() {
    let (peer, port) = everything("streamableHttp");
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp"), "tool_timeout_ms": 20000}}}))
        .await;
    let out = hub.call_tool("mcp__web__echo", args(json!({"message": "before"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("before"));
    // A new process on the same port: it has never heard of our session.
    drop(peer);
    let _peer = everything_on("streamableHttp", port);
    let started = std::time::Instant::now();
    let out = hub.call_tool("mcp__web__echo", args(json!({"message": "after"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("after"));
    assert!(started.elapsed() < Duration::from_secs(15), "the call waited for its timeout");
    assert_eq!(hub.status("web").map(|s| s.state()), Some("connected"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_updates_and_list_changes_arrive_over_streamable_http() {
    let (_peer, port) = everything("streamableHttp");
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}})).await;
    let mut events = hub.subscribe();
    let before = hub.catalog().resources().iter().filter(|r| r.server == "web").count();
    let uri = hub.catalog().resources().iter().find(|r| r.server == "web").unwrap().resource.uri.clone();

    // A subscribed resource: the server sends updates (every 5 s once toggled on).
    hub.subscribe_resource("web", &uri).await.unwrap();
    hub.call_tool("mcp__web__toggle-subscriber-updates", None, CallOptions::new()).await.unwrap();
    let event = wait_event(&mut events, |e| matches!(e, Event::ResourceUpdated { .. })).await;
    assert_eq!(event, Event::ResourceUpdated { server: "web".into(), uri: uri.clone() });
    hub.unsubscribe_resource("web", &uri).await.unwrap();

    // A tool that adds a session resource announces it with resources/list_changed.
    let data = "data:text/plain;base64,aGVsbG8gZnJvbSBzd2l0Y2hib2FyZA==";
    let out = hub
        .call_tool(
            "mcp__web__gzip-file-as-resource",
            args(json!({"name": "hello.txt.gz", "data": data, "outputType": "resourceLink"})),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert!(!out.is_error(), "{}", text(&out));
    wait_event(
        &mut events,
        |e| matches!(e, Event::CatalogChanged { server, resources, .. } if server == "web" && *resources > before),
    )
    .await;
    assert!(hub.catalog().resources().iter().any(|r| r.resource.uri.ends_with("hello.txt.gz")));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_a_session_deletes_it_on_the_server() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("everything.log");
    let _peer = everything_logging("streamableHttp", port, std::fs::File::create(&log_path).unwrap());
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}})).await;
    let session = log()
        .lines()
        .find_map(|l| l.strip_prefix("Session initialized with ID: ").map(str::to_string))
        .expect("the server logged our session");
    hub.shutdown().await;
    let started = std::time::Instant::now();
    while !log().contains(&format!("Received session termination request for session {session}")) {
        assert!(started.elapsed() < Duration::from_secs(10), "no DELETE on close: {}", log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_the_server_forgot_is_renewed() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("everything.log");
    let _peer = everything_logging("streamableHttp", port, std::fs::File::create(&log_path).unwrap());
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let env = TestEnv::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = env.hub(&json!({"servers": {"web": {"url": url, "tool_timeout_ms": 20000}}})).await;
    let uri = hub.catalog().resources().iter().find(|r| r.server == "web").unwrap().resource.uri.clone();
    hub.subscribe_resource("web", &uri).await.unwrap();
    let session = log()
        .lines()
        .find_map(|l| l.strip_prefix("Session initialized with ID: ").map(str::to_string))
        .expect("the server logged our session");
    // Someone else ends our session (as a server restart or an expiry would).
    let deleted = reqwest::Client::new().delete(&url).header("mcp-session-id", &session).send().await.unwrap();
    assert!(deleted.status().is_success(), "{deleted:?}");
    let started = std::time::Instant::now();
    let out = hub.call_tool("mcp__web__echo", args(json!({"message": "again"})), CallOptions::new()).await;
    assert!(text(&out.unwrap()).contains("again"));
    assert!(started.elapsed() < Duration::from_secs(15), "the call waited for its timeout");
    let sessions = log().matches("Session initialized with ID: ").count();
    assert_eq!(sessions, 2, "a new session was opened: {}", log());
    // The subscription was made again in the new session: its updates arrive.
    let mut events = hub.subscribe();
    hub.call_tool("mcp__web__toggle-subscriber-updates", None, CallOptions::new()).await.unwrap();
    let event = wait_event(&mut events, |e| matches!(e, Event::ResourceUpdated { .. })).await;
    assert_eq!(event, Event::ResourceUpdated { server: "web".into(), uri });
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_server_over_streamable_http_and_sse() {
    let (_http, http_port) = python_peer("streamable-http");
    let (_sse, sse_port) = python_peer("sse");
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            "pyhttp": {"url": format!("http://127.0.0.1:{http_port}/mcp")},
            "pysse": {"url": format!("http://127.0.0.1:{sse_port}/sse")},
        }}))
        .await;
    for name in ["pyhttp", "pysse"] {
        let status = hub.status(name);
        let Some(ServerStatus::Connected { instructions, .. }) = &status else { panic!("{name}: {status:?}") };
        assert!(instructions.as_deref().unwrap_or("").contains("Python server"));
        let out = hub
            .call_tool(&format!("mcp__{name}__multiply"), args(json!({"a": 6, "b": 7})), CallOptions::new())
            .await
            .unwrap();
        assert!(text(&out).contains("42"), "{name}: {}", text(&out));
        let read = hub.read_resource(name, "py://greeting").await.unwrap();
        assert!(serde_json::to_string(&read).unwrap().contains("hello from python"));
        let prompt = hub.get_prompt(name, "review", args(json!({"code": "x = 1"}))).await.unwrap();
        assert!(serde_json::to_string(&prompt).unwrap().contains("x = 1"));
    }
    hub.shutdown().await;
}

/// What a loopback responder saw: the request line and headers of each request.
type Seen = Arc<Mutex<Vec<String>>>;

/// Answers every request with `response` (a raw HTTP response), recording the requests.
fn responder(response: &'static str) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen2.lock().unwrap().push(head);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_failures_are_classified() {
    let refused = free_port();
    let (boom, _) = responder(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 21\r\nconnection: close\r\n\r\nthe database is down!",
    );
    let (missing, _) = responder(
        "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 13\r\nconnection: close\r\n\r\nno such thing",
    );
    let (locked, seen) = responder(
        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\", scope=\"files:read\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    );
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            // The query holds a "secret" from a variable ($HOME's value here).
            "refused": {"url": format!("http://127.0.0.1:{refused}/mcp?key=${{HOME}}")},
            "boom": {"url": format!("http://127.0.0.1:{boom}/mcp")},
            "missing": {"url": format!("http://127.0.0.1:{missing}/mcp")},
            "locked": {"url": format!("http://127.0.0.1:{locked}/mcp"), "headers": {"X-Team": "blue"},
                       "bearer_token_env_var": "HOME"},
            "nobearer": {"url": format!("http://127.0.0.1:{locked}/mcp"), "bearer_token_env_var": "SB_SURELY_UNSET_TOKEN"},
            // https to a plain-HTTP listener: the TLS handshake fails.
            "tls": {"url": format!("https://127.0.0.1:{boom}/mcp")},
            "dns": {"url": "http://no-such-host.invalid/mcp"},
        }}))
        .await;
    let (kind, msg, _) = failure(settled(&hub, "refused").await);
    assert_eq!(kind, FailureKind::NetworkUnreachable, "{msg}");
    assert!(msg.contains(&refused.to_string()), "{msg}");
    let (kind, msg, _) = failure(settled(&hub, "boom").await);
    assert_eq!(kind, FailureKind::HttpStatus, "{msg}");
    assert!(msg.contains("500"), "{msg}");
    let (kind, msg, _) = failure(settled(&hub, "missing").await);
    assert_eq!(kind, FailureKind::HttpStatus, "{msg}");
    assert!(msg.contains("404") && msg.contains("no such thing"), "{msg}");
    // `auto` tried Streamable HTTP, then legacy SSE on the 404, and says both.
    assert!(msg.contains("Streamable HTTP failed") && msg.contains("legacy SSE failed"), "{msg}");
    let (kind, msg, challenge) = failure(settled(&hub, "locked").await);
    assert_eq!(kind, FailureKind::NeedsAuth, "{msg}");
    assert!(challenge.unwrap_or_default().contains("resource_metadata="), "the challenge is kept");
    let home = std::env::var("HOME").unwrap();
    let head = seen.lock().unwrap().first().cloned().unwrap_or_default().to_ascii_lowercase();
    assert!(head.contains("x-team: blue"), "static headers are sent: {head}");
    assert!(head.contains(&format!("authorization: bearer {}", home.to_ascii_lowercase())), "{head}");
    let (kind, msg, _) = failure(settled(&hub, "tls").await);
    assert_eq!(kind, FailureKind::TlsError, "{msg}");
    let (kind, msg, _) = failure(settled(&hub, "dns").await);
    assert_eq!(kind, FailureKind::NetworkUnreachable, "{msg}");
    assert!(msg.contains("does not resolve"), "{msg}");
    let (kind, msg, _) = failure(settled(&hub, "nobearer").await);
    assert_eq!(kind, FailureKind::ConfigInvalid, "{msg}");
    assert!(msg.contains("SB_SURELY_UNSET_TOKEN"), "{msg}");
    // Secrets stay out of the messages.
    let all = serde_json::to_string(&hub.servers()).unwrap();
    assert!(!all.contains(&format!("Bearer {home}")), "{all}");
    assert!(!all.contains(&format!("key={home}")), "an expanded URL leaked: {all}");
    assert!(all.contains("key=${HOME}"), "the URL is shown as written: {all}");
    hub.shutdown().await;
}

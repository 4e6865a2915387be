//! `switchboard gateway --http`: rmcp's Streamable HTTP client through the gateway (token,
//! progress, elicitation, list_changed), the front door's security (token, Host, loopback),
//! and profiles chosen per client with `/mcp?profile=NAME`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Home, Recorder, Seen, wait_seen};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

fn client_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url).auth_header(token))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_http_with_the_token() {
    let home = Home::new(false);
    let (mut child, url) = common::http_gateway(&home, &[]);
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let client = Recorder { seen: tx, elicitation: true }.serve(client_transport(&url, &home.token())).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fx__echo"));
    let r = client
        .call_tool(
            CallToolRequestParams::new("fx__slow")
                .with_arguments(json!({"ms": 10, "steps": 2}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("slept 2"));
    assert!(
        wait_seen(
            &mut seen,
            Duration::from_secs(5),
            |s| matches!(s, Seen::Progress { progress, .. } if *progress == 2.0)
        )
        .await
    );
    let r = client.call_tool(CallToolRequestParams::new("fx__ask")).await.unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("Ada"));
    client.call_tool(CallToolRequestParams::new("fx__mutate")).await.unwrap();
    assert!(
        wait_seen(&mut seen, Duration::from_secs(10), |s| *s == Seen::ToolsChanged).await,
        "no list_changed on the GET stream"
    );
    client.cancel().await.unwrap();
    // A client may ask for other names in the URL; a word that is not one is refused, saying so.
    let asked = ().serve(client_transport(&format!("{url}?names=prefixed"), &home.token())).await.unwrap();
    let names: Vec<String> = asked.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"mcp__fx__echo".to_string()) && !names.contains(&"fx__echo".to_string()), "{names:?}");
    let r = asked.call_tool(
        CallToolRequestParams::new("mcp__fx__echo").with_arguments(json!({"text": "hi"}).as_object().cloned().unwrap()),
    );
    assert!(serde_json::to_string(&r.await.unwrap().content).unwrap().contains("hi"));
    asked.cancel().await.unwrap();
    let bad = ().serve(client_transport(&format!("{url}?names=long"), &home.token())).await;
    let refused = match bad {
        Ok(c) => c.list_all_tools().await.map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        Err(e) => e.to_string(),
    };
    assert!(refused.contains("`names=long`: use short"), "{refused}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_front_door_wants_the_token_and_its_own_host() {
    let home = Home::new(false);
    let (mut child, url) = common::http_gateway(&home, &[]);
    let http = reqwest::blocking::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |token: Option<&str>, host: Option<&str>| {
        let mut r = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(h) = host {
            r = r.header("host", h);
        }
        r.send().unwrap()
    };
    assert_eq!(post(None, None).status(), 401);
    assert_eq!(post(Some("wrong-token-wrong-token-wrong-token"), None).status(), 401);
    let port = url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp");
    assert_eq!(post(Some(&home.token()), Some(&format!("evil.example:{port}"))).status(), 421);
    assert!(post(Some(&home.token()), None).status().is_success());
    let _ = child.kill();
    let _ = child.wait();

    // --no-auth: allowed on loopback (with a warning); refused elsewhere, as is a remote bind.
    let (mut open, url) = common::http_gateway(&home, &["--no-auth"]);
    let r = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(init)
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let _ = open.kill();
    let _ = open.wait();
    for args in [vec!["--http", "0.0.0.0:0"], vec!["--http", "0.0.0.0:0", "--allow-remote", "--no-auth"]] {
        let out = std::process::Command::new(switchboard_testkit::cli())
            .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
            .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
            .arg("--config")
            .arg(&home.config)
            .arg("gateway")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("loopback"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_narrows_what_a_client_sees() {
    let home = Home::with(
        false,
        json!({
            "servers": {"other": {"command": switchboard_testkit::fixture(), "args": ["--name", "other"]}},
            "profiles": {"reader": {"servers": ["fx"], "tools": {"deny": ["*mutate*", "fx/crash"]}}}
        }),
    );
    let (mut child, url) = common::http_gateway(&home, &[]);
    let token = home.token();
    let names = |tools: Vec<rmcp::model::Tool>| tools.into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
    let all = Recorder { seen: tx.clone(), elicitation: false }.serve(client_transport(&url, &token)).await.unwrap();
    let everything = names(all.list_all_tools().await.unwrap());
    assert!(everything.contains(&"other__echo".into()) && everything.contains(&"fx__mutate".into()));
    let reader = Recorder { seen: tx, elicitation: false }
        .serve(client_transport(&format!("{url}?profile=reader"), &token))
        .await
        .unwrap();
    let narrow = names(reader.list_all_tools().await.unwrap());
    assert!(narrow.contains(&"fx__echo".into()), "{narrow:?}");
    assert!(!narrow.iter().any(|n| n.contains("other") || n.contains("mutate") || n.ends_with("crash")), "{narrow:?}");
    let refused = reader.call_tool(CallToolRequestParams::new("fx__mutate")).await;
    assert!(refused.is_err(), "a tool outside the profile was called");
    let r = all
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(json!({"text": "x"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains('x'));
    // An unknown profile is an error naming it.
    let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
    let unknown =
        Recorder { seen: tx, elicitation: false }.serve(client_transport(&format!("{url}?profile=nope"), &token)).await;
    match unknown {
        Ok(c) => {
            let e = c.list_all_tools().await.unwrap_err();
            assert!(e.to_string().contains("nope"), "{e}");
        }
        Err(e) => assert!(e.to_string().contains("nope"), "{e}"),
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `switchboard serve` answers `/mcp` on its own port with the same token and the same hub as
/// the dashboard; a page of another origin is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_mcp_with_its_own_token() {
    let home = Home::new(false);
    std::fs::copy(&home.config, home.path().join("user.json")).unwrap();
    let mut serve = switchboard_testkit::switchboard(home.path())
        .args(["serve", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = switchboard_testkit::serve_address(&mut serve);
    let serve = common::Killed(serve);
    let url = format!("http://{addr}/mcp");
    let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
    let client = Recorder { seen: tx, elicitation: true }.serve(client_transport(&url, &home.token())).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fx__echo"), "{tools:?}");
    let r = client.call_tool(CallToolRequestParams::new("fx__ask")).await.unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("Ada"), "the question went to the MCP client");
    // The dashboard's API sees the same hub.
    let http = reqwest::Client::new();
    let servers: serde_json::Value = http
        .get(format!("http://{addr}/api/servers"))
        .bearer_auth(home.token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(servers.to_string().contains("\"fx\""), "{servers}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let refused = http
        .post(&url)
        .bearer_auth(home.token())
        .header("origin", "http://evil.example")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(init)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let no_token = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(init)
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), 401);
    client.cancel().await.unwrap();
    drop(serve);
}

/// The instructions a client of 2026-07-28 gets from `server/discover` (asked for on every one
/// of its requests, so the gateway keeps what it said) and a 2025-11-25 client from
/// `initialize` follow the servers: a server disabled by a reload is said to be so at once,
/// not as it was when the gateway last described itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_gateway_says_of_itself_follows_the_servers_for_both_eras() {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let home = Home::new(false);
    let (_child, url) = common::http_gateway(&home, &[]);
    let instructions = |modern: bool| {
        let (url, token) = (url.clone(), home.token());
        async move {
            let transport = client_transport(&url, &token);
            let client = if modern {
                let lifecycle = ClientLifecycleMode::Discover {
                    preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
                };
                ().serve_with_lifecycle(transport, lifecycle).await.unwrap()
            } else {
                ().serve(transport).await.unwrap()
            };
            let said = client.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
            // A request of its own after discovery: the gateway answers it with the same view.
            assert!(client.list_all_tools().await.is_ok());
            client.cancel().await.unwrap();
            said
        }
    };
    for modern in [true, false] {
        let said = instructions(modern).await;
        assert!(said.contains("- fx: connected"), "modern {modern}: {said}");
    }
    let mut config: serde_json::Value = serde_json::from_slice(&std::fs::read(&home.config).unwrap()).unwrap();
    config["servers"]["fx"]["enabled"] = json!(false);
    let tmp = home.config.with_extension("tmp");
    std::fs::write(&tmp, config.to_string()).unwrap();
    std::fs::rename(&tmp, &home.config).unwrap();
    for modern in [true, false] {
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let said = instructions(modern).await;
            if !said.contains("- fx: connected") && said.contains("- fx:") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "modern {modern}: still said after the reload: {said}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

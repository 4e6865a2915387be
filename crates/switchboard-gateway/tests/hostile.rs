//! Hostile upstreams and vanishing clients: an upstream that crashes mid-call, one that hangs,
//! one that floods log messages, beside a healthy one whose calls must all succeed; a
//! downstream client that goes away mid-call, whose upstream call must be cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Home, Recorder, Seen};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchboard_testkit::fixture;

fn args(v: serde_json::Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_a_hanging_and_a_flooding_upstream_leave_the_healthy_one_alone() {
    let home = Home::with(
        false,
        json!({"servers": {
            "crashy": {"command": fixture(), "args": ["--name", "crashy"]},
            "hang": {"command": fixture(), "args": ["--name", "hang"], "tool_timeout_ms": 1000},
            "flood": {"command": fixture(), "args": ["--name", "flood", "--notify-flood"]},
        }}),
    );
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let client = Recorder { seen: tx, elicitation: false }
        .serve(TokioChildProcess::new(home.gateway(&[])).unwrap())
        .await
        .unwrap();
    let peer = client.peer().clone();
    // The healthy upstream, called all along.
    let healthy = tokio::spawn(async move {
        let (mut ok, mut failed) = (0, Vec::new());
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(6) {
            let r = peer
                .call_tool(CallToolRequestParams::new("fx__echo").with_arguments(args(json!({"text": "ok"}))))
                .await;
            match r {
                Ok(r) if serde_json::to_string(&r.content).unwrap().contains("ok") => ok += 1,
                other => failed.push(format!("{other:?}")),
            }
        }
        (ok, failed)
    });
    // Crash mid-call: the error names the server and the cause; the next call reconnects.
    let crashed = client.call_tool(CallToolRequestParams::new("crashy__crash")).await.unwrap_err().to_string();
    assert!(crashed.contains("crashy"), "{crashed}");
    assert!(crashed.contains("exit") || crashed.contains("closed"), "{crashed}");
    let again = client
        .call_tool(CallToolRequestParams::new("crashy__echo").with_arguments(args(json!({"text": "back"}))))
        .await
        .unwrap();
    assert!(serde_json::to_string(&again.content).unwrap().contains("back"));
    // Hang: the call times out with the server's name; the gateway goes on.
    let hung = client
        .call_tool(CallToolRequestParams::new("hang__slow").with_arguments(args(json!({"ms": 60000, "steps": 1}))))
        .await
        .unwrap_err()
        .to_string();
    assert!(hung.contains("`hang`") && hung.contains("timed out"), "{hung}");
    let (ok, failed) = healthy.await.unwrap();
    assert!(failed.is_empty(), "healthy calls failed: {failed:?}");
    assert!(ok > 10, "only {ok} healthy calls");
    // The flood reached the client bounded by the hub's rate (1000 a second, bursts of 2000).
    let mut logs = 0;
    while let Ok(s) = seen.try_recv() {
        if matches!(s, Seen::Log { logger: Some(ref l), .. } if l == "flood") {
            logs += 1;
        }
    }
    assert!(logs > 0, "no log of the flooding server reached the client");
    assert!(logs < 2000 + 1000 * 30, "{logs} log messages: not bounded");
    client.cancel().await.unwrap();
}

/// A 2026-07-28 client over HTTP that goes away mid-call (its response stream closes): the
/// upstream's request is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_mid_call_cancels_the_upstream_call() {
    let home = Home::new(false);
    let (child, url) = common::http_gateway(&home, &[]);
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"ms": 500, "steps": 20}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }},
    });
    let http = reqwest::Client::new();
    let token = home.token();
    // The gateway answers once the call has something to say: the request is in flight until
    // then, and the client goes away meanwhile (its connection dropped).
    let request = http
        .post(&url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fx__slow")
        .body(body.to_string())
        .send();
    let client = tokio::spawn(request);
    assert!(home.wait_call("slow", Duration::from_secs(10)).await);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!client.is_finished(), "the call finished before its client could leave");
    client.abort();
    assert!(
        home.wait_call("cancelled slow", Duration::from_secs(10)).await,
        "the upstream call went on after its client left: {:?}",
        home.calls()
    );
    drop(child);
}

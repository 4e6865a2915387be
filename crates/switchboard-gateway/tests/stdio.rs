//! `switchboard gateway` on stdio, driven by rmcp's client: two real upstreams (the fixture
//! and server-everything) through one session; progress, cancellation, elicitation,
//! list_changed, resource updates and logs forwarded; stdin EOF ends every upstream tree.
// `resources/subscribe` is legacy-only in rmcp (deprecated), and exactly what is tested here.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

mod common;

use std::time::Duration;

use common::{Home, Recorder, Seen, wait_seen};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ReadResourceRequestParams, SubscribeRequestParams,
};
use rmcp::service::PeerRequestOptions;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchboard_testkit::{pids_with_arg, wait_gone};

fn args(v: serde_json::Value) -> Option<rmcp::model::JsonObject> {
    v.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_reaches_both_upstreams_with_everything_forwarded() {
    let home = Home::new(true);
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let transport = TokioChildProcess::new(home.gateway(&[])).unwrap();
    let client = Recorder { seen: tx, elicitation: true }.serve(transport).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("switchboard"));
    // Each server with its status. server-everything (node) takes 450-500 ms to answer its
    // `initialize` on a slow day, about the 500 ms `initialize` waits for a server never seen
    // (`FIRST_LIST_WAIT`): it may still be starting, and its tools then come with
    // `list_changed`, as they do to an agent.
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("- fx: connected")
            && (instructions.contains("- ev: connected") || instructions.contains("- ev: connecting")),
        "{instructions}"
    );
    assert!(info.capabilities.tools.as_ref().and_then(|t| t.list_changed) == Some(true));

    // Both upstreams' tools, under prefixed names, schemas as the upstream wrote them.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let tools = loop {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "ev__echo") || std::time::Instant::now() > deadline {
            break tools;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"fx__echo") && names.contains(&"ev__echo"), "{names:?}");
    let add = tools.iter().find(|t| t.name == "fx__add").unwrap();
    assert_eq!(add.input_schema.get("required"), Some(&json!(["a", "b"])));

    // A call to each, raw results.
    let r = client
        .call_tool(CallToolRequestParams::new("fx__add").with_arguments(args(json!({"a": 2, "b": 3})).unwrap()))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 5.0})));
    let r = client
        .call_tool(CallToolRequestParams::new("ev__echo").with_arguments(args(json!({"message": "hi"})).unwrap()))
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("hi"));

    // Progress, with the client's own token.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__slow").with_arguments(args(json!({"ms": 20, "steps": 3})).unwrap()),
    ));
    let handle = client.send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    let token = serde_json::to_value(&handle.progress_token).unwrap().to_string();
    handle.await_response().await.unwrap();
    let mut steps = Vec::new();
    while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await {
        if let Seen::Progress { token: t, progress } = s {
            assert_eq!(t, token, "progress carries the client's token");
            steps.push(progress);
        }
    }
    assert_eq!(steps, vec![1.0, 2.0, 3.0]);

    // Cancellation: the upstream request is cancelled, nothing else.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__slow").with_arguments(args(json!({"ms": 500, "steps": 20})).unwrap()),
    ));
    let handle = client.send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    handle.cancel(Some("test".into())).await.unwrap();
    assert!(
        home.wait_call("cancelled slow", Duration::from_secs(10)).await,
        "the upstream saw no cancellation: {:?}",
        home.calls()
    );
    let r = client
        .call_tool(CallToolRequestParams::new("fx__echo").with_arguments(args(json!({"text": "still here"})).unwrap()))
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("still here"));

    // An upstream's elicitation, answered by this client.
    let r = client.call_tool(CallToolRequestParams::new("fx__ask")).await.unwrap();
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("accept") && text.contains("Ada"), "{text}");

    // list_changed when an upstream adds a tool; the new tool is listed.
    client.call_tool(CallToolRequestParams::new("fx__mutate")).await.unwrap();
    assert!(wait_seen(&mut seen, Duration::from_secs(10), |s| *s == Seen::ToolsChanged).await);
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fx__added_0"), "{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>());

    // Resources: subscribe through the gateway, updates come back; the upstream's logs too.
    let resources = client.list_all_resources().await.unwrap();
    let uri = resources.iter().map(|r| r.uri.clone()).find(|u| u.starts_with("demo://")).unwrap();
    assert!(resources.iter().any(|r| r.uri == "switchboard://servers"));
    let servers = client.read_resource(ReadResourceRequestParams::new("switchboard://servers")).await.unwrap();
    assert!(serde_json::to_string(&servers).unwrap().contains("connected"));
    let read = client.read_resource(ReadResourceRequestParams::new(uri.clone())).await.unwrap();
    assert!(!read.contents.is_empty());
    client.subscribe(SubscribeRequestParams::new(uri.clone())).await.unwrap();
    assert!(
        wait_seen(
            &mut seen,
            Duration::from_secs(10),
            |s| matches!(s, Seen::Log { logger: Some(l), data } if l == "ev" && data.contains("Subscribe"))
        )
        .await,
        "the upstream's log message did not reach the client with its server's name"
    );
    client.call_tool(CallToolRequestParams::new("ev__toggle-subscriber-updates")).await.unwrap();
    assert!(wait_seen(&mut seen, Duration::from_secs(15), |s| *s == Seen::ResourceUpdated(uri.clone())).await);

    // stdin closes: the gateway ends every upstream's tree (the fixture's hostile forks too).
    assert!(!pids_with_arg(&home.marker).is_empty(), "the fixture's forks are running");
    client.cancel().await.unwrap();
    let left = wait_gone(&home.marker, Duration::from_secs(15));
    assert!(left.is_empty(), "left after stdin closed: {left:?}");
}

/// Era translation the other way: a 2026-07-28 upstream (the Python SDK's server) asks through
/// `input_required` rounds; this client of 2025-11-25 gets ordinary requests, answers them, and
/// the upstream sees this client's answers and roots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_upstreams_rounds_reach_a_legacy_client_as_requests() {
    let script = switchboard_testkit::workspace().join("tests/peers/py_server.py");
    let home = Home::with(
        false,
        json!({"servers": {"py": {"command": switchboard_testkit::python(), "args": [script], "protocol_version": "2026-07-28"}}}),
    );
    let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
    let client = Recorder { seen: tx, elicitation: true }
        .serve(TokioChildProcess::new(home.gateway(&[])).unwrap())
        .await
        .unwrap();
    assert_eq!(client.peer_info().unwrap().protocol_version.as_str(), "2025-11-25");
    let r = client.call_tool(CallToolRequestParams::new("py__favourite_colour")).await.unwrap();
    let text = serde_json::to_string(&r.content).unwrap();
    // The client answered `name` only: the server's model takes its default colour.
    assert!(text.contains("colour: teal"), "{text}");
    let r = client.call_tool(CallToolRequestParams::new("py__client_roots")).await.unwrap();
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("file:///home/ada/project"), "the upstream did not see the client's roots: {text}");
    client.cancel().await.unwrap();
}

/// Results pass through raw by default; `--model-results` applies switchboard's budget (the
/// text cut, the whole kept in a file the note names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_results_apply_the_budget_raw_results_do_not() {
    let home = Home::new(false);
    let big = || CallToolRequestParams::new("fx__big").with_arguments(args(json!({"bytes": 300000})).unwrap());
    for (flags, cut) in [(vec![], false), (vec!["--model-results"], true)] {
        let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
        let client = Recorder { seen: tx, elicitation: false }
            .serve(TokioChildProcess::new(home.gateway(&flags)).unwrap())
            .await
            .unwrap();
        let r = client.call_tool(big()).await.unwrap();
        let text = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>();
        if cut {
            assert!(text.len() < 300000 && text.contains("Output truncated"), "{} bytes", text.len());
        } else {
            assert_eq!(text.len(), 300000);
        }
        client.cancel().await.unwrap();
    }
}

/// The config file edited while a client is connected: the session stays, the client is told
/// `tools/list_changed`, an added server's tools are listed, a removed one's process ends, and
/// the server that did not change keeps its process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stays_connected_through_a_reload_and_sees_the_lists_change() {
    let home = Home::new(false);
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let client = Recorder { seen: tx, elicitation: false }
        .serve(TokioChildProcess::new(home.gateway(&[])).unwrap())
        .await
        .unwrap();
    let fx = pids_with_arg(&home.marker);
    assert!(!fx.is_empty());
    // A client is told of changes to lists it has seen.
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    let original: serde_json::Value = serde_json::from_slice(&std::fs::read(&home.config).unwrap()).unwrap();
    let save = |config: &serde_json::Value| {
        let tmp = home.path().join(".gateway.json.tmp");
        std::fs::write(&tmp, config.to_string()).unwrap();
        std::fs::rename(&tmp, &home.config).unwrap();
    };
    let added_marker = switchboard_testkit::unique_marker("reload-added");
    let mut more = original.clone();
    more["servers"]["fx2"] =
        json!({"command": switchboard_testkit::fixture(), "args": ["--name", "fx2", "--marker", added_marker]});
    save(&more);
    assert!(wait_seen(&mut seen, Duration::from_secs(15), |s| *s == Seen::ToolsChanged).await, "told of the new tools");
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"fx2__echo".to_string()) && names.contains(&"fx__echo".to_string()), "{names:?}");
    assert_eq!(pids_with_arg(&home.marker), fx, "the unchanged server kept its process");
    assert_eq!(pids_with_arg(&added_marker).len(), 1);

    save(&original);
    assert!(wait_seen(&mut seen, Duration::from_secs(15), |s| *s == Seen::ToolsChanged).await, "told again");
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(!names.iter().any(|n| n.starts_with("fx2__")), "{names:?}");
    assert!(wait_gone(&added_marker, Duration::from_secs(10)).is_empty(), "the removed server's process ended");
    let r = client
        .call_tool(
            CallToolRequestParams::new("fx__echo")
                .with_arguments(args(json!({"text": "still here"})).unwrap_or_default()),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("still here"));
    client.cancel().await.unwrap();
    assert!(wait_gone(&home.marker, Duration::from_secs(10)).is_empty());
}

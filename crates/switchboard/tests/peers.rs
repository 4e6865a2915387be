//! Against real servers no one here wrote: the official npm servers and a Python server on the
//! `mcp` package. They are installed on demand into `<workspace>/.peers`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestEnv, args, long_running_progress, node_peer, python, text, workspace};
use serde_json::json;
use switchboard::CallOptions;
use switchboard::events::Event;

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_over_stdio() {
    let env = TestEnv::new();
    let hub = env
        .hub(
            &json!({"servers": {"everything": {"command": "node", "args": [node_peer("server-everything"), "stdio"]}}}),
        )
        .await;
    assert_eq!(hub.status("everything").map(|s| s.state()), Some("connected"), "{:?}", hub.status("everything"));
    let catalog = hub.catalog();
    let tools: Vec<&str> = catalog.tools().iter().map(|t| t.tool.name.as_ref()).collect();
    for expected in ["echo", "get-sum", "trigger-long-running-operation", "get-tiny-image", "get-resource-reference"] {
        assert!(tools.contains(&expected), "{expected} missing from {tools:?}");
    }
    // Every page of resources was followed (the server pages them).
    assert!(catalog.resources().len() >= 7, "{}", catalog.resources().len());
    assert!(!catalog.resource_templates().is_empty());
    assert!(catalog.prompts().iter().any(|p| p.prompt.name == "simple-prompt"));

    let out = hub.call_tool("mcp__everything__echo", args(json!({"message": "hi"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("hi"), "{}", text(&out));
    let out =
        hub.call_tool("mcp__everything__get-sum", args(json!({"a": 2, "b": 40})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("42"), "{}", text(&out));

    let seen = long_running_progress(&hub, "everything", 4).await;
    assert!(seen >= 3, "saw {seen} progress notifications");

    let out = hub.call_tool("mcp__everything__get-tiny-image", None, CallOptions::new()).await.unwrap();
    let blocks = serde_json::to_value(&out.model().blocks).unwrap();
    assert!(
        blocks
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["data_url"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,"))),
        "{blocks}"
    );

    let out = hub
        .call_tool(
            "mcp__everything__get-resource-reference",
            args(json!({"resourceType": "Text", "resourceId": 1})),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert!(text(&out).contains("\"uri\""), "{}", text(&out));

    let first = catalog.resources()[0].resource.uri.clone();
    let read = hub.read_resource("everything", &first).await.unwrap();
    assert!(!read.contents.is_empty());
    let prompt = hub.get_prompt("everything", "args-prompt", args(json!({"city": "Lyon"}))).await.unwrap();
    assert!(serde_json::to_string(&prompt).unwrap().contains("Lyon"));

    // We declare roots: the server registers `get-roots-list` after start-up (announced with
    // tools/list_changed), asks for our roots, and reports the project root.
    let started = std::time::Instant::now();
    while hub.catalog().tool("mcp__everything__get-roots-list").is_none() {
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "get-roots-list never appeared");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = hub.call_tool("mcp__everything__get-roots-list", None, CallOptions::new()).await.unwrap();
    let root = format!("file://{}", env.dir.path().display());
    assert!(text(&out).contains(&root), "{root} not in {}", text(&out));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_and_memory_servers() {
    let env = TestEnv::new();
    let root = env.dir.path().join("files");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("note.txt"), "switchboard was here").unwrap();
    let root = root.canonicalize().unwrap();
    let hub = env
        .hub(&json!({"servers": {
            "fs": {"command": "node", "args": [node_peer("server-filesystem"), root.display().to_string()]},
            "memory": {"command": "node", "args": [node_peer("server-memory")], "env": {"MEMORY_FILE_PATH": env.dir.path().join("memory.jsonl").display().to_string()}},
        }}))
        .await;
    let path = root.join("note.txt").display().to_string();
    let out = hub.call_tool("mcp__fs__read_text_file", args(json!({"path": path})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("switchboard was here"), "{}", text(&out));
    let out = hub
        .call_tool("mcp__fs__read_text_file", args(json!({"path": "/etc/passwd"})), CallOptions::new())
        .await
        .unwrap();
    assert!(out.is_error() && text(&out).starts_with("MCP tool returned an error:"), "{}", text(&out));

    let entities =
        json!({"entities": [{"name": "switchboard", "entityType": "project", "observations": ["written in Rust"]}]});
    hub.call_tool("mcp__memory__create_entities", args(entities), CallOptions::new()).await.unwrap();
    let out = hub.call_tool("mcp__memory__read_graph", None, CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("written in Rust"), "{}", text(&out));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_server() {
    let env = TestEnv::new();
    let script = workspace().join("tests/peers/py_server.py");
    let hub = env.hub(&json!({"servers": {"py": {"command": python().display().to_string(), "args": [script.display().to_string()]}}})).await;
    match hub.status("py") {
        Some(switchboard::status::ServerStatus::Connected { server_name, instructions, .. }) => {
            assert_eq!(server_name, "python-peer");
            assert!(instructions.unwrap_or_default().contains("switchboard's tests"));
        }
        other => panic!("{other:?}"),
    }
    let out = hub.call_tool("mcp__py__multiply", args(json!({"a": 6, "b": 7})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("42"), "{}", text(&out));
    let out = hub.call_tool("mcp__py__shout", args(json!({"text": "quiet"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("QUIET"));
    let read = hub.read_resource("py", "py://greeting").await.unwrap();
    assert!(serde_json::to_string(&read).unwrap().contains("hello from python"));
    let prompt = hub.get_prompt("py", "review", args(json!({"code": "fn main() {}"}))).await.unwrap();
    assert!(serde_json::to_string(&prompt).unwrap().contains("fn main"));
    hub.shutdown().await;
}

/// A resource subscription outlives the connection: after a reconnect (a new session, which
/// starts with none) the hub subscribes again, so the server's updates keep coming.
#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_survives_a_reconnect() {
    let env = TestEnv::new();
    let everything = json!({"command": "node", "args": [node_peer("server-everything"), "stdio"]});
    let hub = env.hub(&json!({"servers": {"everything": everything}})).await;
    let uri = hub.catalog().resources()[0].resource.uri.clone();
    hub.subscribe_resource("everything", &uri).await.unwrap();
    // A new process, so a new session.
    hub.reconnect("everything").await.unwrap();
    let mut events = hub.subscribe();
    // server-everything sends updates (every 5 s) only for the session's subscriptions.
    hub.call_tool("mcp__everything__toggle-subscriber-updates", None, CallOptions::new()).await.unwrap();
    let event = common::wait_event(&mut events, |e| matches!(e, Event::ResourceUpdated { .. })).await;
    assert_eq!(event, Event::ResourceUpdated { server: "everything".into(), uri });
    hub.shutdown().await;
}

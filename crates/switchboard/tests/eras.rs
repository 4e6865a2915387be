//! Both protocol eras against the official Python SDK (the `mcp` package), which speaks
//! 2026-07-28 (stateless: `server/discover`, `subscriptions/listen`, `input_required`
//! results) and the handshake-era versions on the same port; and the requests servers make of
//! the client (elicitation, roots, sampling) over HTTP with `server-everything`. The same hub,
//! elicitor, sampler and roots serve both eras: what a server asks for is answered whether it
//! arrives as a request of its own or inside an `input_required` result.
// Sampling and roots are deprecated by SEP-2577 but still carried by 2026-07-28.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    Peer, TestEnv, args, free_port, node_peer, python, python_peer, text, wait_event, wait_listening, workspace,
};
use serde_json::json;
use switchboard::CallOptions;
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};
use switchboard::events::Event;
use switchboard::sampling::{CreateMessageResult, Sampler, SamplingMessage, SamplingRequest};
use switchboard::status::ServerStatus;

/// Answers every elicitation with a colour, remembering what was asked.
#[derive(Default)]
struct Crimson(Mutex<Vec<String>>);

impl Elicitor for Crimson {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        self.0.lock().unwrap().push(format!("{}: {}", request.server, request.message));
        let mut values = serde_json::Map::new();
        values.insert("colour".into(), json!("crimson"));
        values.insert("name".into(), json!("Ada"));
        Box::pin(async move { ElicitationAnswer::Accept(values) })
    }
}

/// A "model" that answers with the length of what it was sent.
#[derive(Default)]
struct Counter(Mutex<Vec<String>>);

impl Sampler for Counter {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn Future<Output = Result<CreateMessageResult, String>> + Send + '_>> {
        let sent = serde_json::to_string(&request.params.messages).unwrap();
        self.0.lock().unwrap().push(request.server.clone());
        Box::pin(async move {
            Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text(format!("{} bytes", sent.len())),
                "counter".into(),
            ))
        })
    }
}

fn protocol(status: Option<ServerStatus>) -> String {
    match status {
        Some(ServerStatus::Connected { protocol_version, .. }) => protocol_version,
        other => panic!("not connected: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_server_in_both_eras() {
    let (_http, port) = python_peer("streamable-http");
    let env = TestEnv::new();
    let roots = env.dir.path().join("my project");
    std::fs::create_dir_all(&roots).unwrap();
    let elicitor = Arc::new(Crimson::default());
    let sampler = Arc::new(Counter::default());
    let options = env.options().elicitor(elicitor.clone()).sampler(sampler.clone()).roots(vec![roots.clone()]);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let script = workspace().join("tests/peers/py_server.py").display().to_string();
    let hub = env
        .hub_with(
            &json!({"servers": {
                // Unpinned over HTTP: `server/discover` finds the newest era.
                "modern": {"url": url},
                "legacy": {"url": url, "protocol_version": "2025-11-25"},
                // Over stdio the handshake is the default; a pin asks for the stateless era.
                "stdio26": {"command": python().display().to_string(), "args": [script], "protocol_version": "2026-07-28"},
            }}),
            options,
        )
        .await;
    assert_eq!(protocol(hub.status("modern")), "2026-07-28");
    assert_eq!(protocol(hub.status("legacy")), "2025-11-25");
    assert_eq!(protocol(hub.status("stdio26")), "2026-07-28");

    for server in ["modern", "legacy", "stdio26"] {
        let call = |tool: &str, a: serde_json::Value| {
            let name = format!("mcp__{server}__{tool}");
            let hub = &hub;
            async move {
                let out = hub.call_tool(&name, args(a), CallOptions::new()).await;
                // The text block (the structured copy follows on its own line).
                text(&out.unwrap_or_else(|e| panic!("{name}: {e}"))).lines().next().unwrap_or_default().to_string()
            }
        };
        assert_eq!(call("multiply", json!({"a": 6, "b": 7})).await, "42.0", "{server}");
        // Elicitation: a request of its own (2025-11-25) or an `input_required` round.
        assert_eq!(call("favourite_colour", json!({})).await, "colour: crimson", "{server}");
        // Roots: the configured folder, as a file URI.
        assert_eq!(
            call("client_roots", json!({})).await,
            "file://".to_string() + &roots.display().to_string().replace(' ', "%20"),
            "{server}"
        );
        // Sampling: the embedding application's model.
        assert!(call("summarise", json!({"text": "four"})).await.starts_with("model said: "), "{server}");
        let read = hub.read_resource(server, "py://greeting").await.unwrap();
        assert!(serde_json::to_string(&read).unwrap().contains("hello from python"), "{server}");
        let prompt = hub.get_prompt(server, "review", args(json!({"code": "x = 1"}))).await.unwrap();
        assert!(serde_json::to_string(&prompt).unwrap().contains("x = 1"), "{server}");
    }
    assert_eq!(elicitor.0.lock().unwrap().len(), 3, "{:?}", elicitor.0.lock().unwrap());
    assert!(elicitor.0.lock().unwrap().iter().all(|m| m.ends_with(": Which colour?")));
    assert_eq!(sampler.0.lock().unwrap().len(), 3);

    // 2026-07-28 list changes and resource updates ride `subscriptions/listen`.
    let mut events = hub.subscribe();
    hub.subscribe_resource("modern", "py://greeting").await.unwrap();
    hub.call_tool("mcp__modern__touch", args(json!({"uri": "py://greeting"})), CallOptions::new()).await.unwrap();
    wait_event(
        &mut events,
        |e| matches!(e, Event::ResourceUpdated { server, uri } if server == "modern" && uri == "py://greeting"),
    )
    .await;
    hub.call_tool("mcp__modern__add_tool", args(json!({"name": "late_tool"})), CallOptions::new()).await.unwrap();
    let started = std::time::Instant::now();
    while hub.catalog().tool("mcp__modern__late_tool").is_none() {
        assert!(started.elapsed() < Duration::from_secs(20), "the tool list change did not arrive");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Unsubscribing ends the updates for that resource: with another one still subscribed,
    // touching both brings only the other (in order, on the same stream).
    hub.subscribe_resource("modern", "py://other").await.unwrap();
    hub.unsubscribe_resource("modern", "py://greeting").await.unwrap();
    let mut events = hub.subscribe();
    for uri in ["py://greeting", "py://other"] {
        hub.call_tool("mcp__modern__touch", args(json!({"uri": uri})), CallOptions::new()).await.unwrap();
    }
    let next = wait_event(&mut events, |e| matches!(e, Event::ResourceUpdated { .. })).await;
    assert!(matches!(&next, Event::ResourceUpdated { uri, .. } if uri == "py://other"), "{next:?}");
    // The subscription outlives the connection: a new one listens for it again.
    hub.reconnect("modern").await.unwrap();
    let mut events = hub.subscribe();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let updated = loop {
        // The listen stream is re-opened in the background: touch until an update comes.
        hub.call_tool("mcp__modern__touch", args(json!({"uri": "py://other"})), CallOptions::new()).await.unwrap();
        match tokio::time::timeout(Duration::from_millis(500), events.recv()).await {
            Ok(Ok(Event::ResourceUpdated { uri, .. })) => break uri,
            _ => assert!(std::time::Instant::now() < deadline, "no update after the reconnect"),
        }
    };
    assert_eq!(updated, "py://other");

    // A health check on a stateless server (no ping in 2026-07-28) leaves it connected.
    assert_eq!(protocol(Some(hub.revalidate("modern").await.unwrap())), "2026-07-28");
    hub.shutdown().await;

    // Without an elicitor or a sampler neither capability is declared, and the server says so.
    let bare = env.hub(&json!({"servers": {"modern": {"url": url}}})).await;
    for (tool, capability) in [("favourite_colour", "elicitation"), ("summarise", "sampling")] {
        let out = bare.call_tool(&format!("mcp__modern__{tool}"), args(json!({"text": "x"})), CallOptions::new()).await;
        assert!(out.as_ref().is_err_and(|e| e.to_string().contains(capability)), "{tool}: {out:?}");
    }
    bare.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_asks_for_input_roots_and_a_completion_over_http() {
    let port = free_port();
    let child = std::process::Command::new("node")
        .args([node_peer("server-everything").as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _peer = Peer::new(child);
    wait_listening(port, "server-everything streamableHttp", Duration::from_secs(30));
    let env = TestEnv::new();
    let elicitor = Arc::new(Crimson::default());
    let sampler = Arc::new(Counter::default());
    let config = json!({"servers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}});
    // server-everything registers these tools only for a client that declared the capability.
    let conditional = ["get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"];
    let bare = env.hub(&config).await;
    for tool in ["trigger-elicitation-request", "trigger-sampling-request"] {
        assert!(bare.catalog().tool(&format!("mcp__web__{tool}")).is_none(), "{tool} offered without the capability");
    }
    bare.shutdown().await;

    let roots = env.dir.path().join("work");
    std::fs::create_dir_all(&roots).unwrap();
    let options = env.options().elicitor(elicitor.clone()).sampler(sampler.clone()).roots(vec![roots.clone()]);
    let hub = env.hub_with(&config, options).await;
    for tool in conditional {
        assert!(hub.catalog().tool(&format!("mcp__web__{tool}")).is_some(), "{tool} missing");
    }
    let call = |tool: &str, a: serde_json::Value| {
        let name = format!("mcp__web__{tool}");
        let hub = &hub;
        async move {
            text(&hub.call_tool(&name, args(a), CallOptions::new()).await.unwrap_or_else(|e| panic!("{name}: {e}")))
        }
    };
    let out = call("trigger-elicitation-request", json!({})).await;
    assert!(out.contains("Ada"), "{out}");
    assert_eq!(elicitor.0.lock().unwrap().len(), 1);
    let out = call("get-roots-list", json!({})).await;
    assert!(out.contains(&format!("file://{}", roots.display())), "{out}");
    let out = call("trigger-sampling-request", json!({"prompt": "hello", "maxTokens": 20})).await;
    assert!(out.contains("bytes"), "the completion is in the result: {out}");
    assert_eq!(*sampler.0.lock().unwrap(), vec!["web".to_string()]);
    hub.shutdown().await;
}

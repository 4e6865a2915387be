//! `switchboard gateway --tool-search`: the catalog behind `search_tools`, `describe_tools`
//! and `call_tool`, with real clients (rmcp's and the Python SDK's) and real upstreams (the
//! fixture, server-everything, server-memory). Calls through `call_tool` meet the same policy
//! and argument checks as direct ones: what is refused never reaches the upstream (its call
//! log says so).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::Home;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use switchboard_testkit::{node_peer, python};

fn home() -> Home {
    Home::with(
        true,
        json!({
            "servers": {"mem": {"command": "node", "args": [node_peer("server-memory")], "always_load": true}},
            "policy": {"deny": ["fx__crash"]},
            "profiles": {"no-ev": {"servers": ["fx", "mem"]}},
        }),
    )
}

async fn connect(home: &Home, args: &[&str]) -> RunningService<RoleClient, ()> {
    let client = ().serve(TokioChildProcess::new(home.gateway(args)).unwrap()).await.unwrap();
    common::servers_up(client.peer()).await;
    client
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().cloned().unwrap()))
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_tools_stand_for_the_catalog_and_calls_meet_the_policy() {
    let home = home();
    let client = connect(&home, &["--tool-search", "on"]).await;
    let instructions = client.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    assert!(instructions.contains("find tools with search_tools"), "{instructions}");

    // The three, then server-memory's tools (its server is `always_load`), nothing else.
    let listed: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(listed[..3], ["search_tools", "describe_tools", "call_tool"]);
    assert!(listed[3..].iter().all(|n| n.starts_with("mem__")) && listed.len() == 3 + 9, "{listed:?}");

    // Ranked search over every upstream: both tools that add numbers, first.
    let found = call(&client, "search_tools", json!({"query": "add two numbers", "limit": 3})).await;
    let s = found.structured_content.clone().unwrap();
    let names: Vec<&str> = s["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names[..2].iter().copied().collect::<std::collections::BTreeSet<_>>(),
        ["ev__get-sum", "fx__add"].into()
    );
    assert!(s["total"].as_u64().unwrap() > 20, "{s}");
    assert!(text(&found).contains("fx__add (fx): Adds two numbers;"), "{}", text(&found));
    // Exact names and patterns, and a pattern that is not one.
    let found = call(&client, "search_tools", json!({"query": "select:fx__echo"})).await;
    assert_eq!(found.structured_content.unwrap()["tools"][0]["name"], "fx__echo");
    let bad = call(&client, "search_tools", json!({"query": "/(/"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("not a regular expression"), "{}", text(&bad));

    // Full definitions by name; unknown names said.
    let described = call(&client, "describe_tools", json!({"names": ["fx__add", "nope"]})).await;
    let d = described.structured_content.unwrap();
    assert_eq!(d["tools"][0]["name"], "fx__add");
    assert_eq!(d["tools"][0]["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(d["unknown"], json!(["nope"]));

    // A call through call_tool reaches the upstream.
    let r = call(&client, "call_tool", json!({"name": "ev__get-sum", "arguments": {"a": 2, "b": 40}})).await;
    assert!(text(&r).contains("42"), "{}", text(&r));
    // Denied by the policy, or arguments the schema refuses: said to the model, never sent.
    let denied = call(&client, "call_tool", json!({"name": "fx__crash", "arguments": {}})).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("is denied by rule `deny: fx__crash`"), "{}", text(&denied));
    let invalid = call(&client, "call_tool", json!({"name": "fx__add", "arguments": {"a": "two"}})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).starts_with("arguments do not match the input schema of `fx__add`"), "{}", text(&invalid));
    // A tool not listed can still be called by its name.
    let echoed = call(&client, "fx__echo", json!({"text": "direct"})).await;
    assert_eq!(text(&echoed), "direct");
    let calls = home.calls();
    assert!(calls.contains(&"echo".to_string()), "{calls:?}");
    assert!(!calls.iter().any(|l| l == "crash" || l == "add"), "{calls:?}");
    // An unknown name through call_tool is a protocol error, as a direct call's.
    let unknown = client
        .call_tool(
            CallToolRequestParams::new("call_tool")
                .with_arguments(json!({"name": "nope"}).as_object().cloned().unwrap()),
        )
        .await;
    assert!(unknown.unwrap_err().to_string().contains("unknown tool `nope`"));
    client.cancel().await.unwrap();

    // The audit log has the calls made through call_tool under the inner tool's catalog name
    // (whatever the names the client sees; written by the gateway as it ends).
    let mut lines: Vec<Value> = Vec::new();
    for _ in 0..100 {
        lines = std::fs::read_dir(switchboard_testkit::data_dir(home.path()).join("audit"))
            .into_iter()
            .flatten()
            .flatten()
            // The day files (`lost.json` beside them counts records a full disk lost).
            .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
            .flat_map(|f| {
                std::fs::read_to_string(f.path()).unwrap_or_default().lines().map(str::to_string).collect::<Vec<_>>()
            })
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect();
        if lines.len() >= 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let seen: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["name"].as_str().unwrap_or_default(), l["outcome"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        seen,
        [
            ("mcp__ev__get-sum", "ok"),
            ("mcp__fx__crash", "denied"),
            ("mcp__fx__add", "invalid_arguments"),
            ("mcp__fx__echo", "ok")
        ],
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| l["caller"]["kind"] == "gateway"), "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_hides_tools_from_search_describe_and_call() {
    let home = home();
    let client = connect(&home, &["--tool-search", "on", "--profile", "no-ev"]).await;
    let found = call(&client, "search_tools", json!({"query": "sum of two numbers"})).await;
    let s = found.structured_content.unwrap();
    assert!(s["tools"].as_array().unwrap().iter().all(|t| !t["name"].as_str().unwrap().starts_with("ev__")), "{s}");
    let d = call(&client, "describe_tools", json!({"names": ["ev__get-sum"]})).await.structured_content.unwrap();
    assert_eq!(d["unknown"], json!(["ev__get-sum"]));
    let hidden = client
        .call_tool(CallToolRequestParams::new("call_tool").with_arguments(
            json!({"name": "ev__get-sum", "arguments": {"a": 1, "b": 1}}).as_object().cloned().unwrap(),
        ))
        .await;
    assert!(hidden.is_err(), "{hidden:?}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_defers_only_past_its_token_threshold() {
    let home = Home::new(true);
    // fx and server-everything: a few thousand tokens of definitions.
    let small = connect(&home, &["--tool-search", "auto:1000000"]).await;
    let all = small.list_all_tools().await.unwrap();
    assert!(all.len() > 20 && !all.iter().any(|t| t.name == "search_tools"), "{}", all.len());
    small.cancel().await.unwrap();
    let big = connect(&home, &["--tool-search", "auto:500"]).await;
    let names: Vec<String> = big.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["search_tools", "describe_tools", "call_tool"]);
    big.cancel().await.unwrap();
    // A mode that is none is refused before anything starts.
    let out = home.gateway(&["--tool-search", "sometimes"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use on, off, auto or auto:TOKENS"));
}

#[test]
fn the_python_sdk_client_searches_and_calls() {
    let home = home();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/search_py.py");
    let out = Command::new(python())
        .arg("-W")
        .arg("ignore")
        .arg(script)
        .arg(switchboard_testkit::cli())
        .args(["--config", home.config.to_str().unwrap(), "gateway", "--tool-search", "on"])
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no report: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        v["listed"].as_array().unwrap()[..3],
        json!(["search_tools", "describe_tools", "call_tool"]).as_array().unwrap()[..],
        "{v}"
    );
    assert!(v["found"].as_array().unwrap().iter().any(|n| n == "fx__add"), "{v}");
    assert_eq!(v["described"][0]["name"], v["found"][0], "{v}");
    assert_eq!(v["called"], json!({"isError": false, "structured": {"sum": 42.0}}), "{v}");
    assert_eq!(v["denied"]["isError"], true, "{v}");
    assert!(v["denied"]["text"].as_str().unwrap().contains("is denied by rule `deny: fx__crash`"), "{v}");
    assert!(!home.calls().iter().any(|l| l == "crash"), "{:?}", home.calls());
}

/// The gateway's instructions say the names it gives: `<server>__<tool>` by default,
/// `mcp__<server>__<tool>` with `--names prefixed`, each server's own with `--names bare`; and
/// the names listed are of that form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instructions_say_the_names_the_gateway_gives() {
    let home = home();
    for (args, said, prefix) in [
        (&[][..], "Tool names are <server>__<tool> (one longer than", "fx__"),
        (&["--names", "prefixed"][..], "Tool names are mcp__<server>__<tool>.", "mcp__fx__"),
        (&["--names", "bare"][..], "Tool names are each server's own", ""),
    ] {
        let client = connect(&home, args).await;
        let instructions = client.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
        assert!(instructions.contains(said), "{args:?}: {instructions}");
        let listed: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
        // A tool of one server alone, as named.
        assert!(listed.contains(&format!("{prefix}mutate")), "{args:?}: {listed:?}");
        // `echo`, of two servers: bare, each is the hashed catalog name the instructions say.
        let echoes: Vec<&String> = listed.iter().filter(|n| n.contains("echo")).collect();
        assert_eq!(echoes.len(), 2, "{listed:?}");
        if prefix.is_empty() {
            assert!(echoes.iter().all(|n| n.starts_with("mcp__")), "{echoes:?}");
        }
        client.cancel().await.unwrap();
    }
}

//! Leases and views: a server nobody uses is stopped after its `idle_shutdown_ms` (its process
//! checked gone through `/proc`) and started again by the next call, a call under way holds
//! it, `keep_alive` exempts it; a view cannot reach a tool or server outside it, and a view of a
//! view cannot widen it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{TestEnv, alive, args, fixture, text};
use serde_json::{Value, json};
use switchboard::config::{Profile, ToolFilter};
use switchboard::status::ServerStatus;
use switchboard::{CallOptions, Error, Hub};

fn server(name: &str, extra: Value) -> Value {
    let mut v = json!({"command": fixture().display().to_string(), "args": ["--name", name]});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn pid(hub: &Hub, name: &str) -> i32 {
    hub.server_pid(name).unwrap_or_else(|| panic!("{name} has no process: {:?}", hub.status(name)))
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 10 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unused_server_is_stopped_and_the_next_call_starts_it() {
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({
            "idle_shutdown_ms": 400,
            "servers": {
                "lease": server("lease", json!({})),
                "kept": server("kept", json!({"keep_alive": true})),
                "long": server("long", json!({"idle_shutdown_ms": 600_000})),
            }
        }))
        .await;
    let (lease, kept, long) = (pid(&hub, "lease"), pid(&hub, "kept"), pid(&hub, "long"));

    // A call under way holds the server, however long it takes.
    let slow = hub.call_tool("mcp__lease__slow", args(json!({"ms": 300, "steps": 4})), CallOptions::new()).await;
    assert!(slow.is_ok_and(|o| !o.is_error()));
    assert!(alive(lease), "stopped under a call");

    wait_for("the idle stop", || matches!(hub.status("lease"), Some(ServerStatus::Idle))).await;
    wait_for("the process to end", || !alive(lease)).await;
    assert!(hub.catalog().tool("mcp__lease__echo").is_some(), "its tools stay listed");
    assert!(alive(kept) && alive(long), "keep_alive and a longer lease keep their servers");

    let out = hub.call_tool("mcp__lease__echo", args(json!({"text": "back"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("back"));
    let again = pid(&hub, "lease");
    assert_ne!(again, lease, "a new process");
    assert!(matches!(hub.status("lease"), Some(ServerStatus::Connected { .. })));
    // And it goes again when unused again.
    wait_for("the second idle stop", || !alive(again)).await;
    assert!(alive(kept) && alive(long));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_lived_hub_keeps_its_servers() {
    let env = TestEnv::new();
    let config = json!({"idle_shutdown_ms": 100, "servers": {"a": server("a", json!({}))}});
    let hub = env.hub_with(&config, env.options().short_lived()).await;
    let a = pid(&hub, "a");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(alive(a), "one command's hub is gone before a lease matters");
    hub.shutdown().await;
}

fn profile(servers: Option<&[&str]>, allow: &[&str], deny: &[&str]) -> Profile {
    let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    Profile::new(servers.map(s), ToolFilter::new(s(allow), s(deny)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_view_cannot_reach_outside_it() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"a": server("a", json!({})), "b": server("b", json!({}))}})).await;
    let view = hub.view(&profile(Some(&["a"]), &[], &["*crash*", "a/fail"])).unwrap();
    let names: Vec<String> = view.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"mcp__a__echo".to_string()));
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__b__") || n.contains("crash") || n == "mcp__a__fail"),
        "{names:?}"
    );
    assert_eq!(view.servers().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a"]);

    let out = view.call_tool("mcp__a__echo", args(json!({"text": "in view"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("in view"));
    for outside in ["mcp__b__echo", "mcp__a__crash", "a/fail"] {
        let err = view.call_tool(outside, args(json!({})), CallOptions::new()).await.unwrap_err();
        assert!(matches!(&err, Error::OutsideView { .. }), "{outside}: {err:?}");
    }
    assert!(matches!(view.read_resource("b", "fixture://x").await, Err(Error::OutsideView { .. })));
    assert!(matches!(view.get_prompt("b", "p", None).await, Err(Error::OutsideView { .. })));
    // A view of the view asking for everything gets no more.
    let wider = view.view(&profile(None, &["*"], &[])).unwrap();
    let err = wider.call_tool("mcp__b__echo", args(json!({})), CallOptions::new()).await.unwrap_err();
    assert!(matches!(err, Error::OutsideView { .. }), "{err:?}");
    assert!(wider.tools().iter().all(|t| t.server == "a"));
    // The crash tool was never sent: the server is still the same process.
    assert!(matches!(hub.status("a"), Some(ServerStatus::Connected { .. })));
    hub.shutdown().await;
}

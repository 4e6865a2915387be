//! `Hub::reload`: each kind of change, with the servers' processes checked through `/proc`:
//! unchanged servers keep their process, a changed launch restarts that server alone, a filter
//! change applies in place, removed servers stop, added ones start, a broken entry keeps what
//! runs, `enabled: false` stops a server and `true` starts it again, and the policy follows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{TestEnv, alive, fixture};
use serde_json::{Value, json};
use switchboard::Hub;
use switchboard::events::Event;
use switchboard::status::ServerStatus;

fn server(name: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--name".to_string(), name.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": fixture().display().to_string(), "args": args})
}

fn pid(hub: &Hub, name: &str) -> i32 {
    hub.server_pid(name).unwrap_or_else(|| panic!("{name} has no process: {:?}", hub.status(name)))
}

async fn gone(pid: i32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn tools(hub: &Hub) -> Vec<String> {
    hub.catalog().tools().iter().map(|t| t.name.clone()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_of_change_touches_only_its_server() {
    let env = TestEnv::new();
    let before = json!({"servers": {
        "same": server("same", &[]),
        "relaunched": server("relaunched", &[]),
        "filtered": server("filtered", &[]),
        "dropped": server("dropped", &[]),
        "switched": server("switched", &[]),
    }});
    let hub = env.hub(&before).await;
    let pids: Vec<(String, i32)> = ["same", "relaunched", "filtered", "dropped", "switched"]
        .iter()
        .map(|n| (n.to_string(), pid(&hub, n)))
        .collect();
    let pid_of = |name: &str| pids.iter().find(|(n, _)| n == name).map(|(_, p)| *p).unwrap();
    assert!(tools(&hub).contains(&"mcp__filtered__echo".to_string()));

    let after = json!({"servers": {
        "same": server("same", &[]),
        "relaunched": server("relaunched", &["--instructions", "new launch"]),
        "filtered": {"command": fixture().display().to_string(), "args": ["--name", "filtered"], "tools": {"deny": ["echo"]}, "tool_timeout_ms": 5000},
        "switched": {"command": fixture().display().to_string(), "args": ["--name", "switched"], "enabled": false},
        "added": server("added", &[]),
    }});
    let report = hub.reload(&env.load(&after)).await;
    assert_eq!(report.unchanged, ["same"]);
    assert_eq!(report.restarted, ["relaunched"]);
    assert_eq!(report.updated, ["filtered", "switched"]);
    assert_eq!(report.removed, ["dropped"]);
    assert_eq!(report.added, ["added"]);
    assert!(report.kept.is_empty());

    assert_eq!(pid(&hub, "same"), pid_of("same"), "an unchanged server keeps its process");
    assert!(alive(pid_of("same")));
    assert_ne!(pid(&hub, "relaunched"), pid_of("relaunched"), "a new launch is a new process");
    assert!(gone(pid_of("relaunched")).await, "the old launch ended");
    assert_eq!(hub.server_pid("filtered"), Some(pid_of("filtered")), "a filter change needs no restart");
    let names = tools(&hub);
    assert!(!names.contains(&"mcp__filtered__echo".to_string()) && names.contains(&"mcp__filtered__add".to_string()));
    assert!(gone(pid_of("dropped")).await, "a removed server ends");
    assert_eq!(hub.status("dropped"), None);
    assert!(gone(pid_of("switched")).await, "a disabled server ends");
    assert_eq!(hub.status("switched"), Some(ServerStatus::Disabled));
    assert!(matches!(hub.status("added"), Some(ServerStatus::Connected { .. })), "{:?}", hub.status("added"));
    assert!(names.contains(&"mcp__added__echo".to_string()));

    // Enabled again: started; the rest stays as it is.
    let report = hub.reload(&env.load(&json!({"servers": {
        "same": server("same", &[]),
        "relaunched": server("relaunched", &["--instructions", "new launch"]),
        "filtered": {"command": fixture().display().to_string(), "args": ["--name", "filtered"], "tools": {"deny": ["echo"]}, "tool_timeout_ms": 5000},
        "switched": server("switched", &[]),
        "added": server("added", &[]),
    }})))
    .await;
    assert_eq!(report.updated, ["switched"]);
    assert_eq!(report.unchanged, ["added", "filtered", "relaunched", "same"]);
    assert!(matches!(hub.status("switched"), Some(ServerStatus::Connected { .. })));
    assert_eq!(pid(&hub, "same"), pid_of("same"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_that_turns_invalid_keeps_what_runs_and_the_policy_follows_the_file() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"a": server("a", &[])}})).await;
    let first = pid(&hub, "a");
    let broken = env.load(&json!({"servers": {"a": {"command": 42}}, "policy": {"deny": ["mcp__a__crash"]}}));
    assert!(broken.has_errors());
    let report = hub.reload(&broken).await;
    assert_eq!(report.kept.len(), 1, "{report:?}");
    assert_eq!(report.kept[0].0, "a");
    assert!(report.kept[0].1.contains("command"), "{report:?}");
    assert_eq!(pid(&hub, "a"), first, "still running as it was");
    // The policy of the file took effect for the next call.
    let denied = hub.call_tool("mcp__a__crash", None, Default::default()).await;
    assert!(matches!(denied, Err(switchboard::Error::Denied { .. })), "{denied:?}");
    let out =
        hub.call_tool("mcp__a__echo", json!({"text": "still here"}).as_object().cloned(), Default::default()).await;
    assert!(out.is_ok_and(|o| !o.is_error()));
    hub.shutdown().await;
}

/// Saves `config` as editors do: a new file renamed over the old one.
fn save(env: &TestEnv, config: &Value) {
    let tmp = env.dir.path().join(".config.json.swp");
    std::fs::write(&tmp, serde_json::to_string_pretty(config).unwrap()).unwrap();
    std::fs::rename(&tmp, env.dir.path().join("config.json")).unwrap();
}

/// The next config event (reloaded or rejected), 10 s at most.
async fn next_config_event(events: &mut tokio::sync::broadcast::Receiver<Event>) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(e @ (Event::ConfigReloaded { .. } | Event::ConfigRejected { .. }))) => return e,
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("no config event: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn edits_are_followed_a_burst_is_one_reload_and_a_broken_save_changes_nothing() {
    let env = TestEnv::new();
    let first = json!({"servers": {"a": server("a", &[]), "b": server("b", &[])}});
    let loaded = env.load(&first);
    let hub = env.start(&loaded).await;
    let mut events = hub.subscribe();
    let follow = hub.watch_config(env.load_options(), &loaded).unwrap();
    assert!(follow.files().iter().any(|f| f.ends_with("config.json")), "{follow:?}");
    let a = pid(&hub, "a");
    let b = pid(&hub, "b");

    save(&env, &json!({"servers": {"a": server("a", &[]), "c": server("c", &[])}}));
    let Event::ConfigReloaded { report, .. } = next_config_event(&mut events).await else { panic!("rejected") };
    assert_eq!((report.added.as_slice(), report.removed.as_slice()), (&["c".to_string()][..], &["b".to_string()][..]));
    assert_eq!(pid(&hub, "a"), a, "untouched");
    assert!(gone(b).await);
    assert!(matches!(hub.status("c"), Some(ServerStatus::Connected { .. })));

    // A burst of saves: one reload, of the last one.
    for i in 0..5 {
        let mut servers = json!({"a": server("a", &[]), "c": server("c", &[])});
        servers[format!("burst{i}")] = server(&format!("burst{i}"), &[]);
        save(&env, &json!({"servers": servers}));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Event::ConfigReloaded { report, .. } = next_config_event(&mut events).await else { panic!("rejected") };
    assert_eq!(report.added, ["burst4"], "{report:?}");
    let more = tokio::time::timeout(Duration::from_secs(1), next_config_event(&mut events)).await;
    assert!(more.is_err(), "one reload for the burst: {more:?}");

    // A save that is not JSON: rejected, and everything keeps running.
    std::fs::write(env.dir.path().join("config.json"), "{\"servers\": {\"a\": ").unwrap();
    let Event::ConfigRejected { diagnostics } = next_config_event(&mut events).await else { panic!("applied") };
    assert!(diagnostics[0].message.contains("not valid JSON"), "{diagnostics:?}");
    assert_eq!(pid(&hub, "a"), a);
    assert!(matches!(hub.status("burst4"), Some(ServerStatus::Connected { .. })));
    drop(follow);
    hub.shutdown().await;
}

//! Servers that go away are tried again with backoff, the same for every transport: a server
//! that fails at start, one killed while connected (calls wait for it), a remote server
//! stopped and started again on its port (noticed without a call), a crash loop (stopped,
//! until connected by hand), a transport that closed under a live process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{TestEnv, args, fixture_server, text, wait_event};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use switchboard::events::Event;
use switchboard::status::{FailureKind, ServerStatus};
use switchboard::{CallOptions, Reconnect};

/// Quick backoff for tests: 100 ms doubling.
fn quick() -> Reconnect {
    let mut r = Reconnect::default();
    r.first_delay = Duration::from_millis(100);
    r.health_interval = Duration::from_millis(200);
    r
}

fn starts(file: &std::path::Path) -> u32 {
    std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_fails_twice_then_works_is_connected_by_the_backoff() {
    let env = TestEnv::new();
    let count = env.dir.path().join("starts");
    let entry = fixture_server(&["--fail-starts", "2", "--count-file", count.to_str().unwrap()]);
    let loaded = env.load(&json!({"servers": {"f": entry}}));
    let hub = switchboard::Hub::start(&loaded, env.options().reconnect(quick()));
    let mut events = hub.subscribe();
    let mut failures = Vec::new();
    let started = Instant::now();
    loop {
        let e = wait_event(&mut events, |e| matches!(e, Event::StatusChanged { .. })).await;
        let Event::StatusChanged { status, .. } = e else { continue };
        match status {
            ServerStatus::Failed { kind: FailureKind::ProcessExited, retry: Some(retry), message, .. } => {
                assert!(message.contains("exit code 4"), "{message}");
                assert!(retry.at_ms.is_some(), "a long-running hub sets a timer");
                failures.push((retry.attempt, started.elapsed()));
            }
            ServerStatus::Connected { .. } => break,
            ServerStatus::Connecting => {}
            other => panic!("unexpected status {other:?}"),
        }
    }
    assert_eq!(failures.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 2], "{failures:?}");
    assert_eq!(starts(&count), 3);
    // The second wait (about 200 ms) is longer than the first (about 100 ms).
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(240), "the backoff waited only {took:?}");
    let out = hub.call_tool("mcp__f__echo", args(json!({"text": "up"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "up");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_loop_stops_the_attempts_until_connected_by_hand() {
    let env = TestEnv::new();
    let count = env.dir.path().join("starts");
    let entry = fixture_server(&["--fail-starts", "1000", "--count-file", count.to_str().unwrap()]);
    let loaded = env.load(&json!({"servers": {"f": entry}}));
    let mut policy = quick();
    policy.first_delay = Duration::from_millis(20);
    let hub = switchboard::Hub::start(&loaded, env.options().reconnect(policy));
    let mut events = hub.subscribe();
    let e = wait_event(&mut events, |e| {
        matches!(e, Event::StatusChanged { status: ServerStatus::Failed { kind: FailureKind::CrashLoop, .. }, .. })
    })
    .await;
    let Event::StatusChanged { status, .. } = e else { unreachable!() };
    assert!(status.summary().contains("went away 5 times within 60 s"), "{}", status.summary());
    assert!(status.summary().contains("exit code 4"), "{}", status.summary());
    assert_eq!(starts(&count), 5);
    // No more attempts by itself ...
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(starts(&count), 5, "a crash loop is not tried again");
    // ... and a call does not try it either: it says why.
    let err = hub.call_tool("f/echo", None, CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("went away 5 times"), "{err}");
    // By hand it is tried again (and the count starts again).
    let status = hub.connect("f").await.unwrap();
    assert_eq!(starts(&count), 6);
    assert!(matches!(status, ServerStatus::Failed { kind: FailureKind::ProcessExited, .. }), "{status:?}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_is_reconnected_at_once_and_calls_wait_for_it() {
    let env = TestEnv::new();
    let hub = env.hub_with(&json!({"servers": {"f": fixture_server(&[])}}), env.options().reconnect(quick())).await;
    let mut events = hub.subscribe();
    for round in 0..3 {
        let pid = server_pid(&hub, "f").await;
        kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
        wait_event(&mut events, |e| {
            matches!(e, Event::StatusChanged { status: ServerStatus::Disconnected { .. }, .. })
        })
        .await;
        // Calls right after the exit wait for the reconnection instead of failing.
        let calls = (0..4).map(|i| {
            let hub = hub.clone();
            tokio::spawn(async move {
                hub.call_tool("mcp__f__echo", args(json!({"text": format!("{round}-{i}")})), CallOptions::new()).await
            })
        });
        for (i, c) in futures::future::join_all(calls).await.into_iter().enumerate() {
            let out = c.unwrap().unwrap_or_else(|e| panic!("round {round}, call {i}: {e}"));
            assert_eq!(text(&out), format!("{round}-{i}"));
        }
        assert_ne!(server_pid(&hub, "f").await, pid, "a new process");
    }
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transport_closed_under_a_live_process_is_noticed_and_the_next_call_goes_to_a_new_one() {
    let env = TestEnv::new();
    let log = env.dir.path().join("calls");
    let entry = fixture_server(&["--call-log", log.to_str().unwrap()]);
    let hub = env.hub_with(&json!({"servers": {"f": entry}}), env.options().short_lived()).await;
    let before = server_pid(&hub, "f").await;
    let out = hub.call_tool("mcp__f__hangup", None, CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "hanging up");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = hub.call_tool("mcp__f__echo", args(json!({"text": "again"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "again");
    assert_ne!(server_pid(&hub, "f").await, before, "sent to a new process");
    // Each call reached a server exactly once.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "hangup\necho\n");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_server_stopped_and_started_again_is_noticed_without_a_call_and_reconnected() {
    let env = TestEnv::new();
    let (peer, port) = switchboard_testkit::python_peer("streamable-http");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = env.hub_with(&json!({"servers": {"py": {"url": url}}}), env.options().reconnect(quick())).await;
    assert_eq!(hub.status("py").map(|s| s.state()), Some("connected"), "{:?}", hub.status("py"));
    let mut events = hub.subscribe();
    drop(peer);
    let e = wait_event(&mut events, |e| {
        matches!(e, Event::StatusChanged { status: ServerStatus::Disconnected { .. }, .. })
    })
    .await;
    let Event::StatusChanged { status, .. } = e else { unreachable!() };
    assert!(status.summary().contains("stopped answering"), "{}", status.summary());
    // Failed attempts while it is away, each with the next time.
    let e = wait_event(&mut events, |e| matches!(e, Event::StatusChanged { status: ServerStatus::Failed { .. }, .. }))
        .await;
    let Event::StatusChanged { status: ServerStatus::Failed { kind, retry, .. }, .. } = e else { unreachable!() };
    assert_eq!(kind, FailureKind::NetworkUnreachable);
    assert!(retry.is_some_and(|r| r.at_ms.is_some()), "{retry:?}");
    // Away for more attempts than a crash loop counts: still tried (an unreachable server is
    // not crashing; under load the restart below can take that long).
    for _ in 0..5 {
        let e =
            wait_event(&mut events, |e| matches!(e, Event::StatusChanged { status: ServerStatus::Failed { .. }, .. }))
                .await;
        let Event::StatusChanged { status: ServerStatus::Failed { kind, retry, .. }, .. } = e else { unreachable!() };
        assert_eq!(kind, FailureKind::NetworkUnreachable, "not a crash loop");
        assert!(retry.is_some_and(|r| r.at_ms.is_some()), "{retry:?}");
    }
    // Back on the same port: connected again by itself.
    let _peer = switchboard_testkit::python_script("py_server.py", &["streamable-http".into(), port.to_string()], port);
    wait_event(&mut events, |e| matches!(e, Event::StatusChanged { status: ServerStatus::Connected { .. }, .. })).await;
    assert!(hub.catalog().tools().iter().any(|t| t.server == "py"));
    hub.shutdown().await;
}

/// The pid of a connected stdio server's process (waiting for it to be connected).
async fn server_pid(hub: &switchboard::Hub, server: &str) -> i32 {
    for _ in 0..250 {
        if let Some(pid) = hub.server_pid(server) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{server} has no process: {:?}", hub.status(server));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_waiting_for_its_server_to_come_back_is_cancelled_by_its_caller_at_once() {
    let env = TestEnv::new();
    // Every start takes 3 s: after the hang-up, the next call waits for the new process.
    let entry = fixture_server(&["--init-delay-ms", "3000"]);
    let hub = env.hub_with(&json!({"servers": {"f": entry}}), env.options().reconnect(quick())).await;
    hub.call_tool("mcp__f__hangup", None, CallOptions::new()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let token = tokio_util::sync::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let asked = Instant::now();
    let out = hub.call_tool("mcp__f__echo", args(json!({"text": "x"})), CallOptions::new().cancel(token)).await;
    assert_eq!(out.unwrap_err(), switchboard::Error::Cancelled);
    // Not the end of the 3 s start: the cancellation itself ended the wait.
    assert!(asked.elapsed() < Duration::from_millis(2000), "took {:?}", asked.elapsed());
    hub.shutdown().await;
}

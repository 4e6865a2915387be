//! A server that is starting or reconnecting holds up only the requests that need it: through
//! the stdio gateway, beside a healthy upstream (the fixture), one that never answers
//! `initialize` and one that crashes and takes seconds to come back. Generous bounds, not
//! benchmarks: before, every request waited until no server was connecting (30 s per retry of
//! a hanging server, 8 s after a slow one crashed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Home;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchboard_gateway::START_WAIT;
use switchboard_testkit::fixture;

fn echo(text: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("fx__echo").with_arguments(json!({"text": text}).as_object().cloned().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_holds_up_nothing_else() {
    // `startup_timeout_ms` short, so that its retries (each a new start that never ends
    // well) come often within the test; each one used to stall every request.
    let home = Home::with(
        false,
        json!({"servers": {"hang": {"command": "sleep", "args": ["100000"], "startup_timeout_ms": 1500}}}),
    );
    let started = Instant::now();
    let client = ().serve(TokioChildProcess::new(home.gateway(&[])).unwrap()).await.unwrap();
    let initialized = started.elapsed();
    let instructions = client.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    assert!(instructions.contains("- fx: connected"), "{instructions}");
    let tools = client.list_all_tools().await.unwrap();
    let listed = started.elapsed();
    assert!(tools.iter().any(|t| t.name == "fx__echo"), "{tools:?}");
    let bound = START_WAIT + Duration::from_secs(3);
    assert!(initialized < bound && listed < bound, "initialize after {initialized:?}, tools/list after {listed:?}");

    // Calls to the healthy server while the other is tried again and again.
    let mut slowest = Duration::ZERO;
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(12) {
        let t = Instant::now();
        client.call_tool(echo("hi")).await.unwrap();
        client.list_all_tools().await.unwrap();
        slowest = slowest.max(t.elapsed());
        calls += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("initialize {initialized:?}, first tools/list {listed:?}, {calls} calls, slowest {slowest:?}");
    assert!(slowest < Duration::from_secs(1), "a call and a list took {slowest:?} while `hang` was retried");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_coming_back_after_a_crash_holds_up_only_its_own_calls() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("slow.pid");
    let home = Home::with(
        false,
        json!({"servers": {"slow": {"command": fixture(), "args": ["--name", "slow", "--init-delay-ms", "3000", "--pid-file", pid_file]}}}),
    );
    let client = ().serve(TokioChildProcess::new(home.gateway(&[])).unwrap()).await.unwrap();
    // Its first start (3 s) is longer than the first list waits for a server never seen: it
    // is listed once it is up.
    let up = Instant::now();
    while !client.list_all_tools().await.unwrap().iter().any(|t| t.name == "slow__echo") {
        assert!(up.elapsed() < Duration::from_secs(20), "slow never listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // SAFETY: a plain syscall on the fixture's pid.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let crashed = Instant::now();
    let mut slowest = Duration::ZERO;
    while crashed.elapsed() < Duration::from_secs(2) {
        let t = Instant::now();
        client.call_tool(echo("hi")).await.unwrap();
        client.list_all_tools().await.unwrap();
        slowest = slowest.max(t.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(slowest < Duration::from_secs(1), "calls to fx took up to {slowest:?} while slow came back");
    // Its own call waits for it.
    let r = client
        .call_tool(
            CallToolRequestParams::new("slow__echo")
                .with_arguments(json!({"text": "back"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.content).unwrap().contains("back"));
    println!(
        "after the crash: calls to fx {slowest:?} at most; slow's call answered {:?} after the crash",
        crashed.elapsed()
    );
    client.cancel().await.unwrap();
}

//! What one server sends cannot harm the host or another server: an answer over
//! `max_message_bytes` or one that cannot be decoded fails its own call at once with what came
//! (not a timeout) and is said in an event; a 200 MB stderr line, a notification flood and a
//! hung server beside a healthy one leave the healthy one's calls going and the host's memory
//! bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{TestEnv, args, fixture_server, text};
use serde_json::json;
use switchboard::events::Event;
use switchboard::{CallOptions, Error};

fn rss_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 =
        status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_over_max_message_bytes_fails_its_call_with_the_size_and_the_server_goes_on() {
    let env = TestEnv::new();
    let mut entry = fixture_server(&[]);
    entry["max_message_bytes"] = json!(1_000_000);
    let hub = env.hub(&json!({"servers": {"f": entry}})).await;
    let mut events = hub.subscribe();
    let started = Instant::now();
    let err = hub.call_tool("mcp__f__big", args(json!({"bytes": 3_000_000})), CallOptions::new()).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(msg.contains("over max_message_bytes (1000000)") && msg.contains("bytes"), "{msg}");
    assert!(started.elapsed() < Duration::from_secs(10), "refused at once, not timed out");
    let dropped = common::wait_event(&mut events, |e| matches!(e, Event::Dropped { .. })).await;
    assert!(
        matches!(&dropped, Event::Dropped { server, reason } if server == "f" && reason.contains("max_message_bytes")),
        "{dropped:?}"
    );
    // The server is still there, and a call under the limit goes through.
    let out = hub.call_tool("mcp__f__big", args(json!({"bytes": 500_000})), CallOptions::new()).await.unwrap();
    assert!(text(&out).len() >= 1000, "a result");
    assert_eq!(hub.status("f").map(|s| s.state()), Some("connected"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_that_cannot_be_decoded_fails_its_call_with_the_reason() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"f": fixture_server(&[])}})).await;
    for (kind, expect) in [("utf8", "not UTF-8"), ("deep", "recursion limit"), ("shape", "not a tool result")] {
        let started = Instant::now();
        let options = CallOptions::new().timeout(Duration::from_secs(20));
        let err = hub.call_tool("mcp__f__bad_answer", args(json!({"kind": kind})), options).await.unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(expect), "{kind}: {msg}");
        assert!(started.elapsed() < Duration::from_secs(10), "{kind}: said at once, not after the timeout");
    }
    let out = hub.call_tool("mcp__f__echo", args(json!({"text": "fine"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "fine");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_stderr_line_and_a_notification_flood_leave_memory_bounded_and_the_others_going() {
    let env = TestEnv::new();
    let mut hung = fixture_server(&["--init-delay-ms", "600000"]);
    hung["startup_timeout_ms"] = json!(600_000);
    let loaded = env.load(&json!({"servers": {
        "line": fixture_server(&["--stderr-line-mb", "200"]),
        "flood": fixture_server(&["--notify-flood"]),
        "hung": hung,
        "ok": fixture_server(&[]),
    }}));
    let hub = switchboard::Hub::start(&loaded, env.options());
    let mut events = hub.subscribe();
    let waited = Instant::now();
    while ["line", "flood", "ok"].iter().any(|s| hub.status(s).map(|s| s.state()) != Some("connected")) {
        assert!(waited.elapsed() < Duration::from_secs(60), "{:?}", hub.servers());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = rss_mb();
    let started = Instant::now();
    let (mut calls, mut logs, mut dropped, mut lagged) = (0u64, 0u64, 0u64, 0u64);
    while started.elapsed() < Duration::from_secs(4) {
        let out = hub.call_tool("mcp__ok__echo", args(json!({"text": "x"})), CallOptions::new()).await.unwrap();
        assert_eq!(text(&out), "x");
        calls += 1;
        // Every event so far; one missed while this loop made its call is not the flood's
        // fault (the hub's own `tool_called` events share the channel): go on past a lag.
        loop {
            match events.try_recv() {
                Ok(Event::Log { server, .. }) if server == "flood" => logs += 1,
                Ok(Event::Dropped { server, .. }) if server == "flood" => dropped += 1,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(n)) => lagged += n,
                Err(_) => break,
            }
        }
    }
    let after = rss_mb();
    eprintln!(
        "in 4 s: {calls} calls to `ok`, {logs} log events and {dropped} drop notes from `flood` ({lagged} events missed); RSS {before} -> {after} MB"
    );
    assert!(calls > 100, "only {calls} calls went through");
    assert!(dropped >= 1, "the flood was said");
    // At most the burst plus the rate, per second.
    assert!(logs <= 2000 + 1000 * 5, "{logs} log events in 4 s");
    assert!(after < before + 100, "the host's memory grew from {before} MB to {after} MB");
    let tail = hub.stderr_tail("line");
    assert!(
        tail.iter().all(|l| l.len() <= 4096 + 3),
        "stderr lines are cut: {:?}",
        tail.iter().map(String::len).collect::<Vec<_>>()
    );
    assert_eq!(hub.status("hung").map(|s| s.state()), Some("connecting"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_answering_random_garbage_fails_its_calls_in_time_and_harms_no_one() {
    let env = TestEnv::new();
    let seed: u64 = std::env::var("SWITCHBOARD_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(3)
    });
    eprintln!("garbage seed: {seed} (SWITCHBOARD_FUZZ_SEED={seed} runs this again)");
    let garbage =
        json!({"command": common::fixture().display().to_string(), "args": ["--garbage-answers", seed.to_string()]});
    let hub = env.hub(&json!({"servers": {"g": garbage, "ok": fixture_server(&[])}})).await;
    assert_eq!(hub.status("g").map(|s| s.state()), Some("connected"), "{:?}", hub.status("g"));
    let before = rss_mb();
    let (mut ok, mut failed) = (0, 0);
    for round in 0..100 {
        let started = Instant::now();
        let options = CallOptions::new().timeout(Duration::from_millis(300));
        match hub.call_tool("g/any", None, options).await {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
        assert!(started.elapsed() < Duration::from_secs(5), "round {round} (seed {seed}) took {:?}", started.elapsed());
        if round % 10 == 0 {
            let out = hub.call_tool("mcp__ok__echo", args(json!({"text": "still"})), CallOptions::new()).await.unwrap();
            assert_eq!(text(&out), "still");
        }
    }
    eprintln!("100 calls to the garbage server: {ok} answered, {failed} failed");
    assert!(failed > 0, "garbage was met");
    assert!(rss_mb() < before + 100, "memory grew from {before} MB to {} MB", rss_mb());
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_answer_over_max_message_bytes_fails_its_call_saying_so() {
    let env = TestEnv::new();
    let (_peer, port) = switchboard_testkit::python_peer("streamable-http");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = env.hub(&json!({"servers": {"py": {"url": url, "max_message_bytes": 200_000}}})).await;
    let err = hub
        .call_tool("mcp__py__shout", args(json!({"text": "a".repeat(300_000)})), CallOptions::new())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("200000"), "{msg}");
    let out = hub.call_tool("mcp__py__shout", args(json!({"text": "small"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("SMALL"), "{}", text(&out));
    hub.shutdown().await;
}

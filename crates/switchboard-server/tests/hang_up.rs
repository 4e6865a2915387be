//! A caller of `POST /api/tools/{name}/call` that hangs up before the result cancels the call
//! upstream: the server is told with `notifications/cancelled` (the fixture writes `cancelled
//! slow` to its call log when it is), whether the call was plain JSON or streamed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Served, fixture};
use serde_json::json;

/// How many times the fixture was told a slow call was cancelled.
fn cancellations(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| *l == "cancelled slow").count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_hangs_up_cancels_the_call_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let fx = json!({"command": fixture().display().to_string(),
        "args": ["--name", "fx", "--call-log", log.display().to_string()]});
    let s = Served::start(json!({"fx": fx})).await;
    for (n, streamed) in [false, true].into_iter().enumerate() {
        // Twenty seconds of work, unless it is cancelled.
        let mut request = s.post("/api/tools/mcp__fx__slow/call", json!({"arguments": {"ms": 200, "steps": 100}}));
        if streamed {
            request = request.header("accept", "text/event-stream");
        }
        let started = Instant::now();
        let waited = tokio::time::timeout(Duration::from_millis(700), async move {
            if let Ok(response) = request.send().await {
                let _ = response.bytes().await;
            }
        })
        .await;
        assert!(waited.is_err(), "the call ended before the caller hung up (streamed: {streamed})");
        // The caller is gone (its connection closed with the future): the server hears of it.
        while cancellations(&log) < n + 1 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the upstream was not told the call was cancelled (streamed: {streamed}); log: {:?}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    s.shutdown().await;
}

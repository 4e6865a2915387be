//! `/metrics` of `switchboard gateway --http`, scraped by a real Prometheus (Debian's package,
//! started by the test helper with the local token as its scrape credentials): after calls
//! through the gateway, queries return the calls by outcome, the hub's requests of the server
//! and the gateway's requests served (both timed), the sessions open and each server's state.
//! Without the token `/metrics` is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::prometheus::Prometheus;

/// The value of the one sample `promql` returns, once it is `want` (within 30 s).
fn wait_value(prometheus: &Prometheus, promql: &str, want: f64) {
    let started = Instant::now();
    loop {
        let result = prometheus.query(promql);
        let value = result[0]["value"][1].as_str().and_then(|v| v.parse::<f64>().ok());
        if value == Some(want) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "`{promql}` is {result} (want {want}); targets: {}\n{}",
            prometheus.targets(),
            prometheus.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_calls_their_durations_the_sessions_and_the_servers() {
    let home = Home::new(false);
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let token = home.token();
    let r = common::post_mcp(&url, Some(&token), None, &common::initialize()).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    common::post_mcp(&url, Some(&token), Some(&session), &initialized).await;
    for (i, tool) in ["fx__echo", "fx__echo", "fx__echo", "fx__echo", "fx__fail"].iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                          "params": {"name": tool, "arguments": {"text": "hi"}}});
        let said = common::post_mcp(&url, Some(&token), Some(&session), &call).await.text().await.unwrap();
        assert!(said.contains("\"result\""), "{said}");
    }
    // Refused without the token.
    let base = url.strip_suffix("/mcp").unwrap();
    let refused = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(refused.status(), 401);
    let text = reqwest::Client::new().get(format!("{base}/metrics")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(text.status(), 200);

    let target = base.strip_prefix("http://").unwrap().to_string();
    let token_file = switchboard_testkit::data_dir(home.path()).join("serve-token");
    let prometheus = tokio::task::spawn_blocking(move || {
        let prometheus = Prometheus::start(&[target], &token_file);
        wait_value(&prometheus, r#"sum(switchboard_tool_calls_total{server="fx",outcome="ok",decision="allow"})"#, 4.0);
        wait_value(&prometheus, r#"sum(switchboard_tool_calls_total{server="fx",outcome="tool_error"})"#, 1.0);
        wait_value(
            &prometheus,
            r#"sum(mcp_client_operation_duration_seconds_count{server="fx",mcp_method_name="tools/call",error_type=""})"#,
            5.0,
        );
        wait_value(&prometheus, r#"sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})"#, 5.0);
        wait_value(&prometheus, "mcp_server_sessions", 1.0);
        wait_value(&prometheus, r#"switchboard_server_state{server="fx",state="connected"}"#, 1.0);
        // The histogram's buckets make a quantile: every call took less than 10 s.
        let p99 = prometheus.query(
            r#"histogram_quantile(0.99, sum by (le) (mcp_client_operation_duration_seconds_bucket{mcp_method_name="tools/call"}))"#,
        );
        let p99: f64 = p99[0]["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        assert!(p99 > 0.0 && p99 <= 10.0, "p99 {p99}");
        prometheus
    })
    .await
    .unwrap();
    let targets: Value = prometheus.targets();
    assert_eq!(targets["data"]["activeTargets"][0]["health"], "up", "{targets}");
}

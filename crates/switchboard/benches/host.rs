//! `cargo bench -p switchboard --bench host`: what the hub does besides calls, on the fixture
//! server (which can be slow to start, report progress, ignore signals): calls reporting
//! progress with and without someone watching the hub's events, start-up of 20 servers that
//! each take 300 ms to initialise, shutdown, building the catalog of 100 servers x 100 tools,
//! and peak RSS. The call path against a bare rmcp client is `--bench hub`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::model::Tool;
use serde_json::json;
use switchboard::catalog::{Catalog, CompiledFilter, ServerLists};
use switchboard::config::{self, LoadOptions};
use switchboard::{CallOptions, Hub, HubOptions, Paths};

const ROUNDS: usize = 10;
const PROGRESS_CALLS: usize = 2_000;
const PROGRESS_STEPS: usize = 10;

fn fixture() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ok = std::process::Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard-fixture"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(ok.success());
    root.join("target/release/switchboard-fixture")
}

fn args(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap_or_default()
}

struct Row(&'static str, String, String, String);

async fn time_calls<F, Fut>(n: usize, in_flight: usize, f: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let f = &f;
    let start = Instant::now();
    if in_flight == 1 {
        for i in 0..n {
            f(i).await;
        }
    } else {
        let mut next = 0;
        while next < n {
            let batch = (next..(next + in_flight).min(n)).map(f);
            join_all(batch).await;
            next += in_flight;
        }
    }
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path().join("user.json"), dir.path().join("data"));
    let load = |servers: serde_json::Value| {
        let file = dir.path().join("bench.json");
        std::fs::write(&file, json!({ "servers": servers }).to_string()).unwrap();
        let mut o = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
        o.extra_files = vec![file];
        config::load(&o)
    };
    let mut rows = Vec::new();

    // No notification limit: the progress row sends 20000 steps a second on purpose (the
    // default of 1000 a second would drop most of them).
    let mut options = HubOptions::new(paths.clone());
    options.notification_rate = 0;
    let hub = Hub::start(&load(json!({"f": {"command": fixture, "tool_timeout_ms": 60000}})), options);
    hub.ready().await;
    // Progress: a call that reports 10 steps, with someone watching the hub's events (as
    // `switchboard serve` does: each step is published) against the same hub unwatched.
    let progress_call = |_| {
        let hub = hub.clone();
        async move {
            let a = args(json!({"ms": 0, "steps": PROGRESS_STEPS}));
            hub.call_tool("mcp__f__slow", Some(a), CallOptions::new()).await.unwrap();
        }
    };
    let watched = |n: usize| {
        let mut events = hub.subscribe();
        let counter = tokio::spawn(async move {
            let mut seen = 0;
            loop {
                match events.recv().await {
                    Ok(switchboard::events::Event::Progress { .. }) => seen += 1,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return seen,
                }
                if seen == n * PROGRESS_STEPS {
                    return seen;
                }
            }
        });
        async move {
            let t = time_calls(n, 1, &progress_call).await;
            let seen = tokio::time::timeout(Duration::from_secs(10), counter).await.unwrap().unwrap();
            assert_eq!(seen, n * PROGRESS_STEPS, "every step published");
            t
        }
    };
    let (mut w, mut u) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let n = PROGRESS_CALLS / ROUNDS;
        if round % 2 == 0 {
            u.push(time_calls(n, 1, &progress_call).await);
            w.push(watched(n).await);
        } else {
            w.push(watched(n).await);
            u.push(time_calls(n, 1, &progress_call).await);
        }
    }
    let per_round = (PROGRESS_CALLS / ROUNDS) as f64;
    let (wr, ur) = (per_round / median(w).as_secs_f64(), per_round / median(u).as_secs_f64());
    rows.push(Row(
        "10 progress steps per call, events watched (vs not)",
        format!("{wr:.0} calls/s"),
        format!("{ur:.0} calls/s"),
        format!("{:.2}x", wr / ur),
    ));

    hub.shutdown().await;

    // Start-up: 20 servers that each take 300 ms to initialise.
    let servers: serde_json::Map<_, _> =
        (0..20).map(|i| (format!("s{i}"), json!({"command": fixture, "args": ["--init-delay-ms", "300"]}))).collect();
    let loaded = load(serde_json::Value::Object(servers));
    let start = Instant::now();
    let hub = Hub::start(&loaded, HubOptions::new(paths.clone()));
    hub.ready().await;
    let t = start.elapsed();
    let connected = hub.servers().iter().filter(|s| s.status.state() == "connected").count();
    rows.push(Row(
        "start 20 servers x 300 ms init",
        format!("{} ms ({connected}/20 up)", t.as_millis()),
        "6000 ms sequential".into(),
        format!("{:.1}x faster", 6.0 / t.as_secs_f64()),
    ));
    // Shutdown: the 20 servers leave when their stdin closes; then 20 that ignore SIGINT and
    // SIGTERM (the whole sequence, to SIGKILL).
    let start = Instant::now();
    hub.shutdown().await;
    let clean = start.elapsed();
    let stubborn: serde_json::Map<_, _> = (0..20)
        .map(|i| (format!("s{i}"), json!({"command": fixture, "args": ["--ignore-sigterm", "--linger"]})))
        .collect();
    let hub = Hub::start(&load(serde_json::Value::Object(stubborn)), HubOptions::new(paths.clone()));
    hub.ready().await;
    let start = Instant::now();
    hub.shutdown().await;
    let stuck = start.elapsed();
    rows.push(Row(
        "shutdown of 20 servers (exit on stdin / ignore TERM)",
        format!("{} ms / {} ms", clean.as_millis(), stuck.as_millis()),
        "bound 1800 ms".into(),
        "-".into(),
    ));

    // Catalog: 100 servers x 100 tools.
    let schema = Arc::new(
        json!({"type": "object", "properties": {"x": {"type": "string"}}}).as_object().cloned().unwrap_or_default(),
    );
    let lists: Vec<(String, ServerLists)> = (0..100)
        .map(|s| {
            let mut l = ServerLists::default();
            l.tools = (0..100).map(|t| Tool::new(format!("tool.{t}"), "A tool.", schema.clone())).collect();
            (format!("server-{s}"), l)
        })
        .collect();
    let filter = CompiledFilter::new(&Default::default());
    let start = Instant::now();
    let rounds = 20;
    let mut n = 0;
    for _ in 0..rounds {
        n = Catalog::build(lists.iter().map(|(s, l)| (s.as_str(), l, &filter))).tools().len();
    }
    let per = start.elapsed() / rounds;
    rows.push(Row(
        "catalog of 100 servers x 100 tools",
        format!("{:.1} ms ({n} tools)", per.as_secs_f64() * 1000.0),
        "target 50 ms".into(),
        format!("{:.1}x under", 0.050 / per.as_secs_f64()),
    ));
    rows.push(Row("peak RSS of this process", format!("{} MiB", peak_rss_kib() / 1024), "-".into(), "-".into()));

    print_table(rows);
}

fn print_table(rows: Vec<Row>) {
    println!("{:<52} {:>24} {:>22} {:>12}", "measure", "switchboard", "baseline", "ratio");
    for Row(a, b, c, d) in rows {
        println!("{a:<52} {b:>24} {c:>22} {d:>12}");
    }
}

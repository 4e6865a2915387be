//! `cargo bench -p switchboard --bench hub`: `Hub::call_tool` against the fastest bare client,
//! in one run, on a method that can tell the host's cost.
//!
//! - The server is a minimal rmcp echo server (`crates/switchboard-gateway/examples/echo.rs`:
//!   `echo` returns its text, `big` returns N bytes; stdin/stdout on the event loop through
//!   rmcp's `stdio_pipes()`), one process per client, every one pinned to CPU 1.
//! - The clients run in this process, pinned to CPU 0: a bare rmcp 3.11 client on a
//!   current-thread runtime (the baseline, twice: the A/A row is the method's noise), the same
//!   on a multi-thread runtime, and a `Hub` on each kind of runtime (default call options: the
//!   result is formatted for a model, cut to the budget, spilled when over it).
//! - Rows, measured in interleaved rounds (every client once per round, in turn), medians over
//!   rounds and their spread: sequential calls/s with the p50 and p99 of each call's latency,
//!   64 calls in flight, and MB/s of 1 MiB results.
//!
//! `SWITCHBOARD_BENCH_ONLY=NAME` (a row's name, e.g. `hub`) measures one client for a longer
//! window, for `perf`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use switchboard::config::{self, LoadOptions};
use switchboard::{CallOptions, Hub, HubOptions, Paths};

const WINDOW: Duration = Duration::from_millis(1500);
const IN_FLIGHT: usize = 64;
const ROUNDS: usize = 5;
const BIG: u64 = 1 << 20;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn build_echo() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard-gateway", "--example", "echo"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(ok.success());
    root().join("target/release/examples/echo")
}

/// Pins the calling thread (and the threads it starts from now on) to one CPU.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes into it; the call affects this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn args(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// The echo server's command line, pinned to CPU 1 by `taskset` (so the hub's supervisor and
/// a bare client's child start it the same way).
fn echo_command(echo: &Path) -> (String, Vec<String>) {
    ("taskset".into(), vec!["-c".into(), "1".into(), echo.display().to_string(), "stdio".into()])
}

enum Client {
    Bare(RunningService<RoleClient, ()>),
    Hub(Hub),
}

impl Client {
    async fn echo(&self, i: usize) {
        let text = json!({"text": format!("hello {i}")});
        match self {
            Client::Bare(c) => {
                c.call_tool(CallToolRequestParams::new("echo").with_arguments(args(text))).await.unwrap();
            }
            Client::Hub(h) => {
                h.call_tool("mcp__echo__echo", Some(args(text)), CallOptions::new()).await.unwrap();
            }
        }
    }

    async fn big(&self) {
        let a = json!({"bytes": BIG});
        match self {
            Client::Bare(c) => {
                let r = c.call_tool(CallToolRequestParams::new("big").with_arguments(args(a))).await.unwrap();
                assert!(!r.content.is_empty());
            }
            Client::Hub(h) => {
                let r = h.call_tool("mcp__echo__big", Some(args(a)), CallOptions::new()).await.unwrap();
                assert!(!r.model.text().is_empty());
            }
        }
    }
}

struct Target {
    name: &'static str,
    rt: tokio::runtime::Runtime,
    client: Client,
    seq: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    conc: Vec<f64>,
    mbs: Vec<f64>,
}

/// Sequential calls over `window`: calls/s, and the p50 and p99 latency in µs.
async fn sequential(client: &Client, window: Duration) -> (f64, f64, f64) {
    let start = Instant::now();
    let mut lat = Vec::with_capacity(50_000);
    while start.elapsed() < window {
        let t = Instant::now();
        client.echo(lat.len()).await;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    (rate, at(0.5), at(0.99))
}

/// Calls/s with `IN_FLIGHT` at a time (batches; the last batch in the window counts).
async fn concurrent(client: &Client, window: Duration) -> f64 {
    let start = Instant::now();
    let mut done = 0;
    while start.elapsed() < window {
        join_all((done..done + IN_FLIGHT).map(|i| client.echo(i))).await;
        done += IN_FLIGHT;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

/// MB/s of 1 MiB results, one at a time.
async fn big(client: &Client, window: Duration) -> f64 {
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < window {
        client.big().await;
        n += 1;
    }
    f64::from(n) * (BIG as f64 / 1e6) / start.elapsed().as_secs_f64()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{lo:.0}–{hi:.0}")
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

fn bare(name: &'static str, rt: tokio::runtime::Runtime, echo: &Path) -> Target {
    let (program, argv) = echo_command(echo);
    let client = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(argv);
        ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap()
    });
    target(name, rt, Client::Bare(client))
}

fn hub(name: &'static str, rt: tokio::runtime::Runtime, echo: &Path, dir: &Path) -> Target {
    std::fs::create_dir_all(dir).unwrap();
    let paths = Paths::new(dir.join("user.json"), dir.join("data"));
    let file = dir.join("hub.json");
    let (program, argv) = echo_command(echo);
    std::fs::write(&file, json!({"servers": {"echo": {"command": program, "args": argv}}}).to_string()).unwrap();
    let mut o = LoadOptions::from_env(dir.to_path_buf(), &paths);
    o.extra_files = vec![file];
    let loaded = config::load(&o);
    let hub = rt.block_on(async {
        let hub = Hub::start(&loaded, HubOptions::new(paths));
        hub.ready().await;
        hub
    });
    target(name, rt, Client::Hub(hub))
}

fn target(name: &'static str, rt: tokio::runtime::Runtime, client: Client) -> Target {
    Target { name, rt, client, seq: vec![], p50: vec![], p99: vec![], conc: vec![], mbs: vec![] }
}

fn main() {
    pin(0);
    let echo = build_echo();
    let dir = tempfile::tempdir().unwrap();
    let mut targets = vec![
        bare("bare rmcp, current-thread (A)", current_thread(), &echo),
        bare("bare rmcp, current-thread (A/A)", current_thread(), &echo),
        bare("bare rmcp, multi-thread", multi_thread(), &echo),
        hub("Hub, current-thread", current_thread(), &echo, &dir.path().join("a")),
        hub("Hub, multi-thread", multi_thread(), &echo, &dir.path().join("b")),
    ];
    if let Ok(only) = std::env::var("SWITCHBOARD_BENCH_ONLY") {
        let t = targets.iter().find(|t| t.name.contains(&only)).expect("a row of that name");
        let long = Duration::from_secs(20);
        let (s, _, _) = t.rt.block_on(sequential(&t.client, long / 2));
        let c = t.rt.block_on(concurrent(&t.client, long / 2));
        println!("{}: {s:.0} calls/s sequential, {c:.0} calls/s at {IN_FLIGHT} in flight", t.name);
        return;
    }
    for t in &targets {
        t.rt.block_on(sequential(&t.client, Duration::from_millis(300))); // warm up
    }
    for _ in 0..ROUNDS {
        for t in &mut targets {
            let (s, p50, p99) = t.rt.block_on(sequential(&t.client, WINDOW));
            let c = t.rt.block_on(concurrent(&t.client, WINDOW));
            let m = t.rt.block_on(big(&t.client, WINDOW));
            t.seq.push(s);
            t.p50.push(p50);
            t.p99.push(p99);
            t.conc.push(c);
            t.mbs.push(m);
        }
    }
    let base = &targets[0];
    let (bs, b99, bc, bm) = (median(&base.seq), median(&base.p99), median(&base.conc), median(&base.mbs));
    println!(
        "\n| client | sequential calls/s (spread) | ratio | p50 µs | p99 µs | p99 ratio | {IN_FLIGHT} in flight calls/s (spread) | ratio | 1 MiB results MB/s (spread) | ratio |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for t in &targets {
        let (s, p99, c, m) = (median(&t.seq), median(&t.p99), median(&t.conc), median(&t.mbs));
        println!(
            "| {} | {s:.0} ({}) | {:.2} | {:.0} | {p99:.0} | {:.2} | {c:.0} ({}) | {:.2} | {m:.0} ({}) | {:.2} |",
            t.name,
            spread(&t.seq),
            s / bs,
            median(&t.p50),
            p99 / b99,
            spread(&t.conc),
            c / bc,
            spread(&t.mbs),
            m / bm,
        );
    }
    for t in targets {
        if let Client::Hub(h) = &t.client {
            t.rt.block_on(h.shutdown());
        }
    }
}

//! `cargo bench -p switchboard --bench hub`: `Hub::call_tool` against the fastest bare client,
//! in one run, on a method that can tell the host's cost.
//!
//! - The server is a minimal rmcp echo server (`crates/switchboard-gateway/examples/echo.rs`:
//!   `echo` returns its text, `big` returns N bytes; stdin/stdout on the event loop through
//!   rmcp's `stdio_pipes()`), one process per client, every one pinned to CPU 1.
//! - The clients run in this process, pinned to CPU 0: a bare rmcp 3.11 client on a
//!   current-thread runtime (the baseline, twice: the A/A row is the method's noise), the same
//!   on a multi-thread runtime, and a `Hub` on each kind of runtime (default call options),
//!   reading each result as the bare client does; then a `Hub` that also asks for every
//!   result's model form (formatted, cut to the budget with a note, the whole written to a
//!   spill file: 1 MiB per call in the 1 MiB row), and the gate's rows: a `Hub` with no
//!   argument checks and no audit log, and one with a policy the call passes through, checks
//!   and the audit log (the defaults are checks and the audit log, no policy); and a `Hub`
//!   whose server runs out of the sandbox (every other row's runs in the default one).
//! - Rows, measured in interleaved rounds (every client once per round, in turn), medians over
//!   rounds and their spread: sequential calls/s with the p50 and p99 of each call's latency,
//!   64 calls in flight, and MB/s of 1 MiB results.
//!
//! - Then whole processes (`examples/bench_bare.rs`, rmcp only, and `examples/bench_hub.rs`,
//!   a program embedding switchboard): a cold start (start, connect, list, exit) of each and of
//!   `switchboard --config X tools --json`, 15 interleaved runs, the hub's with its server
//!   in the default sandbox, out of it, with `network: false` and behind the proxy; the peak RSS of a bare client,
//!   a hub with one server and one with 20 over 100,000 calls (`SWITCHBOARD_BENCH_RSS_CALLS`),
//!   every 1,000th a 1 MiB result (its model form made: cut and spilled), and the RSS after a
//!   tenth of them against the end.
//!
//! - Start to ready in process (`hub/start.rs`): a bare rmcp client against `Hub::start` and
//!   `Hub::ready` with exactly `HubOptions::new` defaults, in the default sandbox and out of it.
//!
//! `SWITCHBOARD_BENCH_PARTS=calls,start,cold,rss` picks parts. `SWITCHBOARD_BENCH_ONLY=NAME` (part of a row's name, e.g. `Hub, current`) measures one
//! client for a longer window, for `perf`; `SWITCHBOARD_BENCH_MEASURE=seq|conc|big` only one of
//! its measures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "hub/cold.rs"]
mod cold;
#[path = "hub/start.rs"]
mod start;

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
    /// The TypeScript SDK's client: a node process per round (`hub/ts_client.mjs`), the
    /// command that runs it less the window.
    Ts(Vec<String>),
    /// A hub, and whether each result's model form is asked for (cut text, note, spill file).
    Hub(Hub, bool),
}

impl Client {
    async fn echo(&self, i: usize) {
        let text = json!({"text": format!("hello {i}")});
        match self {
            Client::Ts(_) => unreachable!("a TypeScript round runs in its own process"),
            Client::Bare(c) => {
                c.call_tool(CallToolRequestParams::new("echo").with_arguments(args(text))).await.unwrap();
            }
            Client::Hub(h, model) => {
                let out = h.call_tool("mcp__echo__echo", Some(args(text)), CallOptions::new()).await.unwrap();
                if *model {
                    assert!(!out.model().text().is_empty());
                }
            }
        }
    }

    async fn big(&self) {
        let a = json!({"bytes": BIG});
        match self {
            Client::Ts(_) => unreachable!("a TypeScript round runs in its own process"),
            Client::Bare(c) => {
                let r = c.call_tool(CallToolRequestParams::new("big").with_arguments(args(a))).await.unwrap();
                assert!(!r.content.is_empty());
            }
            Client::Hub(h, model) => {
                let r = h.call_tool("mcp__echo__big", Some(args(a)), CallOptions::new()).await.unwrap();
                if *model {
                    let r = r.formatted().await.unwrap();
                    assert!(r.model().truncated && r.model().spilled.len() == 1);
                } else {
                    assert!(!r.raw.content.is_empty());
                }
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
    /// Peak RSS of each round's process (the TypeScript row), MB.
    hwm: Vec<f64>,
}

/// One round of the TypeScript client: its own process, the same windows.
fn ts_round(t: &mut Target) {
    let Client::Ts(command) = &t.client else { return };
    let out = Command::new(&command[0])
        .args(&command[1..3])
        .arg(WINDOW.as_millis().to_string())
        .arg(IN_FLIGHT.to_string())
        .arg(BIG.to_string())
        .args(&command[3..])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = |k: &str| r[k].as_f64().unwrap();
    t.seq.push(f("seq"));
    t.p50.push(f("p50"));
    t.p99.push(f("p99"));
    t.conc.push(f("conc"));
    t.mbs.push(f("mbs"));
    t.hwm.push(f("hwm_kb") / 1024.0);
}

/// The TypeScript SDK 1.x client's row, run by `node` from `.peers/node` (installed there on
/// first use).
fn typescript(echo: &Path) -> Target {
    let sdk = switchboard_testkit::node_peers();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/hub/ts_client.mjs");
    let (program, argv) = echo_command(echo);
    let mut command = vec!["node".to_string(), script.display().to_string(), sdk.display().to_string(), program];
    command.extend(argv);
    let rt = current_thread();
    target("TypeScript SDK 1.32 client (peer)", rt, Client::Ts(command))
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

/// How much of the gate a hub row runs.
#[derive(Clone, Copy)]
enum Gate {
    /// The defaults: no policy, arguments checked, the audit log written.
    Default,
    /// Nothing: no policy, no argument checks, no audit log (what the gate costs is the
    /// difference to the other two).
    Off,
    /// A policy the call goes through (an `allow` glob over a `default: deny`, a `deny` and an
    /// `ask` glob that do not match), arguments checked, the audit log written.
    Policy,
    /// The defaults with the server out of the sandbox (`"sandbox": false`): what the
    /// sandbox costs a call is the difference to the defaults.
    NoSandbox,
}

fn hub(name: &'static str, rt: tokio::runtime::Runtime, echo: &Path, dir: &Path, model: bool, gate: Gate) -> Target {
    std::fs::create_dir_all(dir).unwrap();
    let paths = Paths::new(dir.join("user.json"), dir.join("data"));
    let file = dir.join("hub.json");
    let (program, argv) = echo_command(echo);
    let mut server = json!({"command": program, "args": argv});
    let mut config = json!({});
    match gate {
        Gate::Default => {}
        Gate::Off => {
            server["validate_arguments"] = json!(false);
            config["audit"] = json!({"enabled": false});
        }
        Gate::NoSandbox => server["sandbox"] = json!(false),
        Gate::Policy => {
            config["policy"] = json!({"allow": ["mcp__echo__*"], "ask": ["*/write_*"], "deny": ["mcp__*__delete_*"], "default": "deny"});
        }
    }
    config["servers"] = json!({"echo": server});
    std::fs::write(&file, config.to_string()).unwrap();
    let mut o = LoadOptions::from_env(dir.to_path_buf(), &paths);
    o.extra_files = vec![file];
    let loaded = config::load(&o);
    let hub = rt.block_on(async {
        let hub = Hub::start(&loaded, HubOptions::new(paths));
        hub.ready().await;
        hub
    });
    target(name, rt, Client::Hub(hub, model))
}

fn target(name: &'static str, rt: tokio::runtime::Runtime, client: Client) -> Target {
    Target { name, rt, client, seq: vec![], p50: vec![], p99: vec![], conc: vec![], mbs: vec![], hwm: vec![] }
}

fn spread1(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{lo:.1}–{hi:.1}")
}

fn build_cli() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard-cli"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(ok.success());
    root().join("target/release/switchboard")
}

fn main() {
    let parts = std::env::var("SWITCHBOARD_BENCH_PARTS").unwrap_or_else(|_| "calls,start,cold,rss".into());
    let echo = build_echo();
    // The whole-process parts' programs (release builds of their own) only when asked.
    let whole = parts.contains("cold") || parts.contains("rss");
    let cli = if whole { build_cli() } else { PathBuf::new() };
    let programs = whole.then(cold::build);
    pin(0);
    // Under the build's `target/`, not `/tmp`: the default sandbox hides each hub's data folder
    // and grants the folders beside it entry by entry, so a crowded `/tmp` (129 entries on the
    // machine this was measured on) would cost a Landlock rule per entry that a person's data
    // folder, under their home folder, does not.
    let dir = tempfile::tempdir_in(root().join("target")).unwrap();
    if parts.contains("calls") {
        calls(&echo, dir.path());
    }
    if parts.contains("start") {
        start::start_rows(&echo, 15);
    }
    if let (true, Some(programs)) = (parts.contains("cold"), &programs) {
        cold::cold_rows(programs, &echo, &cli, &dir.path().join("cold"), 15);
    }
    if parts.contains("rss") {
        let calls = std::env::var("SWITCHBOARD_BENCH_RSS_CALLS").ok().and_then(|c| c.parse().ok()).unwrap_or(100_000);
        if let Some(programs) = &programs {
            cold::rss_rows(programs, &echo, &dir.path().join("rss"), calls);
        }
    }
}

/// The rows of calls: every client in turn, round after round.
fn calls(echo: &Path, dir: &Path) {
    let echo = echo.to_path_buf();
    let mut targets = vec![
        bare("bare rmcp, current-thread (A)", current_thread(), &echo),
        bare("bare rmcp, current-thread (A/A)", current_thread(), &echo),
        bare("bare rmcp, multi-thread", multi_thread(), &echo),
        hub("Hub, current-thread", current_thread(), &echo, &dir.join("a"), false, Gate::Default),
        hub("Hub, multi-thread", multi_thread(), &echo, &dir.join("b"), false, Gate::Default),
        hub(
            "Hub, current-thread, model form of every result",
            current_thread(),
            &echo,
            &dir.join("c"),
            true,
            Gate::Default,
        ),
        hub(
            "Hub, current-thread, no argument checks, no audit",
            current_thread(),
            &echo,
            &dir.join("d"),
            false,
            Gate::Off,
        ),
        hub(
            "Hub, current-thread, policy + checks + audit",
            current_thread(),
            &echo,
            &dir.join("e"),
            false,
            Gate::Policy,
        ),
        hub("Hub, current-thread, sandbox off", current_thread(), &echo, &dir.join("f"), false, Gate::NoSandbox),
        typescript(&echo),
    ];
    if let Ok(only) = std::env::var("SWITCHBOARD_BENCH_ONLY") {
        let t = targets.iter().find(|t| t.name.contains(&only)).expect("a row of that name");
        let long = Duration::from_secs(20);
        let measure = std::env::var("SWITCHBOARD_BENCH_MEASURE").unwrap_or_default();
        let on = |m: &str| measure.is_empty() || measure == m;
        if on("seq") {
            let (s, p50, p99) = t.rt.block_on(sequential(&t.client, long / 3));
            println!("{}: {s:.0} calls/s sequential (p50 {p50:.0} µs, p99 {p99:.0} µs)", t.name);
        }
        if on("conc") {
            let c = t.rt.block_on(concurrent(&t.client, long / 3));
            println!("{}: {c:.0} calls/s at {IN_FLIGHT} in flight", t.name);
        }
        if on("big") {
            let m = t.rt.block_on(big(&t.client, long / 3));
            println!("{}: {m:.0} MB/s of 1 MiB results", t.name);
        }
        return;
    }
    for t in &targets {
        if !matches!(t.client, Client::Ts(_)) {
            t.rt.block_on(sequential(&t.client, Duration::from_millis(300))); // warm up
        }
    }
    for _ in 0..ROUNDS {
        for t in &mut targets {
            if matches!(t.client, Client::Ts(_)) {
                ts_round(t);
                continue;
            }
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
    // What the policy, the argument checks and the audit log cost a sequential call: the
    // rows with and without them, in the same rounds.
    let row = |name: &str| targets.iter().find(|t| t.name.ends_with(name)).map(|t| median(&t.seq));
    if let (Some(off), Some(on), Some(default)) =
        (row("no argument checks, no audit"), row("policy + checks + audit"), row("Hub, current-thread"))
    {
        println!(
            "\nThe gate on a sequential call: policy + checks + audit {:.3} of none (defaults, checks + audit: {:.3})",
            on / off,
            default / off
        );
    }
    if let (Some(off), Some(on)) = (row("sandbox off"), row("Hub, current-thread")) {
        println!("The sandbox on a sequential call: default sandbox {:.3} of none", on / off);
    }
    if let Some(ts) = targets.iter().find(|t| matches!(t.client, Client::Ts(_))) {
        println!("\nPeak RSS of the TypeScript client's process: {:.1} MB (median of its rounds)", median(&ts.hwm));
    }
    for t in targets {
        if let Client::Hub(h, _) = &t.client {
            t.rt.block_on(h.shutdown());
        }
    }
}

//! `cargo bench -p switchboard-gateway --bench replicas`: echo calls through `switchboard
//! gateway --http` as a team runs it, against the same gateway alone, in one run:
//!
//! - `gateway --http` alone (twice: the A/A row shows the noise);
//! - the same, traced: `OTEL_EXPORTER_OTLP_ENDPOINT` set, every span exported over OTLP to a
//!   receiver in this process (the testkit's, on the client's CPU): the cost of tracing;
//! - one replica on a team's store (Debian's PostgreSQL: sessions, audit records written before a
//!   call answers) behind Debian's HAProxy (round robin, no affinity);
//! - three replicas on the store behind HAProxy.
//!
//! Each path is measured with a legacy session (rmcp's `serve`: `initialize`, a session the
//! replica that made it serves, so round robin sends most requests on between replicas) and,
//! for the replicas, with a 2026-07-28 client (`server/discover`, no session: any replica
//! serves any request). The client is a bare rmcp client on a current-thread runtime
//! pinned to CPU 0; every gateway, its echo upstream (`examples/echo.rs` over stdio), HAProxy
//! and PostgreSQL run pinned to CPU 1. This machine has two CPUs, so three replicas share one:
//! the rows say what the extra hops and the store cost, and the CPU each process spent per call
//! (read from `/proc`) says what one replica would serve on a CPU of its own. Each row is
//! measured sequentially and with 64 calls in flight, in interleaved rounds, each starting at
//! another row; calls/s are medians over rounds with their spread, latencies are over every
//! call of every round (p50 and p99).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::otlp::Receiver;
use switchboard_testkit::postgres::Postgres;
use switchboard_testkit::{Peer, cpu_secs, free_port, wait_listening, workspace};

const WINDOW: Duration = Duration::from_secs(2);
const IN_FLIGHT: usize = 64;
const ROUNDS: usize = 3;

type Client = RunningService<RoleClient, ()>;

fn build() -> (PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard-cli", "-p", "switchboard-gateway", "--bins"])
        .args(["--example", "echo"])
        .current_dir(workspace())
        .status()
        .unwrap();
    assert!(ok.success());
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from);
    let release = target.join("release");
    (release.join("switchboard"), release.join("examples").join("echo"))
}

fn pin(pid: i32, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes into it; the call names a process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A gateway, a replica of `config`, on `addr`, pinned to CPU 1 with `env` and `flags`.
fn gateway(bin: &Path, home: &Path, config: &Path, addr: &str, env: &[(&str, String)], flags: &[&str]) -> Peer {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(bin);
    // SAFETY: between fork and exec only sched_setaffinity, a plain system call.
    unsafe {
        c.pre_exec(|| {
            pin(0, 1);
            Ok(())
        });
    }
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("data"))
        .env_remove("RUST_LOG")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .arg("--config")
        .arg(config)
        .args(["gateway", "--http", addr, "--no-auth"])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = c.spawn().unwrap();
    let port = addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or_default();
    wait_listening(port, "a gateway", Duration::from_secs(60));
    Peer::new(child)
}

/// A client of `url`: a legacy session (`initialize`, as rmcp's `serve` does), or with
/// `modern` the 2026-07-28 lifecycle (`server/discover`, no session: every request stands
/// alone, so any replica serves it).
async fn client(url: &str, modern: bool) -> Client {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let t = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url));
    if modern {
        let lifecycle =
            ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28] };
        ().serve_with_lifecycle(t, lifecycle).await.unwrap()
    } else {
        ().serve(t).await.unwrap()
    }
}

/// One way of reaching the echo tool.
struct Row {
    name: &'static str,
    client: Client,
    tool: String,
    /// The gateways, and the other processes on the path (HAProxy, PostgreSQL's).
    gateways: Vec<u32>,
    others: Vec<(&'static str, Vec<u32>)>,
    seq: Vec<f64>,
    conc: Vec<f64>,
    /// Every call's latency (seconds), sequential and in flight.
    latency: [Vec<f64>; 2],
    /// CPU seconds of the gateways and of each other process group, and calls, per mode.
    cpu: [(f64, Vec<f64>, f64); 2],
}

fn cpu_of(pids: &[u32]) -> f64 {
    pids.iter().map(|p| cpu_secs(*p)).sum()
}

async fn row(
    name: &'static str,
    (url, modern): (&str, bool),
    gateways: Vec<u32>,
    others: Vec<(&'static str, Vec<u32>)>,
) -> Row {
    let client = client(url, modern).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().map(|t| t.name.to_string()).find(|n| n.ends_with("echo")).expect("an echo tool");
    let n = others.len();
    Row {
        name,
        client,
        tool,
        gateways,
        others,
        seq: Vec::new(),
        conc: Vec::new(),
        latency: [Vec::new(), Vec::new()],
        cpu: [(0.0, vec![0.0; n], 0.0), (0.0, vec![0.0; n], 0.0)],
    }
}

/// Calls/s over `window`, `in_flight` at a time (the last batch is waited for and counted),
/// each call's latency, and the calls made.
async fn rate(client: &Client, tool: &str, window: Duration, in_flight: usize) -> (f64, Vec<f64>, usize) {
    let call = |i: usize| async move {
        let args = serde_json::json!({"text": format!("hello {i}")}).as_object().cloned().unwrap();
        let started = Instant::now();
        client.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await.unwrap();
        started.elapsed().as_secs_f64()
    };
    let start = Instant::now();
    let mut done = 0;
    let mut latencies = Vec::new();
    while start.elapsed() < window {
        latencies.extend(join_all((done..done + in_flight).map(call)).await);
        done += in_flight;
    }
    (done as f64 / start.elapsed().as_secs_f64(), latencies, done)
}

fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or(0.0)
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{lo:.0}-{hi:.0}")
}

fn main() {
    pin(0, 0);
    let (bin, echo) = build();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let plain = home.join("plain.json");
    let upstream = serde_json::json!({"echo": {"command": echo, "args": ["stdio"]}});
    std::fs::write(&plain, serde_json::json!({"servers": upstream}).to_string()).unwrap();
    // The team's store, on CPU 1 with the servers (its backends are forked by the postmaster,
    // and inherit it).
    let pg = Postgres::start();
    pin(pg.pid() as i32, 1);
    let keys = switchboard::store::seal::KeyRing::new_key_line("k1").unwrap();
    let on_store = home.join("store.json");
    std::fs::write(
        &on_store,
        serde_json::json!({"servers": upstream, "store": {"url": pg.database("sb")}}).to_string(),
    )
    .unwrap();
    let store_env = [("SWITCHBOARD_STORE_KEYS", keys.clone())];
    let receiver = Receiver::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut rows = Vec::new();
        let mut kept: Vec<Peer> = Vec::new();
        let mut proxies: Vec<HaProxy> = Vec::new();
        for (name, modern) in
            [("gateway --http", false), ("gateway --http (A/A)", false), ("gateway --http, 2026-07-28", true)]
        {
            let addr = format!("127.0.0.1:{}", free_port());
            let gw = gateway(&bin, home, &plain, &addr, &[], &[]);
            rows.push(row(name, (&format!("http://{addr}/mcp"), modern), vec![gw.id()], vec![]).await);
            kept.push(gw);
        }
        let traced_env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200".to_string()),
        ];
        let addr = format!("127.0.0.1:{}", free_port());
        let gw = gateway(&bin, home, &plain, &addr, &traced_env, &[]);
        let url = format!("http://{addr}/mcp");
        rows.push(row("gateway --http, traced (OTLP)", (&url, false), vec![gw.id()], vec![]).await);
        kept.push(gw);
        for (name, n) in
            [("1 replica on the store, behind HAProxy", 1), ("3 replicas on the store, behind HAProxy", 3)]
        {
            let addrs: Vec<String> = (0..n).map(|_| format!("127.0.0.1:{}", free_port())).collect();
            let proxy = HaProxy::start(&addrs);
            let haproxy = proxy.pid();
            pin(haproxy as i32, 1);
            // Clients name the balancer: the replicas are told that name (`--host`).
            let public = proxy.url().trim_start_matches("http://").to_string();
            let mut ids = Vec::new();
            for addr in &addrs {
                let gw = gateway(&bin, home, &on_store, addr, &store_env, &["--host", &public]);
                ids.push(gw.id());
                kept.push(gw);
            }
            proxy.wait_up(n, Duration::from_secs(30));
            let postgres: Vec<u32> = pg.processes().into_iter().map(|p| p as u32).collect();
            let others = vec![("haproxy", vec![haproxy]), ("postgres", postgres)];
            let url = format!("{}/mcp", proxy.url());
            rows.push(row(name, (&url, false), ids.clone(), others.clone()).await);
            rows.push(row(modern_name(n), (&url, true), ids, others).await);
            proxies.push(proxy);
        }

        for r in &rows {
            rate(&r.client, &r.tool, Duration::from_millis(300), 1).await; // warm up
        }
        let n = rows.len();
        for round in 0..ROUNDS {
            for i in 0..n {
                let r = &mut rows[(i + round * n / ROUNDS) % n];
                for (mode, in_flight) in [1, IN_FLIGHT].into_iter().enumerate() {
                    let before = (cpu_of(&r.gateways), r.others.iter().map(|(_, p)| cpu_of(p)).collect::<Vec<_>>());
                    let (rate, latencies, calls) = rate(&r.client, &r.tool, WINDOW, in_flight).await;
                    r.cpu[mode].0 += cpu_of(&r.gateways) - before.0;
                    for (k, (_, pids)) in r.others.iter().enumerate() {
                        r.cpu[mode].1[k] += cpu_of(pids) - before.1[k];
                    }
                    r.cpu[mode].2 += calls as f64;
                    r.latency[mode].extend(latencies);
                    if mode == 0 { r.seq.push(rate) } else { r.conc.push(rate) }
                }
            }
        }
        println!(
            "\n| path | seq calls/s (spread) | p50 / p99 ms | 64 in flight calls/s (spread) | p50 / p99 ms | CPU µs/call, seq / 64: gateways | HAProxy | PostgreSQL |"
        );
        println!("|---|--:|--:|--:|--:|--:|--:|--:|");
        for r in &rows {
            let ms = |v: &[f64]| format!("{:.2} / {:.2}", quantile(v, 0.5) * 1e3, quantile(v, 0.99) * 1e3);
            let us = |mode: usize, secs: f64| {
                let calls = r.cpu[mode].2;
                if calls > 0.0 { format!("{:.0}", secs * 1e6 / calls) } else { "—".into() }
            };
            let other = |k: usize| match r.others.get(k) {
                Some(_) => format!("{} / {}", us(0, r.cpu[0].1[k]), us(1, r.cpu[1].1[k])),
                None => "—".into(),
            };
            println!(
                "| {} | {:.0} ({}) | {} | {:.0} ({}) | {} | {} / {} | {} | {} |",
                r.name,
                median(&r.seq),
                spread(&r.seq),
                ms(&r.latency[0]),
                median(&r.conc),
                spread(&r.conc),
                ms(&r.latency[1]),
                us(0, r.cpu[0].0),
                us(1, r.cpu[1].0),
                other(0),
                other(1),
            );
        }
        let spans = receiver.spans().len();
        println!("\nspans received from the traced gateway: {spans}");
        drop(rows);
        drop(kept);
        drop(proxies);
    });
}

/// The 2026-07-28 client's row of `n` replicas.
fn modern_name(n: usize) -> &'static str {
    if n == 1 { "1 replica, 2026-07-28 client" } else { "3 replicas, 2026-07-28 client" }
}

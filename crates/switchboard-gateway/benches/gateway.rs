//! `cargo bench -p switchboard-gateway --bench gateway`: echo calls through `switchboard
//! gateway` against the same calls sent straight to the same minimal server, in one run.
//!
//! The client is a bare rmcp client on a current-thread runtime, pinned to CPU 0; every server,
//! gateway and upstream runs pinned to CPU 1 (set before exec, inherited by their children).
//! The upstream is `examples/echo.rs` (one tool, nothing else). Rows, each measured sequentially
//! and with 64 calls in flight, in interleaved rounds, each starting at another row (medians, and
//! the spread over rounds):
//!
//! - stdio front: client → echo over stdio (twice: the A/A row shows the noise), client →
//!   `examples/bare_proxy.rs` → echo (rmcp's server and client back to back with nothing in
//!   between: the floor for any gateway built on rmcp), client → `examples/hub_proxy.rs` → echo
//!   (the same server with switchboard's hub as its client: the hub's share of the gateway's
//!   cost), and client → `switchboard gateway` over stdio → echo over stdio (twice: its own A/A
//!   row, for telling a change of a few µs from the noise).
//! - HTTP front: client → echo serving Streamable HTTP itself, client → the bare proxy serving
//!   Streamable HTTP → echo over stdio (the floor again), client → `switchboard gateway --http`
//!   → echo over stdio, the same gateway with `identity` and a client signed in (a JWT of an
//!   issuer of the testkit's, checked on every request: what a team's caller costs beside the
//!   single user's path); and the peer gateways that install from npm and PyPI in front of the
//!   same echo over stdio: `mcp-proxy` (PyPI), `supergateway` and `mcp-hub` (npm).
//! - A client of 2026-07-28 (`server/discover`, per-request metadata, no session) on both
//!   fronts: the floor and the gateway again (on HTTP signed in too), each row's "of floor"
//!   against the floor of its own client's era (over HTTP every such request is one of rmcp's
//!   stateless requests, at the floor as at the gateway).
//!
//! Each row also gives the CPU time the process in the middle (proxy or gateway) spent per call,
//! read from `/proc`: a figure the scheduler's noise does not move, for telling whether a change
//! made the hop cheaper.
//!
//! Then the gateway's resident memory: each gateway row's after the rounds, one at rest (one
//! upstream, a client that listed and called once), one with 20 upstreams and 50 HTTP sessions.
//!
//! `SWITCHBOARD_BENCH_FRONT=stdio` (or `http`) measures only that front's own rows (no peers,
//! no memory row): for profiling the gateway while it runs. With `CARGO_TARGET_DIR` set, the
//! programs are built and taken from there: a second tree built without LTO
//! (`CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
//! CARGO_PROFILE_RELEASE_INCREMENTAL=true`) rebuilds in a minute or two instead of ten, for
//! trying a change (its figures are for comparing rows of one run, not for README).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};
use switchboard_testkit::issuer::{Issuer, Key};
use switchboard_testkit::{Peer, cpu_secs, free_port, rss_kib, wait_listening, workspace};

use futures::future::join_all;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

/// How long each row is measured, per round and mode (calls completed in the window count).
const WINDOW: Duration = Duration::from_secs(2);
const IN_FLIGHT: usize = 64;
const ROUNDS: usize = 3;

type Client = RunningService<RoleClient, ()>;

fn build() -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args([
            "build",
            "-q",
            "--release",
            "-p",
            "switchboard-cli",
            "-p",
            "switchboard-gateway",
            "--bins",
            "--example",
            "echo",
            "--example",
            "bare_proxy",
            "--example",
            "hub_proxy",
        ])
        .current_dir(workspace())
        .status()
        .unwrap();
    assert!(ok.success());
    // Where cargo put them: `CARGO_TARGET_DIR` when set (a second tree for a quicker profile).
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from);
    let release = target.join("release");
    let examples = release.join("examples");
    (release.join("switchboard"), examples.join("echo"), examples.join("bare_proxy"), examples.join("hub_proxy"))
}

/// `program` pinned to CPU 1, the servers' CPU (children inherit it).
fn on_cpu1(program: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(program);
    // SAFETY: between fork and exec only sched_setaffinity, a plain system call.
    unsafe {
        c.pre_exec(|| {
            pin(1);
            Ok(())
        });
    }
    c
}

/// Pins the calling process to one CPU.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes into it; the call affects this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn pin_self_to_cpu0() {
    pin(0);
}

/// Waits until an HTTP server answers on `port`.
fn wait_port(port: u16) {
    wait_listening(port, "a bench target", Duration::from_secs(60));
}

/// One way of reaching the echo tool.
struct Target {
    name: &'static str,
    front: &'static str,
    /// The client's lifecycle: `initialize` and a session (2025-11-25), or `server/discover`
    /// with every request standing alone (2026-07-28). A row's floor is its front's and era's.
    modern: bool,
    client: Client,
    tool: String,
    _procs: Vec<Peer>,
    /// The process in the middle (a proxy or gateway), whose CPU time per call is reported.
    pid: Option<u32>,
    seq: Vec<f64>,
    conc: Vec<f64>,
    /// (CPU seconds, calls) of `pid`, sequentially and in flight, over all rounds.
    cpu: [(f64, f64); 2],
}

/// A bare rmcp client over `transport`: of 2025-11-25 (`initialize`), or with `modern` of
/// 2026-07-28 (`server/discover`, then per-request metadata and no session).
async fn connect<T, E, A>(transport: T, modern: bool) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    if modern {
        let lifecycle =
            ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28] };
        ().serve_with_lifecycle(transport, lifecycle).await.unwrap()
    } else {
        ().serve(transport).await.unwrap()
    }
}

async fn stdio_client(cmd: Command, modern: bool) -> (Client, Option<u32>) {
    let cmd = tokio::process::Command::from(cmd);
    let child = TokioChildProcess::new(cmd).unwrap();
    let pid = child.id();
    (connect(child, modern).await, pid)
}

async fn http_client(url: &str) -> Client {
    http_client_of(url, false).await
}

async fn http_client_of(url: &str, modern: bool) -> Client {
    let t = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url));
    connect(t, modern).await
}

/// A client of `url` sending `token` on every request.
async fn signed_in_client(url: &str, token: String, modern: bool) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    connect(StreamableHttpClientTransport::from_config(config), modern).await
}

async fn echo_tool(client: &Client) -> String {
    let tools = client.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).find(|n| n.ends_with("echo")).expect("an echo tool")
}

async fn target(name: &'static str, front: &'static str, client: Client, procs: Vec<Peer>) -> Target {
    let tool = echo_tool(&client).await;
    let pid = procs.first().map(|p| p.id());
    let modern = false;
    Target {
        name,
        front,
        modern,
        client,
        tool,
        _procs: procs,
        pid,
        seq: Vec::new(),
        conc: Vec::new(),
        cpu: [(0.0, 0.0); 2],
    }
}

/// A target whose client is of 2026-07-28.
async fn modern_target(name: &'static str, front: &'static str, client: Client, procs: Vec<Peer>) -> Target {
    Target { modern: true, ..target(name, front, client, procs).await }
}

/// A target over stdio: the client's child is the process in the middle.
async fn stdio_target(name: &'static str, cmd: Command) -> Target {
    let (client, pid) = stdio_client(cmd, false).await;
    Target { pid, ..target(name, "stdio", client, vec![]).await }
}

/// The same with a client of 2026-07-28.
async fn stdio_modern_target(name: &'static str, cmd: Command) -> Target {
    let (client, pid) = stdio_client(cmd, true).await;
    Target { pid, ..modern_target(name, "stdio", client, vec![]).await }
}

/// Calls/s over `window`, `in_flight` at a time (batches of that many; the last batch in the
/// window is waited for and counted), and the calls made.
async fn rate(client: &Client, tool: &str, window: Duration, in_flight: usize) -> (f64, usize) {
    let call = |i: usize| {
        let args = serde_json::json!({"text": format!("hello {i}")}).as_object().cloned().unwrap();
        client.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
    };
    let start = Instant::now();
    let mut done = 0;
    while start.elapsed() < window {
        let batch: Vec<_> = (done..done + in_flight).map(call).collect();
        for r in join_all(batch).await {
            r.unwrap();
        }
        done += in_flight;
    }
    (done as f64 / start.elapsed().as_secs_f64(), done)
}

/// The middle process's CPU µs per call (sequential / in flight), where there is one.
fn per_call(t: &Target) -> String {
    let us = |(secs, calls): (f64, f64)| if calls > 0.0 { format!("{:.0}", secs * 1e6 / calls) } else { "—".into() };
    if t.name.starts_with("direct") { "—".into() } else { format!("{} / {}", us(t.cpu[0]), us(t.cpu[1])) }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{:.0}-{:.0}", lo, hi)
}

fn config(dir: &Path, servers: usize, echo: &Path) -> PathBuf {
    let mut map = serde_json::Map::new();
    for i in 0..servers {
        let name = if servers == 1 { "echo".to_string() } else { format!("echo{i}") };
        map.insert(name, serde_json::json!({"command": echo, "args": ["stdio"]}));
    }
    let path = dir.join(format!("gateway-{servers}.json"));
    std::fs::write(&path, serde_json::json!({"servers": map}).to_string()).unwrap();
    path
}

fn switchboard(bin: &Path, home: &Path, config: &Path) -> Command {
    let mut c = on_cpu1(bin);
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("data"))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(config)
        .arg("gateway");
    c
}

/// `examples/hub_proxy.rs` serving `config`'s servers, with the same home as the gateway.
fn embedded(program: &Path, home: &Path, config: &Path) -> Command {
    let mut c = on_cpu1(program);
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("data-hub"))
        .env_remove("RUST_LOG")
        .arg(config);
    c
}

/// `switchboard gateway --http` on a free port (no token: loopback, a benchmark).
fn http_gateway(bin: &Path, home: &Path, config: &Path) -> (Peer, String) {
    http_gateway_with(bin, home, config, &["--no-auth"])
}

/// `switchboard gateway --http` on a free port with `flags`.
fn http_gateway_with(bin: &Path, home: &Path, config: &Path, flags: &[&str]) -> (Peer, String) {
    let port = free_port();
    let child = switchboard(bin, home, config)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_port(port);
    (Peer::new(child), format!("http://127.0.0.1:{port}/mcp"))
}

/// `examples/bare_proxy.rs` serving Streamable HTTP on a free port in front of `echo` over
/// stdio (the floor of the HTTP front), and its `/mcp` URL.
fn http_floor(bare_proxy: &Path, echo: &Path) -> (Peer, String) {
    let port = free_port();
    let proxy = Peer::new(
        on_cpu1(bare_proxy)
            .args(["--http", &port.to_string()])
            .arg(echo)
            .arg("stdio")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(port);
    (proxy, format!("http://127.0.0.1:{port}/mcp"))
}

async fn peers(echo: &Path, dir: &Path) -> Vec<Target> {
    let mut out = Vec::new();
    let py = switchboard_testkit::python_venv("bench-mcp-proxy", &["mcp-proxy==0.13.0"]);
    let node = switchboard_testkit::npm_folder("bench-gateways", &["supergateway@4.0.0", "mcp-hub@4.2.1"]);
    let spawn = |mut c: Command| Peer::new(c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());

    let port = free_port();
    let mut c = on_cpu1(&py.join("bin/mcp-proxy"));
    c.args(["--port", &port.to_string(), "--transport", "streamablehttp"]).arg(echo).arg("stdio");
    let p = spawn(c);
    wait_port(port);
    out.push(
        target("mcp-proxy 0.13 (PyPI)", "http", http_client(&format!("http://127.0.0.1:{port}/mcp")).await, vec![p])
            .await,
    );

    let port = free_port();
    let mut c = on_cpu1(Path::new("node"));
    c.arg(node.join("node_modules/.bin/supergateway"))
        // Stateful: one echo process per session (stateless, it starts one per request).
        .args(["--stdio", &format!("{} stdio", echo.display()), "--outputTransport", "streamableHttp", "--stateful"])
        .args(["--port", &port.to_string()]);
    let p = spawn(c);
    wait_port(port);
    out.push(
        target("supergateway 4.0 (npm)", "http", http_client(&format!("http://127.0.0.1:{port}/mcp")).await, vec![p])
            .await,
    );

    let port = free_port();
    let hub_config = dir.join("mcp-hub.json");
    std::fs::write(
        &hub_config,
        serde_json::json!({"mcpServers": {"echo": {"command": echo, "args": ["stdio"]}}}).to_string(),
    )
    .unwrap();
    let mut c = on_cpu1(Path::new("node"));
    c.arg(node.join("node_modules/.bin/mcp-hub")).args(["--port", &port.to_string(), "--config"]).arg(&hub_config);
    let p = spawn(c);
    wait_port(port);
    tokio::time::sleep(Duration::from_secs(2)).await; // it connects its servers after listening
    // mcp-hub serves the legacy HTTP+SSE transport at /mcp: reached through switchboard's own
    // legacy SSE client transport (rmcp has none).
    let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
    let sse = switchboard::SseClientTransport::connect(url, Default::default(), 16 << 20).await.unwrap();
    out.push(target("mcp-hub 4.2 (npm; legacy SSE)", "http", ().serve(sse).await.unwrap(), vec![p]).await);
    out
}

fn main() {
    // Built on every CPU (a child inherits its parent's CPUs), then pinned.
    let (bin, echo, bare_proxy, hub_proxy) = build();
    pin_self_to_cpu0();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let only = std::env::var("SWITCHBOARD_BENCH_FRONT").ok();
    let wants = |front: &str| only.as_deref().is_none_or(|o| o == front);
    rt.block_on(async {
        let one = config(dir.path(), 1, &echo);
        let mut targets = Vec::new();
        // Kept until the rows are measured (the signed-in row's issuer serves its keys).
        let mut issuers = Vec::new();
        if wants("stdio") {
            let mut echo_stdio = on_cpu1(&echo);
            echo_stdio.arg("stdio");
            targets.push(stdio_target("direct (A)", echo_stdio).await);
            let mut echo_stdio = on_cpu1(&echo);
            echo_stdio.arg("stdio");
            targets.push(stdio_target("direct (A/A)", echo_stdio).await);
            let mut proxy = on_cpu1(&bare_proxy);
            proxy.arg(&echo).arg("stdio");
            targets.push(stdio_target("bare rmcp proxy (floor)", proxy).await);
            targets.push(stdio_target("the hub alone (hub_proxy)", embedded(&hub_proxy, dir.path(), &one)).await);
            targets.push(stdio_target("switchboard gateway", switchboard(&bin, dir.path(), &one)).await);
            targets.push(stdio_target("switchboard gateway (A/A)", switchboard(&bin, dir.path(), &one)).await);
            let mut proxy = on_cpu1(&bare_proxy);
            proxy.arg(&echo).arg("stdio");
            targets.push(stdio_modern_target("bare rmcp proxy (floor), 2026-07-28 client", proxy).await);
            targets.push(
                stdio_modern_target("switchboard gateway, 2026-07-28 client", switchboard(&bin, dir.path(), &one))
                    .await,
            );
        }
        if wants("http") {
            let port = free_port();
            let direct_http =
                Peer::new(on_cpu1(&echo).args(["http", &port.to_string()]).stdout(Stdio::null()).spawn().unwrap());
            wait_port(port);
            targets.push(
                target("direct", "http", http_client(&format!("http://127.0.0.1:{port}/mcp")).await, vec![direct_http])
                    .await,
            );
            let (proxy, url) = http_floor(&bare_proxy, &echo);
            targets.push(target("bare rmcp proxy (floor)", "http", http_client(&url).await, vec![proxy]).await);
            // The same floor with a 2026-07-28 client: every request stands alone, on rmcp's
            // stateless path, as it does at the gateway.
            let (proxy, url) = http_floor(&bare_proxy, &echo);
            let client = http_client_of(&url, true).await;
            targets.push(modern_target("bare rmcp proxy (floor), 2026-07-28 client", "http", client, vec![proxy]).await);
            let (gw, url) = http_gateway(&bin, dir.path(), &one);
            targets.push(target("switchboard gateway --http", "http", http_client(&url).await, vec![gw]).await);
            let (gw, url) = http_gateway(&bin, dir.path(), &one);
            let client = http_client_of(&url, true).await;
            targets.push(modern_target("switchboard gateway --http, 2026-07-28 client", "http", client, vec![gw]).await);
            // A caller who signed in: the same config with `identity` (the issuer's keys are
            // fetched once; each request's JWT is checked: signature, issuer, audience, expiry).
            let key = Key::new("k1");
            let issuer = Issuer::start(&[&key]);
            let mut signed = serde_json::from_slice::<serde_json::Value>(&std::fs::read(&one).unwrap()).unwrap();
            signed["identity"] = serde_json::json!({"issuers": [issuer.issuer]});
            let signed_config = dir.path().join("gateway-signed-in.json");
            std::fs::write(&signed_config, signed.to_string()).unwrap();
            let (gw, url) = http_gateway_with(&bin, dir.path(), &signed_config, &[]);
            let token = key.sign(&issuer.claims(&url, "alice", &["devs"]));
            let client = signed_in_client(&url, token, false).await;
            targets.push(target("switchboard gateway --http, signed in (JWT)", "http", client, vec![gw]).await);
            let (gw, url) = http_gateway_with(&bin, dir.path(), &signed_config, &[]);
            let token = key.sign(&issuer.claims(&url, "alice", &["devs"]));
            let client = signed_in_client(&url, token, true).await;
            targets
                .push(modern_target("switchboard gateway --http, signed in, 2026-07-28 client", "http", client, vec![gw]).await);
            issuers.push(issuer);
            if only.is_none() {
                targets.extend(peers(&echo, dir.path()).await);
            }
        }

        for t in &targets {
            rate(&t.client, &t.tool, Duration::from_millis(300), 1).await; // warm up
        }
        // Each round starts at another row: a row measured just after another one runs while
        // that one's leftovers (its last answers, its log's flush) still take CPU 1, and always
        // measuring the same rows last made them about 6 % slower (a second floor row at the
        // end of a stdio run, 2026-12-03: 50 against 47 µs per call at 64 in flight).
        let rows = targets.len();
        for round in 0..ROUNDS {
            for i in 0..rows {
                let t = &mut targets[(i + round * rows / ROUNDS) % rows];
                for (mode, in_flight) in [1, IN_FLIGHT].into_iter().enumerate() {
                    let before = t.pid.map(cpu_secs);
                    let (r, calls) = rate(&t.client, &t.tool, WINDOW, in_flight).await;
                    if let (Some(pid), Some(before)) = (t.pid, before) {
                        t.cpu[mode].0 += cpu_secs(pid) - before;
                        t.cpu[mode].1 += calls as f64;
                    }
                    if mode == 0 { t.seq.push(r) } else { t.conc.push(r) }
                }
            }
        }
        println!(
            "\n| front | path | sequential calls/s (spread) | of direct | of floor | 64 in flight calls/s (spread) | of direct | of floor | CPU µs/call of the middle process, seq / 64 |"
        );
        println!("|---|---|--:|--:|--:|--:|--:|--:|--:|");
        for front in ["stdio", "http"].into_iter().filter(|f| wants(f)) {
            let base = targets.iter().find(|t| t.front == front).map(|t| (median(&t.seq), median(&t.conc))).unwrap();
            let floor_of = |modern: bool| {
                targets
                    .iter()
                    .find(|t| t.front == front && t.modern == modern && t.name.contains("floor"))
                    .map(|t| (median(&t.seq), median(&t.conc)))
                    .unwrap_or(base)
            };
            for t in targets.iter().filter(|t| t.front == front) {
                let floor = floor_of(t.modern);
                let (s, c) = (median(&t.seq), median(&t.conc));
                println!(
                    "| {front} | {} | {s:.0} ({}) | {:.2} | {:.2} | {c:.0} ({}) | {:.2} | {:.2} | {} |",
                    t.name,
                    spread(&t.seq),
                    s / base.0,
                    s / floor.0,
                    spread(&t.conc),
                    c / base.1,
                    c / floor.1,
                    per_call(t)
                );
            }
        }
        // What each gateway holds after all those calls (its own memory; upstreams are apart).
        for t in targets.iter().filter(|t| t.name.starts_with("switchboard")) {
            if let Some(pid) = t.pid {
                println!("RSS after the rounds, {} ({}): {:.1} MB", t.name, t.front, rss_kib(pid) as f64 / 1024.0);
            }
        }
        drop(targets);
        drop(issuers);
        if only.is_some() {
            return;
        }

        // At rest: one upstream, one client that listed and called once.
        let (gw, url) = http_gateway(&bin, dir.path(), &one);
        let c = http_client(&url).await;
        let tool = echo_tool(&c).await;
        let args = serde_json::json!({"text": "x"}).as_object().cloned().unwrap();
        c.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        println!("\ngateway RSS at rest (one upstream, one client that listed and called): {:.1} MB", rss_kib(gw.id()) as f64 / 1024.0);
        drop(c);
        drop(gw);

        // Memory: 20 upstreams, 50 HTTP sessions, each having listed and called once.
        let twenty = config(dir.path(), 20, &echo);
        let (gw, url) = http_gateway(&bin, dir.path(), &twenty);
        let mut sessions = Vec::new();
        for _ in 0..50 {
            let c = http_client(&url).await;
            let tools = c.list_all_tools().await.unwrap();
            assert_eq!(tools.len(), 40, "two tools from each of 20 upstreams");
            let args = serde_json::json!({"text": "x"}).as_object().cloned().unwrap();
            let echo = tools.iter().find(|t| t.name.ends_with("echo")).unwrap().name.to_string();
            c.call_tool(CallToolRequestParams::new(echo).with_arguments(args)).await.unwrap();
            sessions.push(c);
        }
        println!(
            "\ngateway RSS with 20 upstreams and 50 HTTP sessions: {:.1} MB (the upstreams are processes of their own)",
            rss_kib(gw.id()) as f64 / 1024.0
        );
        drop(sessions);
        drop(gw);
    });
}

//! Whole-process rows of the hub benchmark: a cold start (start, connect, list, exit) and the
//! peak RSS over many calls, each a process of its own: `examples/bench_bare.rs` (rmcp only) and
//! `examples/bench_hub.rs` (a program that embeds switchboard), both small release binaries, so
//! neither carries this bench's own code; and `switchboard --config FILE tools --json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;

/// The two example binaries, built in release.
pub struct Programs {
    bare: PathBuf,
    hub: PathBuf,
}

pub fn build() -> Programs {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard", "--example", "bench_bare", "--example", "bench_hub"])
        .current_dir(super::root())
        .status()
        .unwrap();
    assert!(ok.success());
    let dir = super::root().join("target/release/examples");
    Programs { bare: dir.join("bench_bare"), hub: dir.join("bench_hub") }
}

/// The echo server's command line, pinned to CPU 1 (as in the rows of calls).
fn echo_argv(echo: &Path) -> Vec<String> {
    vec!["taskset".into(), "-c".into(), "1".into(), echo.display().to_string(), "stdio".into()]
}

/// How a cold start's server is sandboxed.
#[derive(Clone, Copy)]
enum Sandbox {
    /// The default sandbox (Landlock over the file system, the network as it is).
    Default,
    /// `"sandbox": false`.
    Off,
    /// `"network": false`: also a user and network namespace of its own.
    NoNetwork,
    /// `allowedDomains`: also a namespace whose only way out is switchboard's proxy.
    Proxy,
}

impl Sandbox {
    fn name(self) -> &'static str {
        match self {
            Sandbox::Default => "default",
            Sandbox::Off => "off",
            Sandbox::NoNetwork => "network-false",
            Sandbox::Proxy => "proxy",
        }
    }

    fn apply(self, server: &mut serde_json::Value) {
        match self {
            Sandbox::Default => {}
            Sandbox::Off => server["sandbox"] = json!(false),
            Sandbox::NoNetwork => server["sandbox"] = json!({"network": false}),
            Sandbox::Proxy => server["sandbox"] = json!({"network": {"allowedDomains": ["example.com"]}}),
        }
    }
}

/// A config of `servers` echo servers (`echo`, `echo2`, ...), in the default sandbox.
fn config_file(dir: &Path, echo: &Path, servers: usize) -> PathBuf {
    config_file_in(dir, echo, servers, Sandbox::Default)
}

fn config_file_in(dir: &Path, echo: &Path, servers: usize, sandbox: Sandbox) -> PathBuf {
    let file = dir.join(format!("servers-{servers}-{}.json", sandbox.name()));
    let argv = echo_argv(echo);
    let entries: serde_json::Map<String, serde_json::Value> = (0..servers)
        .map(|i| {
            let name = if i == 0 { "echo".to_string() } else { format!("echo{}", i + 1) };
            let mut server = json!({"command": argv[0], "args": argv[1..]});
            sandbox.apply(&mut server);
            (name, server)
        })
        .collect();
    std::fs::write(&file, json!({"servers": entries}).to_string()).unwrap();
    file
}

/// A command with this bench's data and user-config folders (nothing of the user's).
fn isolated(program: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("SWITCHBOARD_CONFIG", dir.join("user.json")).env("SWITCHBOARD_DATA_DIR", dir.join("data")).current_dir(dir);
    cmd
}

/// Runs `cmd` to its end: its wall time in ms and its stdout.
fn run(mut cmd: Command) -> (f64, String) {
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    (ms, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn bare(p: &Programs, echo: &Path, dir: &Path, calls: u64) -> Command {
    let mut cmd = isolated(&p.bare, dir);
    cmd.env("CALLS", calls.to_string()).arg("--").args(echo_argv(echo));
    cmd
}

fn hub(p: &Programs, echo: &Path, dir: &Path, calls: u64, servers: usize) -> Command {
    hub_in(p, echo, dir, calls, servers, Sandbox::Default)
}

fn hub_in(p: &Programs, echo: &Path, dir: &Path, calls: u64, servers: usize, sandbox: Sandbox) -> Command {
    let mut cmd = isolated(&p.hub, dir);
    cmd.env("CALLS", calls.to_string()).arg(config_file_in(dir, echo, servers, sandbox));
    cmd
}

fn kb(status: &str, key: &str) -> f64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// The cold-start rows: `runs` interleaved runs of a bare client, the hub and the CLI, each
/// start → connect → list → exit; medians and spreads in ms.
pub fn cold_rows(p: &Programs, echo: &Path, cli: &Path, dir: &Path, runs: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let file = config_file(dir, echo, 1);
    let (mut b, mut h, mut c) = (vec![], vec![], vec![]);
    let sandboxes = [Sandbox::Off, Sandbox::NoNetwork, Sandbox::Proxy];
    let mut hs: Vec<Vec<f64>> = vec![vec![]; sandboxes.len()];
    for _ in 0..runs {
        b.push(run(bare(p, echo, dir, 0)).0);
        h.push(run(hub(p, echo, dir, 0, 1)).0);
        for (v, s) in hs.iter_mut().zip(sandboxes) {
            v.push(run(hub_in(p, echo, dir, 0, 1, s)).0);
        }
        let mut cmd = isolated(cli, dir);
        cmd.arg("--config").arg(&file).args(["tools", "--json"]);
        let (ms, out) = run(cmd);
        c.push(ms);
        let tools: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(tools["tools"].as_array().map(Vec::len), Some(2), "{tools}");
    }
    let base = super::median(&b);
    println!("\n| whole process: start, connect, list, exit | ms (spread) | over bare |");
    println!("|---|--:|--:|");
    println!("| bare rmcp, current-thread | {base:.1} ({}) | |", super::spread1(&b));
    let mut rows = vec![("Hub (library), current-thread (default sandbox)", &h)];
    rows.extend(
        ["Hub (library), sandbox off", "Hub (library), `network: false`", "Hub (library), `allowedDomains` (proxy)"]
            .into_iter()
            .zip(&hs),
    );
    rows.push(("`switchboard --config X tools --json`", &c));
    for (name, v) in rows {
        println!("| {name} | {:.1} ({}) | +{:.1} ms |", super::median(v), super::spread1(v), super::median(v) - base);
    }
}

/// Peak RSS rows: a bare client and a hub with one server, and a hub with 20, each over
/// `calls` calls (every 1,000th a 1 MiB result), and the RSS after a tenth of them against the
/// end (no growth).
pub fn rss_rows(p: &Programs, echo: &Path, dir: &Path, calls: u64) {
    std::fs::create_dir_all(dir).unwrap();
    println!(
        "\n| {calls} calls, every 1,000th a 1 MiB result | peak RSS MB | RSS MB after {} calls | RSS MB at the end |",
        calls / 10
    );
    println!("|---|--:|--:|--:|");
    let rows = [
        ("bare rmcp, one server", bare(p, echo, dir, calls)),
        ("Hub, one server", hub(p, echo, dir, calls, 1)),
        ("Hub, 20 servers", hub(p, echo, dir, calls, 20)),
    ];
    for (name, cmd) in rows {
        let (_, out) = run(cmd);
        let parts: Vec<&str> = out.split("\n---").collect();
        let (early, late) = (parts[0], parts[parts.len().saturating_sub(2)]);
        let mb = |s: &str, k: &str| kb(s, k) / 1024.0;
        println!("| {name} | {:.1} | {:.1} | {:.1} |", mb(late, "VmHWM:"), mb(early, "VmRSS:"), mb(late, "VmRSS:"));
    }
}

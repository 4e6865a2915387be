//! The official conformance suite's *server* scenarios (`@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12) against the gateway (`--names bare`) in front of the suite's own reference
//! server, each requirement set also run against the reference server directly, in the same
//! test, as the baseline:
//!
//! - `--requirements 2025-11-25`, the upstream connected in 2025-11-25: every scenario the
//!   server passes directly passes through the gateway, but for the known gaps below.
//! - `--requirements 2026-07-28`, the upstream in its newest era: the same, and the gateway
//!   passes scenarios the server alone fails (results of earlier revisions given `resultType`,
//!   `Mcp-Method`/`Mcp-Name` checked by rmcp's server, era translation).
//!
//! The tables are printed (`cargo test -p switchboard-gateway --test conformance -- --nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use switchboard_testkit::{free_port, node22_bin, wait_listening, workspace};

const SUITE: &str = "0.2.0-alpha.12";

/// Scenarios the gateway does not pass though the server does, and why (each is in the note).
const GAPS_2025: &[(&str, &str)] = &[(
    "tools-call-with-logging",
    "rmcp 3.11's Streamable HTTP server sends every notification but progress on the GET stream, \
     not on the call's own response stream; this client waits 200 ms after the call, and passes \
     only when its GET stream was open in time",
)];
const GAPS_2026: &[(&str, &str)] = &[(
    "server-stateless",
    "its `test_streaming_elicitation` answers with two JSON texts in one application/json body, \
     which rmcp's client refuses",
)];

/// `.peers/conf-server`: the vendored reference server, installed from its lockfile once.
fn reference_server() -> PathBuf {
    let dir = workspace().join(".peers/conf-server");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-server");
    if !dir.join("node_modules/.bin/tsx").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        for f in std::fs::read_dir(&src).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
        }
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .env("PATH", path_with_node22())
            .status()
            .unwrap();
        assert!(status.success(), "npm ci of the reference server failed");
    }
    dir
}

fn path_with_node22() -> String {
    format!("{}:{}", node22_bin().display(), std::env::var("PATH").unwrap_or_default())
}

/// A process in a group of its own, ended with its whole group when dropped (`tsx` runs the
/// server in a child `node`, which a kill of `tsx` alone left running).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: a plain syscall; the group is the one this test made.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_reference() -> (Killed, u16) {
    let dir = reference_server();
    let port = free_port();
    let child = Command::new(dir.join("node_modules/.bin/tsx"))
        .arg("everything-server.ts")
        .current_dir(&dir)
        .env("PORT", port.to_string())
        .env("PATH", path_with_node22())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_listening(port, "the reference server", Duration::from_secs(60));
    (Killed(child), port)
}

/// Scenario → (passed checks, failed checks), from the suite's summary.
fn run_suite(url: &str, requirements: &str) -> BTreeMap<String, (u32, u32)> {
    let out = Command::new(workspace().join("scripts/conformance"))
        .args(["server", "--url", url, "--requirements", requirements])
        .env("CONFORMANCE_VERSION", SUITE)
        .current_dir(workspace())
        .output()
        .expect("scripts/conformance (needs npm)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut results = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")) else { continue };
        let Some((name, counts)) = rest.split_once(": ") else { continue };
        let nums: Vec<u32> = counts.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        if let [passed, failed, ..] = nums[..] {
            results.insert(name.to_string(), (passed, failed));
        }
    }
    assert!(!results.is_empty(), "the suite printed no summary:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    results
}

fn table(requirements: &str, direct: &BTreeMap<String, (u32, u32)>, gateway: &BTreeMap<String, (u32, u32)>) {
    println!("\n--requirements {requirements}: scenario | direct passed/failed | through the gateway");
    let mut names: Vec<&String> = direct.keys().chain(gateway.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let show = |m: &BTreeMap<String, (u32, u32)>| m.get(n).map_or("-".into(), |(p, f)| format!("{p}/{f}"));
        println!("{n} | {} | {}", show(direct), show(gateway));
    }
    let sum = |m: &BTreeMap<String, (u32, u32)>| m.values().fold((0, 0), |a, (p, f)| (a.0 + p, a.1 + f));
    let ok = |m: &BTreeMap<String, (u32, u32)>| m.values().filter(|(_, f)| *f == 0).count();
    println!(
        "checks passed/failed: direct {:?}, gateway {:?}; scenarios passing: direct {}, gateway {} of {}",
        sum(direct),
        sum(gateway),
        ok(direct),
        ok(gateway),
        direct.len()
    );
}

/// Every scenario passing directly passes through the gateway (but for `gaps`).
fn no_losses(direct: &BTreeMap<String, (u32, u32)>, gateway: &BTreeMap<String, (u32, u32)>, gaps: &[(&str, &str)]) {
    for (name, (_, failed)) in direct {
        if *failed > 0 || gaps.iter().any(|(g, _)| g == name) {
            continue;
        }
        let through = gateway.get(name).copied().unwrap_or((0, 1));
        assert_eq!(through.1, 0, "`{name}` passes against the server but not through the gateway: {through:?}");
    }
}

fn gateway(upstream: serde_json::Value) -> (Child, String, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gateway.json");
    std::fs::write(&config, json!({"servers": {"ref": upstream}}).to_string()).unwrap();
    let mut child = Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.path().join("data"))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(&config)
        .args(["gateway", "--http", "127.0.0.1:0", "--no-auth", "--names", "bare"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, url, home)
}

#[test]
fn server_scenarios_through_the_gateway_in_both_eras() {
    let (_server, port) = start_reference();
    let upstream = format!("http://localhost:{port}/mcp");

    let direct = run_suite(&upstream, "2025-11-25");
    let (mut gw, url, _home) = gateway(json!({"url": upstream, "protocol_version": "2025-11-25"}));
    let through = run_suite(&url, "2025-11-25");
    let _ = gw.kill();
    let _ = gw.wait();
    table("2025-11-25", &direct, &through);
    no_losses(&direct, &through, GAPS_2025);

    let direct = run_suite(&upstream, "2026-07-28");
    let (mut gw, url, _home) = gateway(json!({"url": upstream}));
    let through = run_suite(&url, "2026-07-28");
    let _ = gw.kill();
    let _ = gw.wait();
    table("2026-07-28", &direct, &through);
    no_losses(&direct, &through, GAPS_2026);
    // What the gateway adds: scenarios the server alone fails that pass through it.
    let gained: Vec<&String> = direct
        .iter()
        .filter(|(n, (_, f))| *f > 0 && through.get(*n).is_some_and(|(_, f)| *f == 0))
        .map(|(n, _)| n)
        .collect();
    println!("passing only through the gateway: {gained:?}");
    assert!(gained.iter().any(|n| n.starts_with("tools-call-")), "{gained:?}");
}

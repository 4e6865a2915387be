//! `cargo bench -p switchboard-gateway --bench start`: time to tools for an agent's session,
//! with 10 real servers from npm (each `node` on its installed entry point; none needs an
//! account), one of them slow to start (server-memory behind a 3 s `sleep`, as a server that
//! downloads or warms up), in interleaved rounds (medians, and the spread over rounds). For each
//! way, from the spawn: the first `tools/list` answer and how many of the tools it held, and the
//! first list that has every server's tools (listed again until it does):
//!
//! - cold: `switchboard gateway --no-attach` with nothing remembered (the data folder's
//!   `lists/` removed before it);
//! - warm: the same, each server's lists remembered from the run before;
//! - attached: spawning `switchboard gateway` (stdio) in a workspace whose daemon (`switchboard
//!   serve`) runs warm;
//! - the agent starting the 10 servers itself: the same client connecting to each directly,
//!   all at once, to every `tools/list` (no first list before all are up: the agent lists each
//!   server as it comes).
//!
//! The client is rmcp's on a current-thread runtime; the release build people install.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const ROUNDS: usize = 7;

const PACKAGES: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/server-memory@2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
    "@modelcontextprotocol/server-github@2025.4.8",
    "@modelcontextprotocol/server-gitlab@2025.4.25",
    "@modelcontextprotocol/server-postgres@0.6.2",
    "@upstash/context7-mcp@4.1.1",
    "@notionhq/notion-mcp-server@2.5.2",
    "@playwright/mcp@0.0.83",
];

fn build() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "switchboard-cli"])
        .current_dir(switchboard_testkit::workspace())
        .status()
        .unwrap();
    assert!(ok.success());
    switchboard_testkit::workspace().join("target/release/switchboard")
}

/// The ten servers, as `(name, command, args, env)`.
fn servers(m: &Path) -> Vec<(&'static str, Vec<String>, Value)> {
    let at = |p: &str| m.join(p).display().to_string();
    vec![
        ("everything", vec![at("@modelcontextprotocol/server-everything/dist/index.js"), "stdio".into()], json!({})),
        ("filesystem", vec![at("@modelcontextprotocol/server-filesystem/dist/index.js"), "/tmp".into()], json!({})),
        ("memory", vec![at("@modelcontextprotocol/server-memory/dist/index.js")], json!({"SLOW_START": "3"})),
        ("thinking", vec![at("@modelcontextprotocol/server-sequential-thinking/dist/index.js")], json!({})),
        ("github", vec![at("@modelcontextprotocol/server-github/dist/index.js")], json!({})),
        (
            "gitlab",
            vec![at("@modelcontextprotocol/server-gitlab/dist/index.js")],
            json!({"GITLAB_PERSONAL_ACCESS_TOKEN": "unused"}),
        ),
        (
            "postgres",
            vec![at("@modelcontextprotocol/server-postgres/dist/index.js"), "postgresql://127.0.0.1:1/none".into()],
            json!({}),
        ),
        ("context7", vec![at("@upstash/context7-mcp/dist/index.js")], json!({})),
        ("notion", vec![at("@notionhq/notion-mcp-server/bin/cli.mjs")], json!({})),
        ("playwright", vec![at("@playwright/mcp/cli.js"), "--headless".into()], json!({})),
    ]
}

struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `switchboard <args>` in the project, with the bench's user file and data folder.
fn sb(bin: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("data"))
        .env("SWITCHBOARD_MANAGED_CONFIG", home.join("none.json"))
        .env_remove("RUST_LOG")
        .current_dir(home.join("project"))
        .args(args);
    c
}

/// What a client of the gateway saw from the spawn: its first `tools/list` answer and the
/// tools on it, and the first list with `want` tools (listed again until it has them).
struct Seen {
    first: Duration,
    first_tools: usize,
    complete: Duration,
}

async fn time_to_tools(mut cmd: Command, want: usize) -> Seen {
    let start = Instant::now();
    cmd.stderr(Stdio::null());
    let client = ().serve(TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap()).await.unwrap();
    let first_tools = client.list_all_tools().await.unwrap().len();
    let first = start.elapsed();
    let mut n = first_tools;
    while n < want {
        assert!(start.elapsed() < Duration::from_secs(120), "{n} of {want} tools after 2 minutes");
        tokio::time::sleep(Duration::from_millis(10)).await;
        n = client.list_all_tools().await.unwrap().len();
    }
    let complete = start.elapsed();
    client.cancel().await.unwrap();
    Seen { first, first_tools, complete }
}

/// The agent starting every server itself: all at once, to every `tools/list`.
async fn direct(list: &[(&'static str, Vec<String>, Value)]) -> (Duration, usize) {
    let start = Instant::now();
    let each = list.iter().map(|(_, args, env)| async move {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c").arg(launch(args, env)).stderr(Stdio::null());
        let client = ().serve(TokioChildProcess::new(c).unwrap()).await.unwrap();
        let n = client.list_all_tools().await.unwrap().len();
        (client, n)
    });
    let clients = join_all(each).await;
    let took = start.elapsed();
    let n = clients.iter().map(|(_, n)| n).sum();
    for (c, _) in clients {
        c.cancel().await.unwrap();
    }
    (took, n)
}

/// The shell line that starts a server: `node` on its arguments, after a `sleep` of its
/// `SLOW_START` seconds.
fn launch(args: &[String], env: &Value) -> String {
    let mut line = String::new();
    if let Some(s) = env.get("SLOW_START").and_then(Value::as_str) {
        line.push_str(&format!("sleep {s}; "));
    }
    for (k, v) in env.as_object().unwrap().iter().filter(|(k, _)| *k != "SLOW_START") {
        line.push_str(&format!("{k}='{}' ", v.as_str().unwrap()));
    }
    line.push_str("exec node");
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    line
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let bin = build();
    let packages = switchboard_testkit::npm_folder("bench-ten", PACKAGES);
    let list = servers(&packages.join("node_modules"));
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("project/.git")).unwrap();
    let config: serde_json::Map<String, Value> = list
        .iter()
        .map(|(name, args, env)| (name.to_string(), json!({"command": "sh", "args": ["-c", launch(args, env)]})))
        .collect();
    std::fs::write(home.path().join("user.json"), json!({ "servers": config }).to_string()).unwrap();

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        // The warm daemon of the workspace.
        let daemon = Killed(sb(&bin, home.path(), &["serve", "--port", "0"]).stdout(Stdio::null()).spawn().unwrap());
        let want = {
            let start = Instant::now();
            loop {
                let out = sb(&bin, home.path(), &["list", "--json"]).output().unwrap();
                let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                let servers = v["servers"].as_array().cloned().unwrap_or_default();
                let up = servers.iter().filter(|s| s["status"]["state"] == "connected").count();
                if up == list.len() && v.get("served_by").is_some() {
                    break servers.iter().map(|s| s["status"]["counts"]["tools"].as_u64().unwrap_or(0) as usize).sum();
                }
                assert!(start.elapsed() < Duration::from_secs(120), "the daemon's servers did not all connect: {v:#}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        let lists = home.path().join("data/lists");
        let (mut cold, mut warm, mut attached, mut agent) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut direct_tools = 0;
        for _ in 0..ROUNDS {
            let _ = std::fs::remove_dir_all(&lists);
            cold.push(time_to_tools(sb(&bin, home.path(), &["gateway", "--no-attach"]), want).await);
            warm.push(time_to_tools(sb(&bin, home.path(), &["gateway", "--no-attach"]), want).await);
            attached.push(time_to_tools(sb(&bin, home.path(), &["gateway"]), want).await);
            // The count may differ from the hub's: a server can list more tools to a client
            // that declares more capabilities (the hub's declares roots, sampling and
            // elicitation; this bare client none), so it is printed, not asserted.
            let (took, n) = direct(&list).await;
            direct_tools = n;
            agent.push(Seen { first: took, first_tools: n, complete: took });
        }
        drop(daemon);
        println!(
            "\ntime to tools ({} servers from npm, one starting 3 s late; {want} tools through switchboard, {direct_tools} to the bare client; {ROUNDS} rounds)",
            list.len()
        );
        println!("| way | first list | its tools | spread | every server's tools | spread |");
        println!("|---|--:|--:|--:|--:|--:|");
        for (name, v) in [
            ("switchboard gateway --no-attach, cold (nothing remembered)", &cold),
            ("switchboard gateway --no-attach, warm (lists remembered)", &warm),
            ("switchboard gateway, attached to the workspace's warm daemon", &attached),
            ("the agent starting the 10 servers itself", &agent),
        ] {
            let first: Vec<Duration> = v.iter().map(|s| s.first).collect();
            let complete: Vec<Duration> = v.iter().map(|s| s.complete).collect();
            let mut tools: Vec<usize> = v.iter().map(|s| s.first_tools).collect();
            tools.sort_unstable();
            let spread = |d: &[Duration]| {
                format!("{:.1}-{:.1} ms", ms(*d.iter().min().unwrap()), ms(*d.iter().max().unwrap()))
            };
            println!(
                "| {name} | {:.1} ms | {} | {} | {:.1} ms | {} |",
                ms(median(&first)),
                tools[tools.len() / 2],
                spread(&first),
                ms(median(&complete)),
                spread(&complete)
            );
        }
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

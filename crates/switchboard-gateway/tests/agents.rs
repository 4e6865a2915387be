//! The names agents give the gateway's tools, measured: the gateway's real list (the fixture,
//! server-everything, -filesystem, -memory and a Python SDK server behind it), named as Gemini
//! CLI and Qwen Code name them by running their own code (`DiscoveredMCPTool` from their npm
//! bundles, `tests/peers/agent_names.mjs`), and as Claude Code, OpenCode and VS Code name them
//! by the rules they document. Every agent must get every tool's name whole (not cut, hashed
//! or over its cap), with the server in it and no second `mcp__` prefix, under the default
//! names and an entry named `switchboard` (README's commands), and under `--name-limit 40`
//! for a longer entry name; `--names prefixed`, the old default, is shown to fail where it
//! did (the table is printed: README, "Names", records it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Home;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchboard_testkit::{agent_clis, node_peer, python, workspace};

/// An agent, and whether it left a tool's name as it should be (`None`: whole; `Some`: what it
/// made of it).
struct Agent {
    name: &'static str,
    /// The name its model is given for `tool` of the entry `entry`.
    made: Vec<String>,
    /// What it would be if the agent kept it whole.
    whole: Vec<String>,
    /// Its cap, in bytes.
    cap: usize,
}

impl Agent {
    /// The names it did not keep whole or that pass its cap.
    fn spoilt(&self) -> Vec<(String, String)> {
        self.made
            .iter()
            .zip(&self.whole)
            .filter(|(made, whole)| made != whole || made.len() > self.cap)
            .map(|(made, whole)| (whole.clone(), made.clone()))
            .collect()
    }
}

/// Characters outside `[A-Za-z0-9_-]` as `_` (the API-safe set every agent below keeps).
fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Every agent's names for `tools` under the entry `entry`.
fn agents(entry: &str, tools: &[String]) -> Vec<Agent> {
    let script = workspace().join("crates/switchboard-gateway/tests/peers/agent_names.mjs");
    let mut child = std::process::Command::new("node")
        .arg(&script)
        .arg(agent_clis())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = json!({"entry": entry, "tools": tools}).to_string();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "agent_names.mjs: {}", String::from_utf8_lossy(&out.stderr));
    let real: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let real = |agent: &str| -> Vec<String> {
        real[agent].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
    };
    let all = |f: &dyn Fn(&str) -> String| -> Vec<String> { tools.iter().map(|t| f(t)).collect() };
    vec![
        // Claude Code: `mcp__<server>__<tool>`, the API's `^[a-zA-Z0-9_-]{1,64}$`.
        Agent {
            name: "Claude Code",
            made: all(&|t| format!("mcp__{}__{}", safe(entry), safe(t))),
            whole: all(&|t| format!("mcp__{entry}__{t}")),
            cap: 64,
        },
        // Gemini CLI: `mcp_<server>_<tool>`, cut in the middle past 63.
        Agent { name: "Gemini CLI", made: real("gemini"), whole: all(&|t| format!("mcp_{entry}_{t}")), cap: 63 },
        // Qwen Code: `mcp__<server>__<tool>`, cut and hashed past 63.
        Agent { name: "Qwen Code", made: real("qwen"), whole: all(&|t| format!("mcp__{entry}__{t}")), cap: 63 },
        // OpenCode: `<server>_<tool>`, both made safe; the provider's 64.
        Agent {
            name: "OpenCode",
            made: all(&|t| format!("{}_{}", safe(entry), safe(t))),
            whole: all(&|t| format!("{entry}_{t}")),
            cap: 64,
        },
        // VS Code: `mcp_<server>_<tool>`, 64.
        Agent {
            name: "VS Code",
            made: all(&|t| format!("mcp_{}_{}", safe(entry), safe(t))),
            whole: all(&|t| format!("mcp_{entry}_{t}")),
            cap: 64,
        },
    ]
}

/// The gateway's tool names under `args`.
async fn listed(home: &Home, args: &[&str]) -> Vec<String> {
    let transport = TokioChildProcess::new(home.gateway(args)).unwrap();
    let client = ().serve(transport).await.unwrap();
    common::servers_up(client.peer()).await;
    let tools = client.list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

fn home() -> Home {
    let files = tempfile::tempdir().unwrap().keep();
    let script = workspace().join("tests/peers/py_server.py").display().to_string();
    Home::with(
        true,
        json!({"servers": {
            "everything": {"command": "node", "args": [node_peer("server-everything"), "stdio"]},
            "filesystem": {"command": "node", "args": [node_peer("server-filesystem"), files]},
            "memory": {"command": "node", "args": [node_peer("server-memory")],
                       "env": {"MEMORY_FILE_PATH": files.join("memory.jsonl")}},
            "python": {"command": python().display().to_string(), "args": [script]},
        }}),
    )
}

/// A table row per agent: its longest name and the names it spoilt.
fn table(entry: &str, names: &[String]) -> (String, usize) {
    let mut out = String::new();
    let mut spoilt = 0;
    for agent in agents(entry, names) {
        let longest = agent.made.iter().map(String::len).max().unwrap_or(0);
        let bad = agent.spoilt();
        spoilt += bad.len();
        out.push_str(&format!("  {:<12} longest {longest:>2} of {}, {} spoilt", agent.name, agent.cap, bad.len()));
        for (whole, made) in bad.iter().take(2) {
            out.push_str(&format!("; {whole} ({} bytes) -> {made}", whole.len()));
        }
        out.push('\n');
    }
    (out, spoilt)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_agent_gets_every_name_whole_by_default() {
    let home = home();
    let names = listed(&home, &[]).await;
    // All five servers listed (everything's 13 and more), none missing.
    for server in ["fx", "ev", "everything", "filesystem", "memory", "python"] {
        assert!(names.iter().any(|n| n.starts_with(&format!("{server}__"))), "{server}: {names:?}");
    }
    assert!(names.len() >= 60, "{} tools: {names:?}", names.len());
    // No second prefix; the server first.
    assert!(names.iter().all(|n| !n.starts_with("mcp_") && n.contains("__")), "{names:?}");
    let (rows, spoilt) = table("switchboard", &names);
    println!("default names, entry `switchboard`, {} tools:\n{rows}", names.len());
    assert_eq!(spoilt, 0, "default names, entry `switchboard`:\n{rows}");

    // A longer entry name and a limit to match.
    let short = listed(&home, &["--name-limit", "40"]).await;
    assert!(short.iter().all(|n| n.len() <= 40), "{short:?}");
    let (rows, spoilt) = table("switchboard-http", &short);
    println!("--name-limit 40, entry `switchboard-http`:\n{rows}");
    assert_eq!(spoilt, 0, "--name-limit 40, entry `switchboard-http`:\n{rows}");

    // The old default: the catalog's names doubled the prefix, and Claude Code, Gemini CLI and
    // Qwen Code lost the longest (server-everything's `trigger-long-running-operation`).
    let prefixed = listed(&home, &["--names", "prefixed"]).await;
    let (rows, spoilt) = table("switchboard", &prefixed);
    println!("--names prefixed, entry `switchboard`:\n{rows}");
    assert!(spoilt > 0, "the prefixed names fit every agent after all:\n{rows}");
    for agent in ["Claude Code", "Qwen Code"] {
        let line = rows.lines().find(|l| l.trim_start().starts_with(agent)).unwrap();
        assert!(line.contains("trigger-long-running-operation"), "{line}");
    }
}

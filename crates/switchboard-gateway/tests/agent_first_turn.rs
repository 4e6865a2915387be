//! An agent's first turn, with the agents themselves (issue 50): Claude Code 2.1.332
//! (`claude -p`), Codex 0.171.0 (`codex exec`), OpenCode 1.18.33 (`opencode run`), Gemini CLI
//! 0.61.0 (`gemini -p --skip-trust`) and Qwen Code 0.24.4 (`qwen -p`; these two on Node 22 from
//! npm) from npm, each driven non-interactively
//! against a model API mocked on loopback (`tests/peers/model_api.mjs`, which records the
//! tools each request carries and plays a model that calls `fx__echo`, then `mem__read_graph`),
//! with `switchboard gateway` as their one MCP server in front of two upstreams: the fixture,
//! which starts at once, and server-memory, which starts 6 s late.
//!
//! Cold (nothing remembered), the agent's first model request carries the fixture's tools and
//! its call reaches the model; warm (each server's lists remembered from an earlier run), it
//! carries server-memory's too, and a call to each works (the one to server-memory waits for
//! it). Before, the gateway held `initialize` up to 5 s for the slow server, and Claude Code and
//! Codex sent their first request with none of its tools. When the agent ends, no server is left.
//!
//! Qwen Code's `-p` with its defaults connects its MCP servers in the background, racing its
//! first request (seen both with and without the gateway's tools on it, on a busy machine and
//! an idle one); its own switch `QWEN_CODE_LEGACY_MCP_BLOCKING=1` makes it wait for them, and
//! with it the cold and warm runs are as for the others.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::{agent_clis, agent_runners, cli, data_dir, node22_bin, pids_with_arg};

/// The calls the mocked model makes, in order (a tool whose name ends with each).
const CALLS: &str = "fx__echo,mem__read_graph";

/// `fx` (the fixture) and `mem`, server-memory that starts 6 s late, both with the home's marker.
fn home() -> Home {
    let home = Home::new(false);
    home.edit(|c| c["servers"]["mem"] = common::slow_memory(&home.marker, home.path()));
    home
}

/// The mocked model API, until dropped: its port, and the file its requests are recorded in.
struct ModelApi {
    _child: common::Killed,
    port: u16,
    log: std::path::PathBuf,
}

impl ModelApi {
    fn start(dir: &Path) -> ModelApi {
        let log = dir.join("model-requests.jsonl");
        let mut child = common::Killed(
            Command::new("node")
                .arg(common::script("model_api.mjs"))
                .arg(&log)
                .arg(CALLS)
                .arg(json!({"fx__echo": {"text": "first turn"}}).to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap(),
        );
        let mut line = String::new();
        BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("{line}")).parse().unwrap();
        ModelApi { _child: child, port, log }
    }

    /// The requests of the agent's loop (those that carry tools), in order.
    fn turns(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }
}

/// Whether a request carries a tool whose name ends with `suffix`.
fn carries(request: &Value, suffix: &str) -> bool {
    request["tools"].as_array().unwrap().iter().any(|t| t.as_str().unwrap().ends_with(suffix))
}

/// The tool results the last request carried, as one text.
fn results(turns: &[Value]) -> String {
    turns.last().map(|t| t["results"].to_string()).unwrap_or_default()
}

#[derive(Clone, Copy, Debug)]
enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
    OpenCode,
    /// Qwen Code, waiting for its MCP servers before its first turn (its own switch) or not
    /// (its default).
    QwenCode {
        waits: bool,
    },
}

/// Node 22's `node` on `script` of the agents' bundles, with Node 22 first in `PATH`.
fn node22(script: &str) -> Command {
    let node = node22_bin();
    let path = format!("{}:{}", node.display(), std::env::var("PATH").unwrap_or_default());
    let mut c = Command::new(node.join("node"));
    c.arg(agent_clis().join(script)).env("PATH", path);
    c
}

/// Qwen Code 0.24.4 on Node 22: its command, with its settings (`servers`, its `mcpServers`)
/// in `own`.
fn qwen(own: &Path, api: &ModelApi, servers: Value, waits: bool) -> Command {
    let settings = json!({"mcpServers": servers, "security": {"auth": {"selectedType": "openai"}}});
    std::fs::create_dir_all(own.join(".qwen")).unwrap();
    std::fs::write(own.join(".qwen/settings.json"), settings.to_string()).unwrap();
    let mut c = node22("@qwen-code/qwen-code/cli-entry.js");
    c.args(["-p", "use the tools", "--yolo"])
        .env("OPENAI_API_KEY", "x")
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{}/v1", api.port))
        .env("OPENAI_MODEL", "mock-model")
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1");
    if waits {
        c.env("QWEN_CODE_LEGACY_MCP_BLOCKING", "1");
    }
    c
}

/// Runs `agent` once in `home` against `api` (its own settings in a folder of this run), and
/// returns how long it ran.
fn run(agent: Agent, home: &Home, api: &ModelApi, run: &str) -> Duration {
    let own = home.path().join(format!("{agent:?}-{run}"));
    std::fs::create_dir_all(&own).unwrap();
    let gateway_env = json!({
        "SWITCHBOARD_CONFIG": home.path().join("user.json"),
        "SWITCHBOARD_DATA_DIR": data_dir(home.path()),
    });
    let gateway_args = json!(["--config", home.config, "gateway"]);
    let mut c = match agent {
        Agent::ClaudeCode => {
            let mcp = own.join("mcp.json");
            let entry = json!({"command": cli(), "args": gateway_args, "env": gateway_env});
            std::fs::write(&mcp, json!({"mcpServers": {"switchboard": entry}}).to_string()).unwrap();
            let mut c = Command::new(agent_runners().join("claude"));
            c.args(["-p", "use the tools", "--strict-mcp-config", "--allowedTools", "mcp__switchboard"])
                .args(["--model", "claude-sonnet-4-5", "--mcp-config"])
                .arg(&mcp)
                .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", api.port))
                .env("ANTHROPIC_API_KEY", "sk-ant-test")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1");
            c
        }
        Agent::Codex => {
            let toml = |v: &Value| v.to_string();
            let env: Vec<String> =
                gateway_env.as_object().unwrap().iter().map(|(k, v)| format!("{k} = {}", toml(v))).collect();
            let config = format!(
                "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
                 sandbox_mode = \"danger-full-access\"\n\n[model_providers.mock]\nname = \"mock\"\n\
                 base_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n\
                 [mcp_servers.switchboard]\ncommand = {}\nargs = {}\nenv = {{ {} }}\n",
                api.port,
                toml(&json!(cli())),
                toml(&gateway_args),
                env.join(", ")
            );
            std::fs::write(own.join("config.toml"), config).unwrap();
            let mut c = Command::new(agent_runners().join("codex"));
            c.args(["exec", "--skip-git-repo-check", "use the tools"]).env("CODEX_HOME", &own).env("MOCK_API_KEY", "x");
            c
        }
        Agent::GeminiCli => {
            let entry = json!({"command": cli(), "args": gateway_args, "env": gateway_env});
            let settings =
                json!({"mcpServers": {"switchboard": entry}, "security": {"auth": {"selectedType": "gemini-api-key"}}});
            std::fs::create_dir_all(own.join(".gemini")).unwrap();
            std::fs::write(own.join(".gemini/settings.json"), settings.to_string()).unwrap();
            // `--skip-trust`: its headless runs need it in a folder not trusted before.
            let mut c = node22("@google/gemini-cli/bundle/gemini.js");
            c.args(["-p", "use the tools", "--yolo", "--skip-trust", "-m", "gemini-2.5-flash"])
                .env("GEMINI_API_KEY", "x")
                .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{}", api.port));
            c
        }
        Agent::OpenCode => {
            let mut command = vec![json!(cli())];
            command.extend(gateway_args.as_array().unwrap().iter().cloned());
            let provider = json!({"npm": "@ai-sdk/openai-compatible", "name": "mock",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", api.port), "apiKey": "x"},
                "models": {"mock-model": {"name": "mock", "tool_call": true}}});
            let config = json!({"provider": {"mock": provider}, "model": "mock/mock-model",
                "mcp": {"switchboard": {"type": "local", "command": command, "environment": gateway_env, "enabled": true}}});
            std::fs::create_dir_all(own.join(".config/opencode")).unwrap();
            std::fs::write(own.join(".config/opencode/opencode.json"), config.to_string()).unwrap();
            let mut c = Command::new(agent_runners().join("opencode"));
            // Its provider package, fetched from npm once into a cache both runs share.
            c.args(["run", "use the tools"])
                .env("XDG_CONFIG_HOME", own.join(".config"))
                .env("XDG_CACHE_HOME", home.path().join("opencode-cache"))
                .env("OPENCODE_DISABLE_AUTOUPDATE", "1");
            c
        }
        Agent::QwenCode { waits } => {
            let entry = json!({"command": cli(), "args": gateway_args, "env": gateway_env});
            qwen(&own, api, json!({ "switchboard": entry }), waits)
        }
    };
    c.current_dir(home.path()).env("HOME", &own).env_remove("RUST_LOG").stdin(Stdio::null());
    let started = Instant::now();
    let out = c.output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{agent:?} ({run}): {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// Waits (up to 10 s) until no process of `home`'s servers is left.
fn none_left(home: &Home, agent: Agent) {
    let started = Instant::now();
    while !pids_with_arg(&home.marker).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "{agent:?} ended, a server of its gateway runs on");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn first_turn(agent: Agent) {
    let home = home();
    let api = ModelApi::start(home.path());

    // Cold: the fixture's tools on the first request, its call's result back to the model.
    let took = run(agent, &home, &api, "cold");
    let turns = api.turns();
    assert!(!turns.is_empty(), "{agent:?} made no model request");
    println!("{agent:?}, cold: ran {took:?}");
    assert!(carries(&turns[0], "fx__echo"), "{agent:?}, cold: first request without fx__echo: {}", turns[0]);
    assert!(!carries(&turns[0], "mem__read_graph"), "{agent:?}: mem never seen, yet listed: {}", turns[0]);
    assert!(results(&turns).contains("first turn"), "{agent:?}: the echo's result never reached the model: {turns:?}");
    none_left(&home, agent);

    // Once the servers' lists are known (a run that saw both up).
    let tools = home.switchboard(&["tools"]).output().unwrap();
    assert!(String::from_utf8_lossy(&tools.stdout).contains("mcp__mem__read_graph"), "{tools:?}");

    // Warm: both servers' tools on the first request; the call to the slow one waits for it.
    std::fs::remove_file(&api.log).unwrap();
    let took = run(agent, &home, &api, "warm");
    let turns = api.turns();
    println!("{agent:?}, warm: ran {took:?}");
    assert!(carries(&turns[0], "fx__echo"), "{agent:?}, warm: {}", turns[0]);
    assert!(carries(&turns[0], "mem__read_graph"), "{agent:?}, warm: first request without mem's tools: {}", turns[0]);
    let said = results(&turns);
    assert!(said.contains("first turn") && said.contains("entities"), "{agent:?}, warm: results {said}");
    none_left(&home, agent);
}

#[test]
fn claude_code_has_every_tool_on_its_first_turn() {
    first_turn(Agent::ClaudeCode);
}

#[test]
fn codex_has_every_tool_on_its_first_turn() {
    first_turn(Agent::Codex);
}

#[test]
fn opencode_has_every_tool_on_its_first_turn() {
    first_turn(Agent::OpenCode);
}

#[test]
fn gemini_cli_has_every_tool_on_its_first_turn() {
    first_turn(Agent::GeminiCli);
}

#[test]
fn qwen_code_has_every_tool_on_its_first_turn_when_it_waits_for_its_servers() {
    first_turn(Agent::QwenCode { waits: true });
}

//! `switchboard tools --search` and `--tokens`, and `get --tokens`, on real servers (the
//! fixture and server-everything).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use switchboard_testkit::{fixture, node_peer};

/// `switchboard --no-attach --config <servers> <args>` in a private home.
fn run(home: &Path, servers: Value, args: &[&str]) -> Output {
    let cfg = home.join("servers.json");
    std::fs::write(&cfg, json!({ "servers": servers }).to_string()).unwrap();
    Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home))
        .env_remove("RUST_LOG")
        .current_dir(home)
        .args(["--no-attach", "--config", cfg.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap()
}

/// The fixture and server-everything.
fn sb(home: &Path, args: &[&str]) -> Output {
    let servers = json!({
        "demo": {"command": fixture().display().to_string(), "args": ["--name", "demo"]},
        "ev": {"command": "node", "args": [node_peer("server-everything"), "stdio"]},
    });
    run(home, servers, args)
}

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn search_ranks_tools_and_says_what_it_cannot_take() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(&sb(home.path(), &["tools", "--search", "sum of two numbers", "--limit", "2", "--json"]));
    let tools = v["tools"].as_array().unwrap();
    let names: std::collections::BTreeSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["mcp__demo__add", "mcp__ev__get-sum"].into(), "{v}");
    assert!(tools[0]["score"].as_f64().unwrap() >= tools[1]["score"].as_f64().unwrap());
    // The table has a score column; one server only with its name.
    let out = sb(home.path(), &["tools", "ev", "--search", "sum"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.lines().next().unwrap().contains("SCORE"), "{table}");
    assert!(table.contains("mcp__ev__get-sum") && !table.contains("mcp__demo__"), "{table}");
    // Exact names, in the order asked, and provider formats of what was found.
    let v = json_of(&sb(home.path(), &["tools", "--search", "select:ev/echo,mcp__demo__echo", "--format", "openai"]));
    let names: Vec<&str> = v.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(names, ["mcp__ev__echo", "mcp__demo__echo"]);
    // Nothing close: the closest are given, said to be so, and it is no failure.
    let out = sb(home.path(), &["tools", "--search", "weather forecast for tomorrow"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.contains("no tool matches the search by its words or a near meaning"),
        "{out:?}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp__"), "{out:?}");
    let v = json_of(&sb(home.path(), &["tools", "--search", "weather forecast for tomorrow", "--json"]));
    assert_eq!(v["nearest_only"], true, "{v}");
    assert!(!v["tools"].as_array().unwrap().is_empty(), "{v}");
    // A pattern that is not one, and a limit without a search.
    let out = sb(home.path(), &["tools", "--search", "/(/"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a regular expression"), "{out:?}");
    let out = sb(home.path(), &["tools", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--search"), "{out:?}");
}

#[test]
fn tokens_per_tool_per_server_and_in_get() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(&sb(home.path(), &["tools", "--tokens", "--json"]));
    let tools = v["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["tokens"].as_u64().unwrap() > 10), "{v}");
    let sum = |server: &str| -> u64 {
        tools.iter().filter(|t| t["server"] == server).map(|t| t["tokens"].as_u64().unwrap()).sum()
    };
    let servers = v["tokens"]["servers"].as_array().unwrap();
    // Most first, each the sum of its tools, and the total of all.
    assert!(servers[0]["tokens"].as_u64() >= servers[1]["tokens"].as_u64(), "{v}");
    for s in servers {
        assert_eq!(s["tokens"].as_u64().unwrap(), sum(s["server"].as_str().unwrap()), "{s}");
    }
    assert_eq!(v["tokens"]["total"].as_u64().unwrap(), sum("demo") + sum("ev"));
    // `get` counts the same.
    let get = json_of(&sb(home.path(), &["get", "demo", "--tokens", "--json"]));
    assert_eq!(get["tokens"]["total"].as_u64().unwrap(), sum("demo"));
    assert_eq!(
        get["tokens"]["tools"]["mcp__demo__echo"],
        tools.iter().find(|t| t["name"] == "mcp__demo__echo").unwrap()["tokens"]
    );
    let out = sb(home.path(), &["get", "demo", "--tokens"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{} tokens of definitions", sum("demo"))));
    // Not with a provider format.
    let out = sb(home.path(), &["tools", "--tokens", "--format", "openai"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The Python SDK peer and server-everything.
fn with_py(home: &Path, args: &[&str]) -> Output {
    let script = switchboard_testkit::workspace().join("tests/peers/py_server.py").display().to_string();
    let servers = json!({
        "py": {"command": switchboard_testkit::python().display().to_string(), "args": [script]},
        "ev": {"command": "node", "args": [node_peer("server-everything"), "stdio"]},
    });
    run(home, servers, args)
}

#[test]
fn provider_formats_leave_out_what_they_cannot_take_and_say_why() {
    let home = tempfile::tempdir().unwrap();
    // The Python SDK's schema for a `dict[str, str]` is a map of free-form keys: strict mode
    // has no form for it.
    let out = with_py(home.path(), &["tools", "--format", "openai", "--strict"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(names.contains(&"mcp__py__multiply") && !names.contains(&"mcp__py__label"), "{names:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "left out of the openai export: mcp__py__label: `/properties/labels` is an object of free-form keys"
        ),
        "{stderr}"
    );
    let multiply = v.as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__py__multiply").unwrap();
    assert_eq!(multiply["function"]["strict"], true);
    assert_eq!(multiply["function"]["parameters"]["additionalProperties"], false);
    // With --json: the tools, what was left out and what was changed.
    let v = json_of(&with_py(home.path(), &["tools", "--format", "openai", "--strict", "--json"]));
    assert_eq!(v["skipped"][0]["name"], "mcp__py__label", "{v}");
    assert!(v["changed"].as_array().unwrap().iter().any(|c| c["name"] == "mcp__ev__gzip-file-as-resource"), "{v}");
    // Not strict, every tool goes.
    let v = json_of(&with_py(home.path(), &["tools", "--format", "openai", "--json"]));
    assert_eq!(v["skipped"], json!([]));
    // Gemini: an OBJECT must name its properties, so the required map leaves `label` out;
    // upper-case types, no `$schema` or `additionalProperties` anywhere.
    let v = json_of(&with_py(home.path(), &["tools", "--format", "gemini", "--json"]));
    assert_eq!(v["skipped"][0]["name"], "mcp__py__label", "{v}");
    assert!(v["skipped"][0]["reason"].as_str().unwrap().contains("`/properties/labels`"), "{v}");
    let multiply = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__py__multiply").unwrap();
    assert_eq!(multiply["parameters"]["properties"]["a"]["type"], "NUMBER", "{multiply}");
    assert!(!v["tools"].to_string().contains("$schema") && !v["tools"].to_string().contains("additionalProperties"));
    // Anthropic with server-side search: the search tool first, every tool deferred.
    let v = json_of(&with_py(home.path(), &["tools", "--format", "anthropic", "--defer", "--description-cap", "40"]));
    let tools = v.as_array().unwrap();
    assert_eq!(tools[0]["type"], "tool_search_tool_bm25_20251119");
    assert!(tools[1..].iter().all(|t| t["defer_loading"] == true), "{v}");
    assert!(tools[1..].iter().all(|t| t["description"].as_str().unwrap().chars().count() <= 40), "{v}");
    // Flags that go with another format are refused.
    for args in [
        &["tools", "--format", "anthropic", "--strict"][..],
        &["tools", "--format", "openai", "--defer"],
        &["tools", "--format", "yaml"],
    ] {
        let out = with_py(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

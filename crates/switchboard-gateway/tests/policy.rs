//! The policy through the gateway, with real clients: an `ask` becomes an elicitation to the
//! client that made the call (the TypeScript SDK 1.x and 2.x clients, the latter in both eras:
//! an `input_required` round on 2026-07-28, and the Python SDK client answer it), a client that
//! cannot elicit is denied with a message naming the rule and `switchboard allow`, and a
//! denial or an argument-validation failure reaches the client as a tool result with
//! `isError: true` (what a model reads), not as a JSON-RPC error. Nothing refused reaches the
//! upstream (its call log).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::{node_peers, npm_folder, python};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

fn home() -> Home {
    Home::with(false, json!({"policy": {"ask": ["mcp__fx__echo"], "deny": ["mcp__fx__crash"]}}))
}

fn run(home: &Home, mut c: Command) -> Value {
    c.arg("stdio")
        .arg(switchboard_testkit::cli())
        .arg("--config")
        .arg(&home.config)
        .arg("gateway")
        .env("SWITCHBOARD_CONFIG", &home.config)
        .env("SWITCHBOARD_DATA_DIR", home.path().join("data"))
        .env_remove("RUST_LOG");
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no report: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && v.get("error").is_none(), "{v}\n{}", String::from_utf8_lossy(&out.stderr));
    v
}

fn ts(home: &Home, flavour: &str, answers: &str) -> Value {
    let folder = match flavour {
        "sdk1" => node_peers(),
        _ => npm_folder("sdk2", &["@modelcontextprotocol/client@2.4.0"]),
    };
    let mut c = Command::new("node");
    c.arg(script("approve_ts.mjs")).arg(flavour).arg(folder).arg(answers);
    let v = run(home, c);
    if flavour == "sdk2-modern" {
        assert_eq!(v["protocol"], "2026-07-28", "the question came as an input_required round: {v}");
    }
    v
}

fn sdk1(home: &Home, answers: &str) -> Value {
    ts(home, "sdk1", answers)
}

fn sdk2_legacy(home: &Home, answers: &str) -> Value {
    ts(home, "sdk2-legacy", answers)
}

fn sdk2_modern(home: &Home, answers: &str) -> Value {
    ts(home, "sdk2-modern", answers)
}

type Client = fn(&Home, &str) -> Value;

/// Every client, in both eras where it speaks them.
const CLIENTS: [(&str, Client); 4] = [
    ("typescript sdk 1", sdk1),
    ("typescript sdk 2 on 2025-11-25", sdk2_legacy),
    ("typescript sdk 2 on 2026-07-28", sdk2_modern),
    ("python sdk", py),
];

fn py(home: &Home, answers: &str) -> Value {
    let mut c = Command::new(python());
    c.arg("-W").arg("ignore").arg(script("approve_py.py")).arg(answers);
    run(home, c)
}

/// What every client must have seen for answers `deny,allow_once,allow_session,x`: the first
/// call refused, the next two through, the third not asked (this session allowed it).
fn check(v: &Value, what: &str) {
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls[0]["isError"], true, "{what}: {v}");
    assert!(
        calls[0]["text"].as_str().unwrap().contains("was not approved (asked by rule `ask: mcp__fx__echo`"),
        "{what}: {v}"
    );
    assert_eq!(calls[1], json!({"isError": false, "text": "call 1"}), "{what}: {v}");
    assert_eq!(calls[2], json!({"isError": false, "text": "call 2"}), "{what}: {v}");
    assert_eq!(calls[3], json!({"isError": false, "text": "call 3"}), "{what}: allowed for the session: {v}");
    let asked = v["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{what}: {v}");
    let choices: Vec<&str> = asked[0]["choices"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(
        choices,
        ["allow_once=Allow once", "allow_session=Allow for this session", "allow_always=Always allow", "deny=Deny"],
        "{what}"
    );
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message.contains("mcp__fx__echo")
            && message.contains("\"text\": \"call 0\"")
            && message.contains("rule `ask: mcp__fx__echo`"),
        "{what}: {message}"
    );
    refusals(v, what);
}

fn refusals(v: &Value, what: &str) {
    assert_eq!(v["denied"]["isError"], true, "{what}: {v}");
    assert!(v["denied"]["text"].as_str().unwrap().contains("is denied by rule `deny: mcp__fx__crash`"), "{what}: {v}");
    assert_eq!(v["invalid"]["isError"], true, "{what}: {v}");
    let invalid = v["invalid"]["text"].as_str().unwrap();
    assert!(
        invalid.starts_with("arguments do not match the input schema of `mcp__fx__add`: /a: "),
        "{what}: {invalid}"
    );
}

#[test]
fn typescript_and_python_clients_answer_the_approval_question() {
    for (what, client) in CLIENTS {
        let home = home();
        let v = client(&home, "deny,allow_once,allow_session,x");
        check(&v, what);
        // Only what was allowed reached the upstream.
        let echoed = home.calls().iter().filter(|l| l.as_str() == "echo").count();
        assert_eq!(echoed, 3, "{what}: {:?}", home.calls());
        assert!(!home.calls().iter().any(|l| l == "crash" || l == "add"), "{what}: {:?}", home.calls());
    }
}

#[test]
fn a_client_that_cannot_elicit_is_denied_with_the_way_to_allow() {
    for (what, client) in CLIENTS {
        let home = home();
        let v = client(&home, "none");
        let text = v["calls"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(v["calls"][0]["isError"], true, "{what}: {v}");
        assert!(
            text.contains("rule `ask: mcp__fx__echo`") && text.contains("switchboard allow mcp__fx__echo"),
            "{what}: {text}"
        );
        refusals(&v, what);
        assert!(home.calls().is_empty(), "{what}: {:?}", home.calls());
    }
}

#[test]
fn always_is_remembered_across_gateways() {
    let home = home();
    let v = sdk1(&home, "allow_always");
    assert_eq!(v["calls"][0]["isError"], false, "{v}");
    // A new gateway process: not asked again (the answer would be deny).
    let v = sdk1(&home, "deny");
    assert_eq!(v["calls"][0]["isError"], false, "{v}");
    assert_eq!(v["asked"].as_array().map(Vec::len), Some(0), "{v}");
    let audit = std::fs::read_dir(home.path().join("data/audit")).unwrap().count();
    assert_eq!(audit, 1, "one day of audit log");
}

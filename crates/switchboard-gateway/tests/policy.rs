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
    Home::with(false, json!({"policy": {"ask": ["fx__echo"], "deny": ["fx__crash"]}}))
}

fn run(home: &Home, mut c: Command) -> Value {
    c.arg("stdio")
        .arg(switchboard_testkit::cli())
        .arg("--config")
        .arg(&home.config)
        .arg("gateway")
        .env("SWITCHBOARD_CONFIG", &home.config)
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
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
        calls[0]["text"].as_str().unwrap().contains("was not approved (asked by rule `ask: fx__echo`"),
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
        message.contains("fx__echo")
            && message.contains("\"text\": \"call 0\"")
            && message.contains("rule `ask: fx__echo`"),
        "{what}: {message}"
    );
    refusals(v, what);
}

fn refusals(v: &Value, what: &str) {
    assert_eq!(v["denied"]["isError"], true, "{what}: {v}");
    assert!(v["denied"]["text"].as_str().unwrap().contains("is denied by rule `deny: fx__crash`"), "{what}: {v}");
    assert_eq!(v["invalid"]["isError"], true, "{what}: {v}");
    let invalid = v["invalid"]["text"].as_str().unwrap();
    assert!(invalid.starts_with("arguments do not match the input schema of `fx__add`: /a: "), "{what}: {invalid}");
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
            text.contains("rule `ask: fx__echo`") && text.contains("switchboard allow mcp__fx__echo"),
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
    let days = std::fs::read_dir(switchboard_testkit::data_dir(home.path()).join("audit"))
        .unwrap()
        .flatten()
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .count();
    assert_eq!(days, 1, "one day of audit log");
}

/// `switchboard serve --port 0` with `home`'s data folder and no servers of its own; its base URL.
fn serve(home: &Home) -> (common::Killed, String) {
    let mut c = Command::new(switchboard_testkit::cli());
    c.env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .current_dir(home.path())
        .args(["serve", "--port", "0"]);
    common::served(c)
}

/// Follows `base`'s events; answers each `approval_requested` with the next of `answers`,
/// sending every such event it saw.
fn dashboard(base: &str, token: &str, answers: Vec<&'static str>) -> std::sync::mpsc::Receiver<Value> {
    use std::io::{BufRead, BufReader};
    let client = reqwest::blocking::Client::builder().timeout(None).build().unwrap();
    let events = client.get(format!("{base}/api/events")).bearer_auth(token).send().unwrap();
    assert!(events.status().is_success(), "{}", events.status());
    let (tx, rx) = std::sync::mpsc::channel();
    let (base, token) = (base.to_string(), token.to_string());
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        let mut kind = String::new();
        for line in BufReader::new(events).lines() {
            let Ok(line) = line else { return };
            if let Some(k) = line.strip_prefix("event:") {
                kind = k.trim().to_string();
            } else if let Some(data) = line.strip_prefix("data:").filter(|_| kind == "approval_requested") {
                let pending: Value = serde_json::from_str(data.trim()).unwrap();
                let decision = answers.next().unwrap_or("deny");
                let url = format!("{base}/api/approvals/{}", pending["id"]);
                let sent = client.post(url).bearer_auth(&token).json(&json!({"decision": decision})).send().unwrap();
                assert_eq!(sent.status(), reqwest::StatusCode::NO_CONTENT);
                if tx.send(pending).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

#[test]
fn a_client_that_cannot_elicit_is_asked_on_the_dashboard_of_a_running_serve() {
    let home = home();
    let (mut served, base) = serve(&home);

    // `serve` runs, but nobody has its dashboard open: denied, saying so.
    let v = sdk1(&home, "none");
    let text = v["calls"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(v["calls"][0]["isError"], true, "{v}");
    assert!(
        text.contains("rule `ask: fx__echo`")
            && text.contains("its client cannot be asked (it declared no elicitation), nor the dashboard of `switchboard serve`: nobody has its dashboard open")
            && text.contains("switchboard allow mcp__fx__echo"),
        "{text}"
    );

    // The dashboard is open: the question is there, with the gateway and client that ask, and
    // its answer is the call's.
    let asked = dashboard(&base, &home.token(), vec!["allow_once", "deny"]);
    let v = sdk1(&home, "none");
    assert_eq!(v["calls"][0], json!({"isError": false, "text": "call 0"}), "{v}");
    refusals(&v, "typescript sdk 1 through the dashboard");
    let pending = asked.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    let origin = pending["origin"].as_str().unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert!(
        origin.starts_with("switchboard gateway (pid ") && origin.ends_with(&format!(") in {}", cwd.display())),
        "{pending}"
    );
    assert_eq!(pending["request"]["caller"]["client"], "approver-sdk1", "{pending}");
    assert_eq!(pending["request"]["arguments"], json!({"text": "call 0"}), "{pending}");
    assert!(pending["rule"].as_str().unwrap().starts_with("rule `ask: fx__echo` of "), "{pending}");
    let v = sdk1(&home, "none");
    assert_eq!(v["calls"][0]["isError"], true, "{v}");
    assert!(v["calls"][0]["text"].as_str().unwrap().contains("was not approved"), "{v}");
    assert_eq!(home.calls().iter().filter(|l| l.as_str() == "echo").count(), 1, "{:?}", home.calls());

    // `serve` ended (its record stays): denied, saying none runs.
    served.kill().unwrap();
    served.wait().unwrap();
    let v = sdk1(&home, "none");
    let text = v["calls"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(&format!("none is running (the last one answered at {base})")), "{text}");
}

/// A tool the policy denies is not listed to the model (nor found by search, nor exported to a
/// provider), and a call to it by name still gets the rule; `switchboard policy` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_tools_are_not_listed_but_a_call_gets_the_rule() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let home = home();
    let transport = rmcp::transport::TokioChildProcess::new(home.gateway(&[])).unwrap();
    let client = ().serve(transport).await.unwrap();
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"fx__echo".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("crash")), "a denied tool is listed: {names:?}");
    let r = client.call_tool(CallToolRequestParams::new("fx__crash")).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("is denied by rule `deny: fx__crash`"), "{text}");
    client.cancel().await.unwrap();
    assert!(!home.calls().iter().any(|l| l.contains("crash")), "the denied call reached the server");
    // Deferred search does not find it either.
    let transport = rmcp::transport::TokioChildProcess::new(home.gateway(&["--tool-search", "on"])).unwrap();
    let client = ().serve(transport).await.unwrap();
    let args = json!({"query": "exits the process"}).as_object().cloned().unwrap();
    let found = client.call_tool(CallToolRequestParams::new("search_tools").with_arguments(args)).await.unwrap();
    let found = found.structured_content.unwrap();
    assert!(!found.to_string().contains("crash"), "{found}");
    client.cancel().await.unwrap();

    let sb = |args: &[&str]| {
        let out = Command::new(switchboard_testkit::cli())
            .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
            .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(&home.config)
            .args(args)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    // A provider export leaves it out and says why.
    let export = sb(&["tools", "--format", "openai", "--json"]);
    let skipped = export["skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|s| s["name"] == "mcp__fx__crash"
            && s["reason"].as_str().unwrap_or_default().starts_with("denied by rule `deny: fx__crash`")),
        "{export}"
    );
    assert!(!export["tools"].to_string().contains("mcp__fx__crash"), "{export}");
    // `policy` shows it, denied.
    let policy = sb(&["policy", "--json"]);
    let crash = policy["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__crash").cloned();
    assert_eq!(crash.map(|t| t["decision"].clone()), Some(json!("deny")), "{policy}");
}

//! Real clients no one here wrote, through `switchboard gateway` over stdio and over HTTP: the
//! TypeScript SDK 1.x client, the TypeScript SDK 2.x client in both eras (2025-11-25 and
//! 2026-07-28, where an upstream's elicitation becomes an `input_required` round), the Python
//! SDK's client, and the MCP Inspector's CLI. Each lists, calls with progress, answers an
//! upstream's elicitation, cancels a call (the upstream sees it), and sees a list change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Home, env, report, script, stdio};
use serde_json::{Value, json};
use switchboard_testkit::{node_peer, node_peers, node22_bin, npm_folder, python};

/// What every client must have seen.
fn check(v: &Value, what: &str, cancels: bool) {
    assert_eq!(v["server"], "switchboard", "{what}: {v}");
    assert_eq!(v["has"], true, "{what}: {v}");
    assert_eq!(v["sum"].as_f64(), Some(5.0), "{what}: {v}");
    assert_eq!(v["slow"], "slept 3 x 20 ms", "{what}: {v}");
    let progress: Vec<f64> = v["seen"]["progress"].as_array().unwrap().iter().filter_map(Value::as_f64).collect();
    match v["seen"].get("wire") {
        // The TypeScript SDKs: every step came before the result on the wire, in order; their
        // own `onprogress` may miss the last one (see the client scripts), never any other.
        Some(wire) => {
            assert_eq!(wire, &serde_json::json!([1, 2, 3, "result"]), "{what}: {v}");
            assert!(progress.len() >= 2 && progress[..] == [1.0, 2.0, 3.0][..progress.len()], "{what}: {v}");
        }
        None => assert_eq!(progress, vec![1.0, 2.0, 3.0], "{what}: {v}"),
    }
    assert_eq!(v["ask"], "accept: {\"name\":\"Ada\"}", "{what}: {v}");
    assert_eq!(v["added"], true, "{what}: list_changed then the new tool: {v}");
    if cancels {
        assert_eq!(v["cancelled"], true, "{what}: {v}");
    }
}

fn cancelled_upstream(home: &Home, what: &str) {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if home.calls().iter().any(|l| l == "cancelled slow") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: the upstream saw no notifications/cancelled: {:?}", home.calls());
}

fn sdk1(home: &Home, transport: &[String]) -> Value {
    let mut c = Command::new("node");
    c.arg(script("sdk1_client.mjs")).arg(node_peers()).args(transport);
    env(&mut c, home);
    report(c)
}

fn sdk2(home: &Home, era: &str, transport: &[String]) -> Value {
    let dir = npm_folder("sdk2", &["@modelcontextprotocol/client@2.4.0"]);
    let mut c = Command::new("node");
    c.arg(script("sdk2_client.mjs")).arg(dir).arg(era).args(transport);
    env(&mut c, home);
    report(c)
}

fn py(home: &Home, transport: &[String]) -> Value {
    let mut c = Command::new(python());
    c.arg("-W").arg("ignore").arg(script("py_client.py")).args(transport);
    env(&mut c, home);
    report(c)
}

#[test]
fn typescript_sdk_1_client() {
    for http in [false, true] {
        let home = Home::new(false);
        let (child, transport) = if http {
            let (child, url) = common::http_gateway(&home, &[]);
            (Some(child), vec!["http".into(), url, home.token()])
        } else {
            (None, stdio(&home))
        };
        let v = sdk1(&home, &transport);
        check(&v, if http { "sdk 1 over http" } else { "sdk 1 over stdio" }, true);
        cancelled_upstream(&home, "sdk 1");
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn typescript_sdk_2_client_in_both_eras() {
    for http in [false, true] {
        for era in ["legacy", "modern"] {
            let home = Home::new(false);
            let (child, transport) = if http {
                let (child, url) = common::http_gateway(&home, &[]);
                (Some(child), vec!["http".into(), url, home.token()])
            } else {
                (None, stdio(&home))
            };
            let v = sdk2(&home, era, &transport);
            let what = format!("sdk 2 {era} over {}", if http { "http" } else { "stdio" });
            check(&v, &what, true);
            if era == "modern" {
                assert_eq!(v["protocol"], "2026-07-28", "{what}: {v}");
            }
            cancelled_upstream(&home, &what);
            if let Some(mut c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

#[test]
fn python_sdk_client() {
    for http in [false, true] {
        let home = Home::new(false);
        let (child, transport) = if http {
            let (child, url) = common::http_gateway(&home, &[]);
            (Some(child), vec!["http".into(), url, home.token()])
        } else {
            (None, stdio(&home))
        };
        let v = py(&home, &transport);
        check(&v, if http { "python over http" } else { "python over stdio" }, false);
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn mcp_inspector_cli_lists_and_calls() {
    let dir = npm_folder("inspector", &["@modelcontextprotocol/inspector@2.12.0"]);
    let entry = dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let home = Home::new(false);
    let inspector = |args: &[String]| {
        let path = format!("{}:{}", node22_bin().display(), std::env::var("PATH").unwrap_or_default());
        let out = Command::new(node22_bin().join("node"))
            .arg(&entry)
            .arg("--cli")
            .args(args)
            .env("PATH", path)
            .env("HOME", home.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str::<Value>(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    // stdio: the Inspector passes only a default environment on, hence `-e`.
    let mut stdio: Vec<String> = vec![
        "-e".into(),
        format!("SWITCHBOARD_CONFIG={}", home.config.display()),
        "-e".into(),
        format!("SWITCHBOARD_DATA_DIR={}", switchboard_testkit::data_dir(home.path()).display()),
        switchboard_testkit::cli().display().to_string(),
        "gateway".into(),
    ];
    let listed = inspector(&[stdio.clone(), vec!["--method".into(), "tools/list".into()]].concat());
    assert!(listed["tools"].as_array().unwrap().iter().any(|t| t["name"] == "fx__add"), "{listed}");
    stdio.extend(["--method", "tools/call", "--tool-name", "fx__add", "--tool-arg", "a=2", "b=3"].map(String::from));
    let called = inspector(&stdio);
    assert_eq!(called["structuredContent"]["sum"].as_f64(), Some(5.0), "{called}");
    // switchboard's own `--config` after the command is the Inspector's own option too (it
    // refuses it beside a command): README's form, with `--`, takes it to switchboard.
    let clash = [
        "--method".into(),
        "tools/list".into(),
        "-e".into(),
        format!("SWITCHBOARD_DATA_DIR={}", switchboard_testkit::data_dir(home.path()).display()),
        "--".into(),
        switchboard_testkit::cli().display().to_string(),
        "--config".into(),
        home.config.display().to_string(),
        "gateway".into(),
        "--names".into(),
        "prefixed".into(),
    ];
    let listed = inspector(&clash);
    assert!(listed["tools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__fx__add"), "{listed}");
    // HTTP, with the token.
    let (mut child, url) = common::http_gateway(&home, &[]);
    let auth = format!("Authorization: Bearer {}", home.token());
    let called = inspector(
        &[
            url,
            "--header".into(),
            auth,
            "--method".into(),
            "tools/call".into(),
            "--tool-name".into(),
            "fx__echo".into(),
        ]
        .into_iter()
        .chain(["--tool-arg".to_string(), "text=hello".to_string()])
        .collect::<Vec<_>>(),
    );
    assert_eq!(called["content"][0]["text"], "hello", "{called}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Input schemas pass through unchanged, key order included: server-everything's tools as
/// they come on the wire (read without an SDK, which would parse and reorder them) directly,
/// through the gateway (`--names bare`, one upstream: transparent), and in `switchboard tools
/// --format mcp`.
#[test]
fn schemas_are_kept_exactly_as_served() {
    let home = Home::with(
        false,
        json!({"servers": {"ev": {"command": "node", "args": [node_peer("server-everything"), "stdio"]}}}),
    );
    let lister = |command: &str, args: &[String]| -> Value {
        let mut c = Command::new(python());
        c.arg(script("raw_tools.py")).arg(command).args(args);
        env(&mut c, &home);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let direct = lister("node", &[node_peer("server-everything"), "stdio".into()]);
    assert!(direct.as_object().unwrap().len() >= 10, "{direct}");
    let cli = switchboard_testkit::cli().display().to_string();
    let gateway_args: Vec<String> =
        ["--config", home.config.to_str().unwrap(), "gateway", "--only", "ev", "--names", "bare"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let through = lister(&cli, &gateway_args);
    // Serialised again with the keys in the order they came, so order differences show.
    let text = |v: &Value| serde_json::to_string(v).unwrap();
    for (name, schema) in direct.as_object().unwrap() {
        assert_eq!(text(&through[name]), text(schema), "{name} through the gateway");
    }
    let out = Command::new(&cli)
        .args(["--config", home.config.to_str().unwrap(), "tools", "--format", "mcp", "--json"])
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .output()
        .unwrap();
    let exported: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let exported =
        exported.as_array().cloned().unwrap_or_else(|| exported["tools"].as_array().cloned().unwrap_or_default());
    let mut compared = 0;
    for tool in &exported {
        let Some(raw) = tool["name"].as_str().and_then(|n| n.strip_prefix("mcp__ev__")) else { continue };
        // Tools server-everything offers only to clients with capabilities the raw lister lacks.
        if direct.get(raw).is_none() {
            continue;
        }
        assert_eq!(text(&tool["inputSchema"]), text(&direct[raw]), "{raw} in --format mcp");
        compared += 1;
    }
    assert_eq!(compared, direct.as_object().unwrap().len(), "{exported:?}");
}

/// A prompt, a resource read and a completion cancelled by a real SDK client reach the upstream
/// as `notifications/cancelled` (the fixture writes each to its call log), in every cell: a
/// client of 2025-11-25 (SDK 1.x) or of 2026-07-28 (SDK 2.x pinned), an upstream of
/// 2025-11-25 (what switchboard and the fixture negotiate, nothing configured) or of 2026-07-28
/// (`protocol_version` in the server's entry), over stdio and over HTTP. Over HTTP with a 2025-11-25 client, ending the session (`DELETE /mcp`) with a
/// tool call in flight cancels it upstream too (a 2026-07-28 client has no session to end).
/// Each upstream answer would take ten seconds: the client is answered at once.
#[test]
fn cancelling_any_request_reaches_the_upstream() {
    let cells = [("sdk1", None), ("modern", None), ("sdk1", Some("2026-07-28")), ("modern", Some("2026-07-28"))];
    for ((client, pinned), http) in cells.into_iter().flat_map(|c| [(c, false), (c, true)]) {
        let upstream = pinned.unwrap_or("2025-11-25");
        let what = format!("{client} client, {upstream} upstream, over {}", if http { "http" } else { "stdio" });
        let home = Home::with(false, json!({"fixture_args": ["--slow-requests"]}));
        if let Some(version) = pinned {
            let mut file: Value = serde_json::from_slice(&std::fs::read(&home.config).unwrap()).unwrap();
            file["servers"]["fx"]["protocol_version"] = json!(version);
            std::fs::write(&home.config, file.to_string()).unwrap();
        }
        let (child, transport) = if http {
            let (child, url) = common::http_gateway(&home, &[]);
            (Some(child), vec!["http".into(), url, home.token()])
        } else {
            (None, stdio(&home))
        };
        let sdk = match client {
            "modern" => npm_folder("sdk2", &["@modelcontextprotocol/client@2.4.0"]),
            _ => node_peers(),
        };
        let mut c = Command::new("node");
        c.arg(script("cancel_client.mjs")).arg(client).arg(sdk).args(&transport);
        env(&mut c, &home);
        let v = report(c);
        assert!(v["found"]["prompt"].is_string() && v["found"]["resource"].is_string(), "{what}: {v}");
        assert_eq!(v["upstream"], upstream, "{what}: the cell's upstream era: {v}");
        if client == "modern" {
            assert_eq!(v["protocol"], "2026-07-28", "{what}: the cell's client era: {v}");
        }
        for kind in ["prompt", "resource", "completion"] {
            assert_eq!(v[kind]["outcome"], "aborted", "{what}: {kind}: {v}");
            assert!(v[kind]["ms"].as_u64().is_some_and(|ms| ms < 5000), "{what}: {kind} took long: {v}");
        }
        assert_eq!(v["after"].as_f64(), Some(3.0), "{what}: the session goes on: {v}");
        let mut wanted = vec!["cancelled prompt", "cancelled resource", "cancelled completion"];
        if http && client == "sdk1" {
            assert_eq!(v["deleted"], true, "{what}: {v}");
            wanted.push("cancelled slow");
        }
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(10) && !wanted.iter().all(|w| home.calls().iter().any(|l| l == w)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let calls = home.calls();
        for w in wanted {
            assert!(calls.iter().any(|l| l == w), "{what}: the upstream never saw `{w}`: {calls:?}");
        }
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

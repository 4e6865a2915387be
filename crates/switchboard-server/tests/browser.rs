//! The dashboard end to end in a real browser: Debian's Chromium (headless) driven by
//! Playwright (`playwright-core` from npm, installed on demand into `.peers/playwright`).
//! The hub serves the fixture server (and one that fails at start), the official npm
//! server-everything, a Python `mcp` server over stdio and a Python server behind OAuth; `tests/browser/dashboard.mjs` logs in with the one-time URL, calls tools,
//! kills the fixture's process and watches its status change live, logs in to the OAuth
//! server through the page, allows what a sandbox refused with its button, and trusts a
//! project server added while it watches. Screenshots go to `target/dashboard/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{Served, fixture, npm_folder, python, python_oauth_peer, workspace};
use serde_json::json;

const PLAYWRIGHT: &str = "playwright-core@1.64.1";

/// The Chromium to drive: `$CHROMIUM`, else Debian's package.
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "no Chromium at {} (install Debian's `chromium` package, as .ci/run does, or set CHROMIUM)",
        path.display()
    );
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_in_chromium() {
    let chromium = chromium();
    let playwright = npm_folder("playwright", &[PLAYWRIGHT]);
    let (_oauth, port) = python_oauth_peer(3600, &[]);
    let scratch = tempfile::tempdir().unwrap();
    let pid_file = scratch.path().join("demo.pid");
    let secret = scratch.path().join("secret.txt");
    std::fs::write(&secret, "for the jail server once allowed").unwrap();
    let servers = json!({
        "demo": {"command": fixture().display().to_string(), "args": ["--pid-file", pid_file.display().to_string()]},
        "py": {"command": python().display().to_string(),
               "args": [workspace().join("tests/peers/py_server.py").display().to_string()]},
        "secure": {"url": format!("http://127.0.0.1:{port}/mcp")},
        "broken": {"command": fixture().display().to_string(), "args": ["--exit-at-start", "3"]},
        // A remote server nothing answers (never logged in): nothing a login would fix.
        "unreachable": {"url": format!("http://127.0.0.1:{}/mcp", switchboard_testkit::free_port())},
        "everything": {"command": "node", "args": [common::node_peer("server-everything"), "stdio"]},
        // Instructions hidden in its tool's description: the page shows the finding.
        "weather": {"command": fixture().display().to_string(), "args": ["--poisoned"]},
        // A sandbox that denies it a file: the page shows the refusal and allows it.
        "jail": {"command": fixture().display().to_string(), "args": ["--hostile"],
                 "sandbox": {"filesystem": {"denyRead": [secret.display().to_string()]}}},
    });
    // `add` needs approval (the page shows a card), `crash` is denied.
    let policy = json!({"ask": ["mcp__demo__add"], "deny": ["mcp__demo__crash"]});
    let s = Served::start_config(json!({"servers": servers, "policy": policy}), |_| {}).await;
    // What a host that lost records on a full disk leaves in the log: the page warns.
    let audit = switchboard_testkit::data_dir(s.dir.path()).join("audit");
    std::fs::create_dir_all(&audit).unwrap();
    let day = switchboard::policy::audit::rfc3339(std::time::SystemTime::now())[..10].to_string();
    let lost =
        json!({"time": format!("{day}T00:00:00.000Z"), "lost": 3, "error": "No space left on device (os error 28)"});
    let mut log =
        std::fs::OpenOptions::new().create(true).append(true).open(audit.join(format!("{day}.jsonl"))).unwrap();
    std::io::Write::write_all(&mut log, format!("{lost}\n").as_bytes()).unwrap();
    let target = std::env::current_exe().unwrap().ancestors().nth(3).unwrap().to_path_buf();
    let shots = target.join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();

    let run = tokio::process::Command::new("node")
        .arg(workspace().join("crates/switchboard-server/tests/browser/dashboard.mjs"))
        .env("LOGIN_URL", &s.login_url)
        .env("PID_FILE", &pid_file)
        .env("SECRET", &secret)
        .env("FIXTURE", fixture())
        .env("SHOTS", &shots)
        .env("CHROMIUM", &chromium)
        .env("PLAYWRIGHT", &playwright)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(240), run).await.expect("the browser run ended").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(output.status.success(), "the browser run failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(stdout.contains("all steps passed"), "{stdout}");
    // The Allow button wrote the line into the file the server's entry is in.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.dir.path().join("servers.json")).unwrap()).unwrap();
    assert_eq!(
        file["servers"]["jail"]["sandbox"]["filesystem"]["allowRead"],
        json!([secret.display().to_string()]),
        "{file}"
    );
    for shot in ["dashboard.png", "dashboard-narrow.png"] {
        let len = std::fs::metadata(shots.join(shot)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 10_000, "{shot}: {len} bytes");
    }
    s.shutdown().await;
}

/// The dashboard's JSON Schema checks, under Node's test runner (no browser needed).
#[test]
fn the_dashboard_schema_checks() {
    let output = Command::new("node")
        .arg("--test")
        .arg(workspace().join("crates/switchboard-server/tests/browser/schema.test.mjs"))
        .output()
        .expect("node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("# pass 7") && stdout.contains("# fail 0"), "{stdout}");
}

//! One set of servers per workspace: `switchboard daemon start` runs `serve` for the project;
//! two stdio gateways of the project share its one server process (counted through `/proc`),
//! a gateway of another folder starts its own, `--no-attach` does too; `--require` fails fast;
//! the daemon killed (SIGKILL) under attached gateways, a call in flight fails saying so, each
//! gateway carries on with servers of its own (the next call succeeds, same names, no list
//! change told), and the next gateway starts its own servers; `daemon stop` ends the daemon and
//! its servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{Home, Recorder};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchboard_testkit::{pids_with_arg, wait_exactly, wait_gone};

/// `switchboard --config <home's> <args>` run in `cwd`, to the end.
fn sb(home: &Home, cwd: &Path, args: &[&str]) -> Output {
    std::process::Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env("SWITCHBOARD_MANAGED_CONFIG", home.path().join("none.json"))
        .env_remove("RUST_LOG")
        .current_dir(cwd)
        .arg("--config")
        .arg(&home.config)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// A stdio gateway client in `cwd`.
async fn client(home: &Home, cwd: &Path, args: &[&str]) -> RunningService<RoleClient, Recorder> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut cmd = home.gateway(args);
    cmd.current_dir(cwd).env("SWITCHBOARD_MANAGED_CONFIG", home.path().join("none.json"));
    Recorder { seen: tx, elicitation: false }.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap()
}

async fn echo(c: &RunningService<RoleClient, Recorder>, text: &str) -> Result<String, String> {
    let params =
        CallToolRequestParams::new("fx__echo").with_arguments(json!({"text": text}).as_object().cloned().unwrap());
    match tokio::time::timeout(Duration::from_secs(60), c.call_tool(params)).await {
        Err(_) => panic!("the call hung"),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(r)) if r.is_error == Some(true) => Err(serde_json::to_string(&r.content).unwrap()),
        Ok(Ok(r)) => Ok(serde_json::to_string(&r.content).unwrap()),
    }
}

fn daemon_pid(home: &Home) -> i32 {
    let out = sb(home, home.path(), &["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "running", "{v:#}");
    i32::try_from(v["record"]["pid"].as_u64().unwrap()).unwrap()
}

/// A home whose `fx` is one process (no forks) with the home's marker in its arguments.
fn home() -> Home {
    let home = Home::new(false);
    let fx = json!({"command": switchboard_testkit::fixture(), "args": ["--name", "fx", "--marker", home.marker]});
    // `add` asks: a model's call through a gateway is put to someone; a person's own `call` is
    // their answer.
    let config = json!({"servers": {"fx": fx}, "policy": {"ask": ["fx__add"]}});
    std::fs::write(&home.config, config.to_string()).unwrap();
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_of_a_workspace_share_its_servers() {
    let home = home();
    let other = home.path().join("other-project");
    std::fs::create_dir_all(other.join(".git")).unwrap();

    let started = sb(&home, home.path(), &["daemon", "start"]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    let daemon = daemon_pid(&home);
    let fx = wait_exactly(&home.marker, 1, Duration::from_secs(30));
    assert_eq!(fx.len(), 1);

    // Two agents' gateways in the workspace: one server process, the daemon's.
    let a = client(&home, home.path(), &[]).await;
    let b = client(&home, home.path(), &["--require", "fx"]).await;
    assert!(echo(&a, "from a").await.unwrap().contains("from a"));
    assert!(echo(&b, "from b").await.unwrap().contains("from b"));
    let names: Vec<String> = a.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"fx__echo".to_string()), "the same names as a gateway of its own: {names:?}");
    // An attached gateway's own `--names` holds: the daemon names the tools as it asks.
    let prefixed = client(&home, home.path(), &["--names", "prefixed"]).await;
    let named: Vec<String> = prefixed.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(named.contains(&"mcp__fx__echo".to_string()) && !named.contains(&"fx__echo".to_string()), "{named:?}");
    prefixed.cancel().await.unwrap();
    assert_eq!(pids_with_arg(&home.marker), fx, "shared, not started again");
    // Errors name the tool as the client knows it, never by the attached gateway's upstream.
    let bad = a.call_tool(CallToolRequestParams::new("fx__echo")).await.unwrap();
    let said = serde_json::to_string(&bad.content).unwrap();
    assert!(bad.is_error == Some(true) && said.contains("`fx__echo`"), "{said}");
    assert!(!said.contains("workspace-hub"), "{said}");

    // The CLI's commands of the workspace use its servers too, a person's call as theirs.
    let list = sb(&home, home.path(), &["list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["servers"][0]["status"]["state"], "connected", "{list:#}");
    assert_eq!(list["served_by"]["pid"], daemon, "{list:#}");
    // The daemon's token goes in every request, and never into a log line, even at trace level.
    let traced = sb(&home, home.path(), &["-vvv", "tools", "--search", "echo"]);
    let token = home.token();
    assert!(traced.status.success() && !token.is_empty());
    let log = String::from_utf8_lossy(&traced.stderr);
    assert!(log.contains("answered by the workspace's serve"), "{log}");
    assert!(!log.contains(&token), "the token is in the log:\n{log}");
    let tools = sb(&home, home.path(), &["tools", "--json"]);
    assert!(String::from_utf8_lossy(&tools.stdout).contains("fx__echo"));
    let sum = sb(&home, home.path(), &["call", "fx__add", "--arg", "a=1", "--arg", "b=2"]);
    assert!(sum.status.success(), "{}", String::from_utf8_lossy(&sum.stderr));
    assert!(String::from_utf8_lossy(&sum.stdout).contains('3'), "{}", String::from_utf8_lossy(&sum.stdout));
    let params =
        CallToolRequestParams::new("fx__add").with_arguments(json!({"a": 1, "b": 2}).as_object().cloned().unwrap());
    let asked = a.call_tool(params).await.unwrap();
    assert_eq!(asked.is_error, Some(true), "a model's call is asked about, and nobody can answer: {asked:?}");
    assert_eq!(pids_with_arg(&home.marker), fx, "no command started a server");
    // Resources and prompts, read and got: the same answers as a command with its own servers.
    for args in [
        &["resources", "--json"][..],
        &["read", "fx", "fixture://data.json"],
        &["prompts", "--json"],
        &["prompt", "fx", "greet", "--arg", "who=Ada", "--json"],
        &["tools", "--format", "openai"],
        &["tools", "--format", "mcp"],
        &["get", "fx", "--json"],
        &["get", "fx"],
        &["tools", "--search", "sum of two numbers", "--json"],
        &["tools", "--search", "/^(echo|add)$/", "--limit", "1"],
        &["tools", "--tokens", "--json"],
        &["tools", "--tokens"],
        &["get", "fx", "--tokens", "--json"],
        &["tools", "--format", "gemini", "--json"],
        &["tools", "--format", "openai", "--strict", "--description-cap", "20"],
        &["tools", "--format", "anthropic", "--defer"],
    ] {
        let attached = sb(&home, home.path(), args);
        let own = sb(&home, home.path(), &[&["--no-attach"][..], args].concat());
        assert!(attached.status.success(), "{args:?}: {}", String::from_utf8_lossy(&attached.stderr));
        assert_eq!(String::from_utf8_lossy(&attached.stdout), String::from_utf8_lossy(&own.stdout), "{args:?}");
    }
    // The fixture offers no completion: said the same way by both.
    for attach in [&[][..], &["--no-attach"]] {
        let out = sb(&home, home.path(), &[attach, &["complete", "fx", "prompt", "greet", "who", "A"]].concat());
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("does not offer completion"), "{attach:?}: {out:?}");
    }
    assert_eq!(pids_with_arg(&home.marker), fx, "only the --no-attach commands started (and ended) servers");
    let own = sb(&home, home.path(), &["--no-attach", "list", "--json"]);
    let own: serde_json::Value = serde_json::from_slice(&own.stdout).unwrap();
    assert!(own.get("served_by").is_none() && own["servers"][0]["status"]["state"] == "connected", "{own:#}");

    // Another workspace starts its own; so does `--no-attach`.
    let c = client(&home, &other, &[]).await;
    assert!(echo(&c, "from c").await.unwrap().contains("from c"));
    assert_eq!(pids_with_arg(&home.marker).len(), 2);
    c.cancel().await.unwrap();
    wait_exactly(&home.marker, 1, Duration::from_secs(10));
    let d = client(&home, home.path(), &["--no-attach"]).await;
    assert!(echo(&d, "from d").await.is_ok());
    assert_eq!(pids_with_arg(&home.marker).len(), 2);
    d.cancel().await.unwrap();
    wait_exactly(&home.marker, 1, Duration::from_secs(10));

    // `--require` a server the workspace does not have: the session fails at once.
    let mut cmd = home.gateway(&["--require", "nope"]);
    cmd.env("SWITCHBOARD_MANAGED_CONFIG", home.path().join("none.json")).stdin(std::process::Stdio::piped());
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output()).await.expect("fails fast").unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--require nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The daemon killed (SIGKILL) under two attached gateways, one with a call in flight: its
    // servers end with it; the call in flight fails saying what happened; each gateway carries
    // on with servers of its own, without its client doing anything: the next call succeeds,
    // under the same names, and no list change is told (the lists are as they were).
    let before: Vec<String> = a.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    let slow = CallToolRequestParams::new("fx__slow")
        .with_arguments(json!({"ms": 500, "steps": 20}).as_object().cloned().unwrap());
    let in_flight = tokio::spawn({
        let peer = b.peer().clone();
        async move { peer.call_tool(slow).await }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    // SAFETY: kill(2) on a pid this test read from the daemon's record.
    assert_eq!(unsafe { libc::kill(daemon, libc::SIGKILL) }, 0);
    let killed = std::time::Instant::now();
    while switchboard_testkit::alive(fx[0]) {
        assert!(killed.elapsed() < Duration::from_secs(15), "the daemon's server outlived it");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let failed = tokio::time::timeout(Duration::from_secs(30), in_flight).await.expect("the call in flight hung");
    let err = format!("{:?}", failed.unwrap());
    assert!(err.contains("the workspace's serve (pid") && err.contains("closed the connection"), "{err}");
    assert!(echo(&a, "after").await.unwrap().contains("after"), "the next call is served");
    assert!(echo(&b, "after too").await.unwrap().contains("after too"));
    let after: Vec<String> = a.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(before, after, "the same tools under the same names");
    let own = wait_exactly(&home.marker, 2, Duration::from_secs(15));
    assert!(!own.contains(&fx[0]), "each gateway runs a server of its own now: {own:?}");
    // A new gateway finds the record stale and starts its own servers.
    let e = client(&home, home.path(), &[]).await;
    assert!(echo(&e, "on its own").await.unwrap().contains("on its own"));
    assert_eq!(pids_with_arg(&home.marker).len(), 3);
    e.cancel().await.unwrap();
    let _ = a.cancel().await;
    let _ = b.cancel().await;
    assert!(wait_gone(&home.marker, Duration::from_secs(15)).is_empty(), "the gateways' own servers ended with them");

    // `daemon stop` ends a daemon and its servers.
    assert!(sb(&home, home.path(), &["daemon", "start"]).status.success());
    wait_exactly(&home.marker, 1, Duration::from_secs(30));
    let stopped = sb(&home, home.path(), &["daemon", "stop"]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(wait_gone(&home.marker, Duration::from_secs(15)).is_empty());
    let status = sb(&home, home.path(), &["daemon", "status"]);
    assert!(!status.status.success());
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("no hub serves"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
}

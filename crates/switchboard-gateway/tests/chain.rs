//! switchboard refuses to be its own upstream: a config that lists `switchboard gateway` (as
//! `switchboard import` used to write it from an agent's file where README's `claude mcp add
//! switchboard -- switchboard gateway` was followed), and a gateway whose config names its own
//! address. The server shows `config_invalid` with the reason, is not tried again, and no
//! switchboard starts another without end (counted through `/proc`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::{cli, fixture, free_port, pids_with_arg, unique_marker};

/// A home whose user file (found through `HOME`, as agents start switchboard) is `servers`.
fn home_with(servers: Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".config/switchboard/config.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, json!({ "servers": servers }).to_string()).unwrap();
    home
}

fn switchboard(home: &tempfile::TempDir) -> Command {
    let mut c = Command::new(cli());
    c.env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(home.path());
    c
}

fn status_of(listed: &Value, name: &str) -> Value {
    listed["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap()["status"].clone()
}

#[test]
fn a_config_that_starts_switchboard_gateway_is_refused_not_followed() {
    let marker = unique_marker("chain");
    let home = home_with(json!({
        "fx": {"command": fixture(), "args": ["--name", "fx", "--marker", marker]},
        "switchboard": {"command": cli(), "args": ["gateway"]},
    }));
    let out = switchboard(&home).args(["list", "--json"]).stdin(Stdio::null()).output().unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    let me = status_of(&listed, "switchboard");
    assert_eq!((me["state"].as_str(), me["kind"].as_str()), (Some("failed"), Some("config_invalid")), "{me}");
    let said = me["message"].as_str().unwrap_or_default();
    assert!(said.contains("refuses to be its own upstream") && said.contains("import"), "{said}");
    assert!(me["retry"].is_null(), "not tried again: {me}");
    assert_eq!(status_of(&listed, "fx")["state"], "connected");
    // Only this command's fixture ever ran: the refused gateway started none.
    assert!(pids_with_arg(&marker).len() <= 1);

    // As an agent runs it: the gateway serves, its own entry refused once, and nothing grows.
    let mut gateway = switchboard(&home)
        .arg("gateway")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    // switchboard processes of this home (the tests run side by side), but not the fixture's
    // supervisor: forked from the gateway, it carries the gateway's arguments and executable.
    let ours = |p: &i32| {
        std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == cli().canonicalize().unwrap())
            && std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|d| d == home.path().canonicalize().unwrap())
            && std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() != "sb-supervisor")
    };
    let gateways = || pids_with_arg("gateway").into_iter().filter(ours);
    assert_eq!(gateways().count(), 1, "one gateway, not a chain of them");
    assert_eq!(pids_with_arg(&marker).len(), 1, "one fixture");
    drop(gateway.stdin.take());
    let _ = gateway.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_whose_config_names_its_own_address_does_not_serve_itself() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let home = home_with(json!({
        "fx": {"command": fixture(), "args": ["--name", "fx"]},
        "me": {"url": url},
    }));
    let mut gateway = tokio::process::Command::from(switchboard(&home));
    let mut gateway = gateway
        .args(["gateway", "--http", &format!("127.0.0.1:{port}"), "--no-auth"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    switchboard_testkit::wait_listening(port, "the gateway", Duration::from_secs(30));
    // Its own view of its servers (the `switchboard://servers` resource), once `me` settled.
    use rmcp::ServiceExt;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
    let client = ().serve(transport).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let me = loop {
        let read =
            client.read_resource(rmcp::model::ReadResourceRequestParams::new("switchboard://servers")).await.unwrap();
        let text = match &read.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        };
        let servers: Value = serde_json::from_str(&text).unwrap();
        let me = servers["servers"].as_array().and_then(|s| s.iter().find(|s| s["name"] == "me")).cloned();
        // Its first attempt may come before the gateway listens (refused): the next one is
        // answered 508.
        match me {
            Some(me) if me["status"]["state"] == "failed" && me["status"]["kind"] != "network_unreachable" => break me,
            _ => {}
        }
        assert!(std::time::Instant::now() < deadline, "`me` did not settle: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(me["status"]["kind"], "config_invalid", "{me}");
    let said = me["status"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("switchboard itself") && said.contains("own upstream"), "{said}");
    client.cancel().await.unwrap();
    let _ = gateway.kill().await;
}

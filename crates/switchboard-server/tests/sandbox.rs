//! The dashboard's button for what a sandbox refused: `POST /api/servers/{name}/sandbox/allow`
//! writes the line `get` shows into the server's own file; once the config is applied again
//! the server does what it was refused. Only what it was refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Served, fixture, send};
use serde_json::{Value, json};
use switchboard::config::{self, LoadOptions};

fn text(body: &Value) -> String {
    body["model"]["blocks"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_is_allowed_from_the_dashboard_and_then_works() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "the server may read this once allowed").unwrap();
    let secret_s = secret.display().to_string();
    let entry = json!({"command": fixture().display().to_string(), "args": ["--hostile"],
                       "sandbox": {"filesystem": {"denyRead": [secret_s]}}});
    let s = Served::start(json!({"h": entry})).await;
    let call = json!({"arguments": {"what": "read", "target": secret_s}});
    let (status, body) = send(s.post("/api/tools/mcp__h__attempt/call", call.clone())).await;
    assert!(status.is_success() && text(&body).contains("refused: Permission denied"), "{body}");
    // Shown with the line that allows it (once its stderr line is read: it comes on its own).
    let started = std::time::Instant::now();
    let h = loop {
        let (_, servers) = send(s.get("/api/servers")).await;
        let h = servers["servers"].as_array().unwrap().iter().find(|v| v["name"] == "h").cloned().unwrap();
        if h["sandbox"]["refused"].is_array() || started.elapsed().as_secs() > 5 {
            break h;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let refused = &h["sandbox"]["refused"][0];
    assert_eq!((refused["kind"].as_str(), refused["target"].as_str()), (Some("read"), Some(secret_s.as_str())), "{h}");
    assert_eq!(refused["allow"], format!(r#""sandbox": {{"filesystem": {{"allowRead": ["{secret_s}"]}}}}"#));

    // Nothing it was not refused.
    let (status, body) =
        send(s.post("/api/servers/h/sandbox/allow", json!({"kind": "read", "target": "/etc/shadow"}))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("was not refused"), "{body}");
    // What it was: written into its file, comments and all kept.
    let (status, body) =
        send(s.post("/api/servers/h/sandbox/allow", json!({"kind": "read", "target": secret_s}))).await;
    assert!(status.is_success(), "{body}");
    let file = s.dir.path().join("servers.json");
    assert_eq!(body["file"], file.display().to_string());
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["servers"]["h"]["sandbox"]["filesystem"]["allowRead"], json!([secret_s]), "{written}");
    // Applied (as a running serve does when the file changes): now it reads it.
    let paths = s.hub.paths().clone();
    let mut options = LoadOptions::from_env(s.dir.path().to_path_buf(), &paths);
    options.extra_files = vec![file];
    options.managed_file = Some(s.dir.path().join("managed.json"));
    s.hub.reload(&config::load(&options)).await;
    s.hub.ready().await;
    let (_, body) = send(s.post("/api/tools/mcp__h__attempt/call", call)).await;
    assert!(text(&body).contains("ok: read 37 bytes"), "{body}");
    s.shutdown().await;
}

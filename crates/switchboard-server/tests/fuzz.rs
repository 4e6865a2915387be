//! Fuzzing the API from its own OpenAPI description with schemathesis (PyPI): for every
//! operation, generated and edge-case requests must get no 5xx and responses that match the
//! description (status codes, content types, bodies).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{Served, fixture, workspace};
use serde_json::json;

/// schemathesis, in a venv of its own under `.peers/` (installed once).
fn schemathesis() -> std::path::PathBuf {
    let dir = workspace().join(".peers/schemathesis");
    let exe = dir.join("bin/schemathesis");
    let marker = dir.join(".installed-4.32.5");
    if !marker.exists() {
        assert!(Command::new("python3").args(["-m", "venv"]).arg(&dir).status().unwrap().success());
        let ok = Command::new(dir.join("bin/pip")).args(["install", "-q", "schemathesis==4.32.5"]).status().unwrap();
        assert!(ok.success(), "pip install schemathesis failed");
        std::fs::write(&marker, "schemathesis==4.32.5").unwrap();
    }
    exe
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_response_off_the_description() {
    let st = schemathesis();
    let demo = json!({"command": fixture().display().to_string(), "args": ["--name", "demo"]});
    let s = Served::start(json!({"demo": demo})).await;
    let (status, doc) = common::send(s.get("/api/openapi.json")).await;
    assert!(status.is_success());
    let schema = s.dir.path().join("openapi.json");
    std::fs::write(&schema, doc.to_string()).unwrap();
    let report = s.dir.path().join("report");
    let base = s.base.clone();
    let token = s.token.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(st)
            .arg("run")
            .arg(&schema)
            .args(["--url", &base])
            .args(["--header", &format!("Authorization: Bearer {token}")])
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            ])
            // The event stream never ends: it is tested on its own.
            .args(["--exclude-path", "/api/events"])
            .args(["--max-examples", "40", "--workers", "1", "--seed", "7", "--request-timeout", "20"])
            .args(["--report", "junit", "--report-dir"])
            .arg(&report)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "schemathesis found problems:\n{text}");
    s.shutdown().await;
}

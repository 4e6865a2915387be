//! Fuzzing the API from its own OpenAPI description with schemathesis (PyPI): for every
//! operation, generated and edge-case requests must get no 5xx and responses that match the
//! description (status codes, content types, bodies).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{Served, fixture, python_venv};
use serde_json::json;

/// schemathesis, in a venv of its own under `.peers/` (installed once).
fn schemathesis() -> std::path::PathBuf {
    python_venv("schemathesis", &["schemathesis==4.32.5"]).join("bin/schemathesis")
}

/// Realistic values for the path and query parameters, so that most generated requests reach
/// a real server, tool, resource or prompt (the rest still try unknown names). Tools that
/// sleep, crash or allocate by their arguments are left out: the fuzzer would time out on
/// them, not find anything.
const CONFIG: &str = r#"
[dictionaries.servers]
values = ["demo", "other", "nope"]
[dictionaries.removable]
values = ["other", "nope"]
[dictionaries.tools]
values = ["mcp__demo__echo", "mcp__demo__add", "mcp__demo__fail", "mcp__demo__mixed", "mcp__demo__loose",
          "demo/echo", "mcp__other__echo", "nope"]
[dictionaries.uris]
values = ["fixture://hello", "fixture://data.json", "fixture://item/7", "fixture://none"]
[dictionaries.prompts]
values = ["greet", "nope"]

[parameters]
"query.server" = { dictionary = "servers", probability = 0.8 }
"query.uri" = { dictionary = "uris", probability = 0.8 }
"path.server" = { dictionary = "servers", probability = 0.8 }
"path.name" = { dictionary = "servers", probability = 0.8 }

[[operations]]
include-name = "POST /api/tools/{name}/call"
parameters = { "path.name" = { dictionary = "tools", probability = 0.8 } }

[[operations]]
include-name = "POST /api/prompts/{server}/{name}"
parameters = { "path.name" = { dictionary = "prompts", probability = 0.8 } }

[[operations]]
include-name = "DELETE /api/servers/{name}"
parameters = { "path.name" = { dictionary = "removable", probability = 0.8 } }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_response_off_the_description() {
    let st = schemathesis();
    let demo = json!({"command": fixture().display().to_string(), "args": ["--name", "demo"]});
    let other = json!({"command": fixture().display().to_string(), "args": ["--name", "other"]});
    let s = Served::start(json!({"demo": demo, "other": other})).await;
    let (status, doc) = common::send(s.get("/api/openapi.json")).await;
    assert!(status.is_success());
    let schema = s.dir.path().join("openapi.json");
    std::fs::write(&schema, doc.to_string()).unwrap();
    let report = s.dir.path().join("report");
    let config = s.dir.path().join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let base = s.base.clone();
    let token = s.token.clone();
    // Its cache (`.schemathesis/`, crashes to replay) goes in the scratch folder, not the repo.
    let scratch = s.dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(st)
            .current_dir(&scratch)
            .arg("--config-file")
            .arg(&config)
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
            .args(["--report", "junit,har", "--report-dir"])
            .arg(&report)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "schemathesis found problems:\n{text}");
    // The realistic values made requests reach real servers, tools, resources and prompts:
    // answered by them (200, or the server's own refusal of the arguments: `invalid_params`).
    let har = std::fs::read_dir(s.dir.path().join("report"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("har")))
        .expect("a HAR report");
    let har: serde_json::Value = serde_json::from_slice(&std::fs::read(har).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array().unwrap();
    let ok = |method: &str, prefix: &str| {
        entries
            .iter()
            .filter(|e| e["request"]["method"] == method)
            .filter(|e| {
                e["response"]["status"] == 200
                    || e["response"]["content"]["text"].as_str().is_some_and(|t| t.contains("\"invalid_params\""))
            })
            .filter(|e| e["request"]["url"].as_str().unwrap_or_default().starts_with(&format!("{}{prefix}", s.base)))
            .count()
    };
    let reached = [
        ("POST", "/api/tools/"),
        ("GET", "/api/servers/demo"),
        ("GET", "/api/resources/read"),
        ("POST", "/api/prompts/demo/greet"),
        ("POST", "/api/servers/other/connect"),
    ]
    .map(|(m, p)| (p, ok(m, p)));
    println!("answered by a server among {} requests: {reached:?}", entries.len());
    for (path, n) in reached {
        assert!(n > 0, "no generated request reached {path} successfully: {reached:?}");
    }
    s.shutdown().await;
}

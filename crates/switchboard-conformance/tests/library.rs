//! What the library does against the conformance suite's own mock servers, started alone
//! (the suite's interactive mode: `conformance client --scenario X` without a command), where
//! the suite's grading cannot see it: what a person is told on the server's status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;
use switchboard::config::{self, LoadOptions};
use switchboard::status::ServerStatus;
use switchboard::{Hub, HubOptions, Paths};
use switchboard_testkit::{Peer, workspace};

/// The suite's mock server of `scenario` at 2026-07-28, and its URL.
fn mock(scenario: &str) -> (Peer, String) {
    let mut child = Command::new(workspace().join("scripts/conformance"))
        .args(["client", "--scenario", scenario, "--spec-version", "2026-07-28"])
        .env("CONFORMANCE_VERSION", "0.2.0-alpha.12")
        .current_dir(workspace())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("scripts/conformance (needs npm)");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the suite printed no server URL");
        if let Some(url) = line.trim().strip_prefix("Server URL: ") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (Peer::new(child), url)
}

async fn hub_for(url: &str) -> (tempfile::TempDir, Hub) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    std::fs::write(&file, json!({"servers": {"s": {"url": url, "transport": "streamable-http"}}}).to_string()).unwrap();
    let paths = Paths::new(dir.path().join("user.json"), switchboard_testkit::data_dir(dir.path()));
    let mut options = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
    options.extra_files = vec![file];
    let hub = Hub::start(&config::load(&options), HubOptions::new(paths));
    hub.ready().await;
    (dir, hub)
}

/// SEP-2243: a tool whose `x-mcp-header` declarations are invalid is left out (rmcp's
/// transport does that), the others stay, and the status names each one left out and why.
#[tokio::test(flavor = "multi_thread")]
async fn tools_left_out_for_invalid_header_declarations_are_named_on_the_status() {
    let (_mock, url) = mock("http-invalid-tool-headers");
    let (_dir, hub) = hub_for(&url).await;
    let Some(ServerStatus::Connected { protocol_version, diagnostics, counts, .. }) = hub.status("s") else {
        panic!("not connected: {:?}", hub.status("s"));
    };
    assert_eq!(protocol_version, "2026-07-28");
    let tools: Vec<String> = hub.catalog().tools().iter().map(|t| t.tool.name.to_string()).collect();
    assert_eq!(tools, ["valid_tool"], "only the valid tool is kept");
    assert_eq!(counts.tools, 1);
    let expected = [
        ("invalid_array_header", "not `array`"),
        ("invalid_colon_in_name", "is not an HTTP token"),
        ("invalid_control_char_name", "is not an HTTP token"),
        ("invalid_duplicate_diff_case", "declared twice"),
        ("invalid_duplicate_same_case", "declared twice"),
        ("invalid_empty_header", "must not be empty"),
        ("invalid_non_ascii_name", "is not an HTTP token"),
        ("invalid_null_header", "not `null`"),
        ("invalid_number_header", "not `number`"),
        ("invalid_object_header", "not `object`"),
        ("invalid_space_in_name", "is not an HTTP token"),
    ];
    assert_eq!(diagnostics.len(), expected.len(), "{diagnostics:#?}");
    for ((tool, why), said) in expected.iter().zip(&diagnostics) {
        assert!(said.starts_with(&format!("tool `{tool}` left out: property `")), "{said}");
        assert!(said.contains(why), "{tool}: {said}");
    }
    let summary = hub.status("s").unwrap().summary();
    assert!(summary.ends_with("; 11 problems (`switchboard get` shows them)"), "{summary}");
    // The kept tool works.
    let out =
        hub.call_tool("s/valid_tool", json!({"region": "us-west1"}).as_object().cloned(), Default::default()).await;
    assert!(out.is_ok_and(|o| !o.is_error()));
    hub.shutdown().await;
}

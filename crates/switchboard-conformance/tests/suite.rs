//! The official conformance suite's core client scenarios (not auth), each run alone
//! (`--scenario`: any failure or warning fails it) against `conformance-client`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scenario(name: &str) {
    let client = env!("CARGO_BIN_EXE_conformance-client");
    let out = Command::new(workspace().join("scripts/conformance"))
        .args(["client", "--command", client, "--scenario", name])
        .current_dir(workspace())
        .output()
        .expect("scripts/conformance (needs npm)");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scenario {name} did not pass:\n{report}");
    assert!(report.contains("0 failed, 0 warnings"), "scenario {name}:\n{report}");
}

/// One test, scenarios one after another: the suite is installed once, and `sse-retry` times
/// the reconnection (450-700 ms), which parallel load on a small machine could spoil.
#[test]
fn the_four_core_client_scenarios_pass() {
    for name in ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"] {
        scenario(name);
    }
}

//! The official conformance suite's client scenarios, each run alone (`--scenario`: any
//! failure or warning fails it) against `conformance-client`: the four core ones, and every
//! authorization one the client supports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use switchboard_testkit::workspace;

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

/// Every `auth/*` scenario of suite 0.1.16: discovery variants, CIMD, scope selection and
/// step-up, token endpoint authentication, pre-registration, the 2025-03-26 fallbacks,
/// resource mismatch, offline access, client credentials (secret and JWT), and SEP-990
/// enterprise-managed authorization (cross-app access).
#[test]
fn the_authorization_scenarios_pass() {
    for name in [
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
        "auth/2025-03-26-oauth-metadata-backcompat",
        "auth/2025-03-26-oauth-endpoint-fallback",
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
        "auth/cross-app-access-complete-flow",
    ] {
        scenario(name);
    }
}

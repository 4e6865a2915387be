//! The official conformance suite's client scenarios against `conformance-client`.
//!
//! - 0.1.16, each scenario alone (`--scenario`: any failure or warning fails it): the four
//!   core ones and every authorization one.
//! - 0.2.0-alpha.12, exactly what each revision requires (`--requirements 2025-11-25` and
//!   `--requirements 2026-07-28`, run at that revision's wire), which also runs the extension
//!   scenarios (client credentials, enterprise-managed authorization, DPoP with and without
//!   nonces, workload identity) and JSON Schema 2020-12 preservation: every check of every
//!   scenario must pass, scored or not, with no warning.
//!
//! One at a time (a lock): `sse-retry` times the reconnection (450-700 ms), which a
//! requirement run's parallel scenarios on a small machine could spoil.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Mutex;

use switchboard_testkit::workspace;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the suite (`version`) with `args` after `client --command <client>`; its report.
fn suite(version: &str, args: &[&str]) -> (bool, String) {
    let client = env!("CARGO_BIN_EXE_conformance-client");
    let out = Command::new(workspace().join("scripts/conformance"))
        .args(["client", "--command", client])
        .args(args)
        .env("CONFORMANCE_VERSION", version)
        .current_dir(workspace())
        .output()
        .expect("scripts/conformance (needs npm)");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), report)
}

fn scenario(name: &str) {
    let (ok, report) = suite("0.1.16", &["--scenario", name]);
    assert!(ok, "scenario {name} did not pass:\n{report}");
    assert!(report.contains("0 failed, 0 warnings"), "scenario {name}:\n{report}");
}

/// What a revision requires, plus what it runs without scoring: every check passes.
fn requirements(revision: &str, extensions: &[&str]) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (ok, report) = suite("0.2.0-alpha.12", &["--requirements", revision]);
    let summary = report.split("=== SUITE SUMMARY ===").nth(1).unwrap_or(&report);
    assert!(ok, "--requirements {revision} did not pass:\n{summary}");
    let total = summary.lines().find(|l| l.starts_with("Total: ")).unwrap_or_default();
    assert!(total.ends_with(" passed, 0 failed, 0 warnings"), "--requirements {revision}: {total}\n{summary}");
    assert!(!summary.contains('✗'), "--requirements {revision}: a scenario failed\n{summary}");
    for name in extensions {
        assert!(
            summary.contains(&format!("✓ {name}:")),
            "--requirements {revision}: {name} did not run or pass\n{summary}"
        );
    }
}

/// The scenarios the suite runs beside both requirement sets without scoring them.
const NOT_SCORED: [&str; 7] = [
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
    "json-schema-2020-12-preservation",
];

#[test]
fn every_client_requirement_of_2025_11_25_and_the_extensions_pass() {
    requirements("2025-11-25", &NOT_SCORED);
}

#[test]
fn every_client_requirement_of_2026_07_28_and_the_extensions_pass() {
    let mut named = NOT_SCORED.to_vec();
    named.extend([
        "sep-2322-client-request-state",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "auth/scope-step-up",
    ]);
    requirements("2026-07-28", &named);
}

/// One test, scenarios one after another: the suite is installed once, and `sse-retry` times
/// the reconnection (450-700 ms), which parallel load on a small machine could spoil.
#[test]
fn the_four_core_client_scenarios_pass() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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

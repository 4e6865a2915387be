//! The official conformance suite's *server* scenarios (`@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12) through the gateway (`--http 127.0.0.1:0 --no-auth --names bare`, as a new
//! user runs it) in front of the suite's own reference server, in all four pairings of the
//! client's era (`--requirements 2025-11-25` or `2026-07-28`) and the upstream's (pinned to
//! 2025-11-25, or negotiated: 2026-07-28 from this server), each requirement set also run
//! against the reference server directly, in the same test, as the baseline.
//!
//! Required: every scenario that passes directly (no failed check, no warning) passes through
//! the gateway in each pairing, but for the gaps named below, each with a fact about the
//! reference server that explains it, checked against the server in this test
//! ([`reference::Evidence`]). The four tables are printed side by side
//! (`cargo test -p switchboard-gateway --test conformance -- --nocapture`).
//!
//! That the eras are translated where this server allows it to be seen (its 2026-07-28 tools
//! asked of a legacy client, its legacy tools' requests put to a 2026-07-28 client) is tested
//! with the TypeScript SDK's clients in `tests/eras.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod reference;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use reference::{Evidence, Upstream};
use switchboard_testkit::workspace;

const SUITE: &str = "0.2.0-alpha.12";

/// A scenario allowed to fail in a pairing, and why.
struct Gap {
    scenario: &'static str,
    evidence: Evidence,
}

const fn gap(scenario: &'static str, evidence: Evidence) -> Gap {
    Gap { scenario, evidence }
}

/// `tools/call test_input_required_result_*`: only on the server's 2026-07-28 path.
const MRTR_TOOLS: Evidence = Evidence::Only2026 {
    tools: &[
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
    ],
    prompts: &["test_input_required_result_prompt"],
};
const DIAGNOSTIC_TOOLS: Evidence = Evidence::Only2026 {
    tools: &["test_missing_capability", "test_streaming_elicitation", "test_logging_tool"],
    prompts: &[],
};

const GAPS_2025_PINNED: &[Gap] =
    &[gap("tools-call-with-logging", Evidence::RmcpLogRouting), gap("server-sse-polling", Evidence::LostAfterRetry)];

const GAPS_2025_NEGOTIATED: &[Gap] = &[
    gap("tools-call-with-logging", Evidence::RmcpLogRouting),
    gap(
        "tools-call-elicitation",
        Evidence::NoRequestsIn2026 { tool: "test_elicitation", arguments: r#"{"message":"hi"}"# },
    ),
    gap("tools-call-sampling", Evidence::NoRequestsIn2026 { tool: "test_sampling", arguments: r#"{"prompt":"hi"}"# }),
    gap(
        "elicitation-sep1034-defaults",
        Evidence::NoRequestsIn2026 { tool: "test_elicitation_sep1034_defaults", arguments: "{}" },
    ),
    gap(
        "elicitation-sep1330-enums",
        Evidence::NoRequestsIn2026 { tool: "test_elicitation_sep1330_enums", arguments: "{}" },
    ),
    gap("resources-subscribe", Evidence::NoSubscribeIn2026),
    gap("resources-unsubscribe", Evidence::NoSubscribeIn2026),
];

const GAPS_2026_PINNED: &[Gap] = &[
    gap("input-required-result-basic-elicitation", MRTR_TOOLS),
    gap("input-required-result-basic-sampling", MRTR_TOOLS),
    gap("input-required-result-basic-list-roots", MRTR_TOOLS),
    gap("input-required-result-request-state", MRTR_TOOLS),
    gap("input-required-result-multiple-input-requests", MRTR_TOOLS),
    gap("input-required-result-multi-round", MRTR_TOOLS),
    gap("input-required-result-missing-input-response", MRTR_TOOLS),
    gap("input-required-result-non-tool-request", MRTR_TOOLS),
    gap("input-required-result-result-type", MRTR_TOOLS),
    gap("input-required-result-tampered-state", MRTR_TOOLS),
    gap("input-required-result-capability-check", MRTR_TOOLS),
    gap("input-required-result-ignore-extra-params", MRTR_TOOLS),
    gap("server-stateless", DIAGNOSTIC_TOOLS),
    gap("server-stateless", Evidence::FakeMutation),
];

const GAPS_2026_NEGOTIATED: &[Gap] =
    &[gap("server-stateless", Evidence::TwoJsonTexts), gap("server-stateless", Evidence::FakeMutation)];

/// One scenario's checks: passed, failed, warnings.
#[derive(Debug, Clone, Copy, Default)]
struct Score {
    passed: u32,
    failed: u32,
    warned: u32,
}

impl Score {
    fn ok(self) -> bool {
        self.failed == 0 && self.warned == 0
    }
}

/// Scenario → its score, read from the checks the suite writes (`-o`); a warning counts as
/// the suite counts it, as a failure of a SHOULD.
fn run_suite(url: &str, requirements: &str) -> BTreeMap<String, Score> {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(workspace().join("scripts/conformance"))
        .args(["server", "--url", url, "--requirements", requirements, "-o"])
        .arg(out.path())
        .env("CONFORMANCE_VERSION", SUITE)
        .current_dir(workspace())
        .output()
        .expect("scripts/conformance (needs npm)");
    let mut scores = BTreeMap::new();
    for dir in std::fs::read_dir(out.path()).unwrap() {
        let dir = dir.unwrap().path();
        let Some(name) = scenario_of(&dir) else { continue };
        let Ok(text) = std::fs::read_to_string(dir.join("checks.json")) else { continue };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        let count = |s: &str| checks.iter().filter(|c| c["status"] == s).count() as u32;
        scores.insert(name, Score { passed: count("SUCCESS"), failed: count("FAILURE"), warned: count("WARNING") });
    }
    assert!(
        !scores.is_empty(),
        "the suite wrote no checks:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    scores
}

/// `server-<scenario>-<ISO timestamp>` → the scenario.
fn scenario_of(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?.strip_prefix("server-")?;
    // The timestamp starts at the last `-YYYY-`.
    let cut = name.match_indices('-').map(|(i, _)| i).rev().find(|&i| {
        let rest = &name[i + 1..];
        rest.len() > 10 && rest.as_bytes()[4] == b'-' && rest[..4].bytes().all(|b| b.is_ascii_digit())
    })?;
    Some(name[..cut].to_string())
}

struct Cell {
    client: &'static str,
    upstream: Upstream,
    gaps: &'static [Gap],
    scores: BTreeMap<String, Score>,
}

fn show(s: Option<&Score>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.ok() => format!("{} ok", s.passed),
        Some(s) => format!("{}/{}f/{}w", s.passed, s.failed, s.warned),
    }
}

/// The four tables side by side: per requirement set, direct and through the gateway with
/// the upstream pinned or negotiated.
fn print_tables(direct: &BTreeMap<&str, BTreeMap<String, Score>>, cells: &[Cell]) {
    for client in ["2025-11-25", "2026-07-28"] {
        let d = &direct[client];
        let row: Vec<&Cell> = cells.iter().filter(|c| c.client == client).collect();
        println!("\n--requirements {client}");
        println!("| scenario | direct | {} |", row.iter().map(|c| c.upstream.name()).collect::<Vec<_>>().join(" | "));
        println!("|---|--:|{}", "--:|".repeat(row.len()));
        let mut names: Vec<&String> = d.keys().chain(row.iter().flat_map(|c| c.scores.keys())).collect();
        names.sort();
        names.dedup();
        for n in names {
            let cols: Vec<String> = row.iter().map(|c| show(c.scores.get(n))).collect();
            println!("| {n} | {} | {} |", show(d.get(n)), cols.join(" | "));
        }
        let passing = |m: &BTreeMap<String, Score>| m.values().filter(|s| s.ok()).count();
        println!(
            "| scenarios passing | {} | {} |",
            passing(d),
            row.iter().map(|c| passing(&c.scores).to_string()).collect::<Vec<_>>().join(" | ")
        );
    }
}

#[test]
fn server_scenarios_through_the_gateway_in_all_four_pairings_of_eras() {
    let (_server, upstream) = reference::start_reference();

    // The evidence behind every gap holds of this server (each fact checked once).
    let mut checked: Vec<String> = Vec::new();
    for gaps in [GAPS_2025_PINNED, GAPS_2025_NEGOTIATED, GAPS_2026_PINNED, GAPS_2026_NEGOTIATED] {
        for g in gaps {
            let key = format!("{:?}", g.evidence);
            if checked.contains(&key) {
                continue;
            }
            if let Err(e) = g.evidence.check(&upstream) {
                panic!("the gap `{}` is explained by {key}, which no longer holds: {e}", g.scenario);
            }
            checked.push(key);
        }
    }

    let mut direct = BTreeMap::new();
    direct.insert("2025-11-25", run_suite(&upstream, "2025-11-25"));
    direct.insert("2026-07-28", run_suite(&upstream, "2026-07-28"));
    let mut cells = Vec::new();
    for (client, era, gaps) in [
        ("2025-11-25", Upstream::Pinned, GAPS_2025_PINNED),
        ("2025-11-25", Upstream::Negotiated, GAPS_2025_NEGOTIATED),
        ("2026-07-28", Upstream::Pinned, GAPS_2026_PINNED),
        ("2026-07-28", Upstream::Negotiated, GAPS_2026_NEGOTIATED),
    ] {
        let gw = reference::gateway(&upstream, era);
        let scores = run_suite(&gw.url, client);
        drop(gw);
        cells.push(Cell { client, upstream: era, gaps, scores });
    }
    print_tables(&direct, &cells);

    let mut lost = Vec::new();
    for cell in &cells {
        for (name, score) in &direct[cell.client] {
            if !score.ok() {
                continue;
            }
            let through = cell.scores.get(name).copied().unwrap_or(Score { failed: 1, ..Score::default() });
            let gap = cell.gaps.iter().find(|g| g.scenario == name);
            match (through.ok(), gap) {
                (true, Some(g)) => {
                    println!(
                        "{} × {}: `{name}` passed though listed as a gap ({:?})",
                        cell.client,
                        cell.upstream.name(),
                        g.evidence
                    )
                }
                (false, None) => lost.push(format!("{} × {}: `{name}` {through:?}", cell.client, cell.upstream.name())),
                _ => {}
            }
        }
    }
    assert!(
        lost.is_empty(),
        "scenarios that pass against the server but not through the gateway:\n{}",
        lost.join("\n")
    );

    // What the gateway adds in the newest era: scenarios the server alone fails there (results
    // of earlier revisions given `resultType`, `Mcp-Method`/`Mcp-Name` checked by rmcp's
    // server) that pass through it.
    let newest = cells.iter().find(|c| c.client == "2026-07-28" && c.upstream == Upstream::Negotiated).unwrap();
    let gained: Vec<&String> = direct["2026-07-28"]
        .iter()
        .filter(|(n, s)| !s.ok() && newest.scores.get(*n).is_some_and(|s| s.ok()))
        .map(|(n, _)| n)
        .collect();
    println!("passing only through the gateway (2026-07-28, negotiated): {gained:?}");
    assert!(gained.iter().any(|n| n.starts_with("tools-call-")), "{gained:?}");
}

#[test]
fn scenario_names_are_read_from_the_suite_s_folders() {
    let of = |s: &str| scenario_of(Path::new(s));
    assert_eq!(
        of("/o/server-tools-call-with-progress-2026-12-02T19-55-49-039Z").as_deref(),
        Some("tools-call-with-progress")
    );
    assert_eq!(
        of("/o/server-sep-2164-resource-not-found-2026-12-02T19-55-49-423Z").as_deref(),
        Some("sep-2164-resource-not-found")
    );
    assert_eq!(of("/o/client-x-2026-12-02T19-55-49-423Z"), None);
}

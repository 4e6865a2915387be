//! Era translation through the gateway, seen by the TypeScript SDK's real clients, in the two
//! pairings where the eras differ (the conformance suite cannot show it there: the reference
//! server offers different tools in each era, see `tests/conformance.rs`):
//!
//! - a client of 2025-11-25 (SDK 1.x) in front of an upstream of 2026-07-28 (the reference
//!   server, negotiated): the upstream's `input_required` rounds reach the client as ordinary
//!   `elicitation/create`, `sampling/createMessage` and `roots/list` requests, answered in
//!   the same call, over several rounds and several questions at once, for tools and prompts;
//! - a client of 2026-07-28 (SDK 2.x, pinned) in front of upstreams of 2025-11-25 (the
//!   reference server pinned, and `server-everything` over stdio): the upstream's requests
//!   reach the client as `input_required` rounds, and the upstream's call goes on with the
//!   answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod reference;

use std::path::Path;
use std::process::Command;

use reference::Upstream;
use serde_json::{Value, json};
use switchboard_testkit::{node_peer, node_peers, npm_folder};

/// Runs `era_client.mjs` with `calls`; its JSON report.
fn client(sdk: &str, url: &str, calls: &[&str]) -> Value {
    let dir = match sdk {
        "sdk1" => node_peers(),
        _ => npm_folder("sdk2", &["@modelcontextprotocol/client@2.4.0"]),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/era_client.mjs");
    let out = Command::new("node").arg(script).arg(sdk).arg(dir).arg(url).args(calls).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no report: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(v.get("error").is_none(), "{v}");
    v
}

/// The methods a call asked the client, in order, and its result's text.
fn seen(v: &Value, call: &str) -> (Vec<String>, String) {
    let c = &v["calls"][call];
    assert!(c["error"].is_null(), "{call}: {c}");
    let asked = c["asked"].as_array().unwrap().iter().map(|a| a["method"].as_str().unwrap().to_string()).collect();
    (asked, c["text"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_2025_client_answers_a_2026_upstream_s_rounds_as_requests() {
    let (_server, upstream) = reference::start_reference();
    let gw = reference::gateway(&upstream, Upstream::Negotiated);
    let v = client(
        "sdk1",
        &gw.url,
        &[
            "tool:test_input_required_result_elicitation",
            "tool:test_input_required_result_sampling",
            "tool:test_input_required_result_list_roots",
            "tool:test_input_required_result_multi_round",
            "tool:test_input_required_result_multiple_inputs",
            "prompt:test_input_required_result_prompt",
        ],
    );
    let (asked, text) = seen(&v, "tool:test_input_required_result_elicitation");
    assert_eq!((asked, text.as_str()), (vec!["elicitation/create".to_string()], "Hello, answer-name!"), "{v}");
    let (asked, text) = seen(&v, "tool:test_input_required_result_sampling");
    assert_eq!(asked, ["sampling/createMessage"], "{v}");
    assert!(text.contains("sampled by the client"), "{v}");
    let (asked, text) = seen(&v, "tool:test_input_required_result_list_roots");
    assert_eq!((asked, text.as_str()), (vec!["roots/list".to_string()], "Found 1 root(s)"), "{v}");
    // Two rounds, one question each.
    let (asked, text) = seen(&v, "tool:test_input_required_result_multi_round");
    assert_eq!(asked, ["elicitation/create", "elicitation/create"], "{v}");
    assert!(text.contains("answer-name") && text.contains("answer-color"), "{v}");
    // One round, three questions of three kinds.
    let (mut asked, text) = seen(&v, "tool:test_input_required_result_multiple_inputs");
    asked.sort();
    assert_eq!(asked, ["elicitation/create", "roots/list", "sampling/createMessage"], "{v}");
    assert!(text.contains("answer-name") && text.contains("sampled by the client"), "{v}");
    // Not only tools: a prompt's round.
    let (asked, text) = seen(&v, "prompt:test_input_required_result_prompt");
    assert_eq!((asked, text.as_str()), (vec!["elicitation/create".to_string()], "Prompt with context: answer-context"));
}

#[test]
fn a_2026_client_answers_a_2025_upstream_s_requests_as_rounds() {
    let (_server, upstream) = reference::start_reference();
    let gw = reference::gateway(&upstream, Upstream::Pinned);
    let v = client(
        "sdk2",
        &gw.url,
        &[
            r#"tool:test_elicitation={"message":"What is your name?"}"#,
            "tool:test_elicitation_sep1034_defaults",
            "tool:test_elicitation_sep1330_enums",
        ],
    );
    let elicited = |call: &str| {
        let (asked, text) = seen(&v, call);
        assert_eq!(asked, ["elicitation/create"], "{call}: {v}");
        assert!(text.contains("action=accept"), "{call}: {v}");
        text
    };
    assert!(elicited(r#"tool:test_elicitation"#).contains("answer-response"), "{v}");
    // The defaults of SEP-1034 reached the client in the round's schema, and came back.
    assert!(elicited("tool:test_elicitation_sep1034_defaults").contains("John Doe"), "{v}");
    assert!(elicited("tool:test_elicitation_sep1330_enums").contains("option1"), "{v}");

    // Sampling from a legacy upstream over stdio (the reference server checks a sampling
    // result against the request's schema, which no client's result passes).
    let gw = reference::gateway_with(json!({
        "everything": {"command": "node", "args": [node_peer("server-everything"), "stdio"]}
    }));
    let v = client("sdk2", &gw.url, &[r#"tool:trigger-sampling-request={"prompt":"Say hi","maxTokens":20}"#]);
    let (asked, text) = seen(&v, "tool:trigger-sampling-request");
    assert_eq!(asked, ["sampling/createMessage"], "{v}");
    assert!(text.contains("sampled by the client"), "{v}");
}

//! The policy through the API: calls it asks about wait in a queue (`approval_requested`,
//! `GET /api/approvals`, `POST /api/approvals/{id}`) while someone follows the events, and are
//! denied at once, saying how to allow them, when nobody does; denials and bad arguments have
//! their own error codes; every call is a `tool_called` event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Served, error_code, fixture, follow_events, next_event, send};
use reqwest::StatusCode;
use serde_json::json;

fn config() -> serde_json::Value {
    json!({
        "servers": {"demo": {"command": fixture().display().to_string()}},
        "policy": {"ask": ["mcp__demo__echo"], "deny": ["mcp__demo__crash"]},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_the_policy_asks_about_wait_for_a_decision() {
    let s = Served::start_config(config(), |_| {}).await;
    let call = |tool: &str, args: serde_json::Value| {
        let request = s.post(&format!("/api/tools/{tool}/call"), json!({"arguments": args}));
        tokio::spawn(send(request))
    };
    // Nobody follows the events: denied at once, with the way to allow it.
    let (status, body) = call("mcp__demo__echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!((status, error_code(&body)), (StatusCode::FORBIDDEN, "denied"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("nobody follows") && message.contains("switchboard allow mcp__demo__echo"), "{message}");

    let mut events = follow_events(&s).await;
    let asked = call("mcp__demo__echo", json!({"text": "hi"}));
    let pending = next_event(&mut events, "approval_requested").await;
    assert_eq!(pending["request"]["name"], "mcp__demo__echo", "{pending}");
    assert_eq!(pending["request"]["arguments"], json!({"text": "hi"}), "{pending}");
    assert_eq!(pending["request"]["caller"]["kind"], "api", "{pending}");
    assert!(pending["rule"].as_str().unwrap().starts_with("rule `ask: mcp__demo__echo` of "), "{pending}");
    let titles: Vec<&str> = pending["choices"].as_array().unwrap().iter().filter_map(|c| c["title"].as_str()).collect();
    assert_eq!(titles, ["Allow once", "Allow for this session", "Always allow", "Deny"]);
    let id = pending["id"].as_u64().unwrap();
    assert_eq!(send(s.get("/api/approvals")).await.1["approvals"][0]["id"], id);
    let decide = |id: u64, decision: &str| send(s.post(&format!("/api/approvals/{id}"), json!({"decision": decision})));
    let (status, body) = decide(id, "maybe").await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    assert_eq!(decide(id, "allow_once").await.0, StatusCode::NO_CONTENT);
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["model"]["blocks"][0]["text"], "hi", "{body}");
    let settled = next_event(&mut events, "approval_settled").await;
    assert_eq!(settled, json!({"type": "approval_settled", "id": id, "decision": "allow_once"}));
    let called = next_event(&mut events, "tool_called").await;
    assert_eq!(
        (called["name"].as_str(), called["outcome"].as_str()),
        (Some("mcp__demo__echo"), Some("ok")),
        "{called}"
    );
    assert_eq!(called["approval"], "allow_once", "{called}");
    // Decided already: unknown.
    let (status, body) = decide(id, "deny").await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_approval"), "{body}");

    // Deny, and a call cancelled while it waits takes its card back.
    let asked = call("mcp__demo__echo", json!({"text": "no"}));
    let id = next_event(&mut events, "approval_requested").await["id"].as_u64().unwrap();
    assert_eq!(decide(id, "deny").await.0, StatusCode::NO_CONTENT);
    let (status, body) = asked.await.unwrap();
    assert_eq!((status, error_code(&body)), (StatusCode::FORBIDDEN, "denied"), "{body}");
    let asked = call("mcp__demo__echo", json!({"text": "gone"}));
    let id = next_event(&mut events, "approval_requested").await["id"].as_u64().unwrap();
    asked.abort();
    let settled = next_event(&mut events, "approval_settled").await;
    assert_eq!(settled, json!({"type": "approval_settled", "id": id, "decision": "withdrawn"}));

    // Denied by a rule; arguments that break the schema.
    let (status, body) = call("mcp__demo__crash", json!({})).await.unwrap();
    assert_eq!((status, error_code(&body)), (StatusCode::FORBIDDEN, "denied"), "{body}");
    let (status, body) = call("mcp__demo__add", json!({"a": "two"})).await.unwrap();
    assert_eq!((status, error_code(&body)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_arguments"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("/a: "), "{body}");
    s.shutdown().await;
}

/// `policy.rate_limits` through the API: the call past the limit gets 429 with `Retry-After`
/// and the limit named, a tool of no limit goes on, and the audit counts it `rate_limited`.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_over_a_rate_limit_gets_429_with_retry_after() {
    let config = json!({
        "servers": {"demo": {"command": fixture().display().to_string()}},
        "policy": {"rate_limits": [{"tool": "mcp__demo__add", "calls": 2, "per": "hour"}]},
    });
    let s = Served::start_config(config, |_| {}).await;
    let add = || s.post("/api/tools/mcp__demo__add/call", json!({"arguments": {"a": 1, "b": 2}}));
    for _ in 0..2 {
        assert_eq!(send(add()).await.0, StatusCode::OK);
    }
    let refused = add().send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1700..=1800).contains(&wait), "half an hour for one of 2 an hour: {wait}");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(error_code(&body), "rate_limited", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("rate limit `mcp__demo__add`: 2 calls an hour") && message.contains("try again in"),
        "{message}"
    );
    let (status, _) = send(s.post("/api/tools/mcp__demo__echo/call", json!({"arguments": {"text": "hi"}}))).await;
    assert_eq!(status, StatusCode::OK, "a tool no limit names");
    let started = std::time::Instant::now();
    loop {
        let (_, log) = send(s.get("/api/audit?server=demo")).await;
        let outcomes: Vec<&str> =
            log["calls"].as_array().unwrap().iter().filter_map(|c| c["outcome"].as_str()).collect();
        if outcomes.contains(&"rate_limited") {
            break;
        }
        assert!(started.elapsed().as_secs() < 10, "{log}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    s.shutdown().await;
}

/// What a hub in another process asks: `ask: mcp__gh__*` of a user file, from a gateway client.
fn outside_request(title: &str) -> switchboard::policy::ApprovalRequest {
    let request = json!({
        "server": "gh", "tool": "create_issue", "name": "mcp__gh__create_issue",
        "arguments": {"title": title},
        "annotations": {"destructiveHint": true},
        "rule": {"verdict": "ask", "kind": "pattern", "pattern": "mcp__gh__*", "file": "/home/ada/.config/switchboard/config.json", "source": "user"},
        "changed": true,
        "caller": {"kind": "gateway", "client": "claude-code", "profile": null, "session": "s1"},
    });
    serde_json::from_value(request).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn another_process_asks_through_the_queue_and_gets_the_decision() {
    use switchboard::policy::{Approval, Approver};
    use switchboard_server::ServeApprover;

    let s = Served::start_config(config(), |_| {}).await;
    let data = switchboard_testkit::data_dir(s.dir.path());
    let approver = std::sync::Arc::new(
        ServeApprover::new(data.clone(), "switchboard gateway (pid 4242) in /home/ada/project")
            .instead_of("its client cannot be asked (it declared no elicitation)"),
    );

    // Nobody follows the events: refused at once, saying so.
    let why = approver.consult(outside_request("a")).await.unwrap_err();
    assert_eq!(
        why,
        "its client cannot be asked (it declared no elicitation), nor the dashboard of `switchboard serve`: \
         nobody has its dashboard open (`switchboard dashboard` opens it)"
    );
    let (status, body) = send(s.post("/api/approvals", json!({"request": outside_request("a"), "origin": "x"}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "nobody_to_ask"), "{body}");
    let (status, body) = send(s.post("/api/approvals", json!({"request": outside_request("a")}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "no origin: {body}");

    // Each answer comes back, and the card says where the question came from.
    let mut events = follow_events(&s).await;
    for answer in Approval::ALL {
        let asking = {
            let approver = approver.clone();
            tokio::spawn(async move { approver.consult(outside_request(answer.as_str())).await })
        };
        let pending = next_event(&mut events, "approval_requested").await;
        assert_eq!(pending["origin"], "switchboard gateway (pid 4242) in /home/ada/project", "{pending}");
        assert_eq!(pending["request"]["arguments"], json!({"title": answer.as_str()}), "{pending}");
        assert_eq!(pending["request"]["caller"]["client"], "claude-code", "{pending}");
        assert_eq!(pending["request"]["changed"], true, "{pending}");
        assert_eq!(
            pending["rule"], "rule `ask: mcp__gh__*` of /home/ada/.config/switchboard/config.json (user file)",
            "{pending}"
        );
        let listed = send(s.get("/api/approvals")).await.1;
        assert_eq!(listed["approvals"][0]["origin"], pending["origin"], "{listed}");
        let id = pending["id"].as_u64().unwrap();
        let decided = send(s.post(&format!("/api/approvals/{id}"), json!({"decision": answer.as_str()}))).await;
        assert_eq!(decided.0, StatusCode::NO_CONTENT);
        assert_eq!(asking.await.unwrap(), Ok(answer));
    }

    // The asking process goes away (its call cancelled): the card is withdrawn.
    let asking = {
        let approver = approver.clone();
        tokio::spawn(async move { approver.consult(outside_request("gone")).await })
    };
    let id = next_event(&mut events, "approval_requested").await["id"].as_u64().unwrap();
    asking.abort();
    let settled = next_event(&mut events, "approval_settled").await;
    assert_eq!(settled, json!({"type": "approval_settled", "id": id, "decision": "withdrawn"}));

    // A token that is not the server's.
    let token = data.join("serve-token");
    let real = std::fs::read(&token).unwrap();
    std::fs::write(&token, "not-the-token").unwrap();
    let why = approver.consult(outside_request("b")).await.unwrap_err();
    assert!(why.ends_with(&format!("{} refused the token in {}", s.base, token.display())), "{why}");
    std::fs::write(&token, real).unwrap();

    // The server ended (its record stays behind: kept in a folder of its own, as the test's
    // goes with the server), and no server ever ran.
    let base = s.base.clone();
    let left = tempfile::tempdir().unwrap();
    for file in ["serve.json", "serve-token"] {
        std::fs::copy(data.join(file), left.path().join(file)).unwrap();
    }
    s.shutdown().await;
    let approver = ServeApprover::new(left.path().to_path_buf(), "test").instead_of("its client cannot be asked");
    let why = approver.consult(outside_request("c")).await.unwrap_err();
    assert!(why.ends_with(&format!("none is running (the last one answered at {base})")), "{why}");
    let elsewhere = tempfile::tempdir().unwrap();
    let why =
        ServeApprover::new(elsewhere.path().to_path_buf(), "test").consult(outside_request("d")).await.unwrap_err();
    assert_eq!(
        why,
        format!(
            "nobody can be asked on the dashboard of `switchboard serve`: none has run with {}",
            elsewhere.path().display()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_is_read_with_its_losses_and_its_health() {
    let s = Served::start_config(config(), |_| {}).await;
    let (status, _) = send(s.post("/api/tools/mcp__demo__crash/call", json!({"arguments": {}}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // What a host that lost records and a damaged file leave in the log.
    let audit = switchboard_testkit::data_dir(s.dir.path()).join("audit");
    std::fs::create_dir_all(&audit).unwrap();
    let day = switchboard::policy::audit::rfc3339(std::time::SystemTime::now())[..10].to_string();
    let planted = format!(
        "{{\"time\":\"{day}T00:00:00.000Z\",\"lost\":3,\"first\":\"{day}T00:00:00.000Z\",\"last\":\"{day}T00:00:00.000Z\",\"error\":\"No space left on device (os error 28)\"}}\nnot a record\n"
    );
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(audit.join(format!("{day}.jsonl")))
        .and_then(|mut f| f.write_all(planted.as_bytes()))
        .unwrap();
    // The denied call's record is written within 100 ms.
    let mut view = json!(null);
    for _ in 0..50 {
        view = send(s.get("/api/audit?server=demo")).await.1;
        if view["calls"].as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(view["calls"][0]["name"], "mcp__demo__crash", "{view}");
    assert_eq!(view["calls"][0]["outcome"], "denied", "{view}");
    assert_eq!(view["lost_records"], 3, "a loss is shown whatever the server asked: {view}");
    assert_eq!(view["lost"][0]["error"], "No space left on device (os error 28)", "{view}");
    assert_eq!(view["unreadable"][0]["lines"], 1, "{view}");
    assert_eq!(view["enabled"], true, "{view}");
    assert_eq!(view["health"], json!({"held": 0, "lost": 0}), "{view}");
    let (status, health) = send(s.get("/api/audit/health")).await;
    assert_eq!((status, &health["health"]), (StatusCode::OK, &json!({"held": 0, "lost": 0})), "{health}");
    let (status, body) = send(s.get("/api/audit?since_secs=x")).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_poisoned_server_s_findings_are_in_the_api_and_its_tools_are_clean() {
    let s = Served::start(json!({"demo": {"command": fixture().display().to_string(), "args": ["--poisoned"]}})).await;
    let (status, body) = send(s.get("/api/servers")).await;
    assert_eq!(status, StatusCode::OK);
    let findings = body["servers"][0]["findings"].as_array().cloned().unwrap_or_default();
    let description = findings.iter().find(|f| f["field"] == "description").cloned().unwrap_or_default();
    assert_eq!(description["target"], json!({"kind": "tool", "name": "weather"}), "{body}");
    assert!(description["why"].as_str().unwrap_or("").contains("read ~/.ssh/id_rsa"), "{body}");
    let (_, tools) = send(s.get("/api/tools?server=demo")).await;
    let text = tools.to_string();
    assert!(!text.contains('\u{e0042}') && !text.contains('\u{200b}') && !text.contains('\u{202e}'), "{text}");
    s.shutdown().await;
}

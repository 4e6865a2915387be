//! A colleague at every door of a session that is not theirs. Alice and Bob sign in with tokens
//! of the organisation's issuer; two gateway replicas share a team's store on PostgreSQL behind
//! HAProxy (round robin, no affinity). Bob, with his own valid token and Alice's session id (or
//! her `requestState`, or the id of an event of her stream), tries each way in: a `POST` of a
//! request and of a notification, the session's own stream (`GET`), a request's stream asked
//! for again (`GET` with `Last-Event-ID`), `DELETE`, and an answer to her `input_required`
//! round, at the replica that holds the session, at the one that passes it on, through the
//! balancer, after the holder was killed and the other took the session over, and at the holder
//! started again. Each refusal is exactly the answer for a session that does not exist (status,
//! body, headers: nothing says hers does), and her session goes on: her stream stays open and
//! carries what the gateway tells it, her requests are answered, and only her `DELETE` ends it
//! (200, as the SDKs expect).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Home, answered};
use serde_json::{Value, json};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::issuer::{Issuer, Key};

/// What an answer says, as a colleague could compare it: the status, the headers that are not
/// the date, and the body.
#[derive(Debug, PartialEq)]
struct Said {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

async fn said(r: reqwest::Response) -> Said {
    let status = r.status().as_u16();
    let mut headers: Vec<(String, String)> = r
        .headers()
        .iter()
        .filter(|(k, _)| *k != "date")
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    headers.sort();
    Said { status, headers, body: r.text().await.unwrap() }
}

/// The ways into a legacy session.
#[derive(Debug, Clone, Copy)]
enum Door {
    Request,
    Notification,
    Stream,
    Resume,
    Delete,
}

const DOORS: [Door; 5] = [Door::Request, Door::Notification, Door::Stream, Door::Resume, Door::Delete];

/// Knocks at `door` of the session `session` at `url` with `token`; `last` is the event id a
/// resumption names.
async fn knock(url: &str, token: &str, session: &str, door: Door, last: &str) -> reqwest::Response {
    let client = reqwest::Client::new();
    let request = match door {
        Door::Request | Door::Notification => {
            let body = match door {
                Door::Request => json!({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}),
                _ => json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
            };
            client
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(body.to_string())
        }
        Door::Stream | Door::Resume => {
            let r = client.get(url).header("accept", "text/event-stream");
            if matches!(door, Door::Resume) { r.header("last-event-id", last) } else { r }
        }
        Door::Delete => client.delete(url),
    };
    request
        .bearer_auth(token)
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap()
}

/// Bob at every door of `session` at `url`: each answer is the one for a session that does not
/// exist (asked the same way with a made-up id).
async fn refused_everywhere(url: &str, bob: &str, session: &str, last: &str, at: &str) {
    let nobody = "d0e5n0t3x15t0000000000000000000";
    for door in DOORS {
        let theirs = said(knock(url, bob, session, door, last).await).await;
        let none = said(knock(url, bob, nobody, door, last).await).await;
        assert_eq!(theirs.status, 404, "{at}, {door:?}: {theirs:?}");
        assert_eq!(theirs, none, "{at}, {door:?}: refused as a session that does not exist");
        assert!(!theirs.body.contains(session), "{at}, {door:?}: {theirs:?}");
    }
}

/// A POST of `body` in `session` with `token`.
async fn post(url: &str, token: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    common::post_mcp_as(url, token, session, "2025-11-25", body).await
}

/// The id of the first event of a stream (a request's response: the priming event).
async fn first_event_id(r: reqwest::Response) -> String {
    use futures::StreamExt;
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    while let Some(chunk) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if let Some(id) = buf.lines().find_map(|l| l.strip_prefix("id:")) {
            return id.trim().to_string();
        }
    }
    panic!("no event with an id: {buf}")
}

/// A 2026-07-28 call of `fx__ask` (it asks a question) with `token`, continuing `round`.
async fn ask(url: &str, token: &str, round: Option<(&str, &str)>) -> Value {
    let mut params = json!({"name": "fx__ask", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "colleague", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }});
    if let Some((state, key)) = round {
        params["requestState"] = json!(state);
        params["inputResponses"] = json!({key: {"action": "accept", "content": {"name": "Ada"}}});
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fx__ask")
        .body(body.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    answered(&r.text().await.unwrap())
}

/// Collects what a session's own stream carries, in a task.
fn listen(r: reqwest::Response) -> (tokio::task::JoinHandle<()>, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use futures::StreamExt;
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = heard.clone();
    let task = tokio::spawn(async move {
        let mut stream = r.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                let data: String = event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                if let Ok(v) = serde_json::from_str::<Value>(&data) {
                    into.lock().unwrap().push(v);
                }
            }
        }
    });
    (task, heard)
}

/// Waits until the stream heard a message with `method`.
async fn heard(heard: &std::sync::Mutex<Vec<Value>>, method: &str) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        if heard.lock().unwrap().iter().any(|m| m["method"] == method) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_of_a_session_is_closed_to_a_colleague_at_every_replica() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]);
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", switchboard_testkit::free_port())).collect();
    let proxy = HaProxy::start(&addrs);
    let balanced = format!("{}/mcp", proxy.url());
    let public = proxy.url().trim_start_matches("http://").to_string();
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({"resource": balanced}));
    let alice = key.sign(&issuer.claims(&balanced, "alice", &["devs"]));
    let bob = key.sign(&issuer.claims(&balanced, "bob", &["devs"]));
    let replica = |addr: &str| common::http_gateway_at(&home, addr, &["--host", &public]);
    let (mut a, at_a) = replica(&addrs[0]);
    let (_b, at_b) = replica(&addrs[1]);
    proxy.wait_up(2, Duration::from_secs(30));

    // Alice's session at A, its own stream open, and the id of an event of a request's stream.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "alice", "version": "1"}}});
    let r = post(&at_a, &alice, None, &init).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&at_a, &alice, Some(&session), &initialized).await.status(), 202);
    let stream = knock(&at_a, &alice, &session, Door::Stream, "").await;
    assert_eq!(stream.status(), 200);
    let (_listening, stream) = listen(stream);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let last = first_event_id(post(&at_a, &alice, Some(&session), &list).await).await;

    // Bob at every door: at A (which holds it), at B (which would pass it on), through the
    // balancer (twice: each replica once).
    refused_everywhere(&at_a, &bob, &session, &last, "the replica holding it").await;
    refused_everywhere(&at_b, &bob, &session, &last, "another replica").await;
    for round in 0..2 {
        refused_everywhere(&balanced, &bob, &session, &last, &format!("the balancer, {round}")).await;
    }
    // Her session went on: her requests are answered at both replicas, her stream carries what
    // the gateway tells her (a server added: the tools changed), and nothing else was said.
    for url in [&at_a, &at_b, &balanced] {
        let listed = answered(&post(url, &alice, Some(&session), &list).await.text().await.unwrap());
        assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{url}: {listed}");
    }
    home.edit(|c| c["servers"]["fx2"] = c["servers"]["fx"].clone());
    assert!(heard(&stream, "notifications/tools/list_changed").await, "{:?}", stream.lock().unwrap());

    // Her 2026-07-28 round: Bob's answers with her state are refused as a changed state is,
    // at either replica and through the balancer; hers go through.
    let round = ask(&balanced, &alice, None).await;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let state = round["result"]["requestState"].as_str().unwrap().to_string();
    let q = round["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let mut changed = state.clone().into_bytes();
    let middle = changed.len() / 2;
    changed[middle] = if changed[middle] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let forged = ask(&at_a, &alice, Some((&changed, &q))).await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    for url in [&at_a, &at_b, &balanced, &balanced] {
        let refused = ask(url, &bob, Some((&state, &q))).await;
        assert_eq!(refused["error"], forged["error"], "{url}: Bob's answers refused as a changed state");
    }
    let done = ask(&balanced, &alice, Some((&state, &q))).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");

    // A is killed: Bob's requests at B are refused from the store's word alone, Alice's take the
    // session over at B, and from then on B refuses Bob itself.
    drop(a);
    proxy.wait_up(1, Duration::from_secs(30));
    refused_everywhere(&at_b, &bob, &session, &last, "B, its holder gone").await;
    let listed = answered(&post(&at_b, &alice, Some(&session), &list).await.text().await.unwrap());
    assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "taken over: {listed}");
    let serving = pg.sql("sb", &format!("SELECT replica FROM switchboard_sessions WHERE id = '{session}'"));
    refused_everywhere(&at_b, &bob, &session, &last, "B, holding it now").await;
    // A started again: it refuses Bob too (the store says whose the session is), and passes
    // Alice's requests to B, which serves the session now.
    (a, _) = replica(&addrs[0]);
    proxy.wait_up(2, Duration::from_secs(30));
    refused_everywhere(&at_a, &bob, &session, &last, "A, started again").await;
    for url in [&at_a, &balanced, &balanced] {
        let listed = answered(&post(url, &alice, Some(&session), &list).await.text().await.unwrap());
        assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{url}: {listed}");
    }
    let now = pg.sql("sb", &format!("SELECT replica FROM switchboard_sessions WHERE id = '{session}'"));
    assert_eq!(now, serving, "A passed her requests on to B");

    // Only Alice ends her session: her DELETE answers 200, then the session is gone.
    let ended = knock(&balanced, &alice, &session, Door::Delete, "").await;
    assert_eq!(ended.status(), 200, "{:?}", ended.text().await);
    for url in [&at_a, &at_b] {
        let r = post(url, &alice, Some(&session), &list).await;
        assert_eq!(r.status(), 404, "{url}: ended");
    }
    drop(a);
}

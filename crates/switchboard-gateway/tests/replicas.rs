//! Gateways as replicas of one another on a team's store (issue "beyond one machine"): a
//! 2026-07-28 client's answers to an `input_required` round reach whichever replica, and the
//! call goes on at the replica holding it; another caller's answers, a changed state and the
//! answers for a replica that was killed are refused, each saying why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Home, answered};
use serde_json::{Value, json};
use switchboard_testkit::issuer::{Issuer, Key};

/// Waits until `n` replicas have registered in the store.
async fn registered(pg: &switchboard_testkit::postgres::Postgres, n: usize) {
    let started = std::time::Instant::now();
    while pg.sql("sb", "SELECT COUNT(*) FROM switchboard_replicas").trim() != n.to_string() {
        assert!(started.elapsed() < Duration::from_secs(20), "the replicas did not register");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A 2026-07-28 `tools/call` of `fx__ask` (which asks its caller a question), with the round's
/// state and answers when continuing one.
async fn ask(url: &str, token: &str, round: Option<(&str, Value)>) -> Value {
    let mut params = json!({"name": "fx__ask", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }});
    if let Some((state, answers)) = round {
        params["requestState"] = json!(state);
        params["inputResponses"] = answers;
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
    assert_eq!(r.status(), 200);
    answered(&r.text().await.unwrap())
}

/// The round's state and the key of its one question, from an `input_required` result.
fn round(v: &Value) -> (String, String) {
    let result = &v["result"];
    assert_eq!(result["resultType"], "input_required", "{v}");
    let key = result["inputRequests"].as_object().and_then(|m| m.keys().next().cloned()).expect("a question");
    assert_eq!(result["inputRequests"][&key]["method"], "elicitation/create", "{v}");
    (result["requestState"].as_str().expect("a requestState").to_string(), key)
}

fn accept(key: &str, name: &str) -> Value {
    json!({key: {"action": "accept", "content": {"name": name}}})
}

/// Two replicas on one store. Alice's call asks her a question at replica A; her answers sent
/// to replica B are passed to A and the call ends with them (the upstream's one call, which
/// waited at A). Bob's answers with Alice's state are refused (at either replica), as is a
/// state changed by one character. Then A is killed with a round open: B says that the call
/// was held by a replica that is gone, and the next call at B works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_round_goes_on_at_the_replica_that_holds_it() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let issuer = Issuer::start(&[&Key::new("k1")]);
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({}));
    let (alice, bob) = (home.api_key("alice-bot"), home.api_key("bob-bot"));
    let (a, at_a) = common::http_gateway(&home, &[]);
    let (_b, at_b) = common::http_gateway(&home, &[]);
    // Both registered, each at the address it bound.
    registered(&pg, 2).await;
    let urls = pg.sql("sb", "SELECT url FROM switchboard_replicas ORDER BY url");
    for url in [&at_a, &at_b] {
        assert!(urls.contains(url.strip_suffix("/mcp").unwrap()), "{url} not in {urls}");
    }

    let (state, q) = round(&ask(&at_a, &alice, None).await);
    let calls_before = home.calls().iter().filter(|c| c.starts_with("ask")).count();
    // Someone else with Alice's state: refused, here and there, and her call still waits.
    for url in [&at_b, &at_a] {
        let refused = ask(url, &bob, Some((&state, accept(&q, "Mallory")))).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("not made for this caller"), "{refused}");
    }
    // A state changed by one character does not open.
    let mut changed = state.clone().into_bytes();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let refused = ask(&at_b, &alice, Some((&changed, accept(&q, "Ada")))).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // Her answers at B: passed to A, where the upstream's call was waiting, and it ends.
    let done = ask(&at_b, &alice, Some((&state, accept(&q, "Ada")))).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Ada"), "{done}");
    assert_eq!(
        home.calls().iter().filter(|c| c.starts_with("ask")).count(),
        calls_before,
        "the upstream was called once, at A: {:?}",
        home.calls()
    );
    // The same state again: that call is over.
    let again = ask(&at_b, &alice, Some((&state, accept(&q, "Ada")))).await;
    assert!(again["error"]["message"].as_str().unwrap_or_default().contains("over"), "{again}");

    // A round held by a replica that is killed: B says so; B's own calls go on.
    let (state, q) = round(&ask(&at_a, &alice, None).await);
    drop(a);
    let lost = ask(&at_b, &alice, Some((&state, accept(&q, "Ada")))).await;
    let message = lost["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(lost["error"]["code"], -32603, "{lost}");
    assert!(message.contains("call the tool again") && message.contains("replica"), "{lost}");
    let (state, q) = round(&ask(&at_b, &alice, None).await);
    let done = ask(&at_b, &alice, Some((&state, accept(&q, "Grace")))).await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("Grace"), "{done}");
}

/// A POST of `body` in `session` (2025-11-25) with `token`.
async fn post(url: &str, token: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .timeout(Duration::from_secs(30));
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.send().await.unwrap()
}

/// The JSON-RPC messages of an event stream with their events' ids (`""`: none), as they come,
/// until `each` says stop.
async fn events_with_ids(r: reqwest::Response, mut each: impl AsyncFnMut(&str, Value) -> bool) {
    use futures::StreamExt;
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    while let Some(chunk) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            let data: String =
                event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect::<Vec<_>>().join("");
            let id = event.lines().find_map(|l| l.strip_prefix("id:")).map(str::trim).unwrap_or_default();
            if let Ok(v) = serde_json::from_str::<Value>(&data)
                && !each(id, v).await
            {
                return;
            }
        }
    }
}

/// The JSON-RPC messages of an event stream as they come, until `done` says stop.
async fn events(r: reqwest::Response, mut each: impl AsyncFnMut(Value) -> bool) {
    events_with_ids(r, async |_, v| each(v).await).await;
}

/// The id of the first event of an event stream whose message `want` holds.
async fn event_id(r: reqwest::Response, want: impl Fn(&Value) -> bool) -> String {
    let mut found = None;
    events_with_ids(r, async |id, v| {
        if want(&v) {
            found = Some(id.to_string());
        }
        found.is_none()
    })
    .await;
    found.expect("the stream ended before the event")
}

/// A legacy session (2025-11-25, `Mcp-Session-Id`) made at replica A is served by A whichever
/// replica its requests reach: B passes them on (its notification, its lists, its calls, and
/// the answer to a question A's upstream asks in the middle of a call, which must reach the
/// call waiting at A). When A is killed, the next request at B finds A gone, B takes the
/// session over (the store says so) and serves it: the client goes on with the same id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_is_served_by_one_replica_and_taken_over_when_it_dies() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let issuer = Issuer::start(&[&Key::new("k1")]);
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({}));
    let alice = home.api_key("alice-bot");
    let (a, at_a) = common::http_gateway(&home, &[]);
    let (_b, at_b) = common::http_gateway(&home, &[]);
    registered(&pg, 2).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let r = post(&at_a, &alice, None, &init).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let serving = || pg.sql("sb", &format!("SELECT replica FROM switchboard_sessions WHERE id = '{session}'"));
    let replica_a = serving().trim().to_string();
    assert!(!replica_a.is_empty(), "the session's replica is recorded");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&at_b, &alice, Some(&session), &initialized).await.status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let listed = answered(&post(&at_b, &alice, Some(&session), &list).await.text().await.unwrap());
    assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{listed}");
    assert_eq!(serving().trim(), replica_a, "B passed it on: A still serves the session");

    // A question in the middle of a call at A; its answer sent to B (as a balancer may).
    let call =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fx__ask", "arguments": {}}});
    let r = post(&at_a, &alice, Some(&session), &call).await;
    assert_eq!(r.status(), 200);
    let mut result = Value::Null;
    let (url, token, sid) = (at_b.clone(), alice.clone(), session.clone());
    events(r, async |message| {
        if message["method"] == "elicitation/create" {
            let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                                "result": {"action": "accept", "content": {"name": "Ada"}}});
            let sent = post(&url, &token, Some(&sid), &answer).await;
            assert_eq!(sent.status(), 202, "the answer was taken");
            true
        } else if message["id"] == 3 {
            result = message;
            false
        } else {
            true
        }
    })
    .await;
    let text = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Ada"), "the answer reached the call waiting at A: {result}");

    // A is killed: B takes the session over at its next request, and serves it.
    drop(a);
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "fx__echo", "arguments": {"text": "after A"}}});
    let said = answered(&post(&at_b, &alice, Some(&session), &call).await.text().await.unwrap());
    assert_eq!(said["result"]["content"][0]["text"], "after A", "{said}");
    let replica_b = serving().trim().to_string();
    assert!(!replica_b.is_empty() && replica_b != replica_a, "B took it over: {replica_b} (A was {replica_a})");
    let listed = answered(&post(&at_b, &alice, Some(&session), &list).await.text().await.unwrap());
    assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{listed}");
}

/// A legacy session taken over by another replica catches up there: the resources its client
/// subscribed to are subscribed to again (server-everything's updates reach it through the new
/// replica), and it is told `list_changed` for the lists that differ from what it was sent (a
/// tool taken away while its replica was down: the tools changed, the prompts did not). Its
/// client asks for its stream again with the last event id the dead replica gave it (as SDK
/// clients do), after the replica took the session over: the stream opens afresh and carries
/// what was told meanwhile (rmcp, given the other replica's id, would skip it or refuse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_session_is_told_which_lists_changed_and_keeps_its_subscriptions() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let issuer = Issuer::start(&[&Key::new("k1")]);
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({}));
    let everything = switchboard_testkit::node_peer("server-everything");
    home.edit(|c| c["servers"]["ev"] = json!({"command": "node", "args": [everything, "stdio"]}));
    let alice = home.api_key("alice-bot");
    let (a, at_a) = common::http_gateway(&home, &[]);
    let (_b, at_b) = common::http_gateway(&home, &[]);
    registered(&pg, 2).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let r = post(&at_a, &alice, None, &init).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&at_a, &alice, Some(&session), &initialized).await.status(), 202);
    let list = |id: u64, method: &str| json!({"jsonrpc": "2.0", "id": id, "method": method});
    // server-everything may still be starting when the session's first list has waited its
    // most (`FIRST_LIST_WAIT`; more on a loaded machine): its tools then come with
    // `list_changed`, and the client lists again, as this one does until they are there.
    let started = std::time::Instant::now();
    let before = loop {
        let tools = answered(&post(&at_a, &alice, Some(&session), &list(2, "tools/list")).await.text().await.unwrap());
        if tools["result"]["tools"].to_string().contains("\"ev__echo\"") {
            break tools["result"]["tools"].as_array().map(Vec::len).unwrap_or_default();
        }
        assert!(started.elapsed() < Duration::from_secs(20), "server-everything's tools at A: {tools}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let _ = post(&at_a, &alice, Some(&session), &list(3, "prompts/list")).await.text().await;
    let resources =
        answered(&post(&at_a, &alice, Some(&session), &list(4, "resources/list")).await.text().await.unwrap());
    let uri = resources["result"]["resources"]
        .as_array()
        .and_then(|all| all.iter().find_map(|r| r["uri"].as_str().filter(|u| u.starts_with("demo://"))))
        .unwrap_or_else(|| panic!("a resource of server-everything: {resources}"))
        .to_string();
    let subscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe", "params": {"uri": uri}});
    let said = answered(&post(&at_a, &alice, Some(&session), &subscribe).await.text().await.unwrap());
    assert!(said.get("result").is_some(), "{said}");
    let memory = pg.sql("sb", &format!("SELECT memory FROM switchboard_sessions WHERE id = '{session}'"));
    assert!(memory.contains("\"tools\"") && memory.contains(&uri), "kept in the store: {memory}");
    // The client's stream at A, and the id of its last event: an update of that resource
    // (server-everything sends one at once when its updates are turned on).
    let stream_at = |url: &str, last: Option<&str>| {
        let mut r = reqwest::Client::new()
            .get(url)
            .bearer_auth(&alice)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session);
        if let Some(last) = last {
            r = r.header("last-event-id", last);
        }
        r.send()
    };
    let stream = stream_at(&at_a, None).await.unwrap();
    assert_eq!(stream.status(), 200);
    let toggle = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                        "params": {"name": "ev__toggle-subscriber-updates", "arguments": {}}});
    let said = answered(&post(&at_a, &alice, Some(&session), &toggle).await.text().await.unwrap());
    assert!(said.get("result").is_some(), "{said}");
    let watched = uri.clone();
    let last = tokio::time::timeout(
        Duration::from_secs(15),
        event_id(stream, |m| {
            m["method"] == "notifications/resources/updated" && m["params"]["uri"] == watched.as_str()
        }),
    )
    .await
    .expect("an update at A");
    assert!(!last.is_empty(), "the update's event has an id");

    // A dies; a tool is taken away while the client is away (B reads the config again).
    drop(a);
    home.edit(|c| c["servers"]["ev"]["tools"] = json!({"deny": ["echo"]}));
    let other = post(&at_b, &alice, None, &init).await;
    let other_session = other.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = other.text().await;
    let started = std::time::Instant::now();
    loop {
        let listed =
            answered(&post(&at_b, &alice, Some(&other_session), &list(2, "tools/list")).await.text().await.unwrap());
        let names = listed["result"]["tools"].to_string();
        if names.contains("ev__") && !names.contains("\"ev__echo\"") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "B did not read the config again: {names}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A request of the session at B: B takes it over and catches up (telling the tools
    // changed, before the client listens again); then the client's stream, asked for again with
    // A's last event id; then B's server-everything's updates turned on.
    let said = answered(&post(&at_b, &alice, Some(&session), &list(8, "prompts/list")).await.text().await.unwrap());
    assert!(said.get("result").is_some(), "{said}");
    let stream = stream_at(&at_b, Some(&last)).await.unwrap();
    assert_eq!(stream.status(), 200, "{:?}", stream.text().await);
    let said = answered(&post(&at_b, &alice, Some(&session), &toggle).await.text().await.unwrap());
    assert!(said.get("result").is_some(), "{said}");
    let mut heard: Vec<String> = Vec::new();
    let watched = uri.clone();
    let _ = tokio::time::timeout(
        Duration::from_secs(15),
        events(stream, async |message| {
            let method = message["method"].as_str().unwrap_or_default().to_string();
            let updated = method == "notifications/resources/updated" && message["params"]["uri"] == watched.as_str();
            heard.push(method);
            !updated
        }),
    )
    .await;
    assert!(heard.iter().any(|m| m == "notifications/tools/list_changed"), "told the tools changed: {heard:?}");
    assert!(!heard.iter().any(|m| m == "notifications/prompts/list_changed"), "the prompts did not: {heard:?}");
    assert!(!heard.iter().any(|m| m == "notifications/resources/list_changed"), "nor the resources: {heard:?}");
    assert!(
        heard.iter().any(|m| m == "notifications/resources/updated"),
        "its subscription was made again at B: {heard:?}"
    );
    let listed = answered(&post(&at_b, &alice, Some(&session), &list(7, "tools/list")).await.text().await.unwrap());
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len).unwrap_or_default(), before - 1, "{listed}");
}

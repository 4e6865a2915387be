//! A team's `serve` as replicas on one PostgreSQL store behind HAProxy (round robin, no
//! affinity): its dashboard is one, whichever replica a request reaches.
//!
//! - People sign in with the organisation's provider (`oidc-provider`): a sign-in begun at one
//!   replica finishes at the other (the PKCE verifier kept sealed in the store), the session it
//!   gives is known to both (by the cookie's SHA-256), and the dashboard's client registered at
//!   the provider by the first replica is the one the other uses.
//! - A call that waits for approval at one replica is shown at the other (its events, its
//!   `GET /api/approvals`), answered there, and the answer reaches the call (one of the API, one
//!   of an agent at `/mcp` whose client cannot be asked); ids are unique across replicas; an
//!   answer for a call whose replica was killed says so; nothing of either replica is left.
//! - The host's dashboard session, given by one replica, is taken by the other.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::oidc::Provider;
use switchboard_testkit::postgres::Postgres;

/// Follows `base`'s events with the host's token: each `approval_*` event's data.
fn follow(base: &str, token: &str) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    use std::io::{BufRead, BufReader};
    let client = reqwest::blocking::Client::builder().timeout(None).build().unwrap();
    let events = client.get(format!("{base}/api/events")).bearer_auth(token).send().unwrap();
    assert!(events.status().is_success(), "{}", events.status());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(events).lines() {
            let Ok(line) = line else { return };
            let Some(data) = line.strip_prefix("data:") else { continue };
            let Ok(event) = serde_json::from_str::<Value>(data.trim()) else { continue };
            if event["type"].as_str().is_some_and(|t| t.starts_with("approval_")) && tx.send(event).is_err() {
                return;
            }
        }
    });
    rx
}

async fn next(events: &mut tokio::sync::mpsc::UnboundedReceiver<Value>, kind: &str) -> Value {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap_or_else(|_| panic!("no {kind} event"))
            .unwrap();
        if event["type"] == kind {
            return event;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teams_dashboard_is_one_across_replicas_behind_haproxy() {
    let pg = tokio::task::spawn_blocking(Postgres::start);
    let org = tokio::task::spawn_blocking(Provider::start);
    let (pg, org) = (pg.await.unwrap(), org.await.unwrap());
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", switchboard_testkit::free_port())).collect();
    let proxy = HaProxy::start(&addrs);
    let public = proxy.url();
    let home = Home::team_on_store(&org.issuer, &pg.database("sb"), json!({"resource": format!("{public}/mcp")}));
    home.edit(|config| {
        config["policy"] = json!({"ask": ["mcp__fx__echo"]});
        // Each person's own (so that each one who reaches `/mcp` is among the people).
        config["servers"]["mine"] = json!({"command": switchboard_testkit::fixture(),
            "args": ["--name", "mine", "--marker", home.marker], "sharing": "per_principal"});
    });
    let name = public.trim_start_matches("http://").to_string();
    let replica = |addr: &str| {
        let port = addr.rsplit(':').next().unwrap();
        common::served(home.switchboard(&["serve", "--port", port, "--host", &name, "--public-url", &public]))
    };
    // One after the other: the first makes the token file both use.
    let mut replicas: Vec<_> = addrs.iter().map(|a| replica(a)).collect();
    let (a, b) = (replicas[0].1.clone(), replicas[1].1.clone());
    proxy.wait_up(2, Duration::from_secs(30));

    // Alice's sign-in begins at A and ends at B; her session is known at A, B and through the
    // balancer. Bob's begins at B and ends at A, with the client A registered.
    let sign_in = |start: &str, finish: &str, login: &str| {
        let mut c = std::process::Command::new(switchboard_testkit::node22_bin().join("node"));
        c.arg(common::script("dashboard_replicas.mjs")).args([&public, start, finish, login, &a, &b, &public]);
        c
    };
    let mut people = std::collections::BTreeMap::new();
    for (start, finish, login) in [(&a, &b, "alice"), (&b, &a, "bob")] {
        let c = sign_in(start, finish, login);
        let r = tokio::task::spawn_blocking(move || common::report(c)).await.unwrap();
        assert_eq!(r["callback"]["status"], 303, "{login}'s sign-in finished at the other replica: {r}");
        for me in r["me"].as_array().unwrap() {
            assert_eq!(me["status"], 200, "{login}'s session at {}: {r}", me["at"]);
            assert_eq!(me["body"]["kind"], "person", "{r}");
            assert_eq!(me["body"]["principal"]["subject"], login, "{r}");
        }
        let key = r["me"][0]["body"]["key"].as_str().unwrap().to_string();
        people.insert(login, (format!("switchboard_person={}", r["session"].as_str().unwrap()), key));
    }
    // Each one's part is theirs, at each replica and through the balancer (neither is an
    // admin): the people are themselves alone, the other's calls and the logout of the other's
    // server are 403, and the host's routes (approvals, servers) are not theirs.
    let browser = reqwest::Client::new();
    // Both have been at `/mcp` as themselves (so both are among the people).
    for login in ["alice", "bob"] {
        let token = common::person_token(&org.issuer, login, &format!("{public}/mcp")).await;
        let listed = common::modern(&format!("{public}/mcp"), &token, "tools/list", json!({})).await;
        assert!(listed["result"]["tools"].is_array(), "{login}: {listed}");
    }
    for (me, other) in [("alice", "bob"), ("bob", "alice")] {
        let (cookie, _) = &people[me];
        let (_, theirs) = &people[other];
        for at in [&a, &b, &public] {
            let get = |path: &str| browser.get(format!("{at}{path}")).header("cookie", cookie).send();
            let r = get("/api/people").await.unwrap();
            assert_eq!(r.status(), 200, "{me} at {at}");
            let listed: Value = r.json().await.unwrap();
            let subjects: Vec<&Value> =
                listed["people"].as_array().unwrap().iter().map(|p| &p["principal"]["subject"]).collect();
            assert_eq!(subjects, [me], "{me} sees themselves alone at {at}: {listed}");
            let r = get(&format!("/api/audit?principal={other}")).await.unwrap();
            assert_eq!(r.status(), 403, "{me} reading {other}'s calls at {at}");
            let r = browser
                .delete(format!("{at}/api/people/{theirs}/servers/fx/auth"))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 403, "{me} logging {other} out at {at}");
            for host_only in ["/api/approvals", "/api/servers"] {
                let r = get(host_only).await.unwrap();
                assert!(matches!(r.status().as_u16(), 401 | 403), "{me} at {at}{host_only}: {}", r.status());
            }
        }
    }
    let rows = |sql: &str| pg.sql("sb", sql).trim().to_string();
    assert_eq!(rows("SELECT COUNT(*) FROM switchboard_dashboard_sessions"), "2");
    assert_eq!(rows("SELECT COUNT(*) FROM switchboard_sign_ins"), "0", "each sign-in taken once");
    assert_eq!(rows("SELECT COUNT(*) FROM switchboard_documents WHERE name = 'dashboard_client'"), "1");
    // Neither a verifier nor a cookie's value in the clear.
    let kept = rows("SELECT string_agg(digest, ',') FROM switchboard_dashboard_sessions");
    assert!(kept.split(',').all(|d| d.len() == 64), "{kept}");

    // Approvals. Nobody follows either replica's events: a call at B is denied at once.
    let token = home.token();
    let http = reqwest::Client::new();
    let call = |at: &str, text: &str| {
        let request = http
            .post(format!("{at}/api/tools/mcp__fx__echo/call"))
            .bearer_auth(&token)
            .json(&json!({"arguments": {"text": text}}));
        tokio::spawn(async move {
            match request.send().await {
                Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap_or_default()),
                // The replica was killed under it.
                Err(e) => (0, json!({"error": e.to_string()})),
            }
        })
    };
    let (status, body) = call(&b, "nobody").await.unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("nobody follows"), "{body}");

    // The dashboard is open at A only; B learns it through the store (said within a second or
    // two), then a call at B waits and A shows it.
    let mut at_a = {
        let (a, token) = (a.clone(), token.clone());
        tokio::task::spawn_blocking(move || follow(&a, &token)).await.unwrap()
    };
    let started = std::time::Instant::now();
    while rows("SELECT COUNT(*) FROM switchboard_watchers WHERE watchers > 0") != "1" {
        assert!(started.elapsed() < Duration::from_secs(10), "A never said its dashboard is open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let asked = call(&b, "hi sekrit-argument");
    let pending = next(&mut at_a, "approval_requested").await;
    assert_eq!(pending["request"]["arguments"], json!({"text": "hi sekrit-argument"}), "{pending}");
    let id = pending["id"].as_u64().unwrap();
    // Kept sealed in the store while it waits: the arguments may hold secrets.
    let kept = rows("SELECT string_agg(sealed, ',') FROM switchboard_approvals");
    assert!(kept.starts_with("sb1:") && !kept.contains("sekrit"), "{kept}");
    let listed = |at: &str| {
        let request = http.get(format!("{at}/api/approvals")).bearer_auth(&token);
        async move {
            let r: Value = request.send().await.unwrap().json().await.unwrap();
            r["approvals"].as_array().unwrap().iter().filter_map(|p| p["id"].as_u64()).collect::<Vec<_>>()
        }
    };
    assert_eq!(listed(&a).await, [id], "A lists B's call");
    assert_eq!(listed(&b).await, [id], "B lists its own");
    let decide = |at: &str, id: u64, decision: &str| {
        let request =
            http.post(format!("{at}/api/approvals/{id}")).bearer_auth(&token).json(&json!({"decision": decision}));
        async move {
            let r = request.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or_default())
        }
    };
    let answering = std::time::Instant::now();
    assert_eq!(decide(&a, id, "allow_once").await.0, 204, "answered at A");
    // Told to B over the store and taken there before A answers: a measure, not a bound.
    println!("an answer at A for B's call, taken at B: {:?}", answering.elapsed());
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, 200, "the call at B went on: {body}");
    assert_eq!(body["model"]["blocks"][0]["text"], "hi sekrit-argument", "{body}");
    let settled = next(&mut at_a, "approval_settled").await;
    assert_eq!(settled, json!({"type": "approval_settled", "id": id, "decision": "allow_once"}));
    let (status, body) = decide(&a, id, "deny").await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("unknown_approval")), "decided already: {body}");
    assert!(listed(&a).await.is_empty() && listed(&b).await.is_empty());

    // Denied through the balancer (whichever replica it reaches); a call at A gets an id of its
    // own; one withdrawn at B leaves A's dashboard.
    let asked = call(&b, "no");
    let second = next(&mut at_a, "approval_requested").await["id"].as_u64().unwrap();
    assert_eq!(decide(&public, second, "deny").await.0, 204);
    let (status, body) = asked.await.unwrap();
    assert_eq!((status, &body["error"]["code"]), (403, &json!("denied")), "{body}");
    let asked = call(&a, "here");
    let third = next(&mut at_a, "approval_requested").await["id"].as_u64().unwrap();
    assert!(second != id && third != id && third != second, "{id} {second} {third}");
    assert_eq!(decide(&b, third, "allow_once").await.0, 204, "A's call answered at B");
    assert_eq!(asked.await.unwrap().0, 200);
    // An agent at B's `/mcp` whose client cannot be asked itself (no elicitation): the
    // dashboard at A answers for it.
    let bot = home.api_key("bot");
    let at_b = format!("{b}/mcp");
    let r = common::post_mcp(&at_b, Some(&bot), None, &common::initialize()).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = common::post_mcp(&at_b, Some(&bot), Some(&session), &initialized).await;
    let agent_call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "fx__echo", "arguments": {"text": "from an agent"}}});
    let agent = {
        let (at_b, bot, session) = (at_b.clone(), bot.clone(), session.clone());
        tokio::spawn(async move {
            common::answered(
                &common::post_mcp(&at_b, Some(&bot), Some(&session), &agent_call).await.text().await.unwrap(),
            )
        })
    };
    let pending = next(&mut at_a, "approval_requested").await;
    assert_eq!(pending["request"]["arguments"], json!({"text": "from an agent"}), "{pending}");
    assert_eq!(decide(&a, pending["id"].as_u64().unwrap(), "allow_once").await.0, 204);
    let said = agent.await.unwrap();
    assert_eq!(said["result"]["content"][0]["text"], "from an agent", "{said}");

    let asked = call(&b, "gone");
    let fourth = next(&mut at_a, "approval_requested").await["id"].as_u64().unwrap();
    asked.abort();
    loop {
        let settled = next(&mut at_a, "approval_settled").await;
        if settled["id"] == fourth {
            assert_eq!(settled["decision"], "withdrawn", "{settled}");
            break;
        }
    }

    // The host's dashboard session, given by A's login link, is taken by B and through the
    // balancer (both hold the same token), from a page of theirs.
    let link: Value =
        http.post(format!("{a}/api/login-links")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let login_url = link["login_url"].as_str().unwrap();
    assert!(login_url.starts_with(&format!("{public}/login?code=")), "the public address: {link}");
    // Made at A, kept in the store (by its digest), taken through the balancer, once.
    let code = login_url.rsplit('=').next().unwrap();
    assert_eq!(rows(&format!("SELECT COUNT(*) FROM switchboard_login_links WHERE digest LIKE '%{code}%'")), "0");
    assert_eq!(rows("SELECT COUNT(*) FROM switchboard_login_links"), "1");
    let r = browser.get(login_url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
    for at in [&a, &b] {
        let again = browser.get(login_url.replace(&public, at)).send().await.unwrap();
        assert_ne!(again.status().as_u16(), 303, "a link works once, at {at} too");
    }
    assert_eq!(rows("SELECT COUNT(*) FROM switchboard_login_links"), "0");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    for at in [&a, &b, &public] {
        let r = browser.get(format!("{at}/api/approvals")).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "the host's session at {at}");
    }

    // The replica holding a call is killed: an answer elsewhere says it was not taken.
    let _asked = call(&b, "killed");
    let fifth = next(&mut at_a, "approval_requested").await["id"].as_u64().unwrap();
    let _ = replicas[1].0.kill();
    let _ = replicas[1].0.wait();
    let (status, body) = decide(&a, fifth, "allow_once").await;
    assert_eq!((status, &body["error"]["code"]), (504, &json!("not_taken")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("did not take the answer"), "{body}");
    drop(replicas);
    // Nothing of either replica is left, B's servers included (B was SIGKILLed): through /proc.
    let left = switchboard_testkit::wait_gone(&home.marker, Duration::from_secs(15));
    assert!(left.is_empty(), "left after the replicas ended: {left:?}");
}

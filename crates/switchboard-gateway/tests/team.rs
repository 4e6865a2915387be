//! Each person's own upstream credentials. A team's gateway (callers sign in through the
//! organisation's OpenID provider) in front of an upstream protected by a second, separate
//! authorization server (`whoami_upstream.mjs`: the TypeScript SDK server with its bearer
//! middleware, tokens checked with `jose`; its tool says whose token each request carried).
//! The upstream is `sharing: per_principal` by default (a remote server in a team), so the
//! gateway makes no connection of its own: Alice and Bob each get asked, by URL-mode
//! elicitation, to sign in to it as themselves; their browsers come back to the gateway; then
//! 1,000 calls from both at once each reach the upstream with their own caller's token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::Home;
use common::upstream::Upstream;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard::auth::TokenStore;
use switchboard::store::db::Database;
use switchboard::store::seal::KeyRing;
use switchboard_testkit::oidc::Provider;
use switchboard_testkit::postgres::Postgres;

/// The SDK client of `login`, signed in to the gateway at `url`, making `calls` calls.
fn person(url: &str, login: &str, calls: usize) -> Command {
    let mut c = Command::new(switchboard_testkit::node22_bin().join("node"));
    c.arg(common::script("team_client.mjs"))
        .arg(switchboard_testkit::node_peers())
        .arg(url)
        .arg(login)
        .arg(calls.to_string());
    c
}

/// The JSON-RPC answer in a response body (JSON, or the first event of a stream).
fn answer(said: &str) -> Value {
    said.lines()
        .find_map(|l| l.strip_prefix("data: ").and_then(|d| serde_json::from_str(d).ok()))
        .or_else(|| serde_json::from_str(said).ok())
        .unwrap_or_else(|| panic!("{said}"))
}

/// Two people's client scripts run at once: their reports.
async fn both(alice: Command, bob: Command) -> (Value, Value) {
    let (alice, bob) = tokio::join!(
        tokio::task::spawn_blocking(move || common::report(alice)),
        tokio::task::spawn_blocking(move || common::report(bob))
    );
    (alice.unwrap(), bob.unwrap())
}

fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Every string in a JSON document, at any depth.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The organisation's provider, the upstream's own, the upstream (`up`, each person's own by
/// default), and a home whose callers sign in with the organisation's.
struct Team {
    org: Provider,
    theirs: Provider,
    upstream: Upstream,
    home: Home,
}

async fn team() -> Team {
    let (org, theirs) =
        tokio::join!(tokio::task::spawn_blocking(Provider::start), tokio::task::spawn_blocking(Provider::start));
    let (org, theirs) = (org.unwrap(), theirs.unwrap());
    let upstream = Upstream::start(&theirs.issuer);
    let home = Home::new(false);
    home.edit(|config| {
        config["identity"] = json!({"issuers": [org.issuer], "scopes": ["mcp"]});
        config["servers"]["up"] = json!({"url": upstream.url});
    });
    Team { org, theirs, upstream, home }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_signs_in_to_their_own_upstream_and_no_call_carries_anothers_token() {
    signing_in(None).await;
}

/// The same with a team's store on PostgreSQL: nothing in the data folder, no token in the
/// clear in any row, each row opening as its own person's, and every login kept across a
/// restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_signs_in_with_the_team_store_on_postgres() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    signing_in(Some((&pg, url))).await;
}

async fn signing_in(store: Option<(&Postgres, String)>) {
    let Team { org, theirs, upstream, home } = team().await;
    let keys = store.as_ref().map(|(_, db)| home.use_store(db)).unwrap_or_default();
    let (gateway, url) = common::http_gateway(&home, &[]);
    let origin = url.trim_end_matches("/mcp").to_string();

    // Alice and Bob at once, 500 calls each, 25 in flight each.
    let (alice, bob) = (person(&url, "alice", 500), person(&url, "bob", 500));
    let (alice, bob) = both(alice, bob).await;
    let mut seen = BTreeMap::new();
    for (login, r) in [("alice", &alice), ("bob", &bob)] {
        assert_eq!(r["claims"]["sub"], login, "signed in to the gateway as themselves: {r}");
        // Asked once, by URL-mode elicitation, to sign in to the upstream's own provider,
        // coming back to the gateway; told when it was done.
        let asked = r["elicited"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{r}");
        assert_eq!(asked[0]["mode"], "url", "{r}");
        // The gateway's own page, which sent the browser (signed in there as this person) on
        // to the upstream's provider.
        let page = asked[0]["url"].as_str().unwrap();
        assert!(page.starts_with(&format!("{origin}/sign-in?state=")), "the gateway's sign-in page: {r}");
        let at = reqwest::Url::parse(r["browser"][0]["authorization"].as_str().unwrap()).unwrap();
        assert!(at.as_str().starts_with(&theirs.issuer), "the upstream's provider, not the organisation's: {r}");
        let query: BTreeMap<_, _> = at.query_pairs().into_owned().collect();
        assert_eq!(query.get("redirect_uri"), Some(&format!("{origin}/oauth/callback")), "{r}");
        assert_eq!(query.get("resource"), Some(&upstream.url), "{r}");
        assert_eq!(r["browser"][0]["status"], 200, "the gateway finished the sign-in: {r}");
        assert_eq!(r["completed"], json!([asked[0]["elicitationId"]]), "{r}");
        // Every call reached the upstream with this person's token, and only theirs.
        assert_eq!(r["whoami"]["errors"], json!([]), "{r}");
        assert_eq!(r["whoami"]["subs"], json!({login: 500}), "{r}");
        let digests: Vec<String> = r["whoami"]["digests"].as_object().unwrap().keys().cloned().collect();
        assert!(!digests.contains(&r["token"].as_str().unwrap().to_string()), "the gateway's token went upstream: {r}");
        seen.insert(login, digests);
    }
    assert!(seen["alice"].iter().all(|d| !seen["bob"].contains(d)), "a token served both: {seen:?}");
    // What it took (`-- --nocapture`): both people's calls ran at once.
    eprintln!(
        "1,000 calls through each person's own login (25 in flight each): alice {} ms, bob {} ms",
        alice["whoami"]["ms"], bob["whoami"]["ms"]
    );

    // Each login is kept as its person's own (in their folder, 0600, or their rows of the
    // team's store), none as the host's.
    let data = switchboard_testkit::data_dir(home.path());
    let host: Value =
        std::fs::read(data.join("auth.json")).map(|b| serde_json::from_slice(&b).unwrap()).unwrap_or_default();
    assert!(!host.to_string().contains(&upstream.url), "the host keeps no login to it: {host}");
    if let Some((pg, db)) = &store {
        kept_in_the_store(pg, db, &keys, &seen).await;
        let files: Vec<_> = std::fs::read_dir(data.join("people"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .map(|f| f.path())
            .collect();
        assert!(files.iter().all(|f| !f.ends_with("auth.json") && !f.ends_with("person.json")), "{files:?}");
    }
    let mut owners = Vec::new();
    let folders =
        if store.is_some() { Vec::new() } else { std::fs::read_dir(data.join("people")).unwrap().flatten().collect() };
    for folder in folders {
        let file = folder.path().join("auth.json");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
        let mut kept = Vec::new();
        strings(&serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap(), &mut kept);
        let kept: Vec<String> = kept.iter().map(|s| digest(s)).collect();
        let whose: Vec<&str> =
            seen.iter().filter(|(_, d)| d.iter().any(|d| kept.contains(d))).map(|(p, _)| *p).collect();
        assert_eq!(whose.len(), 1, "{} holds the token of exactly one person: {whose:?}", file.display());
        owners.push(whose[0]);
    }
    owners.sort();
    assert_eq!(owners, if store.is_some() { vec![] } else { vec!["alice", "bob"] });

    // Someone who has not signed in to it (a service account of the organisation's provider):
    // a call gets -32042 with their own sign-in, never Alice's or Bob's login.
    let robot = common::client_token(&org.token_endpoint(), "robot", &url).await;
    let r = common::post_mcp(&url, Some(&robot), None, &common::initialize()).await;
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).unwrap().to_string();
    let _ = r.text().await;
    let tool = alice["tools"].as_array().unwrap().iter().find(|t| t.as_str().unwrap().ends_with("whoami")).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
    let said = answer(&common::post_mcp(&url, Some(&robot), Some(&session), &call).await.text().await.unwrap());
    assert_eq!(said["error"]["code"], -32042, "{said}");
    let elicitation = &said["error"]["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url", "{said}");
    assert!(elicitation["url"].as_str().unwrap().starts_with(&format!("{origin}/sign-in?state=")), "{said}");
    assert!(said["error"]["message"].as_str().unwrap().contains("sign in"), "{said}");

    // A 2026-07-28 client (stateless: no session to be asked on) of the same person: its list
    // has `sign_in`, which gives the address of their own sign-in.
    let list = common::modern(&url, &robot, "tools/list", json!({})).await;
    let tools: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"sign_in") && !tools.iter().any(|t| t.ends_with("whoami")), "{list}");
    let said = common::modern(&url, &robot, "tools/call", json!({"name": "sign_in", "arguments": {}})).await;
    let text = said["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(&format!("{origin}/sign-in?state=")), "{said}");
    assert!(!alice["tools"].as_array().unwrap().iter().any(|t| t == "sign_in"), "signed in: no sign_in for alice");

    // Step-up: a tool of the upstream needs a scope Alice's login lacks (403
    // `insufficient_scope`): her call gets -32042 with a new sign-in asking for it; once done
    // (she is told), the call goes through with the wider token, hers still.
    let mut stepping = person(&url, "alice", 1);
    stepping.args(["whoami", "whoami_admin"]);
    let stepped = tokio::task::spawn_blocking(move || common::report(stepping)).await.unwrap();
    let step = &stepped["stepUp"];
    assert_eq!(step["first"]["code"], -32042, "{stepped}");
    assert!(step["scope"].as_str().unwrap_or_default().split(' ').any(|s| s == "mcp:admin"), "{stepped}");
    assert_eq!(step["landed"], 200, "{stepped}");
    assert_eq!(step["completed"], true, "{stepped}");
    assert_eq!(step["then"]["sub"], "alice", "{stepped}");
    assert!(step["then"]["scopes"].as_array().unwrap().iter().any(|s| s == "mcp:admin"), "{stepped}");

    // A gateway started again keeps every login: Alice is not asked again.
    drop(gateway);
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let again = tokio::task::spawn_blocking(move || common::report(person(&url, "alice", 3))).await.unwrap();
    assert_eq!(again["elicited"], json!([]), "{again}");
    assert_eq!(again["whoami"]["subs"], json!({"alice": 3}), "{again}");

    // Each person's audit (`switchboard audit --principal`, from the day files or the store):
    // every call of theirs, by them, none of the other's.
    let ok = |subject: &str| {
        let records = home.audit_records_of(&["--principal", subject]);
        assert!(records.iter().all(|r| r["caller"]["principal"]["subject"] == subject), "{records:?}");
        records.iter().filter(|r| r["tool"] == "whoami" && r["outcome"] == "ok").count()
    };
    assert_eq!(ok("bob"), 500);
    assert_eq!(ok("alice"), 500 + 1 + 3, "her calls, the one after the step-up, the three after the restart");
    if let Some((pg, _)) = &store {
        let rows = pg.sql(
            "sb",
            "SELECT subject, COUNT(*) FROM switchboard_audit WHERE record->>'outcome' = 'ok' AND record->>'tool' = 'whoami' GROUP BY 1 ORDER BY 1",
        );
        assert_eq!(rows.lines().collect::<Vec<_>>(), ["alice|504", "bob|500"], "in the store's table");
        let days = std::fs::read_dir(data.join("audit")).into_iter().flatten().flatten();
        assert_eq!(days.filter(|d| d.path().extension().is_some_and(|x| x == "jsonl")).count(), 0);
    }
}

/// The team's store holds Alice's and Bob's logins, each as their own (opened with the key
/// ring, each row's tokens are those one person's calls carried), and no row holds any of their
/// secrets in the clear; the people's records name both.
async fn kept_in_the_store(pg: &Postgres, url: &str, keys: &str, seen: &BTreeMap<&str, Vec<String>>) {
    let table = pg.sql("sb", "SELECT kind, owner, key, label, sealed FROM switchboard_secrets");
    let db = Database::open(url, KeyRing::parse(keys).unwrap()).await.unwrap();
    let owners: Vec<String> = pg
        .sql("sb", "SELECT DISTINCT owner FROM switchboard_secrets ORDER BY owner")
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(owners.len(), 2, "two people's rows, none of the host's: {table}");
    let mut whose_rows = Vec::new();
    for owner in &owners {
        let entries = TokenStore::in_database(db.clone(), owner).entries().await.unwrap();
        let mut kept = Vec::new();
        strings(&serde_json::to_value(&entries).unwrap(), &mut kept);
        for secret in kept.iter().filter(|s| s.len() >= 16) {
            assert!(!table.contains(secret.as_str()), "a secret of {owner}'s in the clear: {table}");
        }
        let kept: Vec<String> = kept.iter().map(|s| digest(s)).collect();
        let whose: Vec<&str> =
            seen.iter().filter(|(_, d)| d.iter().any(|d| kept.contains(d))).map(|(p, _)| *p).collect();
        assert_eq!(whose.len(), 1, "{owner}'s rows hold the token of exactly one person: {whose:?}");
        whose_rows.push(whose[0]);
    }
    whose_rows.sort();
    assert_eq!(whose_rows, ["alice", "bob"]);
    let people = pg.sql("sb", "SELECT principal->>'subject' FROM switchboard_people ORDER BY 1");
    assert_eq!(people.lines().collect::<Vec<_>>(), ["alice", "bob"], "{people}");
    db.close().await;
}

/// `MY_TOKEN` in a process's environment (`/proc/<pid>/environ`).
fn token_of(pid: i32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"MY_TOKEN="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// A local server each person gets their own of (`sharing: per_principal`), whose config takes
/// a value only the person has (`${input:my_token}` in its env): Alice and Bob are each sent
/// to the gateway's own page for it (URL-mode elicitation), give theirs, and each gets a
/// process of their own (`@modelcontextprotocol/server-everything`) started with their value
/// and no one else's (read back through `/proc`); the host starts none, keeps no value, and
/// the processes stop when idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_gets_their_own_local_server_started_with_their_own_values() {
    own_values(None).await;
}

/// The same with a team's store on PostgreSQL: each person's values sealed in its rows, none
/// in the data folder, and kept across a restart of the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_persons_own_values_are_kept_in_the_team_store_on_postgres() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    own_values(Some((&pg, url))).await;
}

async fn own_values(store: Option<(&Postgres, String)>) {
    let org = tokio::task::spawn_blocking(Provider::start).await.unwrap();
    let marker = switchboard_testkit::unique_marker("per-person");
    let home = Home::new(false);
    let keys = store.as_ref().map(|(_, db)| home.use_store(db)).unwrap_or_default();
    home.edit(|config| {
        config["identity"] = json!({"issuers": [org.issuer], "scopes": ["mcp"]});
        config["inputs"] =
            json!([{"type": "promptString", "id": "my_token", "description": "Your token", "password": true}]);
        config["servers"]["mine"] = json!({
            "command": switchboard_testkit::node22_bin().join("node"),
            "args": [switchboard_testkit::node_peer("server-everything"), "stdio", marker],
            "env": {"MY_TOKEN": "${input:my_token}"},
            "sharing": "per_principal",
            "idle_shutdown_ms": 1500,
        });
    });
    // Through `serve` (its `/mcp` is the gateway; its API lists the people).
    let (serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let url = format!("{base}/mcp");
    let (mut alice, mut bob) = (person(&url, "alice", 20), person(&url, "bob", 20));
    alice.arg("get-env");
    bob.arg("get-env");
    let (alice, bob) = both(alice, bob).await;
    for (login, r) in [("alice", &alice), ("bob", &bob)] {
        let asked = r["elicited"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{r}");
        let at = asked[0]["url"].as_str().unwrap();
        assert!(
            at.starts_with(&format!("{}/inputs?state=", url.trim_end_matches("/mcp"))),
            "the gateway's own page: {r}"
        );
        assert!(!asked[0]["message"].as_str().unwrap().contains("token"), "no value in the message: {r}");
        assert_eq!(r["browser"][0]["status"], 200, "{r}");
        assert_eq!(r["completed"], json!([asked[0]["elicitationId"]]), "{r}");
        assert_eq!(r["whoami"]["errors"], json!([]), "{r}");
        let texts = r["whoami"]["texts"].as_object().unwrap();
        assert_eq!(texts.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 20, "{r}");
        // The server's own secret is redacted in what it returns (policy.secrets: redact).
        assert!(texts.keys().all(|t| !t.contains(&format!("{login}-token"))), "{r}");
    }
    // Two processes, each with its person's value and no other.
    let pids = switchboard_testkit::pids_with_arg(&marker);
    let mut tokens: Vec<String> = pids.iter().filter_map(|p| token_of(*p)).collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens, ["alice-token", "bob-token"], "{pids:?}");
    // Kept per person, 0600; the host's file has none.
    let data = switchboard_testkit::data_dir(home.path());
    let host = std::fs::read_to_string(data.join("inputs.json")).unwrap_or_default();
    assert!(!host.contains("-token"), "{host}");
    let mut kept = Vec::new();
    for folder in std::fs::read_dir(data.join("people")).unwrap().flatten() {
        let file = folder.path().join("inputs.json");
        if store.is_some() {
            assert!(!file.exists(), "{} with a team's store", file.display());
            continue;
        }
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{}", file.display());
        kept.push(std::fs::read_to_string(&file).unwrap());
    }
    if let Some((pg, db)) = &store {
        // Sealed in the store, one person's each.
        let table = pg.sql("sb", "SELECT kind, owner, key, label, sealed FROM switchboard_secrets");
        assert!(!table.contains("-token"), "a value in the clear: {table}");
        let db = Database::open(db, KeyRing::parse(&keys).unwrap()).await.unwrap();
        for owner in pg.sql("sb", "SELECT DISTINCT owner FROM switchboard_secrets WHERE kind = 'input'").lines() {
            kept.push(serde_json::to_string(&db.input_values(owner)).unwrap());
        }
        db.close().await;
    }
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|k| k.contains("alice-token") != k.contains("bob-token")), "{kept:?}");
    let people = |base: String, token: String| async move {
        let r = reqwest::Client::new().get(format!("{base}/api/people")).bearer_auth(token).send().await.unwrap();
        r.json::<Value>().await.unwrap()
    };
    // Their hubs hold their own server alone (the shared `fx` is the host's), before and
    // after their values were given (which loads their config again).
    let listed = people(base.clone(), home.token()).await;
    for p in listed["people"].as_array().unwrap() {
        let names: Vec<&str> = p["servers"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
        assert_eq!(names, ["mine"], "{listed}");
    }
    // Each person's calls through the API (`/api/audit?principal=`, from the day files or the
    // store: written within 100 ms), the same the command line reads.
    for login in ["alice", "bob"] {
        let started = std::time::Instant::now();
        let read = loop {
            let r = reqwest::Client::new()
                .get(format!("{base}/api/audit?principal={login}"))
                .bearer_auth(home.token())
                .send()
                .await
                .unwrap();
            let read: Value = r.json().await.unwrap();
            if read["calls"].as_array().is_some_and(|c| c.len() >= 20) || started.elapsed().as_secs() > 10 {
                break read;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        let calls = read["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 20, "{read}");
        assert!(calls.iter().all(|c| c["caller"]["principal"]["subject"] == login && c["tool"] == "get-env"), "{read}");
        assert_eq!(home.audit_records_of(&["--principal", login]), *calls);
    }
    // Unused past its idle time, each person's process stops, then their hub is ended too
    // (their values stay in their folder).
    let left = switchboard_testkit::wait_gone(&marker, std::time::Duration::from_secs(15));
    assert!(left.is_empty(), "still running: {left:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let listed = loop {
        let listed = people(base.clone(), home.token()).await;
        let active = listed["people"].as_array().unwrap().iter().filter(|p| p["active"] == true).count();
        if active == 0 || std::time::Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let everyone = listed["people"].as_array().unwrap();
    assert!(everyone.len() == 2 && everyone.iter().all(|p| p["active"] == false), "{listed}");

    // Alice again: her values were kept (she is not asked), her process starts with them; then
    // the host is killed (SIGKILL) and her process goes with it.
    let mut again = person(&url, "alice", 2);
    again.arg("get-env");
    let again = tokio::task::spawn_blocking(move || common::report(again)).await.unwrap();
    assert_eq!(again["elicited"], json!([]), "{again}");
    let pids = switchboard_testkit::pids_with_arg(&marker);
    assert_eq!(pids.iter().filter_map(|p| token_of(*p)).collect::<Vec<_>>(), ["alice-token"], "{pids:?}");
    drop(serve);
    let left = switchboard_testkit::wait_gone(&marker, std::time::Duration::from_secs(10));
    assert!(left.is_empty(), "outlived its host: {left:?}");

    // A host started again: Bob's values were kept (he is not asked either).
    let (_serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let mut again = person(&format!("{base}/mcp"), "bob", 2);
    again.arg("get-env");
    let again = tokio::task::spawn_blocking(move || common::report(again)).await.unwrap();
    assert_eq!(again["elicited"], json!([]), "{again}");
    let pids = switchboard_testkit::pids_with_arg(&marker);
    assert_eq!(pids.iter().filter_map(|p| token_of(*p)).collect::<Vec<_>>(), ["bob-token"], "{pids:?}");
}

/// An upstream whose authorization server accepts the organisation's tokens in exchange
/// (`oauth.grant: token_exchange`, RFC 8693; the upstream's provider trusts the organisation's):
/// no one signs in to it; each caller's own token is exchanged, once per person however many
/// calls arrive at once (one exchange in flight per person and upstream, the result kept until
/// it expires), and each call reaches the upstream with the token of its caller's exchange,
/// never with the caller's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_callers_own_token_is_exchanged_once_and_never_forwarded() {
    let org = tokio::task::spawn_blocking(Provider::start).await.unwrap();
    let issuer = org.issuer.clone();
    let theirs = tokio::task::spawn_blocking(move || Provider::exchanging_from(&issuer)).await.unwrap();
    let upstream = Upstream::start(&theirs.issuer);
    let home = Home::new(false);
    home.edit(|config| {
        config["identity"] = json!({"issuers": [org.issuer], "scopes": ["mcp"]});
        config["servers"]["up"] = json!({"url": upstream.url,
            "oauth": {"grant": "token_exchange", "client_id": "exchanger", "client_secret": "exchanger-secret"}});
    });
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let (alice, bob) = (person(&url, "alice", 200), person(&url, "bob", 200));
    let (alice, bob) = both(alice, bob).await;
    let mut seen = BTreeMap::new();
    for (login, r) in [("alice", &alice), ("bob", &bob)] {
        assert_eq!(r["elicited"], json!([]), "nothing to sign in to: {r}");
        assert_eq!(r["whoami"]["errors"], json!([]), "{r}");
        assert_eq!(r["whoami"]["subs"], json!({login: 200}), "{r}");
        let digests: Vec<String> = r["whoami"]["digests"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(digests.len(), 1, "one exchanged token served all of {login}'s calls: {r}");
        assert_ne!(digests[0], r["token"].as_str().unwrap(), "the caller's own token went upstream: {r}");
        seen.insert(login, digests[0].clone());
    }
    assert_ne!(seen["alice"], seen["bob"]);
    let counted: Value = reqwest::get(format!("{}/test/exchanges", theirs.issuer)).await.unwrap().json().await.unwrap();
    assert_eq!(counted, json!({"alice": 1, "bob": 1}), "one exchange per person");
}

/// `serve` of a team: Bob signs in to its `/mcp`, then to his own upstream through serve's own
/// callback; the API (the host's token) lists the people who signed in, with their servers and
/// their logins to them (server, scopes), and never a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_signs_people_in_to_their_own_upstreams_and_lists_them_without_tokens() {
    let Team { org, theirs: _theirs, upstream: _upstream, home } = team().await;
    home.edit(|config| config["identity"]["admin_groups"] = json!(["admins"]));
    let (_serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let url = format!("{base}/mcp");
    let mut bob = person(&url, "bob", 5);
    let bob_token = home.path().join("bob.token");
    bob.env("TEAM_CLIENT_TOKEN_FILE", &bob_token);
    let bob = tokio::task::spawn_blocking(move || common::report(bob)).await.unwrap();
    assert_eq!(bob["browser"][0]["status"], 200, "serve's own callback finished it: {bob}");
    assert_eq!(bob["whoami"]["subs"], json!({"bob": 5}), "{bob}");
    let http = reqwest::Client::new();
    let api = |request: reqwest::RequestBuilder| async {
        request.bearer_auth(home.token()).send().await.unwrap().text().await.unwrap()
    };
    let people = api(http.get(format!("{base}/api/people"))).await;
    let listed: Value = serde_json::from_str(&people).unwrap();
    let everyone = listed["people"].as_array().unwrap();
    assert_eq!(everyone.len(), 1, "{listed}");
    let entry = &everyone[0];
    assert_eq!(entry["principal"]["subject"], "bob", "{listed}");
    assert_eq!(entry["active"], true, "{listed}");
    assert_eq!(entry["servers"].as_array().map(Vec::len), Some(1), "their own server alone: {listed}");
    assert_eq!(entry["servers"][0]["name"], "up", "{listed}");
    assert_eq!(entry["servers"][0]["status"]["state"], "connected", "{listed}");
    assert_eq!(entry["logins"][0]["servers"], json!(["up"]), "{listed}");
    assert_eq!(entry["logins"][0]["logged_in"], true, "{listed}");
    // No token: no JWT (`eyJ…`) and none of the token's words.
    assert!(
        !people.contains("eyJ") && !people.contains("access_token") && !people.contains("refresh_token"),
        "{people}"
    );

    // Bob logged out of `up` by the host: his next session is asked to sign in again.
    let key = entry["key"].as_str().unwrap();
    let out: Value =
        serde_json::from_str(&api(http.delete(format!("{base}/api/people/{key}/servers/up/auth"))).await).unwrap();
    assert_eq!(out["had_tokens"], true, "{out}");
    let url = format!("{base}/mcp");
    let again = tokio::task::spawn_blocking(move || common::report(person(&url, "bob", 2))).await.unwrap();
    assert_eq!(again["elicited"].as_array().map(Vec::len), Some(1), "{again}");
    assert_eq!(again["whoami"]["subs"], json!({"bob": 2}), "{again}");

    // Each person's own part of the API, with the token their MCP client signed in with: Bob
    // is in an admin group (`identity.admin_groups`) and sees everyone; Alice sees herself.
    let url = format!("{base}/mcp");
    let mut alice = person(&url, "alice", 3);
    let alice_token = home.path().join("alice.token");
    alice.env("TEAM_CLIENT_TOKEN_FILE", &alice_token);
    let alice = tokio::task::spawn_blocking(move || common::report(alice)).await.unwrap();
    assert_eq!(alice["whoami"]["subs"], json!({"alice": 3}), "{alice}");
    let (alice_token, bob_token) =
        (std::fs::read_to_string(&alice_token).unwrap(), std::fs::read_to_string(&bob_token).unwrap());
    let as_person = |token: &str, request: reqwest::RequestBuilder| {
        let request = request.bearer_auth(token);
        async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            let challenge = r.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_string());
            (status, serde_json::from_str::<Value>(&r.text().await.unwrap()).unwrap_or_default(), challenge)
        }
    };
    let (status, me, _) = as_person(&bob_token, http.get(format!("{base}/api/me"))).await;
    assert_eq!((status, &me["kind"], &me["everyone"]), (200, &json!("person"), &json!(true)), "{me}");
    let (_, everyone, _) = as_person(&bob_token, http.get(format!("{base}/api/people"))).await;
    let subjects: Vec<&str> =
        everyone["people"].as_array().unwrap().iter().filter_map(|p| p["principal"]["subject"].as_str()).collect();
    assert_eq!(subjects.len(), 2, "{everyone}");
    let (_, me, _) = as_person(&alice_token, http.get(format!("{base}/api/me"))).await;
    assert_eq!((&me["principal"]["subject"], &me["everyone"]), (&json!("alice"), &json!(false)), "{me}");
    let alice_key = me["key"].as_str().unwrap().to_string();
    let (_, herself, _) = as_person(&alice_token, http.get(format!("{base}/api/people"))).await;
    let listed = herself["people"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{herself}");
    assert_eq!(listed[0]["principal"]["subject"], "alice", "{herself}");
    assert!(!herself.to_string().contains("eyJ"), "{herself}");
    // Her calls, without asking for them by name; Bob's are not hers to see.
    let started = std::time::Instant::now();
    let calls = loop {
        let (_, read, _) = as_person(&alice_token, http.get(format!("{base}/api/audit"))).await;
        let calls = read["calls"].as_array().cloned().unwrap_or_default();
        if calls.len() >= 3 || started.elapsed().as_secs() > 10 {
            break calls;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls.iter().all(|c| c["caller"]["principal"]["subject"] == "alice"), "{calls:?}");
    let (status, said, _) = as_person(&alice_token, http.get(format!("{base}/api/audit?principal=bob"))).await;
    assert_eq!((status, &said["error"]["code"]), (403, &json!("forbidden")), "{said}");
    let (status, read, _) = as_person(&bob_token, http.get(format!("{base}/api/audit?principal=alice"))).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["calls"].as_array().map(Vec::len), Some(3), "an admin sees hers: {read}");
    // Bob's login is not hers to end; her own is.
    let (status, _, _) = as_person(&alice_token, http.delete(format!("{base}/api/people/{key}/servers/up/auth"))).await;
    assert_eq!(status, 403);
    let (status, out, _) =
        as_person(&alice_token, http.delete(format!("{base}/api/people/{alice_key}/servers/up/auth"))).await;
    assert_eq!((status, &out["had_tokens"]), (200, &json!(true)), "{out}");
    // The rest of the API is the host's; a token for another audience is refused with the
    // challenge.
    let (status, _, _) = as_person(&bob_token, http.get(format!("{base}/api/servers"))).await;
    assert_eq!(status, 401, "the host's part, even for an admin");
    let elsewhere = common::client_token(&org.token_endpoint(), "robot", "http://127.0.0.1:9/mcp").await;
    let (status, _, challenge) = as_person(&elsewhere, http.get(format!("{base}/api/me"))).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap_or_default().contains("resource_metadata="), "the challenge");

    // The dashboard's sign-in: to the organisation's provider with PKCE S256 and this
    // gateway's `/mcp` as the resource, its `state` tied to this browser by a cookie; a callback
    // from another browser (no cookie) is refused, and a code the provider never gave too.
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = browser.get(format!("{base}/people/login")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 302);
    let to = reqwest::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(to.as_str().starts_with(&org.issuer), "{to}");
    let query: BTreeMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(query.get("code_challenge_method").map(String::as_str), Some("S256"), "{to}");
    assert_eq!(query.get("resource"), Some(&format!("{base}/mcp")), "{to}");
    assert_eq!(query.get("redirect_uri"), Some(&format!("{base}/people/callback")), "{to}");
    let state = &query["state"];
    assert!(cookie.starts_with(&format!("switchboard_sign_in={state};")) && cookie.contains("HttpOnly"), "{cookie}");
    let callback = format!("{base}/people/callback?code=forged&state={state}");
    let r = browser.get(&callback).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("another browser"));
    let r = browser.get(&callback).header("cookie", format!("switchboard_sign_in={state}")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 502, "the provider refused the forged code");
    assert!(r.headers().get("set-cookie").is_none(), "no session");
}

/// A team's dashboard in Chromium: Alice (devs) and Bob (admins) each sign in to `serve`'s
/// dashboard on the organisation's provider's own pages (`/people/login`, authorization code
/// with PKCE, a client the dashboard registers itself); Alice sees herself, her login and her
/// three calls, Bob sees everyone (`tests/peers/people_dashboard.mjs`, screenshots in
/// `target/dashboard/`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_to_the_dashboard_in_chromium() {
    let chromium = std::env::var_os("CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), std::path::PathBuf::from);
    assert!(chromium.exists(), "no Chromium at {} (.ci/run installs Debian's)", chromium.display());
    let playwright = switchboard_testkit::npm_folder("playwright", &["playwright-core@1.64.1"]);
    let Team { org: _org, theirs: _theirs, upstream: _upstream, home } = team().await;
    home.edit(|config| config["identity"]["admin_groups"] = json!(["admins"]));
    let (_serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let url = format!("{base}/mcp");
    let alice = tokio::task::spawn_blocking(move || common::report(person(&url, "alice", 3))).await.unwrap();
    assert_eq!(alice["whoami"]["subs"], json!({"alice": 3}), "{alice}");
    let url = format!("{base}/mcp");
    let bob = tokio::task::spawn_blocking(move || common::report(person(&url, "bob", 1))).await.unwrap();
    assert_eq!(bob["whoami"]["subs"], json!({"bob": 1}), "{bob}");
    let shots = switchboard_testkit::target_dir().parent().unwrap().join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let run = tokio::process::Command::new(switchboard_testkit::node22_bin().join("node"))
        .arg(common::script("people_dashboard.mjs"))
        .env("BASE", &base)
        .env("CALLS", "3")
        .env("SHOTS", &shots)
        .env("CHROMIUM", &chromium)
        .env("PLAYWRIGHT", &playwright)
        .kill_on_drop(true)
        .output();
    let output =
        tokio::time::timeout(std::time::Duration::from_secs(120), run).await.expect("the browser run ended").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{stdout}");
    assert!(output.status.success() && stdout.contains("all steps passed"), "{stdout}\n{stderr}");
    for shot in ["people-alice.png", "people-bob.png"] {
        let len = std::fs::metadata(shots.join(shot)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 5_000, "{shot}: {len} bytes");
    }
}

/// How long 500 calls of a shared local server take through the same gateway and client,
/// then 500 of a person's own upstream, one after the other (a measurement, with the debug
/// build the tests use: `cargo test -p switchboard-gateway --test team timing -- --ignored
/// --nocapture`); every call must succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_a_shared_server_beside() {
    let Team { org: _org, theirs: _theirs, upstream: _upstream, home } = team().await;
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let mut shared = person(&url, "alice", 500);
    shared.arg("fx__add").env("TEAM_ARGS", r#"{"a": 1, "b": 2}"#);
    let mut own = person(&url, "bob", 500);
    own.arg("whoami");
    let shared = tokio::task::spawn_blocking(move || common::report(shared)).await.unwrap();
    let own = tokio::task::spawn_blocking(move || common::report(own)).await.unwrap();
    assert_eq!(shared["whoami"]["errors"], json!([]), "{shared}");
    assert_eq!(own["whoami"]["subs"], json!({"bob": 500}), "{own}");
    eprintln!(
        "500 calls, 25 in flight: shared fx__add {} ms; own whoami {} ms",
        shared["whoami"]["ms"], own["whoami"]["ms"]
    );
}

/// The Python SDK's client (the era it negotiates) as a caller whose own upstream needs them
/// to sign in: a call of it is `-32042` with the URL-mode elicitation (the SDK's error, with
/// the elicitations in its data), its list has `sign_in`; once the browser is through (the
/// browser script, signing in at the upstream's provider), the call goes through, with the
/// upstream's token for that sign-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_is_sent_to_sign_in_and_then_calls() {
    let Team { org, theirs: _theirs, upstream: _upstream, home } = team().await;
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let bob = common::person_token(&org.issuer, "bob", &url).await;
    let mut c = Command::new(switchboard_testkit::python());
    c.arg("-W").arg("ignore").arg(common::script("team_py.py")).args(["http", url.as_str(), bob.as_str()]);
    c.arg(switchboard_testkit::node22_bin().join("node")).arg(common::script("signin_cli.mjs"));
    c.args(["bob", "up__whoami"]);
    let r = tokio::task::spawn_blocking(move || common::report(c)).await.unwrap();
    assert_eq!(r["first"]["code"], -32042, "{r}");
    assert_eq!(r["elicitation_mode"], "url", "{r}");
    assert!(r["tools_before"].as_array().unwrap().iter().any(|t| t == "sign_in"), "{r}");
    assert_eq!(r["landed"]["status"], 200, "{r}");
    assert!(!r["tools_after"].as_array().unwrap().iter().any(|t| t == "sign_in"), "signed in: {r}");
    assert_eq!(r["then"]["sub"], "bob", "{r}");
    eprintln!("the Python client spoke {}", r["protocol"]);
}

//! Hubs on one team's store tell each other what they learn (PostgreSQL `LISTEN`/`NOTIFY`,
//! Debian's PostgreSQL started by the test helper): a server that tells only the session that
//! changed it (the Python SDK's `add_tool` says `list_changed` to its caller alone) reaches the
//! other hub's catalog; a resource update told to one hub's session reaches the other's (the
//! host's server, and a person's own instance of it); a config one hub saw change is read
//! again by the other, though no file event reached it. (A logout: `tests/oauth.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::TestEnv;
use serde_json::json;
use switchboard::store::db::Database;
use switchboard::store::seal::KeyRing;
use switchboard::store::signals::Signal;
use switchboard_testkit::postgres::Postgres;

async fn open(url: &str, keys: &str) -> Database {
    Database::open(url, KeyRing::parse(keys).unwrap()).await.unwrap()
}

/// A PostgreSQL store, the Python SDK's server over HTTP, and two hubs on both, each with its
/// own folders. 2025-11-25 sessions: the SDK tells a change to the session that made it alone
/// (on 2026-07-28 every `subscriptions/listen` stream hears it).
struct Two {
    _pg: Postgres,
    _peer: switchboard_testkit::Peer,
    _envs: (TestEnv, TestEnv),
    a: switchboard::Hub,
    b: switchboard::Hub,
}

async fn two_hubs() -> Two {
    two_hubs_with(json!({}), false).await
}

/// The same with `more` in the server's entry, for a team (callers sign in) with `team`.
async fn two_hubs_with(more: serde_json::Value, team: bool) -> Two {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    let keys = KeyRing::new_key_line("k1").unwrap();
    let (peer, port) =
        tokio::task::spawn_blocking(|| switchboard_testkit::python_peer("streamable-http")).await.unwrap();
    let mut server = json!({"url": format!("http://127.0.0.1:{port}/mcp"), "protocol_version": "2025-11-25"});
    if let (Some(entry), Some(more)) = (server.as_object_mut(), more.as_object()) {
        entry.extend(more.clone());
    }
    let config = json!({"servers": {"py": server}});
    let (a_env, b_env) = (TestEnv::new(), TestEnv::new());
    let a = a_env.hub_with(&config, a_env.options().team(team).store(open(&url, &keys).await)).await;
    let b = b_env.hub_with(&config, b_env.options().team(team).store(open(&url, &keys).await)).await;
    Two { _pg: pg, _peer: peer, _envs: (a_env, b_env), a, b }
}

async fn until(what: &str, limit: Duration, check: impl Fn() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_told_to_one_hub_reaches_the_other() {
    let Two { a, b, .. } = &two_hubs().await;
    let has = |hub: &switchboard::Hub, tool: &str| hub.catalog().tools_of("py").any(|t| t.tool.name == tool);
    assert!(!has(b, "extra"));
    // Through A: the server adds a tool and tells A's session alone.
    let args = serde_json::from_value(json!({"name": "extra"})).unwrap();
    a.call_tool("py__add_tool", Some(args), Default::default()).await.unwrap();
    until("A lists again after its list_changed", Duration::from_secs(10), || has(a, "extra")).await;
    until("B is told and lists again", Duration::from_secs(5), || has(b, "extra")).await;
    a.shutdown().await;
    b.shutdown().await;
}

/// A resource update the server tells one hub's session alone reaches the other hub's events
/// (which its gateway sends to the sessions that subscribed), once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_update_told_to_one_hub_reaches_the_other_once() {
    use switchboard::events::Event;
    let Two { a, b, .. } = &two_hubs().await;
    let mut heard = b.subscribe_changes();
    let args = serde_json::from_value(json!({"uri": "py://greeting"})).unwrap();
    a.call_tool("py__touch", Some(args), Default::default()).await.unwrap();
    let mut count = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Ok(event)) = tokio::time::timeout_at(deadline, heard.recv()).await {
        if matches!(&event, Event::ResourceUpdated { server, uri } if server == "py" && uri == "py://greeting") {
            count += 1;
        }
    }
    assert_eq!(count, 1, "B's clients are told once");
    a.shutdown().await;
    b.shutdown().await;
}

/// The same for a person's own instance of a server (`per_principal`): the update their
/// instance at A was told reaches their hub at B (whose gateway sends it to their sessions
/// there), once, and nobody else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_resource_update_told_at_one_hub_reaches_their_hub_at_the_other_once() {
    use switchboard::events::Event;
    let Two { a, b, .. } = &two_hubs_with(json!({"sharing": "per_principal"}), true).await;
    let person = |subject: &str| -> switchboard::identity::Principal {
        serde_json::from_value(json!({"subject": subject, "issuer": "https://id.example"})).unwrap()
    };
    let (alice, bob) = (person("alice"), person("bob"));
    let (at_a, at_b) = (a.person(&alice).expect("alice's hub at A"), b.person(&alice).expect("alice's hub at B"));
    let _bob_at_b = b.person(&bob).expect("bob's hub at B");
    for hub in [&at_a, &at_b] {
        let started = Instant::now();
        while hub.catalog().tools_of("py").next().is_none() {
            assert!(started.elapsed() < Duration::from_secs(20), "her instance of py connects");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let mut heard = b.subscribe_people();
    let args = serde_json::from_value(json!({"uri": "py://greeting"})).unwrap();
    at_a.call_tool("py__touch", Some(args), Default::default()).await.unwrap();
    let mut whose = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Ok(told)) = tokio::time::timeout_at(deadline, heard.recv()).await {
        if matches!(&told.event, Event::ResourceUpdated { server, uri } if server == "py" && uri == "py://greeting") {
            whose.push(told.person.to_string());
        }
    }
    assert_eq!(whose, [alice.key()], "her hub at B is told, once; Bob's is not");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_change_seen_elsewhere_is_read_again() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    let keys = KeyRing::new_key_line("k1").unwrap();
    let env = TestEnv::new();
    let config = json!({"servers": {"one": common::fixture_server(&[])}});
    let hub = env.hub_with(&config, env.options().store(open(&url, &keys).await)).await;
    // The file changes before the hub follows it: no file event will say so.
    let file = env.dir.path().join("config.json");
    let more = json!({"servers": {"one": common::fixture_server(&[]), "two": common::fixture_server(&[])}});
    std::fs::write(&file, more.to_string()).unwrap();
    let loaded = switchboard::config::load(&env.load_options());
    let _watch = hub.watch_config(env.load_options(), &loaded).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(hub.status("two").is_none(), "nothing told it yet");
    // Another process saw it change.
    open(&url, &keys).await.signal(&Signal::Reload).await.unwrap();
    until("the hub reads its config again", Duration::from_secs(10), || hub.status("two").is_some()).await;
    hub.shutdown().await;
}

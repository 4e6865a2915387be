//! A gateway whose callers sign in with the organisation's authorization server (`identity`
//! in the config): `/mcp` answers a request without a token, with a token for another
//! resource, an expired one, one signed by a key the issuer does not publish, one lacking the
//! required scope, and one that is no JWT (as the local token), with 401 (403 for the scope) and a
//! `WWW-Authenticate` that names the protected resource metadata; that document says which
//! issuer to sign in with. A valid token's caller lists and calls tools, and the audit record
//! of the call names them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Home, answered, initialize};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use switchboard_testkit::issuer::{Issuer, Key};

/// A local issuer with one key, and a home whose config trusts it (`more` adds to the config).
fn team(more: impl FnOnce(&mut Value)) -> (Key, Issuer, Home) {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]);
    let home = Home::new(false);
    home.edit(|config| {
        config["identity"] = json!({"issuers": [issuer.issuer]});
        more(config);
    });
    (key, issuer, home)
}

/// An rmcp client of `url` signed in as `subject` of `groups` (a token `key` signs).
async fn signed_in(
    url: &str,
    key: &Key,
    issuer: &Issuer,
    subject: &str,
    groups: &[&str],
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, rmcp::service::ClientInitializeError> {
    let token = key.sign(&issuer.claims(url, subject, groups));
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_sign_in_with_the_organisations_issuer_and_are_named_in_the_audit() {
    let (key, issuer, home) = team(|config| config["identity"]["scopes"] = json!(["mcp"]));
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let origin = url.trim_end_matches("/mcp").to_string();
    let http = reqwest::Client::new();
    let at = url.as_str();
    let post =
        move |token: Option<String>| async move { common::post_mcp(at, token.as_deref(), None, &initialize()).await };
    let challenge = |r: &reqwest::Response| {
        r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
    };

    // No token: where to sign in.
    let r = post(None).await;
    assert_eq!(r.status(), 401);
    let said = challenge(&r);
    let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert!(said.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\"")), "{said}");
    assert!(!said.contains("error="), "{said}");
    let doc: Value = http.get(&metadata_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["resource"], url.as_str(), "{doc}");
    assert_eq!(doc["authorization_servers"], json!([issuer.issuer]), "{doc}");
    assert_eq!(doc["scopes_supported"], json!(["mcp"]), "{doc}");
    let root: Value =
        http.get(format!("{origin}/.well-known/oauth-protected-resource")).send().await.unwrap().json().await.unwrap();
    assert_eq!(root, doc);

    // Refused tokens, each with its reason.
    let now =
        i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap();
    let mut other_audience = issuer.claims("https://elsewhere.example/mcp", "alice", &["devs"]);
    other_audience["name"] = json!("Alice");
    let mut expired = issuer.claims(&url, "alice", &["devs"]);
    expired["exp"] = json!(now - 3600);
    let mut no_scope = issuer.claims(&url, "alice", &["devs"]);
    no_scope["scope"] = json!("openid");
    let stranger = Key::new("k9");
    let refused = [
        ("another audience", key.sign(&other_audience), 401, "invalid_token"),
        ("expired", key.sign(&expired), 401, "invalid_token"),
        ("an unknown key", stranger.sign(&issuer.claims(&url, "alice", &["devs"])), 401, "invalid_token"),
        ("a forged signature", stranger.sign_as("k1", &issuer.claims(&url, "alice", &["devs"])), 401, "invalid_token"),
        ("no mcp scope", key.sign(&no_scope), 403, "insufficient_scope"),
        // What the local token looks like: 43 random characters, not a JWT.
        ("a token that is not a JWT", "Qx7".repeat(14) + "A", 401, "invalid_token"),
    ];
    for (what, token, status, code) in refused {
        let r = post(Some(token)).await;
        assert_eq!(r.status(), status, "{what}");
        let said = challenge(&r);
        assert!(said.contains(&format!("error=\"{code}\"")) && said.contains("resource_metadata="), "{what}: {said}");
    }

    // A valid token: the caller uses the gateway, and the audit names them.
    let mut claims = issuer.claims(&url, "alice-1", &["devs"]);
    claims["name"] = json!("Alice");
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(key.sign(&claims));
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fx__echo"), "{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>());
    let params = CallToolRequestParams::new("fx__echo")
        .with_arguments(json!({"text": "signed in"}).as_object().cloned().unwrap());
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    client.cancel().await.unwrap();
    let call = home.audit_record(|r| r["tool"] == "echo").await;
    let principal = &call["caller"]["principal"];
    assert_eq!(principal["subject"], "alice-1", "{call}");
    assert_eq!(principal["issuer"], issuer.issuer.as_str(), "{call}");
    assert_eq!(principal["name"], "Alice", "{call}");
    assert_eq!(principal["groups"], json!(["devs"]), "{call}");
}

/// `serve` with `identity`: its `/mcp` is the protected resource (401 with the challenge
/// without a token, a signed-in caller gets in), while its API keeps the local token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_protects_its_mcp_and_keeps_the_api_on_the_local_token() {
    let (key, issuer, home) = team(|_| {});
    let (_serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let http = reqwest::Client::new();
    let url = format!("{base}/mcp");
    let r = common::post_mcp(&url, Some(&home.token()), None, &initialize()).await;
    assert_eq!(r.status(), 401, "the local token is not a caller's");
    let said = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(said.contains(&format!("resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")), "{said}");
    let api = http.get(format!("{base}/api/servers")).bearer_auth(home.token()).send().await.unwrap();
    assert_eq!(api.status(), 200, "the API keeps the local token");
    let client = signed_in(&url, &key, &issuer, "bob", &["ops"]).await.unwrap();
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    client.cancel().await.unwrap();
}

/// Rights per caller: `{"deny": [{"tool": "fx__crash", "unless_groups": ["admins"]}]}`. Alice
/// (devs) is not given the tool and a call to it is refused naming the rule; Bob (admins) is
/// given it. A profile bound to a group (`ops`) is what Carol (ops) gets without asking, and
/// what Alice may not ask for. A session is its first caller's: Bob's token on Alice's session
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_sees_and_calls_what_the_rules_for_their_groups_allow() {
    let (key, issuer, home) = team(|config| {
        config["policy"] = json!({"deny": [{"tool": "fx__crash", "unless_groups": ["admins"]}]});
        config["profiles"] = json!({"ops-only": {"tools": {"allow": ["fx/echo", "fx/add"]}, "groups": ["ops"]}});
    });
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let connect =
        |subject: &'static str, groups: &'static [&'static str]| signed_in(&url, &key, &issuer, subject, groups);
    let alice = connect("alice", &["devs"]).await.unwrap();
    let bob = connect("bob", &["admins"]).await.unwrap();
    let names = |tools: Vec<rmcp::model::Tool>| tools.into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    let (for_alice, for_bob) =
        (names(alice.list_all_tools().await.unwrap()), names(bob.list_all_tools().await.unwrap()));
    assert!(
        for_alice.contains(&"fx__echo".to_string()) && !for_alice.contains(&"fx__crash".to_string()),
        "{for_alice:?}"
    );
    assert!(for_bob.contains(&"fx__crash".to_string()), "{for_bob:?}");
    let refused = alice.call_tool(CallToolRequestParams::new("fx__crash")).await.unwrap();
    let said = serde_json::to_string(&refused.content).unwrap();
    assert!(refused.is_error == Some(true) && said.contains("unless in group admins"), "{said}");
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
    let carol = connect("carol", &["ops"]).await.unwrap();
    let mut for_carol = names(carol.list_all_tools().await.unwrap());
    for_carol.sort();
    assert_eq!(for_carol, ["fx__add", "fx__echo"], "the ops profile, without asking for it");
    carol.cancel().await.unwrap();
    let token = key.sign(&issuer.claims(&url, "alice", &["devs"]));
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}?profile=ops-only")).auth_header(token);
    let asked = match ().serve(StreamableHttpClientTransport::from_config(config)).await {
        Ok(c) => c.list_all_tools().await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    assert!(asked.as_ref().is_err_and(|e| e.contains("is for the group ops")), "{asked:?}");

    // Alice's session, then Bob's token on it.
    let at = url.as_str();
    let send = move |token: String, session: Option<String>, body: Value| async move {
        common::post_mcp(at, Some(&token), session.as_deref(), &body).await
    };
    let alice_token = key.sign(&issuer.claims(&url, "alice", &["devs"]));
    let bob_token = key.sign(&issuer.claims(&url, "bob", &["admins"]));
    let r = send(alice_token.clone(), None, initialize()).await;
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = send(alice_token.clone(), Some(session.clone()), initialized).await.text().await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mine = send(alice_token, Some(session.clone()), list.clone()).await.text().await.unwrap();
    assert!(mine.contains("fx__echo"), "{mine}");
    // Refused as a session that does not exist (every door: `tests/colleague.rs`).
    let theirs = send(bob_token, Some(session), list).await;
    assert_eq!(theirs.status(), 404);
    let theirs = theirs.text().await.unwrap();
    assert!(theirs.contains("Session not found") && !theirs.contains("fx__echo"), "{theirs}");
}

/// Service accounts: `switchboard keys create NAME --group G` prints a key once (the file keeps
/// its hash only); the key is accepted by the running protected gateway as `key:NAME` in its
/// groups, listed without the key, and refused from the next request once revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_call_with_api_keys_that_can_be_revoked() {
    service_accounts(None).await;
}

/// The same with a team's store on PostgreSQL and two gateways on it: a key made once is
/// accepted by both, kept as its hash in the store (nothing in the data folder), and refused by
/// both within `STORE_KEEP` of its revocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_keys_in_the_team_store_serve_every_gateway_on_it() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let url = pg.database("sb");
    service_accounts(Some((&pg, url))).await;
}

async fn service_accounts(store: Option<(&switchboard_testkit::postgres::Postgres, String)>) {
    let issuer = Issuer::start(&[&Key::new("k1")]);
    let home = Home::new(false);
    home.edit(|config| {
        config["identity"] = json!({"issuers": [issuer.issuer], "scopes": ["mcp"]});
        config["policy"] = json!({"deny": [{"tool": "fx__crash", "unless_groups": ["admins"]}]});
    });
    if let Some((_, db)) = &store {
        home.use_store(db);
    }
    let (_gateway, url) = common::http_gateway(&home, &[]);
    // A second gateway (a replica) on the same store.
    let (_other, other_url) = match store {
        Some(_) => {
            let (g, u) = common::http_gateway(&home, &[]);
            (Some(g), u)
        }
        None => (None, url.clone()),
    };
    let sb = |args: &[&str]| home.switchboard(args).stdin(std::process::Stdio::null()).output().unwrap();
    let made = sb(&["keys", "create", "ci-bot", "--group", "admins"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let key = String::from_utf8_lossy(&made.stdout).trim().to_string();
    assert!(key.starts_with("sbk_"), "{key}");
    let file = switchboard_testkit::data_dir(home.path()).join("api-keys.json");
    let kept = match &store {
        Some((pg, _)) => {
            assert!(!file.exists(), "nothing in the data folder");
            pg.sql("sb", "SELECT name, record::text FROM switchboard_api_keys")
        }
        None => std::fs::read_to_string(file).unwrap(),
    };
    assert!(kept.contains("ci-bot") && !kept.contains(&key[4..]), "only the hash is kept: {kept}");
    let listed = String::from_utf8_lossy(&sb(&["keys", "list", "--json"]).stdout).to_string();
    assert!(listed.contains("ci-bot") && listed.contains("admins") && !listed.contains(&key[4..]), "{listed}");

    for url in [&url, &other_url] {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(key.clone());
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        let tools: Vec<String> =
            client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        assert!(tools.contains(&"fx__crash".to_string()), "in admins: {tools:?}");
        client.cancel().await.unwrap();
    }

    assert!(sb(&["keys", "revoke", "ci-bot"]).status.success());
    // At once from a file; within `STORE_KEEP` (2 s) from the store, on every gateway.
    let wait = if store.is_some() { Duration::from_secs(4) } else { Duration::ZERO };
    for url in [&url, &other_url] {
        let start = std::time::Instant::now();
        loop {
            let r = common::post_mcp(url, Some(&key), None, &initialize()).await;
            if r.status() == 401 {
                break;
            }
            assert!(start.elapsed() < wait, "a revoked key still accepted: {}", r.status());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let as_json = sb(&["keys", "create", "other", "--json"]);
    let shown = String::from_utf8_lossy(&as_json.stdout);
    assert!(
        !as_json.status.success() && shown.contains("never in JSON output") && !shown.contains("sbk_"),
        "a key is never in JSON output: {shown}"
    );
    assert!(!sb(&["keys", "list", "--json"]).stdout.windows(7).any(|w| w == b"\"other\""), "and none was made");
    let bad = sb(&["keys", "create", "no spaces"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("a key's name is"));
}

/// Rate limits per person and tool: `{"tool": "fx__echo", "calls": 5, "per": "hour"}`. Of 20
/// calls Alice makes at once, exactly 5 get through and the others are refused naming the limit
/// (a result the model reads); Bob's bucket is his own; admins are not limited by an
/// `unless_groups` entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_has_their_own_rate_limit_per_tool() {
    let (key, issuer, home) = team(|config| {
        config["policy"] = json!({"rate_limits": [
            {"tool": "fx__echo", "calls": 5, "per": "hour", "unless_groups": ["admins"]},
        ]});
    });
    let (_gateway, url) = common::http_gateway(&home, &[]);
    let connect =
        |subject: &'static str, groups: &'static [&'static str]| signed_in(&url, &key, &issuer, subject, groups);
    let echo =
        || CallToolRequestParams::new("fx__echo").with_arguments(json!({"text": "hi"}).as_object().cloned().unwrap());
    let alice = connect("alice", &["devs"]).await.unwrap();
    let results = futures::future::join_all((0..20).map(|_| alice.call_tool(echo()))).await;
    let refused: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().unwrap())
        .filter(|r| r.is_error == Some(true))
        .map(|r| serde_json::to_string(&r.content).unwrap())
        .collect();
    assert_eq!(refused.len(), 15, "{refused:?}");
    assert!(refused.iter().all(|t| t.contains("rate limit `fx__echo`: 5 calls an hour")), "{refused:?}");
    let bob = connect("bob", &["devs"]).await.unwrap();
    for _ in 0..5 {
        assert_ne!(bob.call_tool(echo()).await.unwrap().is_error, Some(true), "bob's own bucket");
    }
    assert_eq!(bob.call_tool(echo()).await.unwrap().is_error, Some(true));
    let root = connect("root", &["admins"]).await.unwrap();
    for _ in 0..8 {
        assert_ne!(root.call_tool(echo()).await.unwrap().is_error, Some(true), "admins are not limited");
    }
    // Bob's refusal is in the audit log as his (waited for: the log is written every 100 ms,
    // and Alice's refusals were there first).
    let record =
        home.audit_record(|r| r["outcome"] == "rate_limited" && r["caller"]["principal"]["subject"] == "bob").await;
    assert!(record["error"].as_str().unwrap_or_default().contains("rate limit `fx__echo`"), "{record}");
    for c in [alice, bob, root] {
        c.cancel().await.unwrap();
    }
}

/// A legacy session (2025-11-25, `Mcp-Session-Id`) made by a service account at a gateway on
/// the team's store goes on at the gateway started again (another port: a new process): its
/// client sends the same id, lists and calls, and is never asked to initialize again; another
/// caller with that id gets 404, as for an unknown session. Without a store (the default), the
/// session ends with its process: 404, and the client starts a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_goes_on_after_a_restart_on_the_team_store() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let url = pg.database("sb");
    for store in [true, false] {
        let issuer = Issuer::start(&[&Key::new("k1")]);
        let home = Home::new(false);
        home.edit(|config| config["identity"] = json!({"issuers": [issuer.issuer], "scopes": ["mcp"]}));
        if store {
            home.use_store(&url);
        }
        let (mine, theirs) = (home.api_key("ci-bot"), home.api_key("other-bot"));
        let (gateway, first) = common::http_gateway(&home, &[]);
        let r = common::post_mcp(&first, Some(&mine), None, &initialize()).await;
        assert_eq!(r.status(), 200);
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let _ = r.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(common::post_mcp(&first, Some(&mine), Some(&session), &initialized).await.status(), 202);
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let listed =
            answered(&common::post_mcp(&first, Some(&mine), Some(&session), &list).await.text().await.unwrap());
        let count = listed["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
        assert!(count > 0, "{listed}");

        drop(gateway);
        let (_gateway, again) = common::http_gateway(&home, &[]);
        assert_ne!(first, again);
        // Another caller first: not theirs to resume (and it stays resumable for its owner).
        let r = common::post_mcp(&again, Some(&theirs), Some(&session), &list).await;
        assert_eq!(r.status(), 404, "another caller's session");
        let r = common::post_mcp(&again, Some(&mine), Some(&session), &list).await;
        if !store {
            assert_eq!(r.status(), 404, "without a store a session ends with its process");
            continue;
        }
        assert_eq!(r.status(), 200, "resumed");
        let listed = answered(&r.text().await.unwrap());
        assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(count), "{listed}");
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "fx__echo", "arguments": {"text": "still here"}}});
        let said = answered(&common::post_mcp(&again, Some(&mine), Some(&session), &call).await.text().await.unwrap());
        assert_eq!(said["result"]["content"][0]["text"], "still here", "{said}");
        let kept = pg.sql(
            "sb",
            "SELECT owner, primed, state->'initialize_params'->'clientInfo'->>'name' FROM switchboard_sessions",
        );
        // Its owner is the service account's key (`Principal::key`: SHA-256 of issuer and subject).
        let owner: String = {
            use sha2::Digest;
            let mut hash = sha2::Sha256::new();
            hash.update(b"switchboard\0key:ci-bot");
            hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(kept.trim(), format!("{owner}|t|raw"), "{kept}");
        // Ended by its client: gone from the store too.
        let r = reqwest::Client::new()
            .delete(&again)
            .bearer_auth(&mine)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        assert_eq!(pg.sql("sb", "SELECT COUNT(*) FROM switchboard_sessions").trim(), "0");
    }
}

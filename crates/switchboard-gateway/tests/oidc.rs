//! The organisation's own OpenID provider, a real one: `oidc-provider` (npm, certified), with
//! alice in `devs` and bob in `admins` (`switchboard_testkit::oidc`). The TypeScript SDK 1.x
//! client signs in as each through its own OAuth support, from the gateway's 401 to the
//! provider's sign-in and consent pages (filled in by the test as a person would) and back
//! with a code, PKCE and the gateway's resource; then each sees and calls what the rules for
//! their group allow, and the audit names them. Tokens the provider issued for another
//! audience, one that expired, and one signed by a key the provider does not publish are
//! refused with 401 and the challenge.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::issuer::Key;
use switchboard_testkit::oidc::Provider;

/// The status and `WWW-Authenticate` of an `initialize` with `token`.
async fn knock(url: &str, token: &str) -> (u16, String) {
    let r = common::post_mcp(url, Some(token), None, &common::initialize()).await;
    let said = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (r.status().as_u16(), said)
}

/// The SDK client signing in as `login` and calling `calls` (its report).
fn sign_in(url: &str, login: &str, calls: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new("node");
    c.arg(common::script("oidc_client.mjs")).arg(switchboard_testkit::node_peers()).arg(url).arg(login).args(calls);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_through_a_real_openid_provider_and_get_what_their_group_allows() {
    let provider = tokio::task::spawn_blocking(Provider::start).await.unwrap();
    let home = Home::new(false);
    home.edit(|config| {
        config["identity"] = json!({"issuers": [provider.issuer], "scopes": ["mcp"]});
        config["policy"] = json!({"deny": [{"tool": "fx__crash", "unless_groups": ["admins"]}]});
    });
    let (_gateway, url) = common::http_gateway(&home, &[]);

    // A token that lives one second: taken first, so that its minute of allowed clock skew
    // runs out while the rest goes on. It is good now (the test can tell), refused later.
    let brief = common::client_token(&provider.token_endpoint(), "brief", &url).await;
    let brief_at = Instant::now();
    assert_eq!(knock(&url, &brief).await.0, 200, "a fresh token of the provider's");

    // Alice and Bob sign in, each through the SDK, at the same time.
    let (alice, bob) = (sign_in(&url, "alice", &["fx__echo", "fx__crash"]), sign_in(&url, "bob", &["fx__echo"]));
    let (alice, bob) = tokio::join!(
        tokio::task::spawn_blocking(move || common::report(alice)),
        tokio::task::spawn_blocking(move || common::report(bob))
    );
    let (alice, bob) = (alice.unwrap(), bob.unwrap());
    for (person, groups, r) in [("alice", ["devs"], &alice), ("bob", ["admins"], &bob)] {
        let claims = &r["claims"];
        assert_eq!(claims["iss"], provider.issuer.as_str(), "{r}");
        assert_eq!(claims["sub"], person, "{r}");
        assert_eq!(claims["aud"], url.as_str(), "the token is for the gateway (RFC 8707): {r}");
        assert_eq!(claims["groups"], json!(groups), "{r}");
        assert_eq!(r["asked"]["resource"], url.as_str(), "{r}");
        assert_eq!(r["asked"]["code_challenge_method"], "S256", "{r}");
        assert!(r["asked"]["scope"].as_str().unwrap_or_default().split(' ').any(|s| s == "mcp"), "{r}");
        let echo = &r["results"]["fx__echo"];
        assert!(echo["isError"] == false && echo["text"].as_str().unwrap().contains(&format!("from {person}")), "{r}");
    }
    let listed = |r: &Value, tool: &str| r["tools"].as_array().unwrap().iter().any(|t| t == tool);
    assert!(listed(&alice, "fx__echo") && !listed(&alice, "fx__crash"), "{alice}");
    assert!(listed(&bob, "fx__echo") && listed(&bob, "fx__crash"), "{bob}");
    let refused = &alice["results"]["fx__crash"];
    assert!(
        refused["isError"] == true && refused["text"].as_str().unwrap().contains("unless in group admins"),
        "{refused}"
    );
    for (person, name) in [("alice", "Alice"), ("bob", "Bob")] {
        let record = home.audit_record(|r| r["tool"] == "echo" && r["caller"]["principal"]["subject"] == person).await;
        let principal = &record["caller"]["principal"];
        assert_eq!(principal["issuer"], provider.issuer.as_str(), "{record}");
        assert_eq!(principal["name"], name, "{record}");
    }
    // One person's calls: `audit --principal` (once the refused call's record is written too:
    // the log is written every 100 ms).
    home.audit_record(|r| r["tool"] == "crash" && r["caller"]["principal"]["subject"] == "alice").await;
    for (person, calls) in [("alice", 2), ("bob", 1)] {
        let out = home.switchboard(&["audit", "--principal", person, "--json"]).output().unwrap();
        let log: Value = serde_json::from_slice(&out.stdout).unwrap();
        let records = log["calls"].as_array().unwrap();
        assert_eq!(records.len(), calls, "{person}'s calls (the denied one too): {log}");
        assert!(records.iter().all(|r| r["caller"]["principal"]["subject"] == person), "{log}");
    }
    let table = home.switchboard(&["audit", "--principal", "alice"]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains(": alice") && !table.contains(": bob"), "{table}");
    // A signed-in person's token is theirs: Alice's serves a raw request too.
    assert_eq!(knock(&url, alice["token"].as_str().unwrap()).await.0, 200);

    // Refused, each with 401 and the challenge naming the metadata.
    let other_audience =
        common::client_token(&provider.token_endpoint(), "robot", "http://127.0.0.1:1/elsewhere/mcp").await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let unknown_key = Key::new("not-the-providers").sign(&json!({
        "iss": provider.issuer, "aud": url, "sub": "alice", "scope": "mcp", "groups": ["admins"],
        "iat": now, "exp": now + 600,
    }));
    let skew = Duration::from_secs(62);
    tokio::time::sleep(skew.saturating_sub(brief_at.elapsed())).await;
    let metadata =
        format!("resource_metadata=\"{}\"", url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"));
    for (what, token) in [("another audience", other_audience), ("expired", brief), ("an unknown key", unknown_key)] {
        let (status, said) = knock(&url, &token).await;
        assert_eq!(status, 401, "{what}: {said}");
        assert!(said.starts_with("Bearer ") && said.contains(&metadata), "{what}: {said}");
        assert!(said.contains("error=\"invalid_token\""), "{what}: {said}");
    }
    // Still good: the provider's token for the gateway, the minute after.
    let robot = common::client_token(&provider.token_endpoint(), "robot", &url).await;
    assert_eq!(knock(&url, &robot).await.0, 200);
}

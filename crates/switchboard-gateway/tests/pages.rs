//! A colleague at a person's pages. Alice's own servers need her: an upstream she signs in to as
//! herself (`whoami_upstream.mjs` behind a second OpenID provider) and a local server started
//! with a value only she has (`${input:my_token}`). The gateway gives her two addresses (its
//! `sign_in` tool): her sign-in page and her values page. Bob, signed in with the
//! organisation's provider as himself in his own browser, opens both, posts a value to hers,
//! and lands on her callback with the code her provider gave her: each completes nothing and
//! says why (403), and each stays hers: then she completes them all, her upstream answers as
//! her and her server starts with her value (read through `/proc`), never his. A browser
//! signed in nowhere is sent to sign in first and brought back to the page. On one gateway, and
//! on two replicas on a team's store behind HAProxy, where each page is tried through the
//! balancer and at each replica (one holds it, the other passes it on).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::Home;
use common::upstream::Upstream;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::oidc::Provider;
use switchboard_testkit::postgres::Postgres;

/// The organisation's provider, the upstream's own, the upstream, and the marker of the local
/// server's processes.
struct Org {
    org: Provider,
    _theirs: Provider,
    upstream: Upstream,
    marker: String,
}

async fn org() -> Org {
    let (org, theirs) =
        tokio::join!(tokio::task::spawn_blocking(Provider::start), tokio::task::spawn_blocking(Provider::start));
    let (org, theirs) = (org.unwrap(), theirs.unwrap());
    let upstream = Upstream::start(&theirs.issuer);
    Org { org, _theirs: theirs, upstream, marker: switchboard_testkit::unique_marker("pages") }
}

/// The servers each person needs: `up` (their own login) and `mine` (their own value).
fn servers(home: &Home, org: &Org) {
    home.edit(|config| {
        config["servers"]["up"] = json!({"url": org.upstream.url});
        config["inputs"] =
            json!([{"type": "promptString", "id": "my_token", "description": "Your token", "password": true}]);
        config["servers"]["mine"] = json!({
            "command": switchboard_testkit::node22_bin().join("node"),
            "args": [switchboard_testkit::node_peer("server-everything"), "stdio", org.marker],
            "env": {"MY_TOKEN": "${input:my_token}"},
            "sharing": "per_principal",
        });
    });
}

fn token_of(pid: i32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"MY_TOKEN="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The address in `text` that has `path` (up to the next space).
fn address(text: &str, path: &str) -> String {
    let at = text.find(path).unwrap_or_else(|| panic!("no {path} in {text}"));
    let start = text[..at].rfind("http").unwrap();
    let end = text[at..].find(char::is_whitespace).map_or(text.len(), |e| at + e);
    text[start..end].trim_end_matches(['.', ',', ')']).to_string()
}

/// Alice's pages and Bob's tries at them, at every one of `bases`, the gateway's public
/// address (`url` is its `/mcp`) first.
async fn a_colleague_at_her_pages(org: &Org, url: &str, bases: &[String]) -> (Vec<String>, Vec<String>) {
    let alice = common::person_token(&org.org.issuer, "alice", url).await;
    let public = url.trim_end_matches("/mcp");

    // Her addresses, as her agent is given them.
    let list = common::modern(url, &alice, "tools/list", json!({})).await;
    assert!(list["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "sign_in"), "{list}");
    let said = common::modern(url, &alice, "tools/call", json!({"name": "sign_in", "arguments": {}})).await;
    let text = said["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let (sign_in, inputs) = (address(&text, "/sign-in?state="), address(&text, "/inputs?state="));
    assert!(sign_in.starts_with(public) && inputs.starts_with(public), "the public address: {text}");

    // Bob's own `sign_in` gives his own addresses, never hers.
    let bob = common::person_token(&org.org.issuer, "bob", url).await;
    let said = common::modern(url, &bob, "tools/call", json!({"name": "sign_in", "arguments": {}})).await;
    let his = said["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let (his_sign_in, his_inputs) = (address(&his, "/sign-in?state="), address(&his, "/inputs?state="));
    assert!(his_sign_in != sign_in && his_inputs != inputs, "{his}\n{text}");

    let mut c = std::process::Command::new(switchboard_testkit::node22_bin().join("node"));
    c.arg(common::script("colleague_pages.mjs")).args([
        &sign_in,
        &inputs,
        &json!(bases).to_string(),
        &format!("{public}/oauth/callback"),
    ]);
    let r = tokio::task::spawn_blocking(move || common::report(c)).await.unwrap();

    // Signed in nowhere: to the organisation's sign-in, and back to the page after.
    for tried in r["nobody"].as_array().unwrap() {
        assert_eq!(tried["status"], 303, "{tried}");
        let location = tried["location"].as_str().unwrap();
        let back: String = inputs
            .trim_start_matches(public)
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        assert_eq!(location, format!("/people/login?next={back}"), "{tried}");
    }
    // Bob, at each page, at every address: refused, with the reason, nothing done.
    assert!(r["bob"]["inputs"].as_array().unwrap().len() == bases.len(), "{r}");
    for (what, tries) in r["bob"].as_object().unwrap().iter().filter(|(k, _)| *k != "signedIn") {
        for tried in tries.as_array().unwrap() {
            assert_eq!(tried["status"], 403, "bob at her {what} page: {tried}");
            let page = tried["page"].as_str().unwrap();
            assert!(page.to_lowercase().contains("made for another person, not for bob"), "the reason: {tried}");
            assert!(page.contains("completes nothing"), "{tried}");
            assert!(!page.contains("alice"), "nothing of hers shown: {tried}");
        }
    }
    // Then Alice: her sign-in (to her upstream's provider), her pages still hers at every
    // address, her values kept.
    let authorization = r["alice"]["authorization"].as_str().unwrap_or_default();
    assert!(authorization.starts_with(&org._theirs.issuer), "her upstream's provider: {r}");
    assert_eq!(r["alice"]["callback"]["status"], 200, "her callback, after Bob's tries: {r}");
    for tried in r["alice"]["inputs"].as_array().unwrap() {
        assert_eq!(tried["status"], 200, "her values page: {tried}");
        assert!(tried["page"].as_str().unwrap().contains("Your token"), "{tried}");
    }
    assert_eq!(r["alice"]["kept"]["status"], 200, "{r}");

    // Her upstream answers as her; her server starts with her value, none with Bob's.
    let mut then = Value::Null;
    for _ in 0..100 {
        then = common::modern(url, &alice, "tools/call", json!({"name": "up__whoami", "arguments": {}})).await;
        if then["result"]["content"][0]["text"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let who: Value = serde_json::from_str(then["result"]["content"][0]["text"].as_str().unwrap_or("null")).unwrap();
    assert_eq!(who["sub"], "alice", "{then}");
    let mut tokens = Vec::new();
    for _ in 0..150 {
        let _ = common::modern(url, &alice, "tools/list", json!({})).await;
        tokens = switchboard_testkit::pids_with_arg(&org.marker).into_iter().filter_map(token_of).collect();
        if !tokens.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens, ["alice-token"], "her server, with her value alone");
    // Her pages' states and his (each kept in a team's store by its SHA-256 while it waits).
    let digests = |pages: [&String; 2]| -> Vec<String> {
        pages
            .iter()
            .map(|page| {
                let state = decode(page.split("state=").nth(1).unwrap_or_default());
                Sha256::digest(state.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
            })
            .collect()
    };
    (digests([&sign_in, &inputs]), digests([&his_sign_in, &his_inputs]))
}

/// A query value, `%XX` decoded.
fn decode(text: &str) -> String {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_pages_complete_nothing_for_a_colleague() {
    let org = org().await;
    let home = Home::new(false);
    home.edit(|config| config["identity"] = json!({"issuers": [org.org.issuer], "scopes": ["mcp"]}));
    servers(&home, &org);
    let (gateway, url) = common::http_gateway(&home, &[]);
    let base = url.trim_end_matches("/mcp").to_string();
    let _ = a_colleague_at_her_pages(&org, &url, &[base]).await;
    drop(gateway);
    let left = switchboard_testkit::wait_gone(&org.marker, Duration::from_secs(15));
    assert!(left.is_empty(), "left after the gateway ended: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_pages_complete_nothing_for_a_colleague_at_any_replica_behind_haproxy() {
    let pg = tokio::task::spawn_blocking(Postgres::start);
    let org = org().await;
    let pg = pg.await.unwrap();
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", switchboard_testkit::free_port())).collect();
    let proxy = HaProxy::start(&addrs);
    let public = proxy.url();
    let url = format!("{public}/mcp");
    let home = Home::team_on_store(&org.org.issuer, &pg.database("sb"), json!({"resource": url}));
    servers(&home, &org);
    let host = public.trim_start_matches("http://").to_string();
    let replicas: Vec<_> = addrs.iter().map(|addr| common::http_gateway_at(&home, addr, &["--host", &host])).collect();
    proxy.wait_up(2, Duration::from_secs(30));
    let mut bases = vec![public.clone()];
    bases.extend(replicas.iter().map(|(_, at)| at.trim_end_matches("/mcp").to_string()));
    let (hers, his) = a_colleague_at_her_pages(&org, &url, &bases).await;
    // Each page is kept in the store while it waits (by the SHA-256 of its state): hers are
    // gone once done, Bob's wait on.
    let kept = pg.sql("sb", "SELECT digest FROM switchboard_pages");
    assert!(his.iter().all(|d| kept.contains(d.as_str())), "his wait: {kept}");
    assert!(hers.iter().all(|d| !kept.contains(d.as_str())), "hers are done: {kept}");
    drop(replicas);
    let left = switchboard_testkit::wait_gone(&org.marker, Duration::from_secs(15));
    assert!(left.is_empty(), "left after the replicas ended: {left:?}");
}

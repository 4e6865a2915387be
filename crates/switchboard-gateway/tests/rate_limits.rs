//! A colleague's calls and a person's rate-limit bucket, through a balancer. Two gateway
//! replicas on a team's store behind HAProxy (round robin), `fx__echo` limited to 3 calls an
//! hour per person. Alice spends hers (2026-07-28 calls, each reaching either replica) until
//! she is refused, naming the limit; Bob's calls then go through as if she had made none, and
//! he is refused only past his own. Buckets are counted by each process (README says so): a
//! person gets at most the limit at each replica, never fewer than the limit in all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::issuer::{Issuer, Key};

async fn echo(url: &str, token: &str) -> Value {
    common::modern(url, token, "tools/call", json!({"name": "fx__echo", "arguments": {"text": "hi"}})).await
}

fn refused(said: &Value) -> bool {
    said["result"]["isError"] == true || said["error"].is_object()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_colleagues_calls_never_spend_a_persons_bucket_through_the_balancer() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]);
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", switchboard_testkit::free_port())).collect();
    let proxy = HaProxy::start(&addrs);
    let url = format!("{}/mcp", proxy.url());
    let host = proxy.url().trim_start_matches("http://").to_string();
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({"resource": url}));
    home.edit(|config| {
        config["policy"] = json!({"rate_limits": [{"tool": "fx__echo", "calls": 3, "per": "hour"}]});
    });
    let _replicas: Vec<_> = addrs.iter().map(|a| common::http_gateway_at(&home, a, &["--host", &host])).collect();
    proxy.wait_up(2, Duration::from_secs(30));
    let alice = key.sign(&issuer.claims(&url, "alice", &["devs"]));
    let bob = key.sign(&issuer.claims(&url, "bob", &["devs"]));

    // Alice until refused: at least her 3, at most 3 at each replica.
    let mut through = 0;
    let refusal = loop {
        let said = echo(&url, &alice).await;
        if refused(&said) {
            break said;
        }
        assert_eq!(said["result"]["content"][0]["text"], "hi", "{said}");
        through += 1;
        assert!(through <= 6, "past 3 at each of 2 replicas: {said}");
    };
    assert!((3..=6).contains(&through), "{through}");
    assert!(refusal.to_string().contains("rate limit `fx__echo`: 3 calls an hour"), "{refusal}");
    // Until her bucket at each replica is spent (two refusals in a row: round robin reaches
    // both), never more than 3 at each in all.
    let mut in_a_row = 1;
    for _ in 0..8 {
        if in_a_row == 2 {
            break;
        }
        let said = echo(&url, &alice).await;
        if refused(&said) {
            in_a_row += 1;
        } else {
            in_a_row = 0;
            through += 1;
        }
    }
    assert_eq!(in_a_row, 2, "alice refused at both replicas");
    assert!(through <= 6, "{through}");

    // Bob's bucket is his own: his first 3 go through wherever they land.
    for n in 0..3 {
        let said = echo(&url, &bob).await;
        assert!(!refused(&said), "bob's call {n}, after alice spent hers: {said}");
        assert_eq!(said["result"]["content"][0]["text"], "hi", "{said}");
    }
    // In the store's audit, each refusal is the one who made it: alice's, none of bob's.
    let refusals = |who: &str| {
        let sql = format!(
            "SELECT COUNT(*) FROM switchboard_audit WHERE subject = '{who}' AND record->>'outcome' = 'rate_limited'"
        );
        pg.sql("sb", &sql).trim().parse::<u32>().unwrap()
    };
    let started = std::time::Instant::now();
    while refusals("alice") < 2 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refusals("alice") >= 2, "alice's refusals in the audit");
    assert_eq!(refusals("bob"), 0, "none of bob's was refused");
}

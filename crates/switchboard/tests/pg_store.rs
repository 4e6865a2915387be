//! A team's store on a real PostgreSQL server (Debian's, started by the test helper): logins
//! sealed (no token, client secret or key in any row), each owner's apart (a row moved to
//! another owner does not open), concurrent changes from two pools all kept, everything still
//! there after reopening, key rotation without downtime, a newer schema refused, one refresh
//! at a time across processes, and nothing of the server left afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use switchboard::auth::{ClientRecord, Entry, StoreError, TokenStore};
use switchboard::store::StoreError as DbError;
use switchboard::store::db::{Database, SecretKind};
use switchboard::store::seal::KeyRing;
use switchboard_testkit::postgres::Postgres;

const ALICE: &str = "0123456789abcdef0123456789abcdef";
const URL: &str = "https://up.example/mcp";

fn ring(lines: &[&str]) -> KeyRing {
    KeyRing::parse(&lines.join("\n")).unwrap()
}

fn login(entry: &mut Entry, token: &str) {
    let credentials = serde_json::json!({
        "client_id": "client-1",
        "token_response": {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "refresh_token": format!("{token}-refresh")},
        "granted_scopes": ["mcp"],
        "token_received_at": 1,
    });
    entry.credentials = Some(serde_json::from_value(credentials).unwrap());
    entry.client = Some(
        serde_json::from_value::<ClientRecord>(
            serde_json::json!({"client_id": "client-1", "client_secret": "CLIENT-SECRET-1"}),
        )
        .unwrap(),
    );
}

fn token(entry: &Entry) -> String {
    let creds = serde_json::to_value(entry.credentials.as_ref().unwrap()).unwrap();
    creds["token_response"]["access_token"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_are_sealed_kept_apart_and_survive_reopening_and_rotation() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    let k1 = KeyRing::new_key_line("k1").unwrap();
    let db = Database::open(&url, ring(&[&k1])).await.unwrap();
    let host = TokenStore::in_database(db.clone(), "");
    let alice = TokenStore::in_database(db.clone(), ALICE);
    host.update(URL, "up", |e| login(e, "tok-HOST-0001")).await.unwrap();
    alice.update(URL, "up", |e| login(e, "tok-ALICE-0001")).await.unwrap();
    alice.update("https://other.example/mcp", "other", |e| login(e, "tok-ALICE-0002")).await.unwrap();

    // Each owner reads their own, by exact URL.
    assert_eq!(token(&host.entry(URL).await.unwrap().unwrap()), "tok-HOST-0001");
    assert_eq!(token(&alice.entry(URL).await.unwrap().unwrap()), "tok-ALICE-0001");
    assert_eq!(alice.entries().await.unwrap().len(), 2);
    assert_eq!(host.entries().await.unwrap().len(), 1);
    assert!(TokenStore::in_database(db.clone(), "ffff").entries().await.unwrap().is_empty());

    // No row holds a token, a refresh token or a client secret in the clear.
    let table = pg.sql("sb", "SELECT kind, owner, key, label, sealed FROM switchboard_secrets");
    assert_eq!(table.lines().count(), 3, "{table}");
    for secret in ["tok-HOST", "tok-ALICE", "refresh", "CLIENT-SECRET", "client-1"] {
        assert!(!table.contains(secret), "`{secret}` in the clear: {table}");
    }
    assert!(table.lines().all(|l| l.contains("|sb1:k1:")), "{table}");

    // A row moved to another owner does not open there; the error names whose and what,
    // never a token.
    pg.sql(
        "sb",
        &format!(
            "UPDATE switchboard_secrets SET sealed = (SELECT sealed FROM switchboard_secrets WHERE owner = '{ALICE}' \
             AND key = '{URL}') WHERE owner = '' AND key = '{URL}'"
        ),
    );
    let err = host.entry(URL).await.unwrap_err();
    assert!(matches!(err, StoreError::Database(DbError::Sealed { .. })), "{err:?}");
    let said = err.to_string();
    assert!(said.contains("the host") && said.contains(URL) && !said.contains("tok-"), "{said}");
    // A change of that row is refused too (it is not overwritten).
    assert!(host.update(URL, "up", |e| e.challenge = None).await.is_err());
    host_restore(&pg);
    host.update(URL, "up", |e| login(e, "tok-HOST-0002")).await.unwrap();

    // Two pools (two processes' worth) changing entries at once: every change lands.
    let other = Database::open(&url, ring(&[&k1])).await.unwrap();
    let mut tasks = Vec::new();
    for (i, db) in [db.clone(), other.clone()].into_iter().enumerate() {
        for t in 0..4 {
            let store = TokenStore::in_database(db.clone(), ALICE);
            tasks.push(tokio::spawn(async move {
                for n in 0..10 {
                    let url = format!("https://w{i}-{t}.example/{n}");
                    store.update(&url, "w", |e| login(e, &format!("tok-W-{i}-{t}-{n}"))).await.unwrap();
                    store
                        .update("https://shared.example/mcp", "s", |e| login(e, &format!("tok-S-{i}-{t}-{n}")))
                        .await
                        .unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(alice.entries().await.unwrap().len(), 2 + 80 + 1, "lost updates");

    // Reopened (a restarted gateway): everything is there.
    db.close().await;
    other.close().await;
    let db = Database::open(&url, ring(&[&k1])).await.unwrap();
    let alice = TokenStore::in_database(db.clone(), ALICE);
    assert_eq!(token(&alice.entry(URL).await.unwrap().unwrap()), "tok-ALICE-0001");
    assert_eq!(alice.entries().await.unwrap().len(), 83);

    // Another key ring opens nothing, and says which key it lacks.
    let stranger = Database::open(&url, ring(&[&KeyRing::new_key_line("k9").unwrap()])).await.unwrap();
    let err = TokenStore::in_database(stranger.clone(), ALICE).entry(URL).await.unwrap_err().to_string();
    assert!(err.contains("`k1`"), "{err}");
    stranger.close().await;

    // Rotation: k2 added after k1 (it opens what others seal with it), then first (it seals
    // from now on: a new login is k2's, the others still k1's, all open), then every row
    // sealed again with k2 (`switchboard store reseal`); then k1 can go.
    let k2 = KeyRing::new_key_line("k2").unwrap();
    db.close().await;
    let db = Database::open(&url, ring(&[&k1, &k2])).await.unwrap();
    assert_eq!(db.reseal().await.unwrap(), 0, "k1 still seals");
    db.close().await;
    let db = Database::open(&url, ring(&[&k2, &k1])).await.unwrap();
    TokenStore::in_database(db.clone(), ALICE).update(URL, "up", |e| e.challenge = Some("x".into())).await.unwrap();
    let table = pg.sql("sb", "SELECT sealed FROM switchboard_secrets ORDER BY sealed");
    assert_eq!(table.lines().filter(|l| l.starts_with("sb1:k2:")).count(), 1, "{table}");
    assert_eq!(TokenStore::in_database(db.clone(), ALICE).entries().await.unwrap().len(), 83);
    assert_eq!(db.reseal().await.unwrap(), 84 - 1, "every row k1 sealed");
    let table = pg.sql("sb", "SELECT sealed FROM switchboard_secrets");
    assert!(table.lines().all(|l| l.starts_with("sb1:k2:")), "{table}");
    db.close().await;
    let db = Database::open(&url, ring(&[&k2])).await.unwrap();
    let alice = TokenStore::in_database(db.clone(), ALICE);
    assert_eq!(token(&alice.entry(URL).await.unwrap().unwrap()), "tok-ALICE-0001");

    // One refresh at a time across processes: a second holder waits, and gives up after its
    // wait.
    let held = db.hold("refresh", SecretKind::Token, ALICE, URL, Duration::from_secs(5)).await.unwrap();
    let other = Database::open(&url, ring(&[&k2])).await.unwrap();
    let waited = other.hold("refresh", SecretKind::Token, ALICE, URL, Duration::from_millis(300)).await;
    assert!(waited.is_err(), "the lock was held by the first");
    drop(held);
    let again = other.hold("refresh", SecretKind::Token, ALICE, URL, Duration::from_secs(5)).await;
    assert!(again.is_ok(), "{again:?}");
    drop(again);
    other.close().await;

    // A schema newer than this binary's is refused, naming both versions.
    db.close().await;
    pg.sql(
        "sb",
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99, 'from the future', true, '\\x00', 0)",
    );
    let err = Database::open(&url, ring(&[&k2])).await.unwrap_err();
    assert!(matches!(err, DbError::NewerSchema { found: 99, .. }), "{err:?}");
    assert!(err.to_string().contains("schema version 99"), "{err}");

    // Nothing of the server is left once it is stopped.
    let pids = pg.processes();
    assert!(pids.len() > 1, "the postmaster and its children: {pids:?}");
    drop(pg);
    std::thread::sleep(Duration::from_millis(200));
    let left: Vec<i32> = pids.into_iter().filter(|p| switchboard_testkit::alive(*p)).collect();
    assert!(left.is_empty(), "postgres processes left: {left:?}");
}

/// Puts back a row the test spoiled: the host's row is deleted (a fresh login follows).
fn host_restore(pg: &Postgres) {
    pg.sql("sb", &format!("DELETE FROM switchboard_secrets WHERE owner = '' AND key = '{URL}'"));
}

#[tokio::test]
async fn a_store_that_cannot_be_reached_or_has_no_key_says_so() {
    let keys = ring(&[&KeyRing::new_key_line("k1").unwrap()]);
    let port = switchboard_testkit::free_port();
    let err = Database::open(&format!("postgres://sb:pa55word@127.0.0.1:{port}/sb"), keys).await.unwrap_err();
    let said = err.to_string();
    assert!(said.contains(&format!("127.0.0.1:{port}")) && !said.contains("pa55word"), "{said}");
    assert!(said.contains("refused"), "the cause, at once: {said}");
    let config = switchboard::store::db::StoreConfig::new("postgres://sb@127.0.0.1/sb");
    let err = config.key_ring(None).unwrap_err().to_string();
    assert!(err.contains("SWITCHBOARD_STORE_KEYS") && err.contains("no key"), "{err}");
}

/// What others' hands did to the store fails alone: one person's input value that no longer
/// opens (sealed with a key this ring lacks) leaves that value missing, not the store closed
/// to everyone; a column someone changed by hand is an error that names it, not a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_does_not_open_or_a_changed_column_fails_alone() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let url = pg.database("sb");
    let k1 = KeyRing::new_key_line("k1").unwrap();
    let file = std::path::Path::new("/etc/switchboard/team.json");
    let db = Database::open(&url, ring(&[&k1])).await.unwrap();
    db.set_input("alice", file, "jira_token", "ALICE-VALUE").await.unwrap();
    db.set_input("bob", file, "jira_token", "BOB-VALUE").await.unwrap();
    db.close().await;
    let stranger = Database::open(&url, ring(&[&KeyRing::new_key_line("k9").unwrap()])).await.unwrap();
    stranger.set_input("carol", file, "jira_token", "CAROL-VALUE").await.unwrap();
    stranger.close().await;

    let db = Database::open(&url, ring(&[&k1])).await.expect("carol's value does not close the store");
    assert_eq!(db.input_values("alice")[file]["jira_token"], "ALICE-VALUE");
    assert_eq!(db.input_values("bob")[file]["jira_token"], "BOB-VALUE");
    assert!(db.input_values("carol").is_empty(), "a value that does not open is missing");
    // Given again, it is carol's from then on (the row sealed anew with this ring's key).
    db.set_input("carol", file, "jira_token", "CAROL-AGAIN").await.unwrap();
    db.close().await;
    let db = Database::open(&url, ring(&[&k1])).await.unwrap();
    assert_eq!(db.input_values("carol")[file]["jira_token"], "CAROL-AGAIN");

    db.record_person("alice", &serde_json::json!({"subject": "alice"})).await.unwrap();
    pg.sql("sb", "ALTER TABLE switchboard_people ALTER COLUMN seen_ms TYPE text");
    let err = db.people().await.expect_err("a column of another type").to_string();
    assert!(err.contains("seen_ms") || err.contains("mismatched types"), "{err}");
    pg.sql("sb", "ALTER TABLE switchboard_secrets ALTER COLUMN sealed TYPE bytea USING sealed::bytea");
    let err = db.secret(SecretKind::Input, "alice", "x").await;
    assert!(err.is_ok(), "no row, nothing decoded: {err:?}");
    let err = TokenStore::in_database(db.clone(), ALICE).entries().await.map(|_| ());
    assert!(err.is_ok(), "no row of alice's: {err:?}");
    let err = db.secrets(SecretKind::Input, "alice").await.expect_err("bytes where text was").to_string();
    assert!(err.contains("sealed") || err.contains("mismatched types"), "{err}");
    db.close().await;
}

//! `switchboard store` and `--store` against a real PostgreSQL server: a new key line, a store
//! refused without a key ring (said, naming where one comes from), its status, a login the
//! host keeps there listed by `auth --list`, remembered approvals listed and revoked there,
//! reseal after a rotation; the password of a store's URL never printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use serde_json::Value;
use switchboard_testkit::postgres::Postgres;

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_team_store_from_the_command_line() {
    let pg = Postgres::start();
    let url = pg.database("sb");
    pg.sql("sb", "CREATE ROLE sb LOGIN PASSWORD 'pa55-word-XYZ' SUPERUSER");
    let with_password = url.replace("postgres://postgres@", "postgres://sb:pa55-word-XYZ@");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("user.json"), "{}").unwrap();
    let sb = |args: &[&str]| switchboard_testkit::switchboard(home.path()).args(args).output().unwrap();

    // A key line, checked as a ring reads it; never as JSON.
    let out = sb(&["store", "key", "k1"]);
    assert!(out.status.success(), "{}", text(&out));
    let k1 = String::from_utf8(out.stdout.clone()).unwrap().trim().to_string();
    assert!(k1.starts_with("k1:") && k1.len() == 3 + 44, "{k1}");
    assert!(!sb(&["store", "key", "k1", "--json"]).status.success());

    // Without a key ring the store is not used (nothing would be kept in the clear).
    let out = sb(&["--store", &with_password, "store", "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("SWITCHBOARD_STORE_KEYS") && said.contains("store.key_file"), "{said}");
    assert!(!said.contains("pa55-word"), "{said}");

    // With one: the schema applied, nothing held yet.
    let with_keys = |args: &[&str], keys: &str| {
        switchboard_testkit::switchboard(home.path())
            .args(["--store", &with_password])
            .args(args)
            .env("SWITCHBOARD_STORE_KEYS", keys)
            .output()
            .unwrap()
    };
    let out = with_keys(&["store", "status", "--json"], &k1);
    assert!(out.status.success(), "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["status"]["schema"], 3, "{status}");
    assert_eq!(status["status"]["people"], 0, "{status}");
    assert!(!status.to_string().contains("pa55-word"), "{status}");

    // A login kept as the host's in the store (as `switchboard auth` leaves it) is listed by
    // `auth --list` from there, its token never shown.
    let db = switchboard_testkit::postgres::Postgres::url(&pg, "sb");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let keys = switchboard::store::seal::KeyRing::parse(&k1).unwrap();
        let store = switchboard::store::db::Database::open(&db, keys).await.unwrap();
        let tokens = switchboard::auth::TokenStore::in_database(store.clone(), "");
        tokens
            .update("https://up.example/mcp", "up", |e| {
                e.credentials = Some(
                    serde_json::from_value(serde_json::json!({
                        "client_id": "c1",
                        "token_response": {"access_token": "tok-SECRET", "token_type": "Bearer"},
                        "granted_scopes": ["mcp"],
                        "token_received_at": 1
                    }))
                    .unwrap(),
                )
            })
            .await
            .unwrap();
        // And an "always" approval, as a gateway on the store remembers one.
        switchboard::policy::approvals::ApprovalStore::update_in(&store, |s| {
            s.remember("up", "launch-1", "echo", "up__echo", "definition-1", None)
        })
        .await
        .unwrap();
        store.close().await;
    });
    let out = with_keys(&["auth", "--list", "--json"], &k1);
    assert!(out.status.success(), "{}", text(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["logins"][0]["url"], "https://up.example/mcp", "{listed}");
    assert!(listed["store"].as_str().unwrap().starts_with("postgres://sb@127.0.0.1"), "{listed}");
    assert!(!listed.to_string().contains("tok-SECRET") && !listed.to_string().contains("pa55"), "{listed}");
    // The approval: listed from the store, revoked there.
    let out = with_keys(&["approvals", "--json"], &k1);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(listed["approvals"][0]["name"], "up__echo", "{listed}");
    assert!(listed["file"].is_null() && listed["store"].as_str().unwrap().starts_with("postgres://sb@"), "{listed}");
    let out = with_keys(&["approvals", "--revoke", "up__*", "--json"], &k1);
    let revoked: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(revoked["revoked"].as_array().map(Vec::len), Some(1), "{revoked}");
    let out = with_keys(&["approvals", "--json"], &k1);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["approvals"], serde_json::json!([]));
    // Nothing in the data folder.
    let data = switchboard_testkit::data_dir(home.path());
    assert!(!data.join("auth.json").exists() && !data.join("approvals.json").exists());

    // Rotation: k2 first, k1 after; reseal moves the row to k2; then k2 alone opens it.
    let k2 = text(&sb(&["store", "key", "k2"])).lines().next().unwrap().trim().to_string();
    let out = with_keys(&["store", "reseal", "--json"], &format!("{k2}\n{k1}"));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["resealed"], 1);
    let out = with_keys(&["auth", "--list", "--json"], &k2);
    assert!(out.status.success(), "{}", text(&out));
    let out = with_keys(&["store", "status"], &k2);
    assert!(text(&out).contains("1 token secret(s) sealed with key `k2`"), "{}", text(&out));

    // A store that cannot be reached: said at once, with the cause.
    let port = switchboard_testkit::free_port();
    let out = switchboard_testkit::switchboard(home.path())
        .args(["--store", &format!("postgres://sb:pa55-word-XYZ@127.0.0.1:{port}/sb"), "store", "status"])
        .env("SWITCHBOARD_STORE_KEYS", &k1)
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("refused") && !said.contains("pa55"), "{said}");
}

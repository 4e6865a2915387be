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
    assert_eq!(status["status"]["schema"], switchboard::store::db::schema_version(), "{status}");
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

/// The audit log in the team's store, from the command line: a call's record lands there
/// (no day file); a call made while the store refuses it goes on, and its record, which the
/// command could not keep, is counted on this machine, shown as pending, and said in the store
/// by the next command; a log that must be written (`audit.required`, managed) refuses calls
/// while the store refuses records, saying why; `audit --principal` and `--limit` ask the
/// store.
#[test]
fn the_audit_log_in_the_store_from_the_command_line() {
    let pg = Postgres::start();
    let url = pg.database("sb");
    let home = tempfile::tempdir().unwrap();
    let config =
        serde_json::json!({"servers": {"demo": {"command": switchboard_testkit::fixture().display().to_string()}}});
    std::fs::write(home.path().join("user.json"), config.to_string()).unwrap();
    let required = home.path().join("managed.json");
    std::fs::write(&required, serde_json::json!({"audit": {"required": true}}).to_string()).unwrap();
    let out = switchboard_testkit::switchboard(home.path()).args(["store", "key", "k1"]).output().unwrap();
    let keys = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let sb = |args: &[&str]| {
        switchboard_testkit::switchboard(home.path())
            .args(["--store", &url])
            .args(args)
            .env("SWITCHBOARD_STORE_KEYS", &keys)
            .output()
            .unwrap()
    };
    let audit = |args: &[&str]| {
        let out = sb(&[&["audit", "--json"], args].concat());
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    for n in 0..3 {
        let out = sb(&["call", "mcp__demo__echo", "--arg", &format!("text=call-{n}")]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let log = audit(&[]);
    assert_eq!(log["calls"].as_array().unwrap().len(), 3, "{log}");
    assert_eq!(log["calls"][0]["tool"], "echo", "{log}");
    let newest = audit(&["--limit", "1"]);
    assert_eq!(newest["calls"].as_array().unwrap().len(), 1, "{newest}");
    assert_eq!(newest["calls"][0]["time"], log["calls"][2]["time"], "the newest: {newest}");
    assert_eq!(audit(&["--principal", "alice"])["calls"], serde_json::json!([]), "a person's only");
    let rows = pg.sql("sb", "SELECT COUNT(*) FROM switchboard_audit WHERE kind = 'call'");
    assert_eq!(rows.trim(), "3");
    let data = switchboard_testkit::data_dir(home.path());
    let day_files = std::fs::read_dir(data.join("audit")).into_iter().flatten().flatten().count();
    assert_eq!(day_files, 0, "no day file beside the store");

    // The store refuses records: the call goes on, its record is counted here.
    pg.sql("sb", "ALTER TABLE switchboard_audit RENAME TO switchboard_audit_away");
    let out = sb(&["call", "mcp__demo__echo", "--arg", "text=while-refused"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("1 record(s) could not be written") && said.contains("switchboard_audit"), "{said}");
    // Required: refused, saying why; nothing sent.
    let out = switchboard_testkit::switchboard(home.path())
        .args(["--store", &url, "call", "mcp__demo__echo", "--arg", "text=required"])
        .env("SWITCHBOARD_STORE_KEYS", &keys)
        .env("SWITCHBOARD_MANAGED_CONFIG", &required)
        .output()
        .unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("the audit log cannot be written") && said.contains("audit.required"), "{said}");
    assert!(said.contains("switchboard_audit"), "the cause: {said}");
    pg.sql("sb", "ALTER TABLE switchboard_audit_away RENAME TO switchboard_audit");
    let pending = audit(&[]);
    assert_eq!(pending["lost_records"], 2, "the refused call's record too: {pending}");
    assert!(pending["lost"].as_array().unwrap().iter().all(|l| l["time"].is_null()), "{pending}");

    // The next command says the loss in the store.
    let out = sb(&["call", "mcp__demo__echo", "--arg", "text=after"]);
    assert!(out.status.success(), "{}", text(&out));
    let after = audit(&[]);
    assert_eq!(after["calls"].as_array().unwrap().len(), 4, "{after}");
    assert_eq!(after["lost_records"], 2, "{after}");
    assert!(after["lost"].as_array().unwrap().iter().all(|l| l["time"].is_string()), "said in the store: {after}");
    let shown = text(&sb(&["audit"]));
    assert!(shown.contains("Lost: 2 records") && shown.contains("switchboard_audit"), "{shown}");
}

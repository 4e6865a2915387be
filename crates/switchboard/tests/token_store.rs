//! The token store: file and folder permissions, no lost update when several processes write
//! at once, and a corrupt file set aside (never overwritten) and reported without its content.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use switchboard::auth::{ClientRecord, StoreError, TokenStore};

fn record(id: &str) -> ClientRecord {
    serde_json::from_value(serde_json::json!({"client_id": id, "client_secret": "s3cret-value"})).unwrap()
}

#[tokio::test]
async fn the_file_is_private_and_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let data = switchboard_testkit::data_dir(dir.path());
    let store = TokenStore::in_dir(&data);
    store.update("https://a.example/mcp", "a", |e| e.client = Some(record("client-a"))).await.unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.path().unwrap()), 0o600);
    assert_eq!(mode(&data), 0o700);
    let entry = store.entry("https://a.example/mcp").await.unwrap().unwrap();
    assert_eq!(entry.client.unwrap().client_id, "client-a");
    assert_eq!(entry.server, "a");
    // Credentials are kept by exact URL: another path on the same host is another server.
    assert!(store.entry("https://a.example/other").await.unwrap().is_none());
    // An entry left with nothing is removed; no temporary file is left behind.
    store.update("https://a.example/mcp", "a", |e| e.client = None).await.unwrap();
    assert!(store.entries().await.unwrap().is_empty());
    let names: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| !n.to_string_lossy().starts_with(".switchboard-")), "{names:?}");
}

#[tokio::test]
async fn a_corrupt_file_is_set_aside_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::in_dir(dir.path());
    let garbage = b"{\"version\": 1, \"servers\": {\"https://x/mcp\": {\"credentials\": \"tok_SECRET";
    std::fs::write(store.path().unwrap(), garbage).unwrap();
    // Reading reports it (file and position, not content) and leaves it alone.
    let err = store.entries().await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("auth.json") && text.contains("line 1") && !text.contains("SECRET"), "{text}");
    assert_eq!(std::fs::read(store.path().unwrap()).unwrap(), garbage);
    // Writing moves it aside, intact, and starts a new store.
    let aside =
        store.update("https://b/mcp", "b", |e| e.client = Some(record("client-b"))).await.unwrap().expect("set aside");
    assert_eq!(std::fs::read(&aside).unwrap(), garbage);
    assert!(aside.file_name().unwrap().to_string_lossy().starts_with("auth.json.corrupt-"));
    assert_eq!(store.entries().await.unwrap().len(), 1);
}

const WRITERS: usize = 6;
const WRITES: usize = 20;

/// Several processes update the store at once (each its own URLs, plus one shared entry whose
/// client each of them rewrites): every write survives.
#[tokio::test]
async fn concurrent_writers_lose_nothing() {
    if let Ok(spec) = std::env::var("SB_STORE_WRITER") {
        // A writer process (this same test binary, started by the parent below).
        let (dir, me) = spec.split_once(',').unwrap();
        let store = TokenStore::in_dir(std::path::Path::new(dir));
        for i in 0..WRITES {
            store
                .update(&format!("https://w{me}.example/{i}"), "w", |e| e.client = Some(record(&format!("{me}-{i}"))))
                .await
                .unwrap();
            store
                .update("https://shared.example/mcp", "shared", |e| e.client = Some(record(&format!("{me}-{i}"))))
                .await
                .unwrap();
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|me| {
            Command::new(&exe)
                .args(["--exact", "concurrent_writers_lose_nothing", "--test-threads", "1"])
                .env("SB_STORE_WRITER", format!("{},{me}", dir.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let entries = TokenStore::in_dir(dir.path()).entries().await.unwrap();
    assert_eq!(entries.len(), WRITERS * WRITES + 1, "lost updates");
    for me in 0..WRITERS {
        for i in 0..WRITES {
            let entry = &entries[&format!("https://w{me}.example/{i}")];
            assert_eq!(entry.client.as_ref().unwrap().client_id, format!("{me}-{i}"));
        }
    }
    // The shared entry holds one writer's last write.
    let last = entries["https://shared.example/mcp"].client.as_ref().unwrap().client_id.clone();
    assert!(last.ends_with(&format!("-{}", WRITES - 1)), "{last}");
}

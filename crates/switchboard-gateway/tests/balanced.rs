//! Three gateway replicas on one PostgreSQL store behind HAProxy (Debian's package: round
//! robin, no affinity of any kind), as a team runs them: the TypeScript SDK 1.x client (a
//! 2025-11-25 session for the whole run, questions on the call's stream), the 2.x client
//! (2026-07-28: questions as `input_required` rounds) and the Python SDK client each call tools
//! for a while, every 7th call one whose upstream asks its caller a question, each subscribed
//! all along to a resource of server-everything (the 1.x and Python clients on their sessions,
//! the 2.x client with `subscriptions/listen`); the replica serving the Python client's session
//! is killed with SIGKILL in the middle and started again on its port (the hardest cell: that
//! SDK stops listening on its session's stream after two refusals in a row). Counted: calls ok and
//! failed (only calls in flight on the killed replica may fail, at most one per client, since
//! each makes one call at a time), sessions that went on (the same id from start to end),
//! resource updates that reached each client after the kill, the store's audit records (every
//! call that succeeded is there), and no process of any replica left at the end (the killed
//! one's servers included).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Home;
use serde_json::{Value, json};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::issuer::{Issuer, Key};
use switchboard_testkit::{node_peers, npm_folder};

/// How long each client calls (server-everything sends its updates every 5 s).
const RUN_SECS: u64 = 17;

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Turns on server-everything's updates (every 5 s, of the resources it was subscribed to) at
/// the replica at `addr`: its own `ev` process.
async fn updates_on(addr: &str, token: &str) {
    let url = format!("http://{addr}/mcp");
    let r = common::post_mcp(&url, Some(token), None, &common::initialize()).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = r.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = common::post_mcp(&url, Some(token), Some(&session), &initialized).await;
    let toggle = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "ev__toggle-subscriber-updates", "arguments": {}}});
    let said =
        common::answered(&common::post_mcp(&url, Some(token), Some(&session), &toggle).await.text().await.unwrap());
    assert!(said["result"]["isError"] != json!(true) && said.get("result").is_some(), "{addr}: {said}");
}

/// Starts a client and waits until it says it is connected; the child, and a thread that reads
/// its report.
fn client(mut c: Command) -> std::thread::JoinHandle<(Value, String)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut said = String::new();
        let mut lines = BufReader::new(stderr).lines();
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            if line.trim() == "started" {
                let _ = tx.send(());
                break;
            }
            said.push_str(&line);
            said.push('\n');
        }
        let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
        let out = child.wait_with_output().unwrap();
        let _ = tx.send(());
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let report = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or(Value::Null);
        (report, format!("{said}{}\n{stdout}", rest.join().unwrap_or_default()))
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the client did not connect");
    handle
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_haproxy_keep_every_client_going_when_one_is_killed() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let issuer = Issuer::start(&[&Key::new("k1")]);
    // The balancer first: the replicas are told the name clients reach them by (`--host`), and
    // the identity's resource is its URL, as an operator configures them.
    let addrs: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", switchboard_testkit::free_port())).collect();
    let proxy = HaProxy::start(&addrs);
    let url = format!("{}/mcp", proxy.url());
    let public = proxy.url().trim_start_matches("http://").to_string();
    let home = Home::team_on_store(&issuer.issuer, &pg.database("sb"), json!({"resource": url}));
    // The fixture asks its caller a question in the middle of `ask`. A server shared by
    // everyone does not say which call a question is for, so while several people call it
    // the gateway gives its questions to no one (the relay's rule); each person gets their own.
    home.edit(|config| config["servers"]["fx"]["sharing"] = json!("per_principal"));
    // Shared by everyone: one server-everything per replica, whose updates reach the sessions
    // of every replica subscribed to that resource (told over the store).
    let everything = switchboard_testkit::node_peer("server-everything");
    home.edit(|config| config["servers"]["ev"] = json!({"command": "node", "args": [everything, "stdio"]}));
    let (ts1, ts2, py) = (home.api_key("ts1-bot"), home.api_key("ts2-bot"), home.api_key("py-bot"));
    let ops = home.api_key("ops");
    let replica = |addr: &str| common::http_gateway_at(&home, addr, &["--host", &public]).0;
    let mut replicas: Vec<_> = addrs.iter().map(|a| replica(a)).collect();
    proxy.wait_up(3, Duration::from_secs(30));
    for addr in &addrs {
        updates_on(addr, &ops).await;
    }

    let sdk2 = npm_folder("sdk2", &["@modelcontextprotocol/client@2.4.0"]);
    let node = |kind: &str, dir: &std::path::Path, token: &str| {
        let mut c = Command::new("node");
        c.arg(common::script("replica_client.mjs")).arg(kind).arg(dir).arg(&url).arg(token);
        c.arg(RUN_SECS.to_string());
        c
    };
    let mut python = Command::new(switchboard_testkit::python());
    python.arg("-W").arg("ignore").arg(common::script("replica_py.py"));
    python.args(["http", url.as_str(), py.as_str(), &RUN_SECS.to_string()]);
    let started = Instant::now();
    let clients = [
        ("TypeScript SDK 1.x", client(node("sdk1", &node_peers(), &ts1))),
        ("TypeScript SDK 2.x", client(node("sdk2", &sdk2, &ts2))),
        ("Python SDK", client(python)),
    ];

    // In the middle: the replica serving the Python client's session killed (the 1.x client's
    // is the other legacy session), then started again on its port.
    tokio::time::sleep(Duration::from_secs(RUN_SECS / 3)).await;
    let serving = pg.sql(
        "sb",
        "SELECT r.url FROM switchboard_sessions s JOIN switchboard_replicas r ON r.id = s.replica \
         WHERE s.state::text LIKE '%replica-py%'",
    );
    let doomed = addrs
        .iter()
        .position(|a| serving.trim().trim_end_matches('/').ends_with(a.as_str()))
        .unwrap_or_else(|| panic!("the replica serving the Python client's session: {serving:?} of {addrs:?}"));
    let killed_at = started.elapsed();
    let killed_ms = now_ms();
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(replicas[doomed].id() as i32, libc::SIGKILL) };
    let _ = replicas[doomed].0.wait();
    tokio::time::sleep(Duration::from_secs(1)).await;
    replicas[doomed] = replica(&addrs[doomed]);
    let again = Instant::now();
    proxy.wait_up(3, Duration::from_secs(30));
    let back_in = again.elapsed();
    updates_on(&addrs[doomed], &ops).await;

    let mut ok = 0;
    for (who, handle) in clients {
        let (report, said) = tokio::task::spawn_blocking(move || handle.join().unwrap()).await.unwrap();
        println!("{who}: {report}");
        assert!(report.get("error").is_none() && report["ok"].is_u64(), "{who}: {report}\n{said}");
        let (done, failed) = (report["ok"].as_u64().unwrap(), report["failed"].as_u64().unwrap());
        assert!(done >= 20, "{who}: {report}");
        assert!(report["asked"].as_u64().unwrap() >= 3, "{who}: questions were asked: {report}");
        assert!(failed <= 1, "{who}: only a call in flight on the killed replica may fail: {report}\n{said}");
        if let Some(sessions) = report["sessions"].as_array().filter(|s| s.iter().any(|s| !s.is_null())) {
            assert_eq!(sessions.len(), 1, "{who}: its session went on: {report}");
        }
        // Its subscription went on: updates came after the kill too.
        let updates: Vec<u64> = report["updates"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
        let after = updates.iter().filter(|t| **t > killed_ms + 500).count();
        println!("{who}: {} updates, {after} after the kill", updates.len());
        assert!(after >= 1, "{who}: no update of its resource came after the kill: {report}\n{said}");
        ok += done;
    }
    // Every call that succeeded is in the store's audit.
    let started = Instant::now();
    let recorded = loop {
        let n: u64 = pg.sql("sb", "SELECT COUNT(*) FROM switchboard_audit WHERE kind = 'call'").trim().parse().unwrap();
        if n >= ok || started.elapsed() > Duration::from_secs(5) {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let lost: u64 = pg.sql("sb", "SELECT COUNT(*) FROM switchboard_audit WHERE kind = 'lost'").trim().parse().unwrap();
    println!(
        "killed {} (the Python client's session's) at {killed_at:?}, back in {back_in:?}; {ok} calls ok; {recorded} audit records, {lost} loss records; \
         HAProxy:\n{}",
        addrs[doomed],
        proxy.stats_csv(),
    );
    assert!(recorded >= ok, "{recorded} audit records for {ok} calls that succeeded");
    let states = proxy.states();
    assert_eq!(states.len(), 3, "{states:?}");
    // Nothing of any replica is left once they are gone, the killed one's servers included
    // (its supervisors ended them): counted through /proc by the fixture's marker.
    drop(replicas);
    let left = switchboard_testkit::wait_gone(&home.marker, Duration::from_secs(15));
    assert!(left.is_empty(), "left after the replicas ended: {left:?}");
}

//! No process outlives `switchboard`, however it ends: each test starts the fixture with a
//! process tree that tries to escape (`--forks plain`: a child and a `setsid` grandchild;
//! `--forks hostile`: also a grandchild with an empty environment and a double-forked daemon,
//! all ignoring SIGINT/SIGTERM/SIGHUP/SIGQUIT), checks through `/proc` that every process of
//! it runs (by the marker in their argv, which no environment change removes), ends the CLI one
//! way, and checks that every one of them is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use switchboard_testkit::{fixture, unique_marker, wait_exactly, wait_gone};

/// How many processes carry the marker: the server and its sleepers.
const PLAIN: usize = 4;
const HOSTILE: usize = 8;
const KINDS: [(&str, usize); 2] = [("plain", PLAIN), ("hostile", HOSTILE)];

fn sb(home: &Path) -> Command {
    let mut c = switchboard_testkit::switchboard(home);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// A config with one fixture server `f` that starts a `kind` tree marked `marker`.
fn config(home: &Path, kind: &str, marker: &str, extra: &[&str]) -> PathBuf {
    config_in(home, kind, marker, extra, None)
}

/// [`config`] with the server's `sandbox` block.
fn config_in(home: &Path, kind: &str, marker: &str, extra: &[&str], sandbox: Option<serde_json::Value>) -> PathBuf {
    let mut args = vec!["--forks", kind, "--marker", marker];
    args.extend_from_slice(extra);
    let mut f = serde_json::json!({"command": fixture().display().to_string(), "args": args});
    if let Some(s) = sandbox {
        f["sandbox"] = s;
    }
    let cfg = serde_json::json!({"servers": {"f": f}});
    let path = home.join(format!("{marker}.json"));
    std::fs::write(&path, cfg.to_string()).unwrap();
    path
}

/// Starts `switchboard --config CFG <args>` and waits until the whole tree runs.
fn start(home: &Path, cfg: &Path, args: &[&str], expected: usize, marker: &str) -> Child {
    let child = sb(home).arg("--config").arg(cfg).args(args).spawn().unwrap();
    // Exactly: the hostile tree's double fork has a middle process for a moment.
    let running = wait_exactly(marker, expected, Duration::from_secs(30));
    assert_eq!(running.len(), expected, "the tree did not start whole: {running:?}");
    child
}

fn signal(child: &Child, s: Signal) {
    kill(Pid::from_raw(child.id() as i32), s).unwrap();
}

/// Every process of the tree is gone (the supervisor's sequence takes at most ~1.5 s).
fn assert_all_gone(marker: &str, what: &str) {
    let left = wait_gone(marker, Duration::from_secs(10));
    assert!(left.is_empty(), "{what}: processes left behind: {left:?}");
}

#[test]
fn list_exiting_normally_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    for (kind, n) in KINDS {
        let marker = unique_marker(kind);
        // A slow handshake, so the whole tree is seen running before `list` ends.
        let cfg = config(home.path(), kind, &marker, &["--init-delay-ms", "1000"]);
        let mut child = start(home.path(), &cfg, &["list"], n, &marker);
        let status = child.wait().unwrap();
        assert!(status.success(), "{kind}: {status:?}");
        assert_all_gone(&marker, kind);
    }
}

#[test]
fn a_signal_during_a_call_ends_every_process_and_exits_with_its_code() {
    let home = tempfile::tempdir().unwrap();
    for (sig, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143), (Signal::SIGHUP, 129), (Signal::SIGQUIT, 131)] {
        for (kind, n) in KINDS {
            let marker = unique_marker(kind);
            let cfg = config(home.path(), kind, &marker, &[]);
            let mut child = start(home.path(), &cfg, &["call", "mcp__f__slow", "--arg", "ms=60000"], n, &marker);
            std::thread::sleep(Duration::from_millis(300));
            signal(&child, sig);
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(code), "{sig} ({kind}): {status:?}");
            assert_all_gone(&marker, &format!("{sig} ({kind})"));
        }
    }
}

#[test]
fn sigkill_during_list_or_a_call_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    for (kind, n) in KINDS {
        // `list` still waiting for the server's handshake.
        let marker = unique_marker(kind);
        let cfg = config(home.path(), kind, &marker, &["--init-delay-ms", "60000"]);
        let mut child = start(home.path(), &cfg, &["list"], n, &marker);
        signal(&child, Signal::SIGKILL);
        child.wait().unwrap();
        assert_all_gone(&marker, &format!("SIGKILL of list ({kind})"));
        // A call in flight.
        let marker = unique_marker(kind);
        let cfg = config(home.path(), kind, &marker, &[]);
        let mut child = start(home.path(), &cfg, &["call", "mcp__f__slow", "--arg", "ms=60000"], n, &marker);
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, Signal::SIGKILL);
        child.wait().unwrap();
        assert_all_gone(&marker, &format!("SIGKILL of call ({kind})"));
    }
}

#[test]
fn serve_killed_or_terminated_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    for sig in [Signal::SIGKILL, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        for (kind, n) in KINDS {
            let marker = unique_marker(kind);
            let cfg = config(home.path(), kind, &marker, &[]);
            let mut child = start(home.path(), &cfg, &["serve", "--port", "0"], n, &marker);
            signal(&child, sig);
            let status = child.wait().unwrap();
            if sig != Signal::SIGKILL {
                // Caught, the servers closed, and 128 + the signal, as README says.
                assert_eq!(status.code(), Some(128 + sig as i32), "serve after {sig}: {status:?}");
            }
            assert_all_gone(&marker, &format!("{sig} of serve ({kind})"));
        }
    }
}

#[test]
fn two_hundred_lists_with_three_servers_leave_no_process() {
    let home = tempfile::tempdir().unwrap();
    let marker = unique_marker("cycles");
    let servers: serde_json::Map<String, serde_json::Value> = (0..3)
        .map(|i| {
            let args = ["--forks", "plain", "--marker", &marker];
            (format!("s{i}"), serde_json::json!({"command": fixture().display().to_string(), "args": args}))
        })
        .collect();
    let cfg = home.path().join("three.json");
    std::fs::write(&cfg, serde_json::json!({ "servers": servers }).to_string()).unwrap();
    for i in 0..200 {
        let out =
            sb(home.path()).arg("--config").arg(&cfg).args(["list", "--json"]).stdout(Stdio::piped()).output().unwrap();
        assert!(out.status.success(), "list {i}: {:?}", out.status);
        if i == 0 {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let connected =
                v["servers"].as_array().unwrap().iter().filter(|s| s["status"]["state"] == "connected").count();
            assert_eq!(connected, 3, "{v}");
        }
    }
    assert_all_gone(&marker, "after 200 lists");
    // Nothing was left in the record of running servers either.
    let run = switchboard_testkit::data_dir(home.path()).join("run");
    let records: Vec<_> = std::fs::read_dir(&run).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(records.is_empty(), "records left in {}: {records:?}", run.display());
}

/// `serve` on a free port: the child, its address and its token.
fn serve(home: &Path, cfg: &Path, n: usize, marker: &str) -> (Child, String, String) {
    let mut child =
        sb(home).arg("--config").arg(cfg).args(["serve", "--port", "0"]).stdout(Stdio::piped()).spawn().unwrap();
    let addr = switchboard_testkit::serve_address(&mut child);
    let token =
        std::fs::read_to_string(switchboard_testkit::data_dir(home).join("serve-token")).unwrap().trim().to_string();
    assert_eq!(wait_exactly(marker, n, Duration::from_secs(30)).len(), n, "the tree did not start whole");
    (child, addr, token)
}

/// Sends one HTTP/1.1 request and reads the whole answer on a thread (streams end when the
/// server closes them).
fn request(addr: &str, token: &str, line: &str, body: Option<&str>, accept: &str) -> std::thread::JoinHandle<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{line} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: {accept}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    })
}

#[test]
fn serve_stops_within_two_seconds_of_sigterm_with_a_stream_a_call_and_a_question_open() {
    let home = tempfile::tempdir().unwrap();
    let marker = unique_marker("serve-open");
    let cfg = config(home.path(), "hostile", &marker, &[]);
    let (mut child, addr, token) = serve(home.path(), &cfg, HOSTILE, &marker);
    let events = request(&addr, &token, "GET /api/events", None, "text/event-stream");
    // The server connects in the background: wait for its tools.
    let started = std::time::Instant::now();
    while !request(&addr, &token, "GET /api/tools", None, "application/json").join().unwrap().contains("mcp__f__slow") {
        assert!(started.elapsed() < Duration::from_secs(20), "the server did not connect");
        std::thread::sleep(Duration::from_millis(50));
    }
    let call = request(
        &addr,
        &token,
        "POST /api/tools/mcp__f__slow/call",
        Some(r#"{"arguments":{"ms":60000}}"#),
        "text/event-stream",
    );
    let question =
        request(&addr, &token, "POST /api/tools/mcp__f__ask/call", Some(r#"{"arguments":{}}"#), "application/json");
    while !request(&addr, &token, "GET /api/elicitations", None, "application/json")
        .join()
        .unwrap()
        .contains("Who is calling?")
    {
        assert!(started.elapsed() < Duration::from_secs(20), "the question was not asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped = std::time::Instant::now();
    signal(&child, Signal::SIGTERM);
    let status = child.wait().unwrap();
    let took = stopped.elapsed();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert!(took < Duration::from_secs(2), "serve took {took:?} to stop");
    let events = events.join().unwrap();
    assert!(events.contains("event: shutdown"), "the event stream got no last event: {events}");
    let call = call.join().unwrap();
    assert!(
        call.contains("event: error") && call.contains("switchboard is stopping"),
        "the call was not ended: {call}"
    );
    let question = question.join().unwrap();
    assert!(
        question.starts_with("HTTP/1.1 503") && question.contains("\"stopping\""),
        "the question's call was not ended: {question}"
    );
    assert_all_gone(&marker, "after serve stopped");
}

/// Servers in a network namespace of their own (`network: false`) or behind switchboard's proxy
/// (`allowedDomains`: the namespace plus the proxy's listening socket handed to the host): the
/// whole tree, escapes included, ends with a `serve` killed or terminated, as a tree sharing
/// the host's network does.
#[test]
fn servers_in_a_network_namespace_leave_no_process() {
    let home = tempfile::tempdir().unwrap();
    let sandboxes = [
        ("network: false", serde_json::json!({"network": false})),
        ("allowedDomains", serde_json::json!({"network": {"allowedDomains": ["example.com"]}})),
    ];
    for (what, sandbox) in sandboxes {
        for sig in [Signal::SIGKILL, Signal::SIGTERM] {
            for (kind, n) in KINDS {
                let marker = unique_marker(kind);
                let cfg = config_in(home.path(), kind, &marker, &[], Some(sandbox.clone()));
                let mut child = start(home.path(), &cfg, &["serve", "--port", "0"], n, &marker);
                signal(&child, sig);
                child.wait().unwrap();
                assert_all_gone(&marker, &format!("{sig} of serve ({kind}, {what})"));
            }
        }
    }
}

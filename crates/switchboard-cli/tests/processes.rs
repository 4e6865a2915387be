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

use assert_cmd::cargo::CommandCargoExt;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use switchboard_testkit::{fixture, unique_marker, wait_count, wait_gone};

/// How many processes carry the marker: the server and its sleepers.
const PLAIN: usize = 4;
const HOSTILE: usize = 8;
const KINDS: [(&str, usize); 2] = [("plain", PLAIN), ("hostile", HOSTILE)];

fn sb(home: &Path) -> Command {
    let mut c = Command::cargo_bin("switchboard").unwrap();
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("data"))
        .env_remove("RUST_LOG")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// A config with one fixture server `f` that starts a `kind` tree marked `marker`.
fn config(home: &Path, kind: &str, marker: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["--forks", kind, "--marker", marker];
    args.extend_from_slice(extra);
    let cfg = serde_json::json!({"servers": {"f": {"command": fixture().display().to_string(), "args": args}}});
    let path = home.join(format!("{marker}.json"));
    std::fs::write(&path, cfg.to_string()).unwrap();
    path
}

/// Starts `switchboard --config CFG <args>` and waits until the whole tree runs.
fn start(home: &Path, cfg: &Path, args: &[&str], expected: usize, marker: &str) -> Child {
    let child = sb(home).arg("--config").arg(cfg).args(args).spawn().unwrap();
    let running = wait_count(marker, expected, Duration::from_secs(30));
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
        let cfg = config(home.path(), kind, &marker, &["--init-delay-ms", "300"]);
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
    for sig in [Signal::SIGKILL, Signal::SIGTERM, Signal::SIGINT] {
        for (kind, n) in KINDS {
            let marker = unique_marker(kind);
            let cfg = config(home.path(), kind, &marker, &[]);
            let mut child = start(home.path(), &cfg, &["serve", "--port", "0"], n, &marker);
            signal(&child, sig);
            let status = child.wait().unwrap();
            if sig != Signal::SIGKILL {
                assert!(status.success(), "serve after {sig}: {status:?}");
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
    let run = home.path().join("data/run");
    let records: Vec<_> = std::fs::read_dir(&run).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(records.is_empty(), "records left in {}: {records:?}", run.display());
}

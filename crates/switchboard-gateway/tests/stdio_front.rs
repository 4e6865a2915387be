//! The stdio front as a client's bytes meet it: every line that cannot be taken is answered
//! (with its id when it can be read), a request whose id is in flight is refused at once and
//! the first one still answered, and a client that sends without reading its answers meets a
//! full pipe instead of the gateway's memory growing. Raw bytes over the gateway's own stdin
//! and stdout, no SDK in between.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use common::{Home, Killed};
use serde_json::{Value, json};

/// The gateway on stdio, initialized: the process, its stdin, its stdout as lines.
fn gateway(home: &Home) -> (Killed, ChildStdin, BufReader<ChildStdout>) {
    let mut child = std::process::Command::new(switchboard_testkit::cli())
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(&home.config)
        .arg("gateway")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A gateway that never answers ends the test instead of hanging it: stdout ends.
    let pid = child.id() as i32;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(180));
        // SAFETY: a plain syscall on the child's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let answer = read(&mut stdout);
    assert_eq!(answer["id"], 0, "{answer}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    (Killed(child), stdin, stdout)
}

fn read(stdout: &mut BufReader<ChildStdout>) -> Value {
    let mut line = String::new();
    assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The next message that answers something (notifications skipped).
fn answer(stdout: &mut BufReader<ChildStdout>) -> Value {
    loop {
        let v = read(stdout);
        if v.get("method").is_none() {
            return v;
        }
    }
}

#[test]
fn every_line_that_cannot_be_taken_is_answered() {
    let home = Home::new(false);
    let (_gateway, mut stdin, mut stdout) = gateway(&home);
    let nested = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{{\"x\":{}1{}}}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let mut lines: Vec<(Vec<u8>, Value, i64)> = vec![
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}".to_vec(),
            json!(1),
            -32700,
        ),
        (br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"\ud800"}}"#.to_vec(), json!(2), -32700),
        (nested.into_bytes(), json!(3), -32700),
        (b"this is not json".to_vec(), Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":"s5","params":{}}"#.to_vec(), json!("s5"), -32600),
    ];
    // A line over 16 MiB, its id first.
    let mut big =
        br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":""#.to_vec();
    big.resize(big.len() + 17 * 1024 * 1024, b'a');
    big.extend_from_slice(br#""}}}"#);
    lines.push((big, json!(6), -32600));
    for (line, id, code) in lines {
        stdin.write_all(&line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let started = Instant::now();
        let a = answer(&mut stdout);
        assert_eq!(a["id"], id, "{a}");
        assert_eq!(a["error"]["code"], code, "{a}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    // The session goes on.
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})).unwrap();
    let a = answer(&mut stdout);
    assert_eq!(a["id"], 7);
    assert!(a["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{a}");
}

#[test]
fn a_request_whose_id_is_in_flight_is_refused_and_the_first_still_answered() {
    let home = Home::new(false);
    let (_gateway, mut stdin, mut stdout) = gateway(&home);
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"ms": 300, "steps": 1}}});
    writeln!(stdin, "{slow}").unwrap();
    writeln!(stdin, "{slow}").unwrap();
    let first = answer(&mut stdout);
    assert_eq!((first["id"].clone(), first["error"]["code"].clone()), (json!(5), json!(-32600)), "{first}");
    assert!(first["error"]["message"].as_str().unwrap_or_default().contains("in flight"), "{first}");
    let second = answer(&mut stdout);
    assert_eq!(second["id"], 5, "{second}");
    assert!(second["result"]["content"].to_string().contains("slept"), "{second}");
    // Once answered, the id may be used again.
    writeln!(stdin, "{slow}").unwrap();
    let again = answer(&mut stdout);
    assert!(again["result"].is_object(), "{again}");
}

/// 10,000 pipelined calls whose answers are not read (before: the gateway grew from 23 to
/// 354 MB): the writer meets a full pipe, the gateway stays small, and once the answers are
/// read every call has one.
#[test]
fn a_client_that_does_not_read_meets_a_full_pipe() {
    const CALLS: usize = 10_000;
    let home = Home::new(false);
    let (gateway, mut stdin, mut stdout) = gateway(&home);
    let pid = gateway.id();
    let before = switchboard_testkit::rss_kib(pid);
    let writer = std::thread::spawn(move || {
        for i in 0..CALLS {
            let call = json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                "params": {"name": "fx__echo", "arguments": {"text": "x".repeat(200)}}});
            if writeln!(stdin, "{call}").is_err() {
                return i;
            }
        }
        stdin.flush().ok();
        std::mem::forget(stdin);
        CALLS
    });
    // Nothing read for a while: the writer is stopped by the pipe.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!writer.is_finished(), "all {CALLS} requests were taken with no answer read");
    let held = switchboard_testkit::rss_kib(pid);
    let mut answered = 0;
    while answered < CALLS {
        let a = answer(&mut stdout);
        assert!(a["result"].is_object(), "{a}");
        answered += 1;
    }
    assert_eq!(writer.join().unwrap(), CALLS);
    println!("rss before {before} KiB, while the client did not read {held} KiB; {answered} answers");
    assert!(held < before + 64 * 1024, "the gateway grew from {before} to {held} KiB");
}

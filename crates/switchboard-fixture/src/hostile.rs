//! `--hostile`: the tool `attempt`, which tries what a sandbox must stop (read a file, write
//! one, connect over TCP, send over UDP), by itself or from a child process it starts
//! (`switchboard-fixture --attempt WHAT TARGET`), and says what happened. A refusal is also
//! logged on stderr as servers do (`EACCES: permission denied, open '…'`), so the host can
//! tell the person what was refused.

use std::time::Duration;

use serde_json::{Value, json};

/// The tool's definition.
pub(crate) fn tool() -> Value {
    json!({
        "name": "attempt",
        "description": "Tries to read or write a file, or reach an address (tcp and udp: host:port; http: a URL, through HTTP_PROXY when set), or takes memory (MiB) \
                        or processes (a count), \
                        itself or from a child process (`child`), and says `ok: …` or `refused: …`.",
        "inputSchema": {"type": "object", "required": ["what", "target"], "properties": {
            "what": {"type": "string", "enum": ["read", "write", "tcp", "udp", "http", "memory", "processes", "env"]},
            "target": {"type": "string"},
            "child": {"type": "boolean"},
        }},
    })
}

/// Runs the tool with `args`.
pub(crate) fn call(args: &serde_json::Map<String, Value>) -> String {
    let what = args.get("what").and_then(Value::as_str).unwrap_or("");
    let target = args.get("target").and_then(Value::as_str).unwrap_or("");
    if args.get("child").and_then(Value::as_bool) == Some(true) {
        let out = std::env::current_exe().and_then(|exe| {
            // Its complaints go where the server's go (the host reads them).
            let mut cmd = std::process::Command::new(exe);
            cmd.args(["--attempt", what, target]).stderr(std::process::Stdio::inherit()).output()
        });
        return match out {
            Ok(o) => format!("child: {}", String::from_utf8_lossy(&o.stdout).trim()),
            Err(e) => format!("refused: the child could not start: {e}"),
        };
    }
    attempt(what, target)
}

/// `GET url` (an `http://` URL), through `HTTP_PROXY` when it is set: the status line, or the
/// status as an error when it is not 2xx.
fn http(url: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").ok_or_else(|| std::io::Error::other("not an http:// URL"))?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let proxy = std::env::var("HTTP_PROXY")
        .ok()
        .and_then(|p| p.strip_prefix("http://").map(|p| p.trim_end_matches('/').to_string()));
    let (connect_to, target) = match &proxy {
        Some(p) => (p.clone(), url.to_string()),
        None => (authority.to_string(), format!("/{}", rest.split_once('/').map_or("", |(_, p)| p))),
    };
    let mut s = std::net::TcpStream::connect(&connect_to)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let status = answer.lines().next().unwrap_or_default().to_string();
    if status.split(' ').nth(1).is_some_and(|c| c.starts_with('2')) {
        Ok(status)
    } else {
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default().trim().to_string();
        Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("{status}: {body}")))
    }
}

/// Takes `mib` MiB of memory (written, so resident) and holds it for ten seconds.
fn memory(mib: &str) -> std::io::Result<String> {
    let mib: usize = mib.parse().map_err(std::io::Error::other)?;
    let mut held = vec![0u8; mib * 1024 * 1024];
    for i in (0..held.len()).step_by(4096) {
        held[i] = 1;
    }
    std::thread::sleep(Duration::from_secs(10));
    Ok(format!("held {} MiB", held.len() / (1024 * 1024)))
}

/// Starts `n` children that sleep, and waits for them (ten seconds).
fn processes(n: &str) -> std::io::Result<String> {
    let n: usize = n.parse().map_err(std::io::Error::other)?;
    let mut children = Vec::new();
    for _ in 0..n {
        children.push(std::process::Command::new("sleep").arg("10").spawn()?);
    }
    for c in &mut children {
        c.wait()?;
    }
    Ok(format!("{n} children ran"))
}

/// One attempt: `ok: …` or `refused: …` (and the refusal on stderr).
pub(crate) fn attempt(what: &str, target: &str) -> String {
    let outcome = match what {
        "read" => std::fs::read(target).map(|b| format!("read {} bytes", b.len())),
        "write" => std::fs::write(target, b"written by the fixture\n").map(|()| "written".to_string()),
        "tcp" => target
            .parse()
            .map_err(std::io::Error::other)
            .and_then(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(3)))
            .map(|_| "connected".to_string()),
        "udp" => std::net::UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.send_to(b"fixture", target))
            .map(|n| format!("sent {n} bytes")),
        "http" => http(target),
        "memory" => memory(target),
        // What a careless server does with the secrets it was given.
        "env" => std::env::var(target).map_err(std::io::Error::other),
        "processes" => processes(target),
        other => Err(std::io::Error::other(format!("unknown attempt {other}"))),
    };
    match outcome {
        Ok(done) => format!("ok: {done}"),
        Err(e) => {
            let code = match e.kind() {
                std::io::ErrorKind::PermissionDenied => "EACCES: permission denied",
                _ => "error",
            };
            eprintln!(
                "{code}, {} '{target}' ({e})",
                if what == "read" || what == "write" { "open" } else { "connect" }
            );
            format!("refused: {e}")
        }
    }
}

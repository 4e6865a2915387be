//! What the fixture does past rmcp, for the tests of bounds and broken servers: answers no
//! client can decode, a stdout that closes under a live process, a stderr line without end,
//! notifications without end.

use std::io::Write;
use std::time::Duration;

use rmcp::model::RequestId;
use rmcp::{Peer, RoleServer};

/// Writes an answer to request `id` that cannot be decoded: `utf8` (invalid UTF-8 in a
/// string), `deep` (nested 300 levels), `shape` (JSON that is no tool result).
pub fn write_bad_answer(kind: &str, id: &RequestId) {
    let id = serde_json::to_string(id).unwrap_or_default();
    let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes();
    match kind {
        "deep" => line.extend(format!("{}1{}}}", "[".repeat(300), "]".repeat(300)).bytes()),
        "shape" => line.extend(br#"{"content":"not a list"}}"#),
        _ => line.extend(b"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}}"),
    }
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

/// Closes stdout a moment after the answer went, and lives on: the host sees its transport
/// end with no exit. rmcp writes through its own reopened descriptor of the pipe, so every
/// descriptor of this process that is that pipe is closed.
pub fn close_stdout_soon() {
    tokio::spawn(async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let pipe = std::fs::read_link("/proc/self/fd/1").ok();
        let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
            .unwrap_or_default();
        for fd in fds {
            if pipe.is_some() && std::fs::read_link(format!("/proc/self/fd/{fd}")).ok() == pipe {
                let _ = nix::unistd::close(fd);
            }
        }
    });
}

/// Prints `mb` MiB on stderr with no newline (then one), from a thread.
pub fn long_stderr_line(mb: usize) {
    std::thread::spawn(move || {
        let chunk = vec![b'x'; 1024 * 1024];
        let mut err = std::io::stderr().lock();
        for _ in 0..mb {
            if err.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = err.write_all(b" end of the long line\n");
    });
}

/// Sends log notifications as fast as the host takes them, until it goes.
#[allow(deprecated)]
pub fn flood(peer: Peer<RoleServer>) {
    tokio::spawn(async move {
        let mut n: u64 = 0;
        loop {
            n += 1;
            let param = rmcp::model::LoggingMessageNotificationParam::new(
                rmcp::model::LoggingLevel::Info,
                serde_json::json!(format!("flood {n}")),
            );
            if peer.notify_logging_message(param).await.is_err() {
                return;
            }
        }
    });
}

/// `--garbage-answers SEED`: no MCP server at all, but something that answers like a broken
/// one: after a real handshake and tool list, each request gets (by the seed) random bytes,
/// JSON of the wrong shape, an answer with another id, an answer nested too deep, a flood of
/// notifications, a long line, nothing at all, or now and then a right answer.
pub fn garbage_server(seed: u64) -> ! {
    use std::io::BufRead;
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_slice::<serde_json::Value>(&line) else { continue };
        let Some(id) = msg.get("id").cloned() else { continue };
        let method = msg.get("method").and_then(|m| m.as_str()).unwrap_or("");
        let id_text = id.to_string();
        let reply: Vec<u8> = match method {
            "initialize" => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbage", "version": "0"}}})
            .to_string()
            .into_bytes(),
            "tools/list" => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "any", "inputSchema": {"type": "object"}}]}})
            .to_string()
            .into_bytes(),
            _ => match next() % 10 {
                0 => (0..(next() % 300)).map(|_| next() as u8).collect(),
                1 => format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{{"content":"nope"}}}}"#).into_bytes(),
                2 => format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#, next() % 1000 + 10_000).into_bytes(),
                3 => format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{}1{}}}"#, "[".repeat(500), "]".repeat(500))
                    .into_bytes(),
                4 => (0..2000)
                    .map(|i| format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{i}}}}}"#))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into_bytes(),
                5 => format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#, "x".repeat(100_000))
                    .into_bytes(),
                6 => Vec::new(),
                7 => format!(r#"{{"jsonrpc":"2.0","id":{id_text},"error":{{"code":"x","message":7}}}}"#).into_bytes(),
                8 => b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec(),
                _ => format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{{"content":[{{"type":"text","text":"fine"}}]}}}}"#)
                    .into_bytes(),
            },
        };
        if !reply.is_empty() {
            let _ = out.write_all(&reply);
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
    }
    std::process::exit(0)
}

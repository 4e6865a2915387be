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

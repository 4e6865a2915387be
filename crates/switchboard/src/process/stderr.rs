//! A server's stderr: read continuously (a chatty server never blocks on a full pipe), logged
//! at debug, and its last lines kept for error messages. A line is held to at most 4 KiB
//! while it is read (the rest of a longer one is skipped as it comes, never buffered), so a
//! server printing a gigabyte without a newline costs the host nothing.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// Longest line kept, in bytes; longer lines are cut (a server may print a megabyte of JSON).
const MAX_LINE: usize = 4096;

/// The last `capacity` lines of a server's stderr.
#[derive(Debug)]
pub struct StderrTail {
    capacity: usize,
    lines: Mutex<VecDeque<String>>,
    closed: std::sync::atomic::AtomicBool,
}

impl StderrTail {
    /// An empty tail keeping `capacity` lines.
    pub fn new(capacity: usize) -> Self {
        StderrTail { capacity, lines: Mutex::new(VecDeque::with_capacity(capacity)), closed: Default::default() }
    }

    /// Adds a line, dropping the oldest when full.
    pub fn push(&self, mut line: String) {
        if line.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        let mut lines = self.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == self.capacity {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Waits at most `d` for the pipe to reach its end (after an exit, so the last lines
    /// a dying server wrote are in the tail before anyone reports them).
    pub async fn settled(&self, d: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + d;
        while !self.closed.load(std::sync::atomic::Ordering::Acquire) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }
}

/// Reads `pipe` to its end, line by line (lossy UTF-8), into `tail`.
/// Each line also goes to `refusals` (a sandboxed server's permission errors are told).
pub(super) async fn drain(
    server: String,
    pipe: ChildStderr,
    tail: std::sync::Arc<StderrTail>,
    refusals: Option<std::sync::Arc<crate::sandbox::Refusals>>,
) {
    let keep =
        |server: &str, tail: &StderrTail, bytes: &[u8], cut: bool| keep(server, tail, bytes, cut, refusals.as_deref());
    let mut reader = BufReader::with_capacity(64 * 1024, pipe);
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = false;
    loop {
        let (consumed, ended) = match reader.fill_buf().await {
            Ok([]) | Err(_) => {
                if !line.is_empty() {
                    keep(&server, &tail, &line, cut);
                }
                tail.closed.store(true, std::sync::atomic::Ordering::Release);
                return;
            }
            Ok(available) => {
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let room = (MAX_LINE + 1).saturating_sub(line.len());
                line.extend_from_slice(&available[..take.min(room)]);
                cut |= take > room;
                (take, newline.is_some())
            }
        };
        reader.consume(consumed);
        if ended {
            keep(&server, &tail, &line, cut);
            line.clear();
            cut = false;
        }
    }
}

fn keep(server: &str, tail: &StderrTail, bytes: &[u8], cut: bool, refusals: Option<&crate::sandbox::Refusals>) {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    tracing::debug!(target: "switchboard::stderr", server = %server, "{}", crate::text::for_terminal(text));
    let mut text = text.to_string();
    if cut && text.len() <= MAX_LINE {
        text.push('…');
    }
    if let Some(r) = refusals {
        r.line(&text);
    }
    tail.push(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_cuts_long_ones() {
        let tail = StderrTail::new(3);
        for i in 0..10 {
            tail.push(format!("line {i}"));
        }
        assert_eq!(tail.lines(), vec!["line 7", "line 8", "line 9"]);
        tail.push("é".repeat(MAX_LINE));
        assert!(tail.lines()[2].len() <= MAX_LINE + '…'.len_utf8());
    }
}

//! A server's stderr: read continuously (a chatty server never blocks on a full pipe), logged
//! at debug, and its last lines kept for error messages.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// Longest line kept, in bytes; longer lines are cut (a server may print a megabyte of JSON).
const MAX_LINE: usize = 2000;

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
pub(super) async fn drain(server: String, pipe: ChildStderr, tail: std::sync::Arc<StderrTail>) {
    let mut reader = BufReader::with_capacity(64 * 1024, pipe);
    let mut buf = Vec::with_capacity(256);
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => {
                tail.closed.store(true, std::sync::atomic::Ordering::Release);
                break;
            }
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                tracing::debug!(target: "switchboard::stderr", server = %server, "{line}");
                tail.push(line.to_string());
            }
        }
    }
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

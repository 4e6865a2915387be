//! Newline-delimited JSON-RPC read within a bound, for both ends of stdio (a server's stdout
//! read by the hub, a client's stdin read by the gateway): a line over the limit is skipped
//! as it comes, never held whole, with its first bytes kept so the request it names can be
//! answered ([`message_id`]).

use rmcp::model::{NumberOrString, RequestId};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// How much of a line over the limit is kept (to find its `id`).
pub const HEAD: usize = 1024;

/// The largest line buffer kept between messages (a 1 MiB result makes one of 2 MiB).
const KEEP_BUFFER: usize = 4 * 1024 * 1024;

/// What [`Lines::read`] found.
#[derive(Debug)]
pub enum Line {
    /// A whole line, in [`Lines::line`] (with its newline, if it had one).
    Whole,
    /// A line over the limit: its first [`HEAD`] bytes and its size.
    Oversized {
        /// Its first bytes.
        head: Vec<u8>,
        /// Its whole size.
        size: usize,
    },
}

/// Lines of at most `max` bytes from a reader.
#[derive(Debug)]
pub struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of a line over `max`: its first bytes and its size so far.
    skipping: Option<(Vec<u8>, usize)>,
    /// `line` holds a whole line, handed out by the last `read`.
    whole: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of at most `max` bytes, read through a buffer of `capacity`.
    pub fn new(reader: R, max: usize, capacity: usize) -> Lines<R> {
        Lines {
            reader: BufReader::with_capacity(capacity, reader),
            line: Vec::new(),
            max,
            skipping: None,
            whole: false,
        }
    }

    /// The next line. `None` at the end of the stream (or when reading fails: `Err` says
    /// why). Cancel-safe: what was read of a line is kept for the next call.
    pub async fn read(&mut self) -> Result<Option<Line>, std::io::Error> {
        self.clear();
        loop {
            let (consumed, done) = {
                let available = self.reader.fill_buf().await?;
                if available.is_empty() {
                    // A last line without its newline is still a line.
                    self.whole = !self.line.is_empty();
                    return Ok(self.whole.then_some(Line::Whole));
                }
                let newline = memchr::memchr(b'\n', available);
                let take = newline.map_or(available.len(), |i| i + 1);
                if let Some((head, size)) = &mut self.skipping {
                    *size += take;
                    (take, newline.map(|_| Line::Oversized { head: std::mem::take(head), size: *size }))
                } else if self.line.len() + take > self.max {
                    // Over the limit: keep the first bytes (for the id), let go of the rest.
                    let size = self.line.len() + take;
                    let mut head = self.line[..self.line.len().min(HEAD)].to_vec();
                    let more = HEAD.saturating_sub(head.len()).min(take);
                    head.extend_from_slice(&available[..more]);
                    self.line = Vec::new();
                    match newline {
                        Some(_) => (take, Some(Line::Oversized { head, size })),
                        None => {
                            self.skipping = Some((head, size));
                            (take, None)
                        }
                    }
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| Line::Whole))
                }
            };
            self.reader.consume(consumed);
            if let Some(line) = done {
                match line {
                    Line::Oversized { .. } => self.skipping = None,
                    Line::Whole => self.whole = true,
                }
                return Ok(Some(line));
            }
        }
    }

    /// The whole line last read ([`Line::Whole`]); empty once cleared.
    pub fn line(&self) -> &[u8] {
        if self.whole { &self.line } else { &[] }
    }

    /// Forgets the whole line read, keeping the buffer for the next one (a server that sends
    /// big messages tends to send more) unless a very big one made it very big. (A line being
    /// read, a `read` cancelled halfway, is kept.)
    pub fn clear(&mut self) {
        if !std::mem::take(&mut self.whole) {
            return;
        }
        self.line.clear();
        if self.line.capacity() > KEEP_BUFFER {
            self.line = Vec::new();
        }
    }
}

/// The top-level `"id"` of a JSON-RPC message, read from its first bytes (which is all that is
/// kept of a line over the limit, and which may not be valid JSON as a whole).
pub fn message_id(head: &[u8]) -> Option<RequestId> {
    let (mut depth, mut i) = (0usize, 0usize);
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, i)?;
                let key = &head[i + 1..end];
                i = end + 1;
                if depth == 1 && key == b"id" {
                    let rest = head[i..].trim_ascii_start();
                    let value = rest.strip_prefix(b":")?.trim_ascii_start();
                    return id_value(value);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `"` that ends the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn id_value(value: &[u8]) -> Option<RequestId> {
    if value.first() == Some(&b'"') {
        let end = string_end(value, 0)?;
        let s: String = serde_json::from_slice(&value[..=end]).ok()?;
        return Some(NumberOrString::String(s.into()));
    }
    let digits: &[u8] = &value[..value.iter().position(|b| !(b.is_ascii_digit() || *b == b'-')).unwrap_or(value.len())];
    std::str::from_utf8(digits).ok()?.parse().ok().map(NumberOrString::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_over_the_limit_are_skipped_with_their_head_kept() {
        let long = format!("{{\"id\":7,\"x\":\"{}\"}}\n", "a".repeat(5000));
        let input = format!("{{\"a\":1}}\n{long}last");
        let mut lines = Lines::new(input.as_bytes(), 100, 16);
        assert!(matches!(lines.read().await, Ok(Some(Line::Whole))));
        assert_eq!(lines.line(), b"{\"a\":1}\n");
        match lines.read().await {
            Ok(Some(Line::Oversized { head, size })) => {
                assert_eq!(size, long.len());
                assert!(head.len() <= HEAD && head.starts_with(b"{\"id\":7"), "{}", head.len());
                assert_eq!(message_id(&head), Some(NumberOrString::Number(7)));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(lines.read().await, Ok(Some(Line::Whole))));
        assert_eq!(lines.line(), b"last");
        assert!(matches!(lines.read().await, Ok(None)));
    }

    #[test]
    fn the_id_is_read_from_the_first_bytes_at_the_top_level_only() {
        let n = |v: i64| Some(NumberOrString::Number(v));
        assert_eq!(message_id(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx"#), n(7));
        assert_eq!(message_id(br#"{"result":{"id":3,"x":"}"},"id" : 12}"#), n(12));
        assert_eq!(
            message_id(br#"{"jsonrpc":"2.0","id":"a\"b","result":"#),
            Some(NumberOrString::String("a\"b".into()))
        );
        assert_eq!(message_id(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":1}}"#), None);
        assert_eq!(message_id(b"not json at all"), None);
        assert_eq!(message_id(br#"{"id":"#), None);
        assert_eq!(message_id(br#"{"id":-4}"#), n(-4));
    }

    #[tokio::test]
    async fn a_read_cancelled_halfway_keeps_what_it_read() {
        use tokio::io::AsyncWriteExt;
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut lines = Lines::new(rx, 1000, 64);
        tx.write_all(b"{\"id\":").await.unwrap_or_default();
        let cut = tokio::time::timeout(std::time::Duration::from_millis(50), lines.read()).await;
        assert!(cut.is_err(), "no whole line yet");
        tx.write_all(b"1}\n").await.unwrap_or_default();
        assert!(matches!(lines.read().await, Ok(Some(Line::Whole))));
        assert_eq!(lines.line(), b"{\"id\":1}\n");
    }

    #[test]
    fn ids_are_read_from_the_top_level_only() {
        assert_eq!(message_id(br#"{"params":{"id":3},"id":"a\"b"}"#), Some(NumberOrString::String("a\"b".into())));
        assert_eq!(message_id(br#"{"method":"x","params":{"id":3}}"#), None);
        assert_eq!(message_id(br#"{"id": -4, "#), Some(NumberOrString::Number(-4)));
        assert_eq!(message_id(b"\xff\xfe{\"id\":1"), Some(NumberOrString::Number(1)));
    }
}

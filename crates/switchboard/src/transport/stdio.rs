//! A stdio server's JSON-RPC, framed here rather than by rmcp, so that nothing a server
//! writes is taken without a bound or dropped without a word.
//!
//! One message is one line of at most `max_message_bytes`: a longer line is never held whole
//! (its bytes are skipped as they come, keeping only its first kilobyte), and a line that
//! cannot be decoded (not UTF-8, not JSON, nested past serde_json's 128 levels, not a
//! JSON-RPC message) is not skipped in silence as rmcp does. Either way, when the line names
//! the request it answers (its `id`, read from its first bytes), that request gets an error
//! saying what came and why it was not taken, instead of waiting for its timeout; and the hub
//! publishes [`Event::Dropped`] (at most one a second per server, with a count). Lines that
//! are plainly not JSON (a server's banner on stdout) are skipped with a debug log.
//!
//! Notifications beyond the rate (`connection::flood`: a burst of 2000, then 1000 a second; never
//! `list_changed`) are dropped here, before they are decoded, and a flooding server is read no
//! faster than about 16000 lines a second: its pipe fills and it waits, so a flood costs its
//! own calls, not the host's other servers.
//!
//! The transport also says when the server's stdout ends ([`StdioTransport::closed`]): a
//! server that closes it and lives on is otherwise never noticed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{Mutex, watch};

use crate::events::Event;

use super::lines::{HEAD, Line, Lines, message_id as request_id};

/// A stdio server's transport.
pub struct StdioTransport {
    server: Arc<str>,
    lines: Lines<ChildStdout>,
    max: usize,
    writer: Arc<Mutex<Option<ChildStdin>>>,
    events: crate::events::EventBus,
    closed: watch::Sender<bool>,
    dropped: RateNote,
    flood: super::flood::Flood,
    /// Notifications dropped since the reading last paused.
    since_pause: u32,
    /// The `tools/call` requests in flight, whose answers are decoded without rmcp's search.
    calls: super::answers::ToolCalls,
    /// Where progress goes, taken here in the order the server wrote it (rmcp hands each
    /// notification to a task of its own, so progress sent just before a result could reach
    /// its caller after the result).
    progress: Option<Arc<super::progress::ProgressRouter>>,
}

impl StdioTransport {
    /// The transport over a spawned server's pipes.
    pub(crate) fn new(
        server: &str,
        stdout: ChildStdout,
        stdin: ChildStdin,
        max_message_bytes: usize,
        events: crate::events::EventBus,
    ) -> StdioTransport {
        StdioTransport {
            server: server.into(),
            lines: Lines::new(stdout, max_message_bytes, 64 * 1024),
            max: max_message_bytes,
            writer: Arc::new(Mutex::new(Some(stdin))),
            events,
            closed: watch::channel(false).0,
            dropped: RateNote::default(),
            flood: super::flood::Flood::default(),
            since_pause: 0,
            calls: Default::default(),
            progress: None,
        }
    }

    /// Takes at most `rate` notifications a second (0: every one); see `transport::flood`.
    pub fn notification_rate(mut self, rate: u32) -> StdioTransport {
        self.flood = super::flood::Flood::new(rate);
        self
    }

    /// Routes progress notifications here, in order, instead of through rmcp's handler.
    pub(crate) fn progress_router(mut self, router: Arc<super::progress::ProgressRouter>) -> StdioTransport {
        self.progress = Some(router);
        self
    }

    /// Becomes `true` when the server's stdout has ended (or failed).
    pub fn closed(&self) -> watch::Receiver<bool> {
        self.closed.subscribe()
    }

    /// A line that was not taken: an error answer for the request it names (if it names one),
    /// and a note for people.
    fn refuse(&mut self, head: &[u8], why: String) -> Option<RxJsonRpcMessage<RoleClient>> {
        let id = request_id(head);
        tracing::warn!(server = %self.server, "{why}");
        if let Some(count) = self.dropped.note() {
            let reason =
                if count > 1 { format!("{why} (and {} more in the last second)", count - 1) } else { why.clone() };
            self.events.send(Event::Dropped { server: self.server.to_string(), reason });
        }
        let id = id?;
        Some(RxJsonRpcMessage::<RoleClient>::error(super::Refusal::new(why).error(), Some(id)))
    }
}

impl rmcp::transport::Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        self.calls.sent(&item);
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut guard = writer.lock().await;
            let stdin =
                guard.as_mut().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "closed"))?;
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.lines.read().await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.closed.send_replace(true);
                    return None;
                }
                Err(e) => {
                    tracing::debug!(server = %self.server, "reading the server's stdout failed: {e}");
                    self.closed.send_replace(true);
                    return None;
                }
            };
            match line {
                Line::Oversized { head, size } => {
                    let why = format!("a message of {size} bytes, over max_message_bytes ({})", self.max);
                    if let Some(answer) = self.refuse(&head, why) {
                        return Some(answer);
                    }
                }
                Line::Whole => {
                    let line = self.lines.line();
                    if line.len() <= 64 * 1024 && is_droppable_notification(line) {
                        let (taken, note) = self.flood.admit();
                        if let Some(n) = note {
                            let reason = format!("notifications beyond {} a second: {n} dropped", self.flood.rate());
                            tracing::warn!(server = %self.server, "{reason}");
                            self.events.send(Event::Dropped { server: self.server.to_string(), reason });
                        }
                        if taken
                            && let Some(router) = &self.progress
                            && let Some(progress) = super::progress::progress_notification(line)
                        {
                            router.dispatch(progress);
                            continue;
                        }
                        if !taken {
                            self.since_pause += 1;
                            if self.since_pause >= 16 {
                                // Read a flooding server no faster than this: it waits on its pipe.
                                self.since_pause = 0;
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                            continue;
                        }
                    }
                    let parsed = match super::answers::decode(&self.calls, request_id, line) {
                        Some(answer) => Parsed::Message(Box::new(answer)),
                        None => parse(line),
                    };
                    let size = line.len();
                    let head = match parsed {
                        Parsed::Undecodable(_) => line[..size.min(HEAD)].to_vec(),
                        _ => Vec::new(),
                    };
                    self.lines.clear();
                    match parsed {
                        Parsed::Message(m) => return Some(*m),
                        Parsed::Skip => {}
                        Parsed::Undecodable(why) => {
                            let why = format!("a message of {size} bytes that could not be decoded: {why}");
                            if let Some(answer) = self.refuse(&head, why) {
                                return Some(answer);
                            }
                        }
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping stdin closes the pipe: the server reads its end.
        drop(self.writer.lock().await.take());
        Ok(())
    }
}

enum Parsed {
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Not for us: an empty line, a server's banner, a notification method nobody knows.
    Skip,
    Undecodable(String),
}

fn parse(line: &[u8]) -> Parsed {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let trimmed = line.trim_ascii_start();
    if trimmed.is_empty() {
        return Parsed::Skip;
    }
    if !matches!(trimmed.first(), Some(b'{' | b'[')) {
        tracing::debug!("skipping a line that is not JSON-RPC ({} bytes)", line.len());
        return Parsed::Skip;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(m) => Parsed::Message(Box::new(m)),
        Err(e) => {
            if let Err(u) = std::str::from_utf8(line) {
                return Parsed::Undecodable(format!("not UTF-8 (at byte {})", u.valid_up_to()));
            }
            // A notification rmcp has no type for (another protocol's, or a newer one's) is
            // not an error; a request or an answer that does not fit is.
            match serde_json::from_slice::<serde_json::Value>(line) {
                Ok(v) if v.get("id").is_none() && v.get("method").is_some() => {
                    tracing::debug!("skipping a notification switchboard does not know: {}", v["method"]);
                    Parsed::Skip
                }
                _ => Parsed::Undecodable(e.to_string()),
            }
        }
    }
}

/// Whether a (whole) line is a notification that may be dropped under a flood: no top-level
/// `id`, a `method`, and not a `list_changed` (those are coalesced, never dropped).
fn is_droppable_notification(line: &[u8]) -> bool {
    let has = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
    line.first() == Some(&b'{') && has(b"\"method\"") && !has(b"list_changed") && request_id(line).is_none()
}

/// At most one note a second, counting what it stands for.
#[derive(Default)]
pub(crate) struct RateNote {
    last: Option<Instant>,
    count: u64,
}

impl RateNote {
    /// `Some(n)` when a note is due (n things since the last one), `None` otherwise.
    pub(crate) fn note(&mut self) -> Option<u64> {
        self.count += 1;
        let now = Instant::now();
        if self.last.is_some_and(|l| now.duration_since(l) < Duration::from_secs(1)) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.count))
    }
}

/// For the fuzz layer: a line parsed, and the id read from its first bytes.
#[cfg(test)]
pub(crate) fn fuzz_parse(line: &[u8]) -> (bool, Option<rmcp::model::RequestId>) {
    let parsed = matches!(parse(line), Parsed::Message(_));
    (parsed, request_id(&line[..line.len().min(HEAD)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_notifications_other_than_list_changed_may_be_dropped() {
        assert!(is_droppable_notification(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":3}}"#));
        assert!(!is_droppable_notification(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#));
        assert!(!is_droppable_notification(br#"{"jsonrpc":"2.0","id":4,"method":"roots/list"}"#));
        assert!(!is_droppable_notification(
            br#"{"jsonrpc":"2.0","method":"sampling/createMessage","params":{},"id":9}"#
        ));
        assert!(!is_droppable_notification(br#"{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}"#));
    }

    #[test]
    fn lines_are_sorted_into_messages_skips_and_undecodable() {
        assert!(matches!(parse(b"Starting server on stdio...\n"), Parsed::Skip));
        assert!(matches!(parse(b"\n"), Parsed::Skip));
        assert!(!matches!(parse(br#"{"jsonrpc":"2.0","method":"lsp/unknown","params":{}}"#), Parsed::Undecodable(_)));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Parsed::Message(_)));
        let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
        assert!(matches!(parse(deep.as_bytes()), Parsed::Undecodable(_)));
        let mut bad = br#"{"jsonrpc":"2.0","id":1,"result":{"x":""#.to_vec();
        bad.extend_from_slice(&[0xff, 0xfe]);
        bad.extend_from_slice(br#""}}"#);
        assert!(matches!(parse(&bad), Parsed::Undecodable(w) if w.contains("not UTF-8")));
    }

    #[test]
    fn notes_come_at_most_once_a_second_with_a_count() {
        let mut n = RateNote::default();
        assert_eq!(n.note(), Some(1));
        assert_eq!(n.note(), None);
        assert_eq!(n.note(), None);
        n.last = Some(Instant::now() - Duration::from_secs(2));
        // This one and the two held back.
        assert_eq!(n.note(), Some(3));
    }
}

//! The stdio front's two streams: stdin and stdout read and written through the runtime's
//! event loop when both are pipes (what Python's `subprocess` and most agents give a server),
//! through rmcp's `stdio_pipes()` (which reopens them, so the non-blocking mode is on
//! descriptions of its own), instead of tokio's `stdin()`/`stdout()`, which hand every read and
//! every write to a blocking thread: two thread switches per message, the stdio gateway's
//! largest cost when it shares a CPU with its upstreams. Anything else (sockets, as Node.js
//! gives, a terminal, a file) keeps tokio's blocking-thread streams.

//!
//! [`Front`] is the transport over them: rmcp's newline-delimited framing, plus what a server
//! owes a client that rmcp's framing does not do:
//! - a line that cannot be taken (over 16 MiB, not UTF-8, not JSON, nested past the parser's
//!   limit, not a JSON-RPC message) is answered with a JSON-RPC error, with its `id` when it
//!   can be read (rmcp skips it, and a request with an id waits for ever);
//! - a request whose id is one still in flight is answered with an error at once (rmcp would
//!   lose one of the two answers);
//! - backpressure: at most [`MAX_IN_FLIGHT`] requests are taken at once; past that, stdin is
//!   not read until one is answered, so a client that sends without reading its answers finds
//!   its pipe full instead of the gateway's memory growing; notifications to such a client
//!   beyond [`MAX_QUEUED`] waiting writes are dropped (said once a second).

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use switchboard::lines::{Line, Lines, message_id};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// The client's side of the stdio front: what to read requests from.
pub(crate) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The client's side of the stdio front: where answers go.
pub(crate) type Output = Box<dyn AsyncWrite + Send + Unpin>;

fn kind(file: &File) -> std::io::Result<FileKind> {
    let t = file.metadata()?.file_type();
    Ok(if t.is_fifo() {
        FileKind::Pipe
    } else if t.is_socket() {
        FileKind::Socket
    } else {
        FileKind::Other
    })
}

/// What a standard stream is, for choosing how to drive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Pipe,
    Socket,
    Other,
}

/// A duplicate of a standard stream's descriptor, as a file.
fn duplicate(fd: impl AsFd) -> std::io::Result<File> {
    let owned: OwnedFd = fd.as_fd().try_clone_to_owned()?;
    Ok(File::from(owned))
}

/// stdin and stdout, on the event loop when both are pipes.
pub(crate) fn streams() -> (Input, Output) {
    let kinds = (kind_of(std::io::stdin()), kind_of(std::io::stdout()));
    if kinds == (FileKind::Pipe, FileKind::Pipe) {
        // rmcp's own: it reopens both through /proc/self/fd, so O_NONBLOCK stays on
        // descriptions of its own.
        let (input, output) = rmcp::transport::io::stdio_pipes();
        return (Box::new(input), Box::new(output));
    }
    // Sockets (Node.js gives its children socket pairs) keep tokio's blocking-thread streams:
    // driven on the event loop, a TypeScript SDK client now and then saw a call's last
    // progress step after its result (on CI only, not understood yet).
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

fn kind_of(fd: impl AsFd) -> FileKind {
    duplicate(fd).and_then(|f| kind(&f)).unwrap_or(FileKind::Other)
}

/// The longest line taken from the client (the HTTP front's body limit).
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;
/// Requests taken at once; past it stdin waits.
pub const MAX_IN_FLIGHT: usize = 256;
/// Writes waiting for a client that does not read, past which notifications are dropped.
pub const MAX_QUEUED: usize = 1024;

/// JSON-RPC's "Parse error" and "Invalid Request".
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;

/// The requests taken and not answered yet.
#[derive(Default)]
struct InFlight {
    ids: Mutex<HashSet<RequestId>>,
    freed: tokio::sync::Notify,
}

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn done(&self, id: &RequestId) {
        if self.ids().remove(id) {
            self.freed.notify_waiters();
        }
    }

    /// Waits until fewer than `max` are in flight.
    async fn room(&self, max: usize) {
        loop {
            let freed = self.freed.notified();
            if self.ids().len() < max {
                return;
            }
            freed.await;
        }
    }
}

/// The stdio front's transport (see the module).
pub(crate) struct Front {
    lines: Lines<Input>,
    out: Arc<tokio::sync::Mutex<Output>>,
    in_flight: Arc<InFlight>,
    queued: Arc<AtomicUsize>,
    dropped: Arc<Mutex<(Option<std::time::Instant>, u64)>>,
}

impl Front {
    pub(crate) fn new((input, output): (Input, Output)) -> Front {
        Front {
            lines: Lines::new(input, MAX_LINE, 64 * 1024),
            out: Arc::new(tokio::sync::Mutex::new(output)),
            in_flight: Arc::default(),
            queued: Arc::default(),
            dropped: Arc::default(),
        }
    }
}

/// Answers a line that was not taken, directly (it never reaches rmcp).
async fn refuse(out: &tokio::sync::Mutex<Output>, id: Option<RequestId>, code: i32, message: String) {
    tracing::warn!("a message from the client was not taken: {message}");
    // `id: null` when it could not be read (JSON-RPC 2.0 §5).
    let id = id.map_or(serde_json::Value::Null, |id| serde_json::to_value(id).unwrap_or_default());
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut bytes = serde_json::to_vec(&error).unwrap_or_default();
    bytes.push(b'\n');
    let mut out = out.lock().await;
    if out.write_all(&bytes).await.is_ok() {
        let _ = out.flush().await;
    }
}

/// Why a whole line is not a message: the code and what to say.
fn undecodable(line: &[u8], e: &serde_json::Error) -> (i32, String) {
    if let Err(u) = std::str::from_utf8(line) {
        return (PARSE_ERROR, format!("Parse error: the message is not UTF-8 (at byte {})", u.valid_up_to()));
    }
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            (PARSE_ERROR, format!("Parse error: {e}"))
        }
        _ => (INVALID_REQUEST, format!("Invalid Request: {e}")),
    }
}

impl rmcp::transport::Transport<RoleServer> for Front {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let in_flight = self.in_flight.clone();
        let queued = self.queued.clone();
        let dropped = self.dropped.clone();
        async move {
            let answers = match &item {
                JsonRpcMessage::Response(r) => Some(r.id.clone()),
                JsonRpcMessage::Error(e) => e.id.clone(),
                _ => None,
            };
            // A client that does not read: its notifications are let go (answers and requests
            // never are; answers are bounded by the requests taken).
            if matches!(item, JsonRpcMessage::Notification(_)) && queued.load(Ordering::Relaxed) >= MAX_QUEUED {
                let mut d = dropped.lock().unwrap_or_else(PoisonError::into_inner);
                d.1 += 1;
                if d.0.is_none_or(|at| at.elapsed() > std::time::Duration::from_secs(1)) {
                    tracing::warn!("the client does not read its answers: {} notifications dropped", d.1);
                    *d = (Some(std::time::Instant::now()), 0);
                }
                return Ok(());
            }
            queued.fetch_add(1, Ordering::Relaxed);
            let written = async {
                let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
                // Written from here: the message itself is let go (a big result is held once
                // while a slow client reads it, not twice).
                drop(item);
                bytes.push(b'\n');
                let mut out = out.lock().await;
                out.write_all(&bytes).await?;
                out.flush().await
            }
            .await;
            queued.fetch_sub(1, Ordering::Relaxed);
            if let Some(id) = answers {
                in_flight.done(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.in_flight.room(MAX_IN_FLIGHT).await;
            let line = match self.lines.read().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(e) => {
                    tracing::debug!("reading stdin failed: {e}");
                    return None;
                }
            };
            let (id, code, message) = match line {
                Line::Oversized { head, size } => (
                    message_id(&head),
                    INVALID_REQUEST,
                    format!("Invalid Request: a message of {size} bytes, over the limit of {MAX_LINE}"),
                ),
                Line::Whole => {
                    let line = self.lines.line();
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if line.trim_ascii().is_empty() {
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
                        Ok(JsonRpcMessage::Request(r)) => {
                            if !self.in_flight.ids().insert(r.id.clone()) {
                                let message = format!("Invalid Request: a request with id {} is still in flight", r.id);
                                refuse(&self.out, Some(r.id), INVALID_REQUEST, message).await;
                                continue;
                            }
                            return Some(JsonRpcMessage::Request(r));
                        }
                        Ok(JsonRpcMessage::Notification(n)) => {
                            // A cancelled request is not answered: it is in flight no more.
                            if let ClientNotification::CancelledNotification(c) = &n.notification
                                && let Some(id) = &c.params.request_id
                            {
                                self.in_flight.done(id);
                            }
                            return Some(JsonRpcMessage::Notification(n));
                        }
                        Ok(other) => return Some(other),
                        Err(e) => {
                            let (code, message) = undecodable(line, &e);
                            (message_id(&line[..line.len().min(switchboard::lines::HEAD)]), code, message)
                        }
                    }
                }
            };
            refuse(&self.out, id, code, message).await;
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_descriptors() {
        let (r, _w) = std::io::pipe().unwrap();
        assert_eq!(kind(&duplicate(&r).unwrap()).unwrap(), FileKind::Pipe);
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(kind(&duplicate(&a).unwrap()).unwrap(), FileKind::Socket);
        let f = tempfile::tempfile().unwrap();
        assert_eq!(kind(&f).unwrap(), FileKind::Other);
    }
}

//! The stdio front's two streams: stdin and stdout read and written through the runtime's
//! event loop when both are pipes (what Python's `subprocess` and most agents give a server),
//! through rmcp's `stdio_pipes()` (which reopens them, so the non-blocking mode is on
//! descriptions of its own), instead of tokio's `stdin()`/`stdout()`, which hand every read and
//! every write to a blocking thread: two thread switches per message, the stdio gateway's
//! largest cost when it shares a CPU with its upstreams. Anything else (sockets, as Node.js
//! gives, a terminal, a file) keeps tokio's blocking-thread streams.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use tokio::io::{AsyncRead, AsyncWrite};

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

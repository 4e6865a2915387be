//! The stdio front's two streams: stdin and stdout read and written through the runtime's
//! event loop when they are pipes or sockets (what every agent spawns a server with: Python's
//! `subprocess` gives pipes, Node's `child_process` socket pairs), instead of tokio's
//! `stdin()`/`stdout()`, which hand every read and every write to a blocking thread: two thread
//! switches per message, the stdio gateway's largest cost when it shares a CPU with its
//! upstreams. A terminal or a regular file keeps tokio's blocking-thread streams.
//!
//! Pipes go through rmcp's `stdio_pipes()` (which reopens them, so the non-blocking mode is
//! its own); a socket's description is put in non-blocking mode itself (nothing else in the
//! process reads stdin or writes stdout: logs go to stderr, upstream servers get pipes of
//! their own).

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

/// stdin and stdout, on the event loop when they are pipes or sockets.
pub(crate) fn streams() -> (Input, Output) {
    let kinds = (kind_of(std::io::stdin()), kind_of(std::io::stdout()));
    if kinds == (FileKind::Pipe, FileKind::Pipe) {
        // rmcp's own: it reopens both through /proc/self/fd, so O_NONBLOCK stays on
        // descriptions of its own.
        let (input, output) = rmcp::transport::io::stdio_pipes();
        return (Box::new(input), Box::new(output));
    }
    let input: Input = match kinds.0 {
        FileKind::Socket => match duplicate(std::io::stdin()).and_then(socket) {
            Ok(s) => Box::new(s),
            Err(e) => {
                tracing::debug!("stdin stays on a blocking thread: {e}");
                Box::new(tokio::io::stdin())
            }
        },
        _ => Box::new(tokio::io::stdin()),
    };
    let output: Output = match kinds.1 {
        FileKind::Socket => match duplicate(std::io::stdout()).and_then(socket) {
            Ok(s) => Box::new(s),
            Err(e) => {
                tracing::debug!("stdout stays on a blocking thread: {e}");
                Box::new(tokio::io::stdout())
            }
        },
        _ => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

fn kind_of(fd: impl AsFd) -> FileKind {
    duplicate(fd).and_then(|f| kind(&f)).unwrap_or(FileKind::Other)
}

/// A socket (a socket pair's end, as Node.js gives a child's stdio) in non-blocking mode; a
/// socket's description cannot be reopened as a pipe's can, so the mode is set on the one the
/// process has (nothing else here reads stdin or writes stdout).
fn socket(file: File) -> std::io::Result<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
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

//! The stdio front's two streams: stdin and stdout read and written through the runtime's
//! event loop when they are pipes or sockets (what every agent spawns a server with: Python's
//! `subprocess` gives pipes, Node's `child_process` socket pairs), instead of tokio's
//! `stdin()`/`stdout()`, which hand every read and every write to a blocking thread: two thread
//! switches per message, the stdio gateway's largest cost when it shares a CPU with its
//! upstreams. A terminal or a regular file keeps tokio's blocking-thread streams.
//!
//! The event-loop streams put the descriptions of fd 0 and fd 1 in non-blocking mode; nothing
//! else in the process reads stdin or writes stdout (logs go to stderr, upstream servers get
//! pipes of their own).

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

/// stdin, on the event loop when it is a pipe or a socket.
pub(crate) fn input() -> Input {
    let evented = || -> std::io::Result<Option<Input>> {
        let file = duplicate(std::io::stdin())?;
        Ok(match kind(&file)? {
            FileKind::Pipe => Some(Box::new(tokio::net::unix::pipe::Receiver::from_file(file)?)),
            FileKind::Socket => Some(Box::new(socket(file)?)),
            FileKind::Other => None,
        })
    };
    match evented() {
        Ok(Some(input)) => input,
        Ok(None) => Box::new(tokio::io::stdin()),
        Err(e) => {
            tracing::debug!("stdin stays on a blocking thread: {e}");
            Box::new(tokio::io::stdin())
        }
    }
}

/// stdout, on the event loop when it is a pipe or a socket.
pub(crate) fn output() -> Output {
    let evented = || -> std::io::Result<Option<Output>> {
        let file = duplicate(std::io::stdout())?;
        Ok(match kind(&file)? {
            FileKind::Pipe => Some(Box::new(tokio::net::unix::pipe::Sender::from_file(file)?)),
            FileKind::Socket => Some(Box::new(socket(file)?)),
            FileKind::Other => None,
        })
    };
    match evented() {
        Ok(Some(output)) => output,
        Ok(None) => Box::new(tokio::io::stdout()),
        Err(e) => {
            tracing::debug!("stdout stays on a blocking thread: {e}");
            Box::new(tokio::io::stdout())
        }
    }
}

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

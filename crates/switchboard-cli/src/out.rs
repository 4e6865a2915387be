//! Output that behaves in pipes (as ripgrep does): a closed stdout ends the command quietly,
//! never with a panic. `out!` writes a line to stdout and returns the error, which `run` turns
//! into a quiet exit when it is a broken pipe; `note!` writes to stderr and ignores failure
//! (a closed terminal must not stop the shutdown of the servers).

/// Writes a line to stdout; `?`s the error.
macro_rules! out {
    () => {
        std::io::Write::write_all(&mut std::io::stdout().lock(), b"\n")?
    };
    ($($t:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!("{}\n", format_args!($($t)*)))?
    };
}

/// Writes a line to stderr, ignoring failure.
macro_rules! note {
    ($($t:tt)*) => {{
        let _ = std::io::Write::write_fmt(&mut std::io::stderr().lock(), format_args!("{}\n", format_args!($($t)*)));
    }};
}

/// Whether `e` is (caused by) writing to a closed pipe.
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}

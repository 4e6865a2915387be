//! Logs on stderr: what each verbosity shows, and what never shows at any.
//!
//! Without `-v` only switchboard's warnings (none of rmcp's own lines: every failure they
//! describe reaches the person classified, in the server's status); `-v` info (rmcp's too);
//! `-vv` debug; `-vvv` trace; `RUST_LOG` overrides. At every verbosity: rmcp's auth module
//! stays at info (at debug it logs authorization codes and token responses), every value the
//! config marks secret (env and header values, what `${VAR}` put anywhere) is replaced by
//! `<redacted>`, control characters (what a server sent may hold escape sequences) are
//! escaped, and there are no colours.

use std::io::Write;
use std::sync::{Arc, RwLock};

/// The values taken out of every log line (and every span exported); filled once the config
/// is loaded.
#[derive(Clone, Default)]
pub struct Secrets(Arc<RwLock<Vec<String>>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.read().map_or(0, |h| h.len());
        write!(f, "Secrets({held} values)")
    }
}

impl Secrets {
    /// From now on, these are taken out too.
    pub fn add(&self, values: &[String]) {
        let mut held = self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.extend(values.iter().filter(|v| !v.is_empty()).cloned());
        // Longest first, so a value that contains another is taken out whole.
        held.sort_by_key(|v| std::cmp::Reverse(v.len()));
        held.dedup();
    }

    /// `text` with every value held replaced by `<redacted>`; `None` when it holds none.
    pub fn redact(&self, text: &str) -> Option<String> {
        let held = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Option<String> = None;
        for secret in held.iter() {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(secret.as_str()) {
                out = Some(current.replace(secret.as_str(), "<redacted>"));
            }
        }
        out
    }

    fn scrub(&self, line: &str) -> String {
        let line = self.redact(line).unwrap_or_else(|| line.to_string());
        let ends = line.ends_with('\n');
        let body = line.trim_end_matches('\n');
        let mut out = switchboard::text::for_terminal_lines(body).into_owned();
        if ends {
            out.push('\n');
        }
        out
    }
}

/// One log line, written whole to stderr when dropped (tracing writes each event at once).
pub struct Line {
    buf: Vec<u8>,
    secrets: Secrets,
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        let _ = std::io::stderr().lock().write_all(self.secrets.scrub(&text).as_bytes());
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Secrets {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line { buf: Vec::new(), secrets: self.clone() }
    }
}

/// Starts the logs for `verbose` (`-v` count), and the traces when the environment asks for
/// them ([`crate::telemetry`]); returns where secrets are told, and the traces' exporter, to be
/// dropped when the command ends.
pub fn init(verbose: u8) -> (Secrets, Option<crate::telemetry::Exporter>) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let default = match verbose {
        0 => "warn,rmcp=off",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let from_env = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty());
    let mut filter = match &from_env {
        Some(v) => EnvFilter::try_new(v).unwrap_or_else(|_| EnvFilter::new(default)),
        None => EnvFilter::new(default),
    };
    // rmcp logs the OAuth authorization code at debug level: its auth module stays at info,
    // whatever the verbosity. (Without -v, rmcp is off altogether: no cap to add, which would
    // switch its info lines on.)
    if (verbose > 0 || from_env.is_some())
        && let Ok(cap) = "rmcp::transport::auth=info".parse()
    {
        filter = filter.add_directive(cap);
    }
    // The MCP spans are for traces: a log line inside a request does not carry its attributes.
    let target = switchboard::telemetry::TARGET;
    if !from_env.as_deref().is_some_and(|v| v.contains(target))
        && let Ok(off) = format!("{target}=off").parse()
    {
        filter = filter.add_directive(off);
    }
    let secrets = Secrets::default();
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(secrets.clone())
        .with_ansi(false)
        .with_target(verbose > 1)
        .with_filter(filter);
    let redact = secrets.clone();
    let redact: crate::telemetry::Redact = Arc::new(move |text: &str| redact.redact(text));
    let (traces, exporter, problem) = match crate::telemetry::layer(redact) {
        Ok(Some((layer, exporter))) => {
            let only = tracing_subscriber::filter::Targets::new().with_target(target, tracing::Level::INFO);
            (Some(layer.with_filter(only)), Some(exporter), None)
        }
        Ok(None) => (None, None, None),
        Err(problem) => (None, None, Some(problem)),
    };
    let _ = tracing_subscriber::registry().with(logs).with(traces).try_init();
    if let Some(problem) = problem {
        tracing::warn!("traces are off: {problem}");
    }
    (secrets, exporter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_control_characters_never_reach_the_log() {
        let s = Secrets::default();
        s.add(&["hunter2-token".into(), "hunter2".into()]);
        let line = s.scrub("GET https://x/mcp?key=hunter2-token and hunter2 \u{1b}]0;title\u{7}\n");
        assert_eq!(line, "GET https://x/mcp?key=<redacted> and <redacted> \\x1b]0;title\\x07\n");
    }
}

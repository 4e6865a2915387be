//! The state of one server, as people and programs see it.

use serde::{Deserialize, Serialize};

use crate::Remedy;

/// Why a server is not connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The entry did not validate (or a `${VAR}` was unset).
    ConfigInvalid,
    /// The process could not be started (command not found, bad cwd).
    ProcessStartFailed,
    /// The process exited during start-up.
    ProcessExited,
    /// Start-up took longer than `startup_timeout_ms`.
    StartupTimeout,
    /// The `initialize` exchange failed.
    ProtocolNegotiationFailed,
    /// `tools/list` failed after a good handshake.
    ToolListFailed,
    /// The transport is not available in this build.
    Unsupported,
    /// A remote server could not be reached (connection refused, name not resolved).
    NetworkUnreachable,
    /// The TLS handshake with a remote server failed (certificate, protocol).
    TlsError,
    /// A remote server answered with an HTTP error status.
    HttpStatus,
    /// A remote server asks for authorisation (401, or 403 `insufficient_scope`).
    NeedsAuth,
    /// A remote server asks for authorisation, but its authorisation server offers no way for
    /// switchboard to register and no `oauth.client_id` is configured.
    NeedsClientRegistration,
    /// The managed file does not let it start (`servers.allow` / `servers.deny`).
    PolicyDenied,
    /// Its sandbox cannot be set up on this system as configured (the kernel lacks Landlock,
    /// or user namespaces for `network: false`): it does not run without it.
    SandboxUnavailable,
    /// It went away (exited, failed to start, stopped answering) too often in a short time:
    /// no longer tried again by itself (connect it by hand).
    CrashLoop,
}

impl FailureKind {
    /// Whether trying again later may help (not for a broken config, a login the person must
    /// do, a transport this build lacks, or a crash loop).
    pub fn is_retryable(self) -> bool {
        !matches!(
            self,
            FailureKind::ConfigInvalid
                | FailureKind::PolicyDenied
                | FailureKind::SandboxUnavailable
                | FailureKind::Unsupported
                | FailureKind::NeedsAuth
                | FailureKind::NeedsClientRegistration
                | FailureKind::CrashLoop
        )
    }
}

impl FailureKind {
    /// What the person can do about a failure of this kind to start `server`: log in, or
    /// register a client first.
    pub fn remedy(self, server: &str) -> Option<Remedy> {
        match self {
            FailureKind::NeedsAuth => Some(Remedy::Login { server: server.into() }),
            FailureKind::NeedsClientRegistration => Some(Remedy::RegisterClient { server: server.into() }),
            _ => None,
        }
    }
}

/// When a server that is not connected is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Retry {
    /// Attempts that failed in a row so far.
    pub attempt: u32,
    /// When the next attempt is made (Unix milliseconds); `None`: at the next call (a
    /// short-lived host, such as one CLI command, retries no earlier).
    pub at_ms: Option<u64>,
}

impl Retry {
    /// `retrying in 4 s (attempt 2)`, `reconnects on the next call`.
    pub fn describe(&self) -> String {
        match self.at_ms {
            None => "reconnects on the next call".into(),
            Some(at) => {
                let now = now_ms();
                let wait = at.saturating_sub(now);
                let when = if wait < 1000 {
                    "retrying now".to_string()
                } else {
                    format!("retrying in {} s", wait.div_ceil(1000))
                };
                if self.attempt > 0 { format!("{when} (attempt {})", self.attempt + 1) } else { when }
            }
        }
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Counts of what a connected server offers (after filters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Counts {
    /// Tools.
    pub tools: usize,
    /// Resources.
    pub resources: usize,
    /// Resource templates.
    pub resource_templates: usize,
    /// Prompts.
    pub prompts: usize,
}

/// One server's status. Serialised as `{"state": "connected", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerStatus {
    /// `enabled: false` in config.
    Disabled,
    /// From a project file and not trusted yet: `switchboard trust <name>`.
    Untrusted,
    /// Starting.
    Connecting,
    /// Ready.
    Connected {
        /// Negotiated protocol version.
        protocol_version: String,
        /// The server's own name.
        server_name: String,
        /// The server's own version.
        server_version: String,
        /// Instructions the server gave for the model, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// What it offers.
        counts: Counts,
        /// What is wrong with what it offers, though it works: each tool left out, and why
        /// (`tool `x` left out: property `v`: x-mcp-header must not be empty`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        diagnostics: Vec<String>,
    },
    /// Could not start.
    Failed {
        /// The class of failure.
        kind: FailureKind,
        /// What happened, naming the cause.
        message: String,
        /// The last lines the server wrote on stderr, when there is a process.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stderr_tail: Vec<String>,
        /// The server's `WWW-Authenticate` challenge, for `needs_auth`.
        #[serde(skip_serializing_if = "Option::is_none")]
        auth_challenge: Option<String>,
        /// When it is tried again (none: not by itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        retry: Option<Retry>,
    },
    /// Was connected, then went away: its process exited, or a remote server stopped
    /// answering. Tried again by itself (see `retry`).
    Disconnected {
        /// Exit code, if it exited.
        exit_code: Option<i32>,
        /// Signal, if it was killed.
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        /// The last lines the server wrote on stderr.
        stderr_tail: Vec<String>,
        /// What happened to a remote server (no exit code to say it).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// When it is tried again.
        #[serde(skip_serializing_if = "Option::is_none")]
        retry: Option<Retry>,
    },
    /// Disconnected on request ([`Hub::disconnect`](crate::Hub::disconnect)); it stays so
    /// until connected again.
    Stopped,
    /// Stopped because nobody used it for its `idle_shutdown_ms` (a long-running hub's
    /// lease); its tools stay listed, and the next call starts it again.
    Idle,
    /// Each person who signs in gets a connection of their own (`sharing: per_principal` on
    /// a gateway whose callers sign in): none is made for the host itself. A person's own
    /// status is in their hub ([`Hub::person`](crate::Hub::person)).
    PerPerson,
}

impl ServerStatus {
    /// The state's name as in JSON (`connected`, `failed`, ...).
    pub fn state(&self) -> &'static str {
        match self {
            ServerStatus::Disabled => "disabled",
            ServerStatus::Untrusted => "untrusted",
            ServerStatus::Connecting => "connecting",
            ServerStatus::Connected { .. } => "connected",
            ServerStatus::Failed { .. } => "failed",
            ServerStatus::Disconnected { .. } => "disconnected",
            ServerStatus::Stopped => "stopped",
            ServerStatus::Idle => "idle",
            ServerStatus::PerPerson => "per_person",
        }
    }

    /// What the person can do so that `server` (whose status this is) works: trust it, log
    /// in to it, register a client for it. The one place that decides it; each front says it
    /// in its own words.
    pub fn remedy(&self, server: &str) -> Option<Remedy> {
        match self {
            ServerStatus::Untrusted => Some(Remedy::Trust { server: server.into() }),
            ServerStatus::Failed { kind, .. } => kind.remedy(server),
            _ => None,
        }
    }

    /// A one-line explanation for people (what happened, not what to run: see
    /// [`ServerStatus::remedy`]).
    pub fn summary(&self) -> String {
        match self {
            ServerStatus::Disabled => "disabled in config".into(),
            ServerStatus::Untrusted => "from a project file, not trusted yet: it starts once trusted".into(),
            ServerStatus::Connecting => "connecting".into(),
            ServerStatus::Connected { server_name, server_version, protocol_version, diagnostics, .. } => {
                let mut s = format!("{server_name} {server_version} (protocol {protocol_version})");
                match diagnostics.len() {
                    0 => {}
                    1 => s.push_str("; 1 problem (`switchboard get` shows it)"),
                    n => s.push_str(&format!("; {n} problems (`switchboard get` shows them)")),
                }
                s
            }
            ServerStatus::Failed { message, retry: Some(retry), .. } => {
                format!("{}; {}", message.lines().next().unwrap_or_default(), retry.describe())
            }
            ServerStatus::Failed { message, .. } => message.clone(),
            ServerStatus::Disconnected { exit_code, signal, reason, retry, .. } => {
                let what = match (exit_code, signal, reason) {
                    (Some(c), _, _) => format!("exited with code {c}"),
                    (None, Some(s), _) => format!("killed by signal {s}"),
                    (None, None, Some(r)) => r.clone(),
                    _ => "disconnected".into(),
                };
                match retry {
                    Some(r) => format!("{what}; {}", r.describe()),
                    None => what,
                }
            }
            ServerStatus::Stopped => "disconnected on request; connect it to use it again".into(),
            ServerStatus::Idle => "stopped while unused (idle_shutdown_ms); the next call starts it again".into(),
            ServerStatus::PerPerson => {
                "each person who signs in gets their own connection (sharing: per_principal)".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the API serves is read back the same (the CLI shows a running hub's statuses).
    #[test]
    fn statuses_read_back_as_written() {
        let statuses = [
            ServerStatus::Idle,
            ServerStatus::PerPerson,
            ServerStatus::Stopped,
            ServerStatus::Connected {
                protocol_version: "2025-11-25".into(),
                server_name: "fx".into(),
                server_version: "1".into(),
                instructions: None,
                counts: Counts { tools: 3, ..Counts::default() },
                diagnostics: Vec::new(),
            },
            ServerStatus::Failed {
                kind: FailureKind::NeedsAuth,
                message: "needs a login".into(),
                stderr_tail: vec!["a line".into()],
                auth_challenge: Some("Bearer".into()),
                retry: Some(Retry { attempt: 2, at_ms: None }),
            },
        ];
        for status in statuses {
            let json = serde_json::to_value(&status).unwrap_or_default();
            let back: Option<ServerStatus> = serde_json::from_value(json.clone()).ok();
            assert_eq!(back.as_ref(), Some(&status), "{json}");
        }
    }
}

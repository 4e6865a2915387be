//! The state of one server, as people and programs see it.

use serde::Serialize;

/// Why a server is not connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

/// Counts of what a connected server offers (after filters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    },
    /// Could not start.
    Failed {
        /// The class of failure.
        kind: FailureKind,
        /// What happened, naming the cause.
        message: String,
        /// The last lines the server wrote on stderr, when there is a process.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        stderr_tail: Vec<String>,
        /// The server's `WWW-Authenticate` challenge, for `needs_auth`.
        #[serde(skip_serializing_if = "Option::is_none")]
        auth_challenge: Option<String>,
    },
    /// Was connected, then the process exited unexpectedly. The next call reconnects.
    Disconnected {
        /// Exit code, if it exited.
        exit_code: Option<i32>,
        /// Signal, if it was killed.
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        /// The last lines the server wrote on stderr.
        stderr_tail: Vec<String>,
    },
    /// Disconnected on request ([`Hub::disconnect`](crate::Hub::disconnect)); it stays so
    /// until connected again.
    Stopped,
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
        }
    }

    /// A one-line explanation for people.
    pub fn summary(&self) -> String {
        match self {
            ServerStatus::Disabled => "disabled in config".into(),
            ServerStatus::Untrusted => "from a project file: run `switchboard trust` to start it".into(),
            ServerStatus::Connecting => "connecting".into(),
            ServerStatus::Connected { server_name, server_version, protocol_version, .. } => {
                format!("{server_name} {server_version} (protocol {protocol_version})")
            }
            ServerStatus::Failed { message, .. } => message.clone(),
            ServerStatus::Disconnected { exit_code, signal, .. } => match (exit_code, signal) {
                (Some(c), _) => format!("exited with code {c}; reconnects on next call"),
                (None, Some(s)) => format!("killed by signal {s}; reconnects on next call"),
                _ => "disconnected; reconnects on next call".into(),
            },
            ServerStatus::Stopped => "disconnected on request; connect it to use it again".into(),
        }
    }
}

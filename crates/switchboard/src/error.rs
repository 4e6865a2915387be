//! Errors of the [`crate::Hub`] API.

use std::sync::Arc;
use std::time::Duration;

use crate::Remedy;

/// The error behind an [`Error`], kept so that [`std::error::Error::source`] walks to it.
/// Two are equal when they say the same.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    pub(crate) fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// `; did you mean `NAME`?`, or nothing.
fn did_you_mean(meant: &Option<String>) -> String {
    meant.as_ref().map(|m| format!("; did you mean `{}`?", crate::text::excerpt(m, 80))).unwrap_or_default()
}

impl Error {
    /// A word for what went wrong, stable for programs (the API's `code`, the CLI's
    /// `{"error": {"kind"}}` under `--json`).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::UnknownTool { .. } | Error::ToolGone { .. } => "unknown_tool",
            Error::UnknownServer { .. } => "unknown_server",
            Error::NotConnected { .. } => "not_connected",
            Error::AuthRequired { .. } => "needs_auth",
            Error::Timeout { .. } => "timeout",
            Error::ServerExited { .. } => "server_exited",
            Error::Cancelled => "cancelled",
            Error::Auth { .. } => "auth_failed",
            Error::ClientRefused { .. } => "client_refused",
            Error::Exists { .. } => "exists",
            Error::Invalid { .. } => "bad_request",
            Error::Denied { .. } => "denied",
            Error::InvalidArguments { .. } => "invalid_arguments",
            Error::Storage { .. } => "storage_failed",
            Error::OutsideView { .. } => "outside_view",
            Error::RateLimited { .. } => "rate_limited",
            // What the server refused because of what was asked, by its JSON-RPC code.
            Error::Rejected { code: -32602, .. } => "invalid_params",
            Error::Rejected { code: -32002, .. } => "unknown_resource",
            Error::Rejected { code: -32601, .. } => "unsupported",
            Error::Rejected { code: -32042, .. } => "url_required",
            Error::Rejected { .. } | Error::Protocol { .. } => "server_error",
            Error::InputRounds { .. } => "input_rounds_failed",
            Error::Internal { .. } => "internal",
        }
    }

    /// What the person can do about it, when there is something: log in again, trust or
    /// register a client for the server, allow the tool. Each front says it in its own words.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            Error::NotConnected { remedy, .. } => remedy.clone(),
            Error::Denied { name, allowable: true, .. } => Some(Remedy::Allow { tool: name.clone() }),
            Error::AuthRequired { server, .. } | Error::ClientRefused { server } => {
                Some(Remedy::Login { server: server.clone() })
            }
            _ => None,
        }
    }

    /// `server` is not connected, for the reason its `status` says (and the fix it names).
    pub(crate) fn not_connected(server: &str, status: &crate::status::ServerStatus) -> Error {
        Error::NotConnected {
            server: server.into(),
            reason: status.summary(),
            remedy: status.remedy(server),
            cause: None,
        }
    }

    /// `server` could not be started (`reason`, which says so), because of `failure`.
    pub(crate) fn failed_start(server: &str, reason: String, failure: crate::connection::StartFailure) -> Error {
        Error::NotConnected {
            server: server.into(),
            reason,
            remedy: failure.kind.remedy(server),
            cause: Some(Cause::new(failure)),
        }
    }

    /// The host's own state could not be read or written: `message`, caused by `cause`.
    pub(crate) fn storage(message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Storage { message: message.into(), cause: Some(Cause::new(cause)) }
    }

    /// Logging in to `server` failed with `cause` (its message says what happened).
    pub(crate) fn auth(server: &str, cause: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Auth { server: server.into(), message: cause.to_string(), cause: Some(Cause::new(cause)) }
    }

    /// No server named `name` among `known` (with the closest as a suggestion).
    pub fn unknown_server<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Error {
        Error::UnknownServer { name: name.into(), meant: crate::text::closest(name, known).map(str::to_string) }
    }
}

/// What went wrong with a hub operation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tool of that name in the catalog.
    #[error("no tool named `{}`{} (see `switchboard tools`)", crate::text::excerpt(name, 80), did_you_mean(meant))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// A name close to it that is there.
        meant: Option<String>,
    },
    /// A tool listed from what its server offered when it last ran (its remembered lists,
    /// [`crate::HubOptions::remember_lists`]) that it no longer offers now that it is up.
    #[error(
        "`{}` was listed from what `{server}` offered when it last ran; now that it is up it no longer offers it (list the tools again)",
        crate::text::excerpt(name, 80)
    )]
    ToolGone {
        /// The name asked for.
        name: String,
        /// Its server.
        server: String,
    },
    /// No server of that name.
    #[error("no server named `{}`{}", crate::text::excerpt(name, 80), did_you_mean(meant))]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// A name close to it that is there.
        meant: Option<String>,
    },
    /// The server is not connected and cannot be (failed, disabled, untrusted).
    #[error("server `{server}` is not connected: {reason}")]
    NotConnected {
        /// The server.
        server: String,
        /// Its status, explained.
        reason: String,
        /// What the person can do about it (log in, trust it), when there is something.
        remedy: Option<Remedy>,
        /// The failure to start behind it, when this request's attempt made one.
        #[source]
        cause: Option<Cause>,
    },
    /// No response (nor progress) within the timeout; `notifications/cancelled` was sent.
    #[error("`{what}` on server `{server}` timed out after {}", crate::text::human(*after))]
    Timeout {
        /// The server.
        server: String,
        /// The request (`tools/call echo`).
        what: String,
        /// The timeout that expired.
        after: Duration,
    },
    /// The server went away while the request was in flight. It is not retried.
    #[error("server `{server}` {message}")]
    ServerExited {
        /// The server.
        server: String,
        /// What happened (exit code, stderr tail).
        message: String,
    },
    /// The caller cancelled; `notifications/cancelled` was sent.
    #[error("cancelled")]
    Cancelled,
    /// The server refused the request for want of authorisation: no (valid) token, or a
    /// token without the scope it needs (`insufficient_scope`: log in again to get it).
    #[error("server `{server}` {message}")]
    AuthRequired {
        /// The server.
        server: String,
        /// What it said.
        message: String,
        /// Its `WWW-Authenticate` challenge (carries the scope it wants).
        challenge: Option<String>,
    },
    /// A server of that name exists already.
    #[error("a server named `{name}` exists already")]
    Exists {
        /// The name.
        name: String,
    },
    /// What was asked does not apply (bad input, or not in this state).
    #[error("{message}")]
    Invalid {
        /// Why.
        message: String,
    },
    /// The host's own state on disk (the trust store) could not be read or written. Not the
    /// caller's fault: the message names the file and the cause.
    #[error("{message}")]
    Storage {
        /// The file and what went wrong.
        message: String,
        /// The error behind it (an I/O error, a file that does not parse).
        #[source]
        cause: Option<Cause>,
    },
    /// The authorization server refused the client switchboard registered for `server`
    /// (`invalid_client`: it forgot it, or its secret expired). It is forgotten, and logging in
    /// again registers a new one.
    #[error(
        "server `{server}`: the authorization server refused the client switchboard registered for it \
         (invalid_client); it is forgotten, and logging in again registers a new one"
    )]
    ClientRefused {
        /// The server.
        server: String,
    },
    /// Logging in to a server (or the token store) failed.
    #[error("server `{server}`: {message}")]
    Auth {
        /// The server.
        server: String,
        /// What went wrong (never a token or secret).
        message: String,
        /// The error behind it (the login's, the token store's).
        #[source]
        cause: Option<Cause>,
    },
    /// The server refused the request with a JSON-RPC error (`code`: -32602 invalid
    /// params, -32002 resource not found, -32601 method not found, ...).
    #[error("server `{server}`: {message}")]
    Rejected {
        /// The server.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// What it said.
        message: String,
        /// The error's `data`, as the server sent it (a gateway passes it on: `-32021` names
        /// the capabilities wanted, `-32042` the URLs to open).
        data: Option<serde_json::Value>,
    },
    /// The tool-call policy refused the call (a `deny` rule, or an `ask` that nobody allowed).
    /// Nothing was sent to the server. The message names the rule and its file, so a model
    /// can be told why.
    #[error("{message}")]
    Denied {
        /// The model-visible name.
        name: String,
        /// The server.
        server: String,
        /// The rule, as [`crate::policy::Rule`] shows it.
        rule: String,
        /// The file that holds it.
        file: Option<std::path::PathBuf>,
        /// The whole explanation.
        message: String,
        /// Whether allowing the tool is the fix ([`Error::remedy`]): the rule asked, and nobody
        /// could answer. Not for a `deny` rule or a person's "no": those are choices.
        allowable: bool,
    },
    /// The arguments do not match the tool's input schema. Nothing was sent: this is
    /// switchboard's refusal, not the tool's error, so a model can correct the call.
    #[error("arguments do not match the input schema of `{name}`: {}", errors.join("; "))]
    InvalidArguments {
        /// The model-visible name.
        name: String,
        /// The server.
        server: String,
        /// Each error, `/pointer: message`.
        errors: Vec<String>,
    },
    /// The caller made more calls of the tool than a rate limit (`policy.rate_limits`) lets
    /// them; nothing was sent. The message names the limit, its file, and when a call would
    /// get through.
    #[error("{message}")]
    RateLimited {
        /// The model-visible name.
        name: String,
        /// The server.
        server: String,
        /// The limit, as the person reads it.
        rule: String,
        /// When the next call would get through.
        retry_after: std::time::Duration,
        /// The whole explanation.
        message: String,
    },
    /// A view ([`crate::HubView`]) was asked for a tool or server it does not see. Nothing
    /// was sent.
    #[error("{what} is outside this view")]
    OutsideView {
        /// What was asked for (`tool \`mcp__fs__write\``, `server \`fs\``).
        what: String,
    },
    /// The server broke the protocol: an answer of the wrong kind, a message rmcp could not
    /// take, an answer switchboard did not take (over `max_message_bytes`, or not a message
    /// it could decode: the request fails at once, saying what came), a
    /// `subscriptions/listen` stream that failed.
    #[error("server `{server}`: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// The error.
        message: String,
    },
    /// A 2026-07-28 server's `input_required` rounds could not be answered: it kept asking,
    /// asked for what the request cannot carry, or the answer could not be made.
    #[error("server `{server}`: {message}")]
    InputRounds {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// switchboard itself failed (a task of its own ended before its work was done). Not the
    /// server's fault, nor the caller's.
    #[error("switchboard failed: {message}")]
    Internal {
        /// What failed.
        message: String,
    },
}

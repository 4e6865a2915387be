//! One live MCP session with one server: start-up (spawn, handshake, first listings, all
//! under the start-up timeout), listing, requests, and close.
//!
//! Start-up failures are classified into [`FailureKind`]s with a message that names the
//! cause and, for a process, its exit code and last stderr lines.

pub mod handler;
mod listen;
mod mrtr;
pub(crate) mod pages;
pub(crate) use mrtr::{MAX_ROUNDS as MRTR_MAX_ROUNDS, Retry as InputRetry};
mod remote;
mod stdio;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientNotification, ClientRequest, PingRequest, ProgressToken,
    Prompt, ProtocolVersion, RequestId, Resource, ResourceTemplate, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError};
use tokio::sync::mpsc;

use crate::catalog::ServerLists;
use crate::config::{ServerConfig, TransportConfig};
use crate::process::ProcessTree;
use crate::status::FailureKind;
use crate::transport::progress::ProgressRouter;
use handler::{Handler, ListChange};
pub(crate) use pages::Listed;

/// A request out on a connection whose caller may stop waiting: dropped before it is
/// disarmed (the outcome known), it sends `notifications/cancelled` from a task of its own and
/// takes the request's progress route away, if it has one.
pub(crate) struct Abandoned<'a> {
    conn: &'a Connection,
    id: Option<RequestId>,
    progress: Option<&'a ProgressToken>,
}

impl<'a> Abandoned<'a> {
    /// Armed for the request `id` on `conn` (with its progress route, if any).
    pub(crate) fn new(conn: &'a Connection, id: RequestId, progress: Option<&'a ProgressToken>) -> Self {
        Abandoned { conn, id: Some(id), progress }
    }

    /// The outcome is known: nothing to tell.
    pub(crate) fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Some(token) = self.progress {
            self.conn.progress.unregister(token);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.conn.peer.clone();
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller stopped waiting".into()),
        ));
        runtime.spawn(async move {
            let _ = peer.send_notification(ClientNotification::CancelledNotification(note)).await;
        });
    }
}

/// Why a server did not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct StartFailure {
    /// The class of failure.
    pub kind: FailureKind,
    /// What happened.
    pub message: String,
    /// The last stderr lines, if there was a process.
    pub stderr_tail: Vec<String>,
    /// The server's `WWW-Authenticate` challenge, when it asked for authorisation.
    pub auth_challenge: Option<String>,
}

impl StartFailure {
    pub(crate) fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        StartFailure { kind, message: message.into(), stderr_tail: Vec::new(), auth_challenge: None }
    }

    pub(crate) fn stderr(mut self, tail: Vec<String>) -> Self {
        self.stderr_tail = tail;
        self
    }
}

/// Ends a half-started server's process tree (if any) and builds the failure, with its last
/// stderr lines.
async fn end_with(tree: Option<Arc<ProcessTree>>, kind: FailureKind, message: String) -> StartFailure {
    let t = tree.as_deref().map(tail).unwrap_or_default();
    if let Some(tree) = tree {
        tree.terminate().await;
    }
    StartFailure::new(kind, with_tail(message, &t)).stderr(t)
}

/// What a connection needs from the hub.
pub(crate) struct ConnectCtx {
    pub project_root: PathBuf,
    pub host_env: Arc<HashMap<String, String>>,
    pub events: crate::events::EventBus,
    pub marker: String,
    pub trees: Arc<crate::process::Trees>,
    pub record: Option<Arc<crate::process::record::Record>>,
    pub elicitor: Option<Arc<dyn crate::elicitation::Elicitor>>,
    pub sampler: Option<Arc<dyn crate::sampling::Sampler>>,
    pub roots: Arc<Vec<PathBuf>>,
    pub roots_source: Option<Arc<dyn crate::roots::RootsSource>>,
    pub tokens: crate::auth::TokenStore,
    /// switchboard's files (hidden from sandboxed servers).
    pub paths: crate::paths::Paths,
    /// Where what its sandbox refuses is told.
    pub refusals: Arc<crate::sandbox::Refusals>,
    /// Notifications a second taken from one server (0: all).
    pub notification_rate: u32,
    /// The configs the connection passed through ([`crate::chain`]), for the server.
    pub chain: String,
    /// Whether hidden characters in its questions and requests for a completion are removed.
    pub screening: crate::screen::Screening,
    /// The caller's own access token, for a server whose grant exchanges it (a person's hub).
    pub subject: Option<String>,
}

/// What the server said about itself.
#[derive(Debug, Clone)]
pub(crate) struct ServerIdentity {
    pub protocol_version: String,
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
    pub has_tools: bool,
    pub has_resources: bool,
    pub has_prompts: bool,
    /// It answers `completion/complete`.
    pub has_completions: bool,
}

/// A live session.
pub(crate) struct Connection {
    pub peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    pub tree: Option<Arc<ProcessTree>>,
    pub progress: Arc<ProgressRouter>,
    pub identity: ServerIdentity,
    /// Answers what a 2026-07-28 server asks for inside `input_required` results.
    handler: Handler,
    /// The `subscriptions/listen` stream of a 2026-07-28 server.
    listener: Option<listen::Listener>,
    /// Over Streamable HTTP: changes each time the transport renewed its session (the
    /// server forgot it), after which per-session state (subscriptions) is gone.
    pub session_renewals: Option<tokio::sync::watch::Receiver<u64>>,
    /// Over Streamable HTTP: the tools the transport leaves out of `tools/list` answers
    /// (invalid `x-mcp-header` declarations), for the status.
    pub left_out: Option<Arc<crate::transport::LeftOut>>,
    /// Over stdio: becomes true when the server's stdout ends.
    pub stdout_closed: Option<tokio::sync::watch::Receiver<bool>>,
}

fn tail(tree: &ProcessTree) -> Vec<String> {
    tree.stderr.lines()
}

/// `message`, then the last ten stderr lines (if any), indented.
pub(crate) fn with_tail(message: String, lines: &[String]) -> String {
    if lines.is_empty() {
        return message;
    }
    let shown: Vec<&str> = lines.iter().rev().take(10).rev().map(String::as_str).collect();
    format!("{message}\nlast stderr lines:\n  {}", shown.join("\n  "))
}

fn describe(e: &ServiceError) -> String {
    match e {
        // What a server says is quoted, not all of it (one answered with a 13 MB message).
        ServiceError::McpError(data) => {
            format!("server error {}: {}", data.code.0, crate::text::excerpt(&data.message, 2000))
        }
        ServiceError::Timeout { timeout } => format!("timed out after {}", crate::text::human(*timeout)),
        ServiceError::TransportClosed => "the connection closed".into(),
        other => other.to_string(),
    }
}

impl Connection {
    /// Starts `config`, returning the connection, the channel of its list-change signals, and
    /// its first listings.
    pub(crate) async fn start(
        config: &ServerConfig,
        ctx: &ConnectCtx,
    ) -> Result<(Connection, mpsc::UnboundedReceiver<ListChange>, ServerLists), StartFailure> {
        let deadline = tokio::time::Instant::now() + config.startup_timeout;
        let (changes_tx, changes_rx) = mpsc::unbounded_channel();
        let progress = Arc::new(ProgressRouter::default());
        let handler = Handler {
            server: config.name.clone(),
            changes: changes_tx,
            progress: progress.clone(),
            events: ctx.events.clone(),
            elicitor: ctx.elicitor.clone(),
            sampler: ctx.sampler.clone(),
            roots: ctx.roots.clone(),
            roots_source: ctx.roots_source.clone(),
            screening: ctx.screening,
            protocol_version: config
                .protocol_version
                .as_ref()
                .and_then(|v| ProtocolVersion::KNOWN_VERSIONS.iter().find(|k| k.as_str() == v.as_str()).cloned()),
            flood: Arc::new(std::sync::Mutex::new(crate::transport::flood::Flood::new(ctx.notification_rate))),
        };
        let answers = handler.clone();
        let (service, tree, http_session, stdout_closed) = match &config.transport {
            TransportConfig::Stdio(stdio) => {
                let (service, tree, closed) = stdio::start(config, stdio, ctx, handler, deadline).await?;
                (service, Some(tree), None, Some(closed))
            }
            TransportConfig::Http(http) => {
                let (service, session) = remote::start(config, http, ctx, handler, deadline).await?;
                (service, None, session, None)
            }
        };
        let (session_renewals, left_out) = match http_session {
            Some(s) => (Some(s.renewals), Some(s.left_out)),
            None => (None, None),
        };
        let peer = service.peer().clone();
        // The spec: a client that does not support the version in the server's answer should
        // disconnect. rmcp takes whatever the server says, so the check is here; a pinned
        // `protocol_version` must be the one agreed.
        let agreed = peer.peer_info().map(|i| i.protocol_version.clone());
        let refused = match (&agreed, &config.protocol_version) {
            (Some(v), _) if !ProtocolVersion::KNOWN_VERSIONS.contains(v) => {
                let known: Vec<&str> = ProtocolVersion::KNOWN_VERSIONS.iter().map(|v| v.as_str()).collect();
                Some(format!(
                    "the server answered `initialize` with protocol version {v}, which switchboard does not speak ({})",
                    known.join(", ")
                ))
            }
            (Some(v), Some(pinned)) if v.as_str() != pinned => Some(format!(
                "the server agreed on protocol version {v}, but this server's config pins {pinned} (protocol_version)"
            )),
            _ => None,
        };
        if let Some(message) = refused {
            let _ = tokio::time::timeout(Duration::from_millis(200), service.cancel()).await;
            return Err(end_with(tree, FailureKind::ProtocolNegotiationFailed, message).await);
        }
        peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled()).await;
        let identity = match peer.peer_info() {
            Some(info) => ServerIdentity {
                protocol_version: info.protocol_version.to_string(),
                name: info.server_info.as_ref().map(|i| i.name.clone()).unwrap_or_default(),
                version: info.server_info.as_ref().map(|i| i.version.clone()).unwrap_or_default(),
                instructions: info.instructions.clone(),
                has_tools: info.capabilities.tools.is_some(),
                has_resources: info.capabilities.resources.is_some(),
                has_prompts: info.capabilities.prompts.is_some(),
                has_completions: info.capabilities.completions.is_some(),
            },
            None => ServerIdentity {
                protocol_version: String::new(),
                name: String::new(),
                version: String::new(),
                instructions: None,
                has_tools: true,
                has_resources: false,
                has_prompts: false,
                has_completions: false,
            },
        };
        // 2026-07-28: list changes and resource updates come on a `subscriptions/listen` stream.
        let stateless = peer.peer_info().is_some_and(|i| !i.protocol_version.has_initialize());
        let listener = stateless.then(|| {
            let caps = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
            let changing = listen::Changing {
                tools: caps.tools.as_ref().is_some_and(|c| c.list_changed == Some(true)),
                resources: caps.resources.as_ref().is_some_and(|c| c.list_changed == Some(true)),
                prompts: caps.prompts.as_ref().is_some_and(|c| c.list_changed == Some(true)),
            };
            listen::Listener::start(peer.clone(), answers.clone(), changing)
        });
        let conn = Connection {
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            tree: tree.clone(),
            progress,
            identity,
            handler: answers,
            listener,
            session_renewals,
            left_out,
            stdout_closed,
        };
        let outcome = tokio::time::timeout_at(deadline, conn.list_all(&config.name)).await;
        let (kind, message) = match outcome {
            Ok(Ok(lists)) => return Ok((conn, changes_rx, lists)),
            // A server may let `initialize` through and ask for a login at the first listing.
            Ok(Err(ListError::Auth(challenge))) => {
                conn.close().await;
                let mut f =
                    StartFailure::new(FailureKind::NeedsAuth, "asks for authorisation (HTTP 401 on tools/list)");
                f.auth_challenge = Some(challenge);
                return Err(f);
            }
            Ok(Err(ListError::Other(e))) => (FailureKind::ToolListFailed, format!("tools/list failed: {e}")),
            Err(_) => (
                FailureKind::StartupTimeout,
                format!(
                    "listing tools did not finish within {} (startup_timeout_ms)",
                    crate::text::human(config.startup_timeout)
                ),
            ),
        };
        let t = tree.as_deref().map(tail).unwrap_or_default();
        conn.close().await;
        Err(StartFailure::new(kind, with_tail(message, &t)).stderr(t))
    }

    /// Lists everything the server offers, as start-up does (under its deadline, which drops
    /// this future: each page is [`Connection::ask`]ed). Only a `tools/list` failure is an
    /// error; the other lists are optional capabilities and fail soft (logged, empty).
    pub(crate) async fn list_all(&self, server: &str) -> Result<ServerLists, ListError> {
        let tools = if self.identity.has_tools {
            self.list::<Tool>(server).await.map_err(|e| match e.auth_challenge() {
                Some(challenge) => ListError::Auth(challenge.to_string()),
                None => ListError::Other(describe(&e)),
            })?
        } else {
            Vec::new()
        };
        let has = (self.identity.has_resources, self.identity.has_prompts);
        let (resources, resource_templates, prompts) = tokio::join!(
            self.list_soft::<Resource>(server, has.0),
            self.list_soft::<ResourceTemplate>(server, has.0),
            self.list_soft::<Prompt>(server, has.1),
        );
        Ok(ServerLists { tools, resources, resource_templates, prompts })
    }

    /// A list of an optional capability: empty when not offered or when it fails (logged).
    async fn list_soft<T: Listed>(&self, server: &str, wanted: bool) -> Vec<T> {
        if !wanted {
            return Vec::new();
        }
        match self.list::<T>(server).await {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(server = %server, "{} failed: {}", T::WHAT, describe(&e));
                Vec::new()
            }
        }
    }

    async fn list<T: Listed>(&self, server: &str) -> Result<Vec<T>, ServiceError> {
        pages::list(server, |request| self.ask(server, request), || ServiceError::UnexpectedResponse).await
    }

    /// Sends `request` to `server` and waits for its answer. A caller that stops waiting (drops
    /// this future once the request is out: a deadline) still tells the server, as rmcp's own
    /// requests do. Traced as the hub's requests are ([`crate::telemetry`]).
    pub(crate) async fn ask(&self, server: &str, request: ClientRequest) -> Result<ServerResult, ServiceError> {
        use crate::telemetry::{self, Kind, Operation, Transport};
        use tracing::Instrument;
        let transport = if self.tree.is_some() { Transport::Pipe } else { Transport::Tcp };
        let span = telemetry::span(Kind::Client, &Operation::of(&request), transport);
        let mut options = PeerRequestOptions::no_options();
        if !span.is_disabled() {
            span.record("switchboard.server", server);
            span.record("mcp.protocol.version", self.identity.protocol_version.as_str());
            let mut meta = rmcp::model::RequestMetaObject::default();
            telemetry::inject(&span, &mut meta.0);
            options = options.with_meta(meta);
        }
        let asked = async {
            let handle = self.request(request, options).await?;
            span.record("jsonrpc.request.id", tracing::field::display(&handle.id));
            let mut abandoned = Abandoned::new(self, handle.id.clone(), None);
            let answer = handle.await_response().await;
            abandoned.disarm();
            answer
        };
        let answer = asked.instrument(span.clone()).await;
        if let Err(e) = &answer {
            let code = match e {
                ServiceError::McpError(data) => Some(data.code.0),
                _ => None,
            };
            telemetry::failed(&span, code.map_or("server_error".into(), |c| c.to_string()).as_str(), code);
        }
        answer
    }

    /// Sends a request with options; the caller awaits the handle.
    pub(crate) async fn request(
        &self,
        request: ClientRequest,
        options: PeerRequestOptions,
    ) -> Result<rmcp::service::RequestHandle<RoleClient>, ServiceError> {
        self.peer.send_request_with_option(request, options).await
    }

    /// Whether the session is on protocol 2026-07-28 or later (no handshake, no session).
    pub(crate) fn is_stateless(&self) -> bool {
        self.listener.is_some()
    }

    /// Asks the server whether it is there: `ping`, or on 2026-07-28 (which has no ping)
    /// `server/discover`, the cheapest request it must answer.
    pub(crate) async fn check(&self) -> Result<(), ServiceError> {
        if !self.is_stateless() {
            return self.peer.send_request(ClientRequest::PingRequest(PingRequest::default())).await.map(drop);
        }
        let info = rmcp::ClientHandler::get_info(&self.handler);
        let version =
            self.peer.peer_info().map(|i| i.protocol_version.clone()).unwrap_or(ProtocolVersion::V_2026_07_28);
        let meta = rmcp::model::RequestMetaObject::with_client_context(version, info.client_info, info.capabilities);
        self.peer.discover(meta).await.map(drop)
    }

    /// Adds or removes a resource on the `subscriptions/listen` stream (2026-07-28 and later).
    pub(crate) async fn listen_resource(&self, uri: &str, on: bool) -> Result<(), String> {
        match &self.listener {
            Some(listener) => listener.set_resource(uri, on).await,
            None => Err("the session has no `subscriptions/listen` stream".into()),
        }
    }

    /// Whether the session is gone (process exited or transport closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed() || self.tree.as_ref().is_some_and(|t| t.exit_info().is_some())
    }

    /// Closes the session and ends the process tree: stdin closed first (the service is
    /// cancelled, which drops the transport), then the tree's signal sequence. Bounded.
    pub(crate) async fn close(&self) {
        if let Some(listener) = &self.listener {
            listener.stop();
        }
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(Duration::from_millis(200), service.cancel()).await;
        }
        if let Some(tree) = &self.tree {
            tree.terminate().await;
        }
    }
}

/// Why the first listing failed.
#[derive(Debug)]
pub(crate) enum ListError {
    /// The server wants a login first (its challenge).
    Auth(String),
    /// Anything else, described.
    Other(String),
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListError::Auth(_) => f.write_str("the server asks for authorisation"),
            ListError::Other(e) => f.write_str(e),
        }
    }
}

/// Human text for a request error.
pub(crate) fn describe_error(e: &ServiceError) -> String {
    describe(e)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_servers_long_error_message_is_quoted_short() {
        let huge = "x".repeat(13_000_000);
        let e = rmcp::service::ServiceError::McpError(rmcp::model::ErrorData::internal_error(huge, None));
        let shown = super::describe(&e);
        assert!(shown.len() < 3000 && shown.contains("13000000 bytes"), "{} bytes", shown.len());
    }
}

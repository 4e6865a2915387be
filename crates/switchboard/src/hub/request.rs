//! One attempt of a request on a live connection: sent under the hub's watchdog (idle and hard deadlines,
//! the caller's cancellation; `notifications/cancelled` to the server on either), its progress
//! routed, and its failure classified into the hub's [`Error`] (whether it may have reached the
//! server, for the caller that sends it again; the caller also marks a remote server gone when
//! its transport closed under the request: `connect::remote_gone`).

use std::time::Duration;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientNotification, ClientRequest,
    InputResponses, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Inner, Slot};
use crate::connection::{Abandoned, Connection, Listed, describe_error};
use crate::deadline::Expired;
use crate::error::Error;
use crate::telemetry::{self, Kind, Operation, Transport};
use crate::transport::progress::{Progress, Publish};

/// How one request that is not a tool call is made: its timeout, who may cancel it, where its
/// progress goes. The default: the server's `tool_timeout_ms`, no cancellation, progress only
/// resetting the timeout.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// How long the server may stay silent (no response, no progress); `None`: the server's
    /// `tool_timeout_ms`.
    pub timeout: Option<Duration>,
    /// Cancelling it ends the request and tells the server (`notifications/cancelled`).
    pub cancel: Option<CancellationToken>,
    /// Where the server's progress reports for this request go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
}

impl RequestOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With a timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Cancelled by `token`.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Progress reports to `tx`.
    pub fn progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }
}

/// One request, described once: what goes on the wire, how it is named in messages, its
/// limits, where its progress goes, who may cancel it.
pub(super) struct Request {
    pub(super) body: ClientRequest,
    /// `tools/call echo`, `resources/read file:///x`: for messages.
    pub(super) what: String,
    pub(super) limits: Limits,
    pub(super) progress: ProgressTo,
    pub(super) cancel: Option<CancellationToken>,
    /// The client's capabilities, declared in `_meta` to a 2026-07-28 server (earlier ones
    /// read them from the handshake).
    pub(super) capabilities: Option<ClientCapabilities>,
    /// Answers the caller already has for a 2026-07-28 server's first round.
    pub(super) answers: Option<InputResponses>,
}

impl Request {
    /// `body` under the server's timeout (or `options`'), with `options`' cancellation and
    /// progress.
    pub(super) fn new(slot: &Slot, body: ClientRequest, what: String, options: RequestOptions) -> Request {
        let timeout = options
            .timeout
            .or(slot.config().map(|c| c.tool_timeout))
            .unwrap_or(crate::config::DEFAULT_TOOL_TIMEOUT)
            .min(crate::config::MAX_TIMEOUT);
        Request {
            body,
            what,
            limits: Limits { idle: timeout, total: timeout },
            progress: ProgressTo { caller: options.progress, publish: None },
            cancel: options.cancel,
            capabilities: None,
            answers: None,
        }
    }
}

/// How long a request may take: `idle` without a response or progress, `total` in all.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) idle: Duration,
    pub(super) total: Duration,
}

/// Where one request's progress goes besides its idle clock: the caller's channel, the hub's
/// events.
pub(super) struct ProgressTo {
    pub(super) caller: Option<mpsc::UnboundedSender<Progress>>,
    pub(super) publish: Option<Publish>,
}

/// Why a request failed, and whether it may have reached the server.
pub(super) struct Failure {
    pub(super) error: Error,
    /// False only when the transport was closed before the request could leave.
    pub(super) sent: bool,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { error, sent: true }
    }
}

/// Sends `request` once on `conn` and waits for its response, the end of its time, or its
/// cancellation. The deadlines are kept by the hub's [`Watchdog`](crate::deadline::Watchdog)
/// rather than by per-request timers (see there why); on timeout or cancellation the server is
/// told with `notifications/cancelled`, as the spec asks. `meta`: the request's `_meta`.
///
/// Traced: a client span of the MCP conventions ([`crate::telemetry`]) around it, a child of
/// the current span, whose context goes to the server in `_meta` (and over HTTP in the
/// `traceparent` header, [`crate::transport::http`]).
pub(super) async fn send(
    inner: &Inner,
    slot: &Slot,
    conn: &Connection,
    request: &Request,
    meta: Option<rmcp::model::RequestMetaObject>,
) -> Result<ServerResult, Failure> {
    use tracing::Instrument;
    let transport = if conn.tree.is_some() { Transport::Pipe } else { Transport::Tcp };
    let span = telemetry::span(Kind::Client, &Operation::of(&request.body), transport);
    if span.is_disabled() {
        return send_once(inner, slot, conn, request, meta, &span).await;
    }
    span.record("switchboard.server", slot.name.as_str());
    span.record("mcp.protocol.version", conn.identity.protocol_version.as_str());
    let mut meta = meta.unwrap_or_default();
    telemetry::inject(&span, &mut meta.0);
    let result = send_once(inner, slot, conn, request, Some(meta), &span).instrument(span.clone()).await;
    match &result {
        Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => telemetry::tool_error(&span),
        Ok(_) => {}
        Err(Failure { error, .. }) => {
            let code = match error {
                Error::Rejected { code, .. } => Some(*code),
                _ => None,
            };
            telemetry::failed(&span, error.kind(), code);
        }
    }
    result
}

async fn send_once(
    inner: &Inner,
    slot: &Slot,
    conn: &Connection,
    request: &Request,
    meta: Option<rmcp::model::RequestMetaObject>,
    span: &tracing::Span,
) -> Result<ServerResult, Failure> {
    let Request { body, what, limits, progress, cancel, .. } = request;
    let what = what.as_str();
    let options = match meta {
        Some(m) => PeerRequestOptions::no_options().with_meta(m),
        None => PeerRequestOptions::no_options(),
    };
    let mut watched = inner.watchdog.watch(limits.idle, limits.total);
    // Sending can itself wait (a transport renewing its session, a full queue): the deadline
    // and the caller's cancellation hold from here, not only once the request is out.
    let sending = tokio::select! {
        biased;
        sent = conn.request(body.clone(), options) => Ok(sent),
        why = &mut watched.expired => Err(why.ok()),
        () = cancelled(cancel.as_ref()) => Err(None),
    };
    let handle = match sending {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            let sent = !matches!(e, ServiceError::TransportClosed);
            return Err(Failure { error: Box::pin(map_error(slot, conn, e, what)).await, sent });
        }
        Err(Some(why)) => {
            return Err(Error::Timeout {
                server: slot.name.clone(),
                what: format!("{what} (sending)"),
                after: why.after(),
            }
            .into());
        }
        Err(None) => return Err(Error::Cancelled.into()),
    };
    let token = handle.progress_token.clone();
    let id = handle.id.clone();
    span.record("jsonrpc.request.id", tracing::field::display(&id));
    let (routed, published) = (progress.caller.is_some(), progress.publish.is_some());
    conn.progress.register(token.clone(), watched.activity.clone(), progress.caller.clone(), progress.publish.clone());
    // From here the server works on it: a caller that stops waiting (drops this future: an
    // HTTP client that hung up, a `select!` that took another branch) still tells it.
    let mut abandoned = Abandoned::new(conn, id.clone(), Some(&token));
    enum Outcome<T> {
        Response(T),
        Cancelled,
        Expired(Expired),
    }
    let outcome = {
        let response = handle.await_response();
        tokio::select! {
            biased;
            r = response => Outcome::Response(r),
            why = &mut watched.expired => match why {
                Ok(why) => Outcome::Expired(why),
                // The watchdog is gone only when the hub is being dropped.
                Err(_) => Outcome::Cancelled,
            },
            () = cancelled(cancel.as_ref()) => Outcome::Cancelled,
        }
    };
    drop(watched);
    abandoned.disarm();
    if routed {
        // A progress notification sent just before the response may still be in the
        // handler's hands: keep the route a moment, then close the caller's channel.
        conn.progress.retire_then_close(&token);
    } else if published {
        // Only the event stream takes it: no channel to close, so no timer either.
        conn.progress.retire(&token);
    } else {
        conn.progress.unregister(&token);
    }
    let tell = |reason: &str| {
        let note = CancelledNotification::new(CancelledNotificationParam::new(Some(id.clone()), Some(reason.into())));
        conn.peer.send_notification(ClientNotification::CancelledNotification(note))
    };
    match outcome {
        Outcome::Response(Ok(r)) => Ok(r),
        Outcome::Response(Err(e)) => Err(Box::pin(map_error(slot, conn, e, what)).await.into()),
        Outcome::Cancelled => {
            let _ = tell("cancelled by the user").await;
            Err(Error::Cancelled.into())
        }
        Outcome::Expired(why) => {
            let reason = match why {
                Expired::Idle(_) => "request timeout",
                Expired::Total(_) => "maximum total timeout exceeded",
            };
            let _ = tell(reason).await;
            Err(Error::Timeout { server: slot.name.clone(), what: what.into(), after: why.after() }.into())
        }
    }
}

/// Every page of a server's list of `T` on a live connection, each page a request sent by
/// [`send`] (the server's timeout under the watchdog, `notifications/cancelled` when it
/// expires; the same bounds on pages and items as at start-up).
pub(super) async fn list<T: Listed>(inner: &Inner, slot: &Slot, conn: &Connection) -> Result<Vec<T>, Error> {
    let page = |body: ClientRequest| async move {
        let request = Request::new(slot, body, T::WHAT.into(), RequestOptions::new());
        send(inner, slot, conn, &request, None).await.map_err(|f| f.error)
    };
    let unexpected =
        || Error::Protocol { server: slot.name.clone(), message: format!("{}: an answer of another kind", T::WHAT) };
    crate::connection::pages::list(&slot.name, page, unexpected).await
}

/// Resolves when `token` (if any) is cancelled.
async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

pub(super) async fn map_error(slot: &Slot, conn: &Connection, e: ServiceError, what: &str) -> Error {
    if let Some(challenge) = e.auth_challenge() {
        let scope = challenge.contains("insufficient_scope");
        let message = if scope {
            format!("refused `{what}`: the token lacks a scope it needs (HTTP 403); logging in again grants it")
        } else {
            format!("refused `{what}`: it needs a login (HTTP 401)")
        };
        slot.state().auth_challenge = Some(challenge.to_string());
        return Error::AuthRequired { server: slot.name.clone(), message, challenge: Some(challenge.to_string()) };
    }
    match e {
        ServiceError::Timeout { timeout } => {
            Error::Timeout { server: slot.name.clone(), what: what.into(), after: timeout }
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            let exit = match &conn.tree {
                Some(tree) => tree.exited_within(Duration::from_millis(1000)).await,
                None => None,
            };
            let tail = conn.tree.as_ref().map(|t| t.stderr.lines()).unwrap_or_default();
            let message = match exit {
                Some(info) => format!("exited during `{what}` ({info}); the call was not retried"),
                None => format!("closed the connection during `{what}`; the call was not retried"),
            };
            let message = crate::connection::with_tail(message, &tail);
            Error::ServerExited { server: slot.name.clone(), message }
        }
        // The answer came but was not taken (too large, undecodable): not the server's refusal.
        ServiceError::McpError(ref data) if let Some(refused) = crate::transport::Refusal::of(data) => {
            Error::Protocol { server: slot.name.clone(), message: format!("{what}: {refused}") }
        }
        ServiceError::McpError(ref data) => Error::Rejected {
            server: slot.name.clone(),
            code: data.code.0,
            data: data.data.clone(),
            message: format!("{what}: {}{}", describe_error(&e), urls_to_open(data)),
        },
        other => Error::Protocol { server: slot.name.clone(), message: format!("{what}: {}", describe_error(&other)) },
    }
}

/// For `-32042 URLElicitationRequired` (2025-11-25): the pages the server wants the person to
/// open before the request can succeed, as a sentence for the error message (empty otherwise).
fn urls_to_open(data: &rmcp::model::ErrorData) -> String {
    if data.code.0 != URL_ELICITATION_REQUIRED {
        return String::new();
    }
    let elicitations = data.data.as_ref().and_then(|d| d.get("elicitations")).and_then(|e| e.as_array());
    let pages: Vec<String> = elicitations
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let url = e.get("url")?.as_str()?;
            Some(match e.get("message").and_then(|m| m.as_str()) {
                Some(message) => format!("{url} ({message})"),
                None => url.to_string(),
            })
        })
        .collect();
    if pages.is_empty() {
        return String::new();
    }
    format!("; open {} in a browser, then call again", pages.join(" and "))
}

/// The JSON-RPC code of a refusal that needs the person to open a page first.
const URL_ELICITATION_REQUIRED: i32 = -32042;

//! The one path every request to a server takes (a tool call, a prompt, a resource read, a
//! completion, a subscription): the server connected first (waited for while it reconnects,
//! given up when the caller cancels), the request sent under the hub's watchdog with the
//! caller's cancellation token ([`super::request::send`]: one attempt, `notifications/cancelled`
//! to the server with its request id on a timeout or a cancellation), sent once more after
//! reconnecting when it provably never left, a remote server marked gone when its transport
//! closed under the request, a scope refusal kept for the next login, and a 2026-07-28
//! server's `input_required` rounds answered until the result.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientRequest, InputRequiredResult, RequestMetaObject, ServerResult};
use tokio_util::sync::CancellationToken;

use super::connect::{self, ensure_connected};
use super::request::{Failure, Request, send};
use super::slot::drop_connection;
use super::{Hub, Inner, Slot};
use crate::connection::{Connection, InputRetry};
use crate::error::Error;
use crate::events::Event;

impl Hub {
    /// Sends `request` to `slot`'s server and waits for its result, through every step a
    /// request takes (see the module's doc). A request in flight when the server goes away
    /// fails with [`Error::ServerExited`] and is not sent again (it may have been acted on).
    /// Timed in the hub's metrics (`mcp_client_operation_duration_seconds`).
    ///
    /// `request` is borrowed, not moved: an `async fn` keeps an argument it was given by value
    /// beside its own copy of it, in every future above the one that uses it (a request is
    /// about 850 bytes).
    pub(super) async fn exchange(&self, slot: &Arc<Slot>, request: &mut Request) -> Result<ServerResult, Error> {
        let started = std::time::Instant::now();
        let method = request.body.method().to_string();
        let result = self.exchange_timed(slot, request).await;
        let error = result.as_ref().err().map(Error::kind);
        self.inner.options.metrics.client_operation(&slot.name, &method, error, started.elapsed());
        result
    }

    async fn exchange_timed(&self, slot: &Arc<Slot>, request: &mut Request) -> Result<ServerResult, Error> {
        let _in_use = slot.begin_use();
        let cancel = request.cancel.clone();
        let wait = request.limits.idle;
        let mut conn = connected_unless_cancelled(&self.inner, slot, wait, cancel.as_ref()).await?;
        if conn.is_stateless()
            && let Some(answers) = request.answers.take()
        {
            answer_round(&mut request.body, (Some(answers), None));
        }
        let (mut resent, mut round, mut state_only) = (false, 0, 0);
        loop {
            // Only a 2026-07-28 server reads the client's capabilities from `_meta`.
            let meta = match &request.capabilities {
                Some(asked) if conn.is_stateless() => Some(self.request_capabilities(asked)),
                _ => None,
            };
            // Boxed: the request's future (6.8 KB, most of it rmcp's) would otherwise be part of
            // every future above it, each copied whole when made (about 27 KB of copying a call).
            let sent = Box::pin(send(&self.inner, slot, &conn, request, meta)).await;
            if sent.is_err() && conn.tree.is_none() && conn.is_closed() {
                // A remote server's transport closed under this request: the status says so at
                // once.
                let reason = format!("closed the connection during `{}`", request.what);
                connect::remote_gone(&self.inner, slot, &conn, reason).await;
            }
            let result = match sent {
                Ok(r) => r,
                Err(Failure { sent: false, error }) if !resent => {
                    // It never left: connect again and send it once more.
                    resent = true;
                    tracing::info!(server = %slot.name, "`{}` was not sent (the connection was closed): reconnecting to send it again ({error})", request.what);
                    drop_connection(slot, &conn).await;
                    conn = connected_unless_cancelled(&self.inner, slot, wait, cancel.as_ref()).await?;
                    continue;
                }
                Err(Failure { error, .. }) => {
                    if let Error::AuthRequired { challenge: Some(c), .. } = &error
                        && c.contains("insufficient_scope")
                    {
                        Box::pin(self.remember_refusal(&slot.name, c)).await;
                        self.inner.events.send(Event::AuthNeeded {
                            server: slot.name.clone(),
                            reason: format!("the server refused `{}` for want of a scope", request.what),
                            scope: crate::auth::challenge_scope(c),
                        });
                    }
                    return Err(error);
                }
            };
            match result {
                ServerResult::InputRequiredResult(asked) => {
                    let retry = next_round(slot, &conn, asked, &mut round, &mut state_only, &request.what).await?;
                    if !answer_round(&mut request.body, retry) {
                        return Err(Error::InputRounds {
                            server: slot.name.clone(),
                            message: format!(
                                "{}: the server asked for input, which this request cannot carry",
                                request.what
                            ),
                        });
                    }
                }
                other => return Ok(other),
            }
        }
    }

    /// The `_meta` declaring `asked`, less what this hub cannot answer.
    fn request_capabilities(&self, asked: &ClientCapabilities) -> RequestMetaObject {
        let mut caps = asked.clone();
        if self.inner.options.elicitor.is_none() {
            caps.elicitation = None;
        }
        if self.inner.options.sampler.is_none() {
            caps.sampling = None;
        }
        let mut meta = RequestMetaObject::default();
        meta.set_client_capabilities(caps);
        meta
    }
}

/// Puts an `input_required` round's answers into the request that is sent again; false for a
/// request that cannot carry them (only tool calls, prompts and resource reads have rounds).
fn answer_round(body: &mut ClientRequest, (responses, state): InputRetry) -> bool {
    match body {
        ClientRequest::CallToolRequest(r) => (r.params.input_responses, r.params.request_state) = (responses, state),
        ClientRequest::GetPromptRequest(r) => (r.params.input_responses, r.params.request_state) = (responses, state),
        ClientRequest::ReadResourceRequest(r) => {
            (r.params.input_responses, r.params.request_state) = (responses, state)
        }
        _ => return false,
    }
    true
}

/// Answers a 2026-07-28 server's `input_required` result for the next round of `what`, or
/// gives up when the server keeps asking.
async fn next_round(
    slot: &Slot,
    conn: &Connection,
    asked: InputRequiredResult,
    round: &mut usize,
    state_only: &mut u32,
    what: &str,
) -> Result<InputRetry, Error> {
    *round += 1;
    if *round >= crate::connection::MRTR_MAX_ROUNDS {
        return Err(Error::InputRounds {
            server: slot.name.clone(),
            message: format!("{what}: the server still asked for input after {round} rounds"),
        });
    }
    conn.answer_input(asked, state_only)
        .await
        .map_err(|e| Error::InputRounds { server: slot.name.clone(), message: format!("{what}: {e}") })
}

/// [`ensure_connected`], given up when the caller cancels (a request waiting for its server to
/// come back is cancelled like one in flight).
pub(super) async fn connected_unless_cancelled(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    wait: Duration,
    cancel: Option<&CancellationToken>,
) -> Result<Arc<Connection>, Error> {
    let Some(token) = cancel else { return ensure_connected(inner, slot, wait).await };
    tokio::select! {
        biased;
        conn = ensure_connected(inner, slot, wait) => conn,
        () = token.cancelled() => Err(Error::Cancelled),
    }
}

//! One `tools/call` through the gateway, in the client's era.
//!
//! The hub's call runs as its own task; the handler task waits for it and for the questions
//! its upstream asks meanwhile ([`Ask`], from the [`Relay`](crate::Relay)). A client of an
//! earlier revision is asked at once, from this task, so the question rides the call's own
//! response stream. A 2026-07-28 client takes no server-to-client requests: the call is
//! parked under a fresh `requestState` and the client gets an `input_required` result listing
//! the questions; when it calls again with that state and its `inputResponses`, the answers go
//! to the upstream, which was waiting all along, and the same call goes on. (An upstream's own
//! `input_required` rounds reach a legacy client as ordinary requests the same way: the hub
//! answers them through the relay.) A parked call nobody resumes within [`PARK_TTL`] is
//! cancelled upstream.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateMessageResult, ElicitResult, GetPromptResult, InputRequest,
    InputRequiredResult, ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceResult, ResultType,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use std::future::Future;
use std::pin::Pin;
use switchboard::elicitation::ElicitationAnswer;
use switchboard::{CallOptions, RequestOptions, ToolOutput};
use tokio::sync::{mpsc, oneshot};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Shared;
use crate::relay::{Ask, CallGuard, answer, params};

/// How long a parked call waits for its client to come back with the answers.
pub const PARK_TTL: Duration = Duration::from_secs(600);

/// What the hub's task gives back, by kind of request.
pub(crate) enum Outcome {
    Tool(Result<ToolOutput, switchboard::Error>),
    Prompt(Result<GetPromptResult, switchboard::Error>),
    Resource(Result<ReadResourceResult, switchboard::Error>),
}

/// What the client asked: the kind decides the hub call and the result's shape.
pub(crate) enum Work {
    Tool {
        name: String,
        /// The name the client called it by (its errors say that one, never the catalog's).
        exposed: String,
        arguments: Option<rmcp::model::JsonObject>,
        caller: switchboard::policy::Caller,
        /// Answers the client gave with its first request (SEP-2322), for the upstream.
        answers: Option<rmcp::model::InputResponses>,
    },
    Prompt {
        server: String,
        name: String,
        arguments: Option<rmcp::model::JsonObject>,
    },
    Resource {
        server: String,
        uri: String,
        exposed: String,
    },
}

/// Where a call's progress goes now (none while parked).
type ProgressTarget = Arc<Mutex<Option<(Peer<RoleServer>, ProgressToken)>>>;

/// A call through the gateway, running or parked (waiting for a 2026-07-28 client's answers):
/// one state either way. Dropped unfinished, its `Guarded` cancels the hub's call.
pub(crate) struct Call {
    /// The tool's catalog name and the one the client used.
    names: Option<(String, String)>,
    call: Guarded,
    asks: crate::relay::AskReceiver,
    /// Questions put to the client in an `input_required` round, by key (parked only).
    pending: Vec<(String, Ask)>,
    /// Takes the call out of the relay when the call ends (held for its drop).
    _in_relay: Option<CallGuard>,
    cancel: CancellationToken,
    progress: ProgressTarget,
    /// The call's progress, sent on by the task that waits for the call (none when no one can
    /// want it, or while parked): no task of its own, so a call costs no second task and no
    /// hand-over before its result.
    queue: Option<ProgressQueue>,
    /// Drops the call's progress while parked (no client request is waiting to be told).
    drain: Option<Drain>,
    /// Cancels a parked call nobody resumes within [`PARK_TTL`].
    expiry: Option<tokio::task::AbortHandle>,
}

/// Takes a parked call's progress off its queue and drops it, until the call is resumed and
/// the queue is given back.
struct Drain {
    stop: oneshot::Sender<()>,
    task: JoinHandle<ProgressQueue>,
}

type ProgressQueue = mpsc::UnboundedReceiver<switchboard::Progress>;

impl Drain {
    fn start(mut queue: ProgressQueue) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => return queue,
                    p = queue.recv() => if p.is_none() { return queue },
                }
            }
        });
        Self { stop, task }
    }

    async fn finish(self) -> Option<ProgressQueue> {
        let _ = self.stop.send(());
        self.task.await.ok()
    }
}

/// The hub's call, polled by the handler task itself (no task of its own: a task hop per call
/// cost a third of the gateway's throughput on one CPU). Dropped unfinished — the client went
/// away — it is cancelled and left to finish on its own task, so the upstream is told.
pub(crate) struct Guarded {
    fut: Option<Pin<Box<dyn Future<Output = Outcome> + Send>>>,
    cancel: CancellationToken,
}

impl Guarded {
    async fn wait(&mut self) -> Outcome {
        let Some(fut) = self.fut.as_mut() else { return std::future::pending().await };
        let out = fut.await;
        self.fut = None;
        out
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            self.cancel.cancel();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(fut);
            }
        }
    }
}

/// Whether the request is of protocol 2026-07-28 or later (stateless: no server-to-client
/// requests, `input_required` rounds instead).
pub(crate) fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

fn unpoisoned<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `work`, or resumes the call parked under `request_state` with `responses`.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    session: u64,
    work: Option<Work>,
    request_state: Option<&str>,
    responses: Option<&rmcp::model::InputResponses>,
    ctx: RequestContext<RoleServer>,
) -> Result<Done, McpError> {
    let target = ctx.meta.get_progress_token().map(|t| (ctx.peer.clone(), t));
    let running = match request_state {
        // Resuming: answer what was asked, point progress at this request.
        Some(state) => {
            let caller = crate::caller::principal(&ctx).map(|p| p.key()).unwrap_or_default();
            let place =
                shared.replicas.open(state, &caller).map_err(|e| McpError::invalid_params(e.to_string(), None))?;
            if place.replica != shared.replicas.id() {
                // The HTTP front passes such a request on before it gets here (a stdio client
                // cannot hold another gateway's state).
                return Err(McpError::invalid_params(
                    format!("this requestState continues a call held by replica {}, not this one", place.replica),
                    None,
                ));
            }
            match shared.parked_remove(&place.key) {
                // Boxed, as are the other rare paths below: the request's future stays small.
                Some(parked) => Box::pin(resume(parked, responses, target)).await,
                None => {
                    return Err(McpError::invalid_params(
                        "this requestState's call is over (answered already, or cancelled): call the tool again",
                        None,
                    ));
                }
            }
        }
        None => match work {
            Some(work) => {
                let can_elicit = ctx.client_capabilities().is_some_and(|c| c.elicitation.is_some())
                    || ctx.peer.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some());
                let caller = crate::caller::principal(&ctx);
                start(shared, session, work, target, ctx.client_capabilities(), modern(&ctx), can_elicit, caller)
            }
            None => return Err(McpError::invalid_params("nothing to run", None)),
        },
    };
    drive(shared, running, &ctx).await
}

/// How a request ended: its result, or a round of questions for a 2026-07-28 client.
pub(crate) enum Done {
    Tool(CallToolResult),
    Prompt(GetPromptResult),
    Resource(ReadResourceResult),
    Input(InputRequiredResult),
}

/// `caps`: the client's capabilities, passed on to a 2026-07-28 upstream so it asks only for
/// what this client can answer.
///
/// What a call holds is made for its kind alone, and moved, not copied: the boxed future is
/// the hub's call of that kind and nothing else (a tool call's box is not as large as a
/// resource read's); the progress queue and the approver exist only where they can be used
/// (the relay registration is made for every call: any upstream may ask).
#[allow(clippy::too_many_arguments)]
fn start(
    shared: &Arc<Shared>,
    session: u64,
    work: Work,
    target: Option<(Peer<RoleServer>, ProgressToken)>,
    caps: Option<rmcp::model::ClientCapabilities>,
    resumable: bool,
    can_elicit: bool,
    principal: Option<switchboard::identity::Principal>,
) -> Call {
    let cancel = CancellationToken::new();
    let mut options = CallOptions::new().cancel(cancel.clone());
    if !shared.options.model_results {
        options = options.raw_only();
    }
    if let Some(caps) = caps {
        options = options.client_capabilities(caps);
    }
    // Progress is forwarded only when the request has a token, or may have one once resumed
    // (a 2026-07-28 call can come back with a new token); otherwise none is routed at all.
    let wanted = target.is_some() || resumable;
    let progress: ProgressTarget = Arc::new(Mutex::new(target));
    let queue = if wanted {
        let (tx, rx) = mpsc::unbounded_channel::<switchboard::Progress>();
        options = options.progress(tx);
        Some(rx)
    } else {
        None
    };
    let server = match &work {
        Work::Tool { name, .. } => {
            shared.hub.catalog_for(principal.as_ref()).tool(name).map(|e| e.server.clone()).unwrap_or_default()
        }
        Work::Prompt { server, .. } | Work::Resource { server, .. } => server.clone(),
    };
    crate::traced::upstream(&server);
    // A server each person gets their own of is the caller's own (in their hub, and to the relay).
    let person = principal.as_ref().filter(|_| shared.hub.is_personal(&server));
    // A tool call goes to the host's hub, which finds the caller's own (by the caller in its
    // options); a prompt or a read names its server, so it goes to the hub that holds it.
    let host = shared.hub.clone();
    let routed = shared.hub.route(&server, person);
    let (guard, ask_tx, asks) = match &shared.relay {
        Some(relay) => {
            let route = crate::relay::route(&server, person.map(|p| p.key()).as_deref());
            let caller = principal.as_ref().map(|p| p.key());
            let (guard, tx, asks) = relay.call_started(&route, session, caller.as_deref());
            (Some(guard), tx, asks)
        }
        None => {
            let (tx, rx) = mpsc::unbounded_channel();
            (None, tx, rx)
        }
    };
    let (names, call): (_, Pin<Box<dyn Future<Output = Outcome> + Send>>) = match work {
        Work::Tool { name, exposed, arguments, caller, answers } => {
            options = options.caller(caller);
            if let Some(answers) = answers {
                options = options.input_responses(answers);
            }
            // A call the policy asks about is put to the client that made it, as an
            // elicitation on this call (an `input_required` round for a 2026-07-28 client). A
            // client that cannot elicit gets the hub's approver (the dashboard's queue in
            // `serve`), or none: the call is then denied, naming the rule and `switchboard allow`.
            if can_elicit {
                options = options.approver(Arc::new(crate::approve::AskClient::new(ask_tx)));
            }
            let names = (name != exposed).then(|| (name.clone(), exposed));
            let call: Pin<Box<dyn Future<Output = Outcome> + Send>> = if options.raw_only {
                Box::pin(async move { Outcome::Tool(host.call_tool(&name, arguments, options).await) })
            } else {
                // The model's form is made here, off the session's path for a big result.
                Box::pin(async move {
                    Outcome::Tool(match host.call_tool(&name, arguments, options).await {
                        Ok(out) => out.formatted().await,
                        Err(e) => Err(e),
                    })
                })
            };
            (names, call)
        }
        // A prompt or a resource read takes the same cancellation and progress as a tool call:
        // the client's `notifications/cancelled` (or its going away) reaches the upstream.
        Work::Prompt { server, name, arguments } => {
            let request = request_options(&options);
            (
                None,
                Box::pin(async move {
                    Outcome::Prompt(match routed {
                        Ok(hub) => hub.get_prompt_with(&server, &name, arguments, request).await,
                        Err(e) => Err(e),
                    })
                }),
            )
        }
        Work::Resource { server, uri, exposed } => (
            None,
            Box::pin(async move {
                let request = request_options(&options);
                let read = match routed {
                    Ok(hub) => hub.read_resource_with(&server, &uri, request).await,
                    Err(e) => Err(e),
                };
                Outcome::Resource(read.map(|mut r| {
                    if exposed != uri {
                        for c in &mut r.contents {
                            set_uri(c, &exposed);
                        }
                    }
                    r
                }))
            }),
        ),
    };
    let call = Guarded { fut: Some(call), cancel: cancel.clone() };
    Call {
        names,
        call,
        asks,
        pending: Vec::new(),
        _in_relay: guard,
        cancel,
        progress,
        queue,
        drain: None,
        expiry: None,
    }
}

/// What a request other than a tool call takes of a call's options: its cancellation and its
/// progress.
fn request_options(options: &CallOptions) -> RequestOptions {
    let mut request = RequestOptions::new();
    request.cancel = options.cancel.clone();
    request.progress = options.progress.clone();
    request
}

/// Sends one progress notification to where the call's progress goes now.
async fn forward(progress: &ProgressTarget, p: switchboard::Progress) {
    let target = unpoisoned(progress).clone();
    let Some((peer, token)) = target else { return };
    let mut param = ProgressNotificationParam::new(token, p.progress);
    param.total = p.total;
    param.message = p.message;
    let _ = peer.notify_progress(param).await;
}

/// The next progress of the call, or never (no queue, or its sender gone).
async fn next_progress(queue: &mut Option<ProgressQueue>) -> switchboard::Progress {
    match queue {
        Some(q) => match q.recv().await {
            Some(p) => p,
            None => {
                *queue = None;
                std::future::pending().await
            }
        },
        None => std::future::pending().await,
    }
}

async fn resume(
    mut parked: Call,
    responses: Option<&rmcp::model::InputResponses>,
    target: Option<(Peer<RoleServer>, ProgressToken)>,
) -> Call {
    if let Some(expiry) = parked.expiry.take() {
        expiry.abort();
    }
    let responses = responses.cloned().unwrap_or_default();
    for (key, ask) in parked.pending.drain(..) {
        let value = responses.get(&key).cloned();
        match ask {
            Ask::Elicit { reply, .. } => {
                let answer = value
                    .and_then(|v| serde_json::from_value::<ElicitResult>(v).ok())
                    .map(answer)
                    .unwrap_or(ElicitationAnswer::Cancel);
                let _ = reply.send(answer);
            }
            Ask::Sample { reply, .. } => {
                let result = value
                    .and_then(|v| serde_json::from_value::<CreateMessageResult>(v).ok())
                    .ok_or_else(|| "the client gave no sampling result".to_string());
                let _ = reply.send(result);
            }
            Ask::Roots { reply, .. } => {
                let roots = value
                    .and_then(|v| serde_json::from_value::<rmcp::model::ListRootsResult>(v).ok())
                    .unwrap_or_else(|| rmcp::model::ListRootsResult::new(Vec::new()));
                let _ = reply.send(roots);
            }
        }
    }
    *unpoisoned(&parked.progress) = target;
    parked.queue = match parked.drain.take() {
        Some(drain) => drain.finish().await,
        None => None,
    };
    parked
}

async fn drive(shared: &Arc<Shared>, mut running: Call, ctx: &RequestContext<RoleServer>) -> Result<Done, McpError> {
    loop {
        tokio::select! {
            // Progress first: what the upstream sent before its result reaches the client
            // before the result.
            biased;
            // Boxed: a notification's future is larger than the rest of this one.
            p = next_progress(&mut running.queue) => Box::pin(forward(&running.progress, p)).await,
            done = running.call.wait() => {
                if let Some(q) = &mut running.queue {
                    while let Ok(p) = q.try_recv() {
                        Box::pin(forward(&running.progress, p)).await;
                    }
                }
                if let Some(e) = Box::pin(sign_in_needed(shared, &done, ctx)).await {
                    return Err(e);
                }
                return finish(shared, done, running.names.as_ref());
            }
            Some(ask) = running.asks.recv() => {
                if modern(ctx) {
                    return Box::pin(park(shared, running, *ask, ctx)).await.map(Done::Input);
                }
                Box::pin(ask_now(*ask, ctx)).await;
            }
            () = ctx.ct.cancelled() => {
                running.cancel.cancel();
                return Err(McpError::internal_error("the call was cancelled", None));
            }
        }
    }
}

/// Asks a client of an earlier revision, from the call's own task.
async fn ask_now(ask: Ask, ctx: &RequestContext<RoleServer>) {
    let caps = ctx.peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    match ask {
        Ask::Elicit { request, reply } => {
            let _ = reply.send(crate::relay::elicit_peer(&ctx.peer, &request).await);
        }
        Ask::Sample { request, reply } => {
            let result = match caps.sampling {
                Some(_) => {
                    ctx.peer.create_message(request.params).await.map_err(|e| format!("the client refused: {e}"))
                }
                None => Err("the client in front of the gateway does not offer sampling".into()),
            };
            let _ = reply.send(result);
        }
        Ask::Roots { reply, .. } => {
            let empty = rmcp::model::ListRootsResult::new(Vec::new());
            let roots = match caps.roots {
                Some(_) => ctx.peer.list_roots().await.unwrap_or(empty),
                None => empty,
            };
            let _ = reply.send(roots);
        }
    }
}

/// Parks the call and says what the client must answer (with the questions asked together).
async fn park(
    shared: &Arc<Shared>,
    mut running: Call,
    first: Ask,
    ctx: &RequestContext<RoleServer>,
) -> Result<InputRequiredResult, McpError> {
    let caps = ctx.client_capabilities().unwrap_or_default();
    let mut asks = vec![first];
    // Questions asked together (the hub answers an upstream's round at once) go in one round.
    tokio::time::sleep(Duration::from_millis(10)).await;
    while let Ok(more) = running.asks.try_recv() {
        asks.push(*more);
    }
    // Without the capability a question needs, a 2026-07-28 client gets -32021 naming it (the
    // upstream's question is declined and the call cancelled).
    let needs_elicitation = asks.iter().any(|a| matches!(a, Ask::Elicit { .. })) && caps.elicitation.is_none();
    let needs_sampling = asks.iter().any(|a| matches!(a, Ask::Sample { .. })) && caps.sampling.is_none();
    let needs_roots = asks.iter().any(|a| matches!(a, Ask::Roots { .. })) && caps.roots.is_none();
    if needs_elicitation || needs_sampling || needs_roots {
        let mut needed = rmcp::model::ClientCapabilities::default();
        if needs_elicitation {
            needed.elicitation = Some(rmcp::model::ElicitationCapability::new());
        }
        if needs_sampling {
            needed.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        if needs_roots {
            needed.roots = Some(rmcp::model::RootsCapabilities::default());
        }
        for ask in asks {
            ask.refuse("the client did not declare the capability");
        }
        running.cancel.cancel();
        return Err(McpError::missing_required_client_capability(needed));
    }
    let mut requests = BTreeMap::new();
    let mut pending = Vec::new();
    for (i, ask) in asks.into_iter().enumerate() {
        // The upstream's own key when it gave one (an upstream round relayed), else ours.
        let key = match ask.input_key() {
            Some(k) if !requests.contains_key(k) => k.to_string(),
            _ => format!("switchboard-{i}"),
        };
        let wire = match &ask {
            Ask::Elicit { request, .. } if caps.elicitation.is_some() => params(request)
                .and_then(|p| serde_json::to_value(p).ok())
                .map(|p| serde_json::json!({"method": "elicitation/create", "params": p})),
            Ask::Sample { request, .. } if caps.sampling.is_some() => serde_json::to_value(&request.params)
                .ok()
                .map(|p| serde_json::json!({"method": "sampling/createMessage", "params": p})),
            Ask::Roots { .. } if caps.roots.is_some() => Some(serde_json::json!({"method": "roots/list"})),
            _ => None,
        };
        match wire.and_then(|w| serde_json::from_value::<InputRequest>(w).ok()) {
            Some(r) => {
                requests.insert(key.clone(), r);
                pending.push((key, ask));
            }
            None => ask.refuse("the client did not declare the capability"),
        }
    }
    *unpoisoned(&running.progress) = None;
    let key = shared.new_park_key();
    // Sealed around this replica, the key and the caller: any replica can tell where the call
    // is and whether this caller may continue it ([`crate::replicas`]).
    let caller = crate::caller::principal(ctx).map(|p| p.key()).unwrap_or_default();
    let Some(state) = shared.replicas.seal(&key, &caller, PARK_TTL) else {
        for (_, ask) in pending {
            ask.refuse("the gateway could not seal the round's state");
        }
        running.cancel.cancel();
        return Err(McpError::internal_error("the gateway could not seal the round's requestState", None));
    };
    let expiry = {
        let shared = shared.clone();
        let key = key.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            if let Some(p) = shared.parked_remove(&key) {
                p.cancel.cancel();
            }
        })
        .abort_handle()
    };
    running.pending = pending;
    running.drain = running.queue.take().map(Drain::start);
    running.expiry = Some(expiry);
    shared.park(key, running);
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

/// What the hub says of a call, as the client knows it: the tool by the name the client called
/// it by (the catalog's name, `mcp__workspace-hub__mcp__everything__get-sum` for an attached
/// gateway, is never shown), servers as the gateway says them.
fn said(shared: &Shared, text: String, names: Option<&(String, String)>) -> String {
    let text = match names {
        Some((catalog, exposed)) => text.replace(&format!("`{catalog}`"), &format!("`{exposed}`")),
        None => text,
    };
    shared.said(text)
}

/// A request that failed for want of the caller's login to their own server: `-32042` with
/// the sign-in ([`crate::signin`]).
async fn sign_in_needed(shared: &Shared, outcome: &Outcome, ctx: &RequestContext<RoleServer>) -> Option<McpError> {
    let (Outcome::Tool(Err(e)) | Outcome::Prompt(Err(e)) | Outcome::Resource(Err(e))) = outcome else { return None };
    shared.sign_in_error(e, ctx).await
}

fn finish(shared: &Shared, outcome: Outcome, names: Option<&(String, String)>) -> Result<Done, McpError> {
    // A 2026-07-28 client needs `resultType` (the upstream may be of an earlier revision);
    // rmcp takes it off again for clients of earlier revisions.
    let complete = Some(ResultType::COMPLETE);
    match outcome {
        Outcome::Tool(Ok(out)) if shared.options.model_results => {
            let model = out.model();
            let mut result = CallToolResult::success(vec![ContentBlock::text(model.text())]);
            result.is_error = Some(model.is_error);
            result.structured_content = out.raw.structured_content;
            result.result_type = complete;
            Ok(Done::Tool(result))
        }
        Outcome::Tool(Ok(mut out)) => {
            out.raw.result_type = complete;
            Ok(Done::Tool(out.raw))
        }
        Outcome::Prompt(Ok(mut r)) => {
            r.result_type = complete;
            Ok(Done::Prompt(r))
        }
        Outcome::Resource(Ok(mut r)) => {
            r.result_type = complete;
            Ok(Done::Resource(r))
        }
        // Switchboard's own refusal (the policy, a rate limit, the input schema) is a result
        // the model reads, not a protocol error: it can correct the call, wait, or tell the
        // person.
        Outcome::Tool(Err(
            e @ (switchboard::Error::Denied { .. }
            | switchboard::Error::RateLimited { .. }
            | switchboard::Error::InvalidArguments { .. }),
        )) => {
            let text = said(shared, crate::servers::explained(&e), names);
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            result.result_type = complete;
            Ok(Done::Tool(result))
        }
        Outcome::Tool(Err(e)) | Outcome::Prompt(Err(e)) | Outcome::Resource(Err(e)) => {
            let mut e = crate::servers::error(e);
            e.message = said(shared, e.message.into_owned(), names).into();
            Err(e)
        }
    }
}

/// Gives resource contents the URI the client asked for (the exposed one, not the upstream's).
pub(crate) fn set_uri(contents: &mut rmcp::model::ResourceContents, uri: &str) {
    use rmcp::model::ResourceContents;
    match contents {
        ResourceContents::TextResourceContents { uri: u, .. }
        | ResourceContents::BlobResourceContents { uri: u, .. } => {
            *u = uri.to_string();
        }
        _ => {}
    }
}

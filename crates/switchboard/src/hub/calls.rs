//! What a caller asks of a server: tool calls (behind the policy's gate; timeout reset on
//! progress under a hard maximum; model-ready results), resource reads, prompts and
//! resource subscriptions. Each is described once as a `request::Request` and sent on the one
//! path every request takes (`pipeline.rs`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, GetPromptRequest, GetPromptRequestParams,
    GetPromptResult, JsonObject, ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult, ServerResult,
};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connect::ensure_connected;
use super::request::{Request, RequestOptions};
use super::subscriptions::send_subscription;
use super::{Hub, Slot};
use crate::error::Error;
use crate::output::{ModelResult, ResultBudget, Spill, format_call_result};
use crate::status::ServerStatus;
use crate::transport::progress::Progress;

/// Options for one call.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Time without a response or progress before the call is cancelled; default: the
    /// server's `tool_timeout_ms`.
    pub timeout: Option<Duration>,
    /// The longest the call may take in all, progress or not; default: the hub's
    /// `max_call_time`.
    pub max_total: Option<Duration>,
    /// Where progress notifications go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// Cancel the call (sends `notifications/cancelled`).
    pub cancel: Option<CancellationToken>,
    /// Leave the result as the server sent it (no model formatting, no spill files): for hosts
    /// that pass results on, such as a gateway. [`ToolOutput::model`] then holds only
    /// `is_error`.
    pub raw_only: bool,
    /// On a server of protocol 2026-07-28 or later, the capabilities this request declares
    /// (its `_meta`), so the server asks only for what can be answered: a gateway passes its
    /// own client's on. Those the hub cannot answer itself (elicitation without an elicitor,
    /// sampling without a sampler) are left out. Earlier revisions fix capabilities at
    /// `initialize`: ignored there.
    pub client_capabilities: Option<rmcp::model::ClientCapabilities>,
    /// Who makes the call (default: a model): which `ask` rules it satisfies, and what the
    /// audit log says.
    pub caller: crate::policy::Caller,
    /// Who is asked when the policy asks about this call, instead of the hub's approver (a
    /// gateway asks the client that made the call).
    pub approver: Option<Arc<dyn crate::policy::Approver>>,
    /// Answers given with the first request, before the server asked (SEP-2322 lets a client
    /// of 2026-07-28 answer in advance; a gateway passes its client's on). Sent only to a
    /// server of 2026-07-28 or later.
    pub input_responses: Option<rmcp::model::InputResponses>,
}

impl CallOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }
    /// With a timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
    /// With a hard maximum.
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total = Some(d);
        self
    }
    /// With a progress channel.
    pub fn progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }
    /// With a cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// Declaring these client capabilities (see [`CallOptions::client_capabilities`]).
    pub fn client_capabilities(mut self, capabilities: rmcp::model::ClientCapabilities) -> Self {
        self.client_capabilities = Some(capabilities);
        self
    }
    /// Without model formatting (see [`CallOptions::raw_only`]).
    pub fn raw_only(mut self) -> Self {
        self.raw_only = true;
        self
    }
    /// Made by `caller`.
    pub fn caller(mut self, caller: crate::policy::Caller) -> Self {
        self.caller = caller;
        self
    }
    /// Asking `approver` when the policy asks.
    pub fn approver(mut self, approver: Arc<dyn crate::policy::Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
    /// With answers given in advance (see [`CallOptions::input_responses`]).
    pub fn input_responses(mut self, responses: rmcp::model::InputResponses) -> Self {
        self.input_responses = Some(responses);
        self
    }
}

/// The outcome of a tool call: the result as the server sent it, and on demand the form a
/// model is given ([`ToolOutput::model`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The model-visible tool name.
    pub name: String,
    /// The server.
    pub server: String,
    /// The tool's raw name on that server.
    pub tool: String,
    /// The result as the server sent it, hidden characters removed ([`crate::screen`]).
    pub raw: CallToolResult,
    /// What was removed from it, decoded, for the person (never given to a model).
    /// Boxed: rare, and a call's future carries the output.
    pub hidden: Option<Box<crate::screen::Hidden>>,
    /// Secrets taken out of it (`policy.secrets`): kinds and counts. Boxed: rare, and a
    /// call's future carries the output.
    pub secrets: Option<Box<Vec<crate::screen::secrets::Redaction>>>,
    /// How to make the model's form, unless the call was `raw_only`.
    format: Option<Format>,
    model: std::sync::OnceLock<Box<ModelResult>>,
}

/// What the model's form of a result is made with.
#[derive(Debug, Clone)]
struct Format {
    budget: ResultBudget,
    /// Where cut output is kept (`<data>/results`).
    spill_dir: Arc<std::path::Path>,
}

impl ToolOutput {
    /// Whether the tool reported an error (`isError`).
    pub fn is_error(&self) -> bool {
        self.raw.is_error == Some(true)
    }

    /// The result ready for a model, made the first time it is asked for and kept: text cut to
    /// the hub's budget, with the whole written to a spill file (0600, under the data folder)
    /// that the note names. A result whose model form nobody asks for is never formatted and
    /// never written anywhere. Formatting a large result writes that file: on an async
    /// runtime, ask for a result over a few hundred kilobytes from a blocking task. For a
    /// `raw_only` call only [`ModelResult::is_error`] is set.
    pub fn model(&self) -> &ModelResult {
        self.model.get_or_init(|| {
            Box::new(match &self.format {
                None => ModelResult::of_error(self.is_error()),
                Some(f) => {
                    let label = format!("{}-{}", self.server, self.tool);
                    format_call_result(&self.raw, f.budget, Some(Spill { dir: &f.spill_dir, label: &label }))
                }
            })
        })
    }

    /// Makes the model's form (see [`ToolOutput::model`]) where it cannot stall the runtime: in
    /// place for a small result, on tokio's blocking pool for one of 256 KiB or more (its spill
    /// file is written there).
    pub async fn formatted(self) -> Result<ToolOutput, Error> {
        let size: usize = self
            .raw
            .content
            .iter()
            .map(|b| match b {
                rmcp::model::ContentBlock::Text(t) => t.text.len(),
                rmcp::model::ContentBlock::Image(i) => i.data.len(),
                rmcp::model::ContentBlock::Audio(a) => a.data.len(),
                _ => 64,
            })
            .sum();
        if size < 256 * 1024 || self.is_formatted() || self.format.is_none() {
            self.model();
            return Ok(self);
        }
        tokio::task::spawn_blocking(move || {
            self.model();
            self
        })
        .await
        .map_err(|e| Error::Internal { message: format!("formatting the result failed: {e}") })
    }

    /// Whether the model's form has been made (and with it any spill file written).
    pub fn is_formatted(&self) -> bool {
        self.model.get().is_some()
    }

    /// Made from a result that is already in hand (a host that calls tools some other way and
    /// wants the same model form): formatted with `budget`, cut output kept under `spill_dir`.
    pub fn new(
        name: String,
        server: String,
        tool: String,
        raw: CallToolResult,
        budget: ResultBudget,
        spill_dir: &std::path::Path,
    ) -> ToolOutput {
        let format = Some(Format { budget, spill_dir: Arc::from(spill_dir) });
        ToolOutput { name, server, tool, raw, hidden: None, secrets: None, format, model: std::sync::OnceLock::new() }
    }
}

/// `{name, server, tool, raw, model}`, the model form made if it was not yet.
impl Serialize for ToolOutput {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolOutput", 5)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("server", &self.server)?;
        s.serialize_field("tool", &self.tool)?;
        s.serialize_field("raw", &self.raw)?;
        s.serialize_field("model", self.model())?;
        s.end()
    }
}

impl Hub {
    /// Calls a tool by model-visible name (or `server/tool`). A server being reconnected is
    /// waited for (within the call's timeout); one that went away is connected again first.
    /// A request that provably never reached the server (its transport was closed when it was
    /// sent) is sent once more after reconnecting; a call in flight when the server goes away
    /// fails with [`Error::ServerExited`] and is not retried (the tool may have run).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        mut options: CallOptions,
    ) -> Result<ToolOutput, Error> {
        // A signed-in caller's tools include their own servers' (see `people`).
        if let Some(person) = options.caller.principal().and_then(|p| self.person(p)) {
            let mut catalog = self.catalog_for(person.principal());
            if catalog.tool(name).is_none() && person.wait_for(name, options.cancel.as_ref()).await {
                catalog = self.catalog_for(person.principal());
            }
            match catalog.tool(name) {
                Some(entry) if self.is_personal(&entry.server) => {
                    let qualified = format!("{}/{}", entry.server, entry.tool.name);
                    return Box::pin(person.call_tool(&qualified, arguments, options)).await;
                }
                Some(_) => {}
                None if self
                    .inner
                    .all_slots()
                    .iter()
                    .any(|s| self.is_personal_slot(s) && crate::catalog::naming::may_belong(name, &s.name)) =>
                {
                    return Err(person.missing_tool(name));
                }
                None => {}
            }
        }
        let mut catalog = self.catalog();
        if catalog.tool(name).is_none() && self.wait_for(name, options.cancel.as_ref()).await {
            catalog = self.catalog();
        }
        let mut entry = catalog.tool(name).ok_or_else(|| self.missing_tool(name))?;
        let slot = self.inner.slot(&entry.server)?.clone();
        // Listed from what the server offered when it last ran: it is waited for (within its
        // start-up timeout), and the call goes on only if it still offers the tool, decided on
        // by the definition it gives now.
        if slot.state().remembered {
            let wait = slot.config().map_or(Duration::from_secs(30), |c| c.startup_timeout) + Duration::from_secs(2);
            super::pipeline::connected_unless_cancelled(&self.inner, &slot, wait, options.cancel.as_ref()).await?;
            catalog = self.catalog();
            entry = match catalog.tool(name) {
                Some(e) if e.server == slot.name => e,
                _ => return Err(Error::ToolGone { name: name.to_string(), server: slot.name.clone() }),
            };
        }
        self.gated(entry, &slot, arguments, &mut options, |arguments, options| {
            self.send_call(entry, &slot, arguments, options)
        })
        .await
    }

    /// A call the gate let through, on the one request path ([`Hub::exchange`]): its timeout
    /// reset by progress, under a hard maximum. It takes what it needs out of `options`
    /// (borrowed, as the request is: see [`Hub::exchange`]).
    async fn send_call(
        &self,
        entry: &crate::catalog::ToolEntry,
        slot: &Arc<Slot>,
        arguments: Option<JsonObject>,
        options: &mut CallOptions,
    ) -> Result<ToolOutput, Error> {
        let format = (!options.raw_only)
            .then(|| Format { budget: self.inner.options.budget, spill_dir: self.inner.spill_dir.clone() });
        let mut params = CallToolRequestParams::new(entry.tool.name.to_string());
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let mut request = Request::new(
            slot,
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            format!("tools/call {}", entry.tool.name),
            RequestOptions {
                timeout: options.timeout,
                cancel: options.cancel.take(),
                progress: options.progress.take(),
            },
        );
        // A call's timeout is reset by progress, under a hard maximum.
        request.limits.total = options
            .max_total
            .unwrap_or(self.inner.options.max_call_time)
            .max(request.limits.idle)
            .min(crate::config::MAX_TIMEOUT);
        request.progress.publish = self.inner.publish_progress(&entry.server, &entry.name);
        request.capabilities = options.client_capabilities.take();
        request.answers = options.input_responses.take();
        let mut raw = match self.exchange(slot, &mut request).await? {
            ServerResult::CallToolResult(r) => r,
            _ => {
                return Err(Error::Protocol {
                    server: slot.name.clone(),
                    message: format!("{}: the server's answer is not a tool result", request.what),
                });
            }
        };
        let screening = self.inner.options.screening;
        let hidden = screening.apply(&mut raw, crate::screen::result).map(Box::new);
        if let Some(h) = &hidden {
            tracing::warn!(server = %entry.server, "the result of `{}` had hidden characters ({screening:?}): {}", entry.name, h.summary());
        }
        let secrets = Some(self.take_secrets(slot, &entry.name, &mut raw)).filter(|s| !s.is_empty()).map(Box::new);
        Ok(ToolOutput {
            name: entry.name.clone(),
            server: entry.server.clone(),
            tool: entry.tool.name.to_string(),
            raw,
            hidden,
            secrets,
            format,
            model: std::sync::OnceLock::new(),
        })
    }

    /// Takes secrets out of a result as `policy.secrets` says (a result that carried one is
    /// withheld under `block`); what was taken.
    fn take_secrets(
        &self,
        slot: &Slot,
        name: &str,
        raw: &mut CallToolResult,
    ) -> Vec<crate::screen::secrets::Redaction> {
        use crate::screen::secrets::{SecretsMode, withheld};
        let mode = self.inner.gate.policy().secrets();
        if mode == SecretsMode::Off {
            return Vec::new();
        }
        let known = slot.secrets(&self.inner.host_env);
        let found = self.inner.checks.secrets().redact(raw, &known);
        if !found.is_empty() {
            let kinds: Vec<String> = found.iter().map(|r| format!("{:?} ×{}", r.kind, r.count)).collect();
            tracing::warn!(server = %slot.name, "the result of `{name}` carried secrets ({}): {}", kinds.join(", "),
                if mode == SecretsMode::Block { "withheld" } else { "redacted" });
            if mode == SecretsMode::Block {
                *raw = withheld(&found);
            }
        }
        found
    }

    /// Reads a resource from a server.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(server, uri, RequestOptions::default()).await
    }

    /// Reads a resource from a server, with a timeout, a cancellation token or a progress
    /// channel of the caller's.
    pub async fn read_resource_with(
        &self,
        server: &str,
        uri: &str,
        options: RequestOptions,
    ) -> Result<ReadResourceResult, Error> {
        let slot = self.inner.slot(server)?.clone();
        let body = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(uri)));
        let mut request = Request::new(&slot, body, format!("resources/read {uri}"), options);
        match self.exchange(&slot, &mut request).await? {
            ServerResult::ReadResourceResult(mut r) => {
                let screening = self.inner.options.screening;
                if let Some(h) = screening.apply(&mut r, crate::screen::read) {
                    tracing::warn!(server = %slot.name, "a read of {uri} had hidden characters ({screening:?}): {}", h.summary());
                }
                Ok(r)
            }
            _ => Err(unexpected(&slot, format!("resources/read {uri}"))),
        }
    }

    /// Gets a prompt from a server.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(server, name, arguments, RequestOptions::default()).await
    }

    /// Gets a prompt from a server, with a timeout, a cancellation token or a progress channel
    /// of the caller's.
    pub async fn get_prompt_with(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
    ) -> Result<GetPromptResult, Error> {
        let slot = self.inner.slot(server)?.clone();
        let mut params = GetPromptRequestParams::new(name);
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let body = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let mut request = Request::new(&slot, body, format!("prompts/get {name}"), options);
        match self.exchange(&slot, &mut request).await? {
            ServerResult::GetPromptResult(mut r) => {
                let screening = self.inner.options.screening;
                if let Some(h) = screening.apply(&mut r, crate::screen::prompt) {
                    tracing::warn!(server = %slot.name, "the prompt `{name}` had hidden characters ({screening:?}): {}", h.summary());
                }
                Ok(r)
            }
            _ => Err(unexpected(&slot, format!("prompts/get {name}"))),
        }
    }
}

/// A server answered `what` with a result of another kind.
pub(super) fn unexpected(slot: &Slot, what: String) -> Error {
    Error::Protocol { server: slot.name.clone(), message: format!("{what}: unexpected result type") }
}

impl Hub {
    /// Why `name` is not in the catalog: its server is not connected (say why), or there is no
    /// such tool. What [`Hub::call_tool`] returns for a name it cannot find.
    pub fn missing_tool(&self, name: &str) -> Error {
        for slot in self.inner.all_slots() {
            if crate::catalog::naming::may_belong(name, &slot.name) {
                let status = slot.state().status.clone();
                if !matches!(status, ServerStatus::Connected { .. }) {
                    return Error::not_connected(&slot.name, &status);
                }
            }
        }
        // The closest name the catalog has, by any spelling (the catalog's is suggested).
        let catalog = self.catalog();
        let spellings: Vec<(String, &str)> = catalog
            .tools()
            .iter()
            .flat_map(|t| {
                let short = crate::catalog::naming::short_base(&t.server, &t.tool.name);
                [(t.name.clone(), t.name.as_str()), (short, t.name.as_str())]
            })
            .collect();
        let meant = crate::text::closest(name, spellings.iter().map(|(s, _)| s.as_str()))
            .and_then(|found| spellings.iter().find(|(s, _)| s == found))
            .map(|(_, catalog_name)| catalog_name.to_string());
        Error::UnknownTool { name: name.into(), meant }
    }

    /// Waits until the catalog has the tool `name` when a server it may belong to is still
    /// connecting (up to that server's start-up timeout): a call made just after the hub (or a
    /// daemon) started finds the tool instead of failing at once. Whether the tool is there;
    /// when it is not, [`Hub::missing_tool`] says why.
    pub async fn wait_for_tool(&self, name: &str) -> bool {
        self.catalog().tool(name).is_some() || self.wait_for(name, None).await
    }

    /// [`Hub::wait_for_tool`], given up when `cancel` is.
    async fn wait_for(&self, name: &str, cancel: Option<&CancellationToken>) -> bool {
        let connecting = |slot: &Slot| matches!(slot.state().status, ServerStatus::Connecting);
        let owners: Vec<Arc<Slot>> = self
            .inner
            .all_slots()
            .into_iter()
            .filter(|s| crate::catalog::naming::may_belong(name, &s.name) && connecting(s))
            .collect();
        let Some(wait) = owners.iter().filter_map(|s| s.config().map(|c| c.startup_timeout)).max() else {
            return false;
        };
        // The attempt ends itself at its start-up timeout (and says so in the status); the
        // margin lets that status arrive before the wait gives up.
        let deadline = tokio::time::Instant::now() + wait + Duration::from_secs(2);
        let mut changed = self.inner.changed.subscribe();
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        loop {
            if self.catalog().tool(name).is_some() {
                return true;
            }
            if !owners.iter().any(|s| connecting(s)) {
                return false;
            }
            tokio::select! {
                woke = tokio::time::timeout_at(deadline, changed.changed()) => {
                    if !matches!(woke, Ok(Ok(()))) {
                        return self.catalog().tool(name).is_some();
                    }
                }
                () = cancel.cancelled() => return false,
            }
        }
    }

    /// Asks a server to send `notifications/resources/updated` for `uri`; each arrives as
    /// [`Event::ResourceUpdated`](crate::events::Event::ResourceUpdated). The subscription
    /// outlives the connection: after a reconnect the hub subscribes again.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.resource_subscription(server, uri, true).await
    }

    /// Stops the updates [`Hub::subscribe_resource`] asked for.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.resource_subscription(server, uri, false).await
    }

    async fn resource_subscription(&self, server: &str, uri: &str, on: bool) -> Result<(), Error> {
        let slot = self.inner.slot(server)?.clone();
        let conn = ensure_connected(&self.inner, &slot, Duration::from_secs(30)).await?;
        send_subscription(&self.inner, &slot, &conn, uri, on).await?;
        let mut st = slot.state();
        if on {
            st.subscribed.insert(uri.to_string());
        } else {
            st.subscribed.remove(uri);
        }
        Ok(())
    }
}

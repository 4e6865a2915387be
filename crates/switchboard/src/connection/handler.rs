//! Our side of the MCP session: what the client declares, and where server notifications go.
//!
//! `list_changed` notifications become [`ListChange`] signals for the hub's per-server refresh
//! worker; progress notifications are routed by token to the call that asked for them;
//! logging messages become events.

// Roots, sampling and logging are deprecated by SEP-2577 (protocol 2026-07-28), but servers on
// every protocol version still use them, and 2026-07-28 servers ask for them inside
// `input_required` results.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation, ListRootsResult,
    ProgressNotificationParam, ProtocolVersion, ResourceUpdatedNotificationParam, Root, RootsCapabilities,
    SamplingCapability, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, NotificationContext, RequestContext, RoleClient};
use tokio::sync::mpsc;

use crate::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};
use crate::events::Event;
use crate::sampling::{Sampler, SamplingRequest};
use crate::transport::progress::{ProgressRouter, ProgressSink};

/// Which list a server said has changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListChange {
    Tools,
    Resources,
    Prompts,
}

/// The client handler for one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) changes: mpsc::UnboundedSender<ListChange>,
    pub(crate) progress: Arc<ProgressRouter>,
    pub(crate) events: crate::events::EventBus,
    /// Who answers `elicitation/create`, if anyone.
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    /// Who answers `sampling/createMessage`, if anyone.
    pub(crate) sampler: Option<Arc<dyn Sampler>>,
    /// The folders offered as roots (`roots/list`).
    pub(crate) roots: Arc<Vec<std::path::PathBuf>>,
    /// Who decides the roots instead, if anyone (a gateway's client).
    pub(crate) roots_source: Option<Arc<dyn crate::roots::RootsSource>>,
    /// The protocol version `initialize` asks for (`protocol_version` in config); `None`: the
    /// newest with a handshake.
    pub(crate) protocol_version: Option<ProtocolVersion>,
    /// Progress, log and resource-update notifications beyond the rate are dropped.
    pub(crate) flood: Arc<Mutex<crate::transport::flood::Flood>>,
    /// Whether hidden characters in what it asks are removed or only told.
    pub(crate) screening: crate::screen::Screening,
}

impl Handler {
    /// Whether a notification is taken (see [`Flood`]).
    fn admit(&self) -> bool {
        let (taken, note) = self.flood.lock().unwrap_or_else(PoisonError::into_inner).admit();
        if let Some(n) = note {
            let rate = self.flood.lock().unwrap_or_else(PoisonError::into_inner).rate();
            let reason = format!("notifications beyond {rate} a second: {n} dropped");
            tracing::warn!(server = %self.server, "{reason}");
            self.events.send(Event::Dropped { server: self.server.clone(), reason });
        }
        taken
    }

    /// Progress as a transport reads it: admitted under the notification rate, then routed to
    /// its call at once (not on a task of its own, which could let the result overtake it).
    pub(crate) fn progress_sink(&self) -> ProgressSink {
        let handler = self.clone();
        ProgressSink(Arc::new(move |p| {
            if handler.admit() {
                handler.progress.dispatch(p);
            }
        }))
    }

    /// How the session starts. A pinned version decides: 2026-07-28 and later have no
    /// handshake (`server/discover`, then self-contained requests), earlier ones use
    /// `initialize`. Unpinned, `probe` sends `server/discover` first and falls back to
    /// `initialize` when the server answers as a legacy one (rmcp's `Auto`; a 4xx over HTTP,
    /// a JSON-RPC error otherwise); without `probe`, `initialize` with the newest version
    /// that has it.
    pub(crate) fn lifecycle(&self, probe: bool) -> ClientLifecycleMode {
        match &self.protocol_version {
            Some(v) if !v.has_initialize() => ClientLifecycleMode::Discover { preferred_versions: vec![v.clone()] },
            Some(_) => ClientLifecycleMode::Initialize,
            None if probe => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
            None => ClientLifecycleMode::Initialize,
        }
    }
}

/// The answers to a server's requests, shared by the two ways they arrive: as requests of
/// their own (up to 2025-11-25) and inside an `input_required` result (2026-07-28).
impl Handler {
    /// The roots offered to the server.
    #[allow(deprecated)]
    pub(crate) fn roots(&self) -> ListRootsResult {
        let roots = self
            .roots
            .iter()
            .map(|dir| {
                let mut root = Root::new(file_uri(dir));
                root.name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                root
            })
            .collect();
        ListRootsResult::new(roots)
    }

    /// The roots for this server now: the roots source's, else the hub's own.
    pub(crate) async fn roots_now(&self, key: Option<String>) -> ListRootsResult {
        if let Some(source) = &self.roots_source
            && let Some(roots) = source.roots(&self.server, key).await
        {
            return roots;
        }
        self.roots()
    }

    /// Asks the elicitor: form mode, or URL mode (an http(s) URL) if it takes URLs; declines
    /// otherwise.
    /// `key`: the server's key when the question is part of an `input_required` round.
    pub(crate) async fn elicit(&self, request: ElicitRequestParams, key: Option<String>) -> ElicitResult {
        let Some(elicitor) = &self.elicitor else {
            // No one to ask (the capability was not declared): decline, so the server goes on.
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let asked = match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let mut asked = (message, schema);
                if let Some(h) = self.screening.apply(&mut asked, |(m, s)| crate::screen::question(m, s)) {
                    tracing::warn!(server = %self.server, "a question had hidden characters ({:?}): {}", self.screening, h.summary());
                }
                let (message, schema) = asked;
                ElicitationRequest::new(self.server.clone(), message, schema)
            }
            // Only a web address is ever put to the person (not `javascript:`, `file:`...).
            ElicitRequestParams::UrlElicitationParams { mut message, url, elicitation_id, .. }
                if elicitor.takes_urls() && (url.starts_with("https://") || url.starts_with("http://")) =>
            {
                let found =
                    self.screening.apply(&mut message, |m| crate::screen::question(m, &mut serde_json::Value::Null));
                if let Some(h) = found {
                    tracing::warn!(server = %self.server, "a question had hidden characters ({:?}): {}", self.screening, h.summary());
                }
                ElicitationRequest::url(self.server.clone(), message, url, elicitation_id)
            }
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        let asked = asked.with_input_key(key);
        let url_mode = asked.url.is_some();
        match elicitor.elicit(asked).await {
            // URL mode: `accept` is the person's consent to open the URL; no values go back.
            ElicitationAnswer::Accept(_) if url_mode => ElicitResult::new(ElicitationAction::Accept),
            ElicitationAnswer::Accept(values) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(serde_json::Value::Object(values))
            }
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            _ => ElicitResult::new(ElicitationAction::Decline),
        }
    }

    /// Asks the sampler; without one, sampling was not declared and the request is refused.
    pub(crate) async fn sample(
        &self,
        mut params: CreateMessageRequestParams,
        key: Option<String>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(sampler) = &self.sampler else {
            return Err(ErrorData::method_not_found::<rmcp::model::CreateMessageRequestMethod>());
        };
        if let Some(h) = self.screening.apply(&mut params, crate::screen::sampling) {
            tracing::warn!(server = %self.server, "a request for a completion had hidden characters ({:?}): {}", self.screening, h.summary());
        }
        sampler
            .create_message(SamplingRequest::new(self.server.clone(), params).with_input_key(key))
            .await
            .map_err(|reason| ErrorData::internal_error(format!("sampling refused: {reason}"), None))
    }
}

impl ClientHandler for Handler {
    #[allow(deprecated)]
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(false);
        capabilities.roots = Some(roots);
        if let Some(elicitor) = &self.elicitor {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::default());
            if elicitor.takes_urls() {
                elicitation.url = Some(UrlElicitationCapability::default());
            }
            capabilities.elicitation = Some(elicitation);
        }
        if self.sampler.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        let mut info = ClientConfig::new(capabilities, Implementation::new("switchboard", env!("CARGO_PKG_VERSION")));
        // `initialize` offers the newest version that has the handshake (rmcp's default is the
        // newest of all, 2026-07-28, which has none), unless the config pins one.
        info.protocol_version = self.protocol_version.clone().unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE);
        info
    }

    async fn list_roots(&self, _ctx: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(self.roots_now(None).await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sample(params, None).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The server may withdraw its question (`notifications/cancelled`) or go away: then the
        // person is no longer asked (the elicitor's future is dropped).
        tokio::select! {
            answer = self.elicit(request, None) => Ok(answer),
            () = ctx.ct.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }
    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.changes.send(ListChange::Tools);
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.changes.send(ListChange::Resources);
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        let _ = self.changes.send(ListChange::Prompts);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        if self.admit() {
            self.events.send(Event::ResourceUpdated { server: self.server.clone(), uri: params.uri });
        }
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _ctx: NotificationContext<RoleClient>) {
        if self.admit() {
            self.progress.dispatch(params);
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        if !self.admit() {
            return;
        }
        let level = crate::events::LogLevel::from(params.level);
        tracing::debug!(server = %self.server, ?level, "server log: {}", params.data);
        self.events.send(Event::Log { server: self.server.clone(), level, logger: params.logger, data: params.data });
    }
}

/// `file://` URI of an absolute path, percent-encoding what a URI path may not hold.
fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => uri.push(byte as char),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(super::file_uri(std::path::Path::new("/home/me/my project")), "file:///home/me/my%20project");
    }
}

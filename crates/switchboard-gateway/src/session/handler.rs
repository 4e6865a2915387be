//! [`Session`] as rmcp's `ServerHandler`: what the gateway says of itself, and each request's
//! work (in the parent module) boxed, so that the task rmcp spawns per request holds a pointer
//! instead of the largest handler's future (about 11 KB, moved and copied several times per
//! request).

use std::future::Future;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use switchboard::status::ServerStatus;

use super::Session;
use crate::traced;
use switchboard::telemetry::Operation;

/// A tool call whose result says `isError`.
fn failed_call(r: &CallToolResponse) -> bool {
    matches!(r, CallToolResponse::Complete(r) if r.is_error == Some(true))
}

/// What the gateway said of itself last ([`ServerHandler::get_info`]), and what it was made
/// from: rmcp asks for it on every request of a 2026-07-28 client (each is served as one of its
/// own), and making it reads every server's status and writes the instructions.
pub(crate) struct InfoCache {
    /// [`switchboard::Hub::status_epoch`] and the names when it was made.
    made_from: (u64, crate::Names),
    /// Until when it holds (a status that names a retry time says it relative to now).
    until: Option<std::time::Instant>,
    info: ServerConfig,
}

/// How long an answer that says when a server is tried again is kept.
const TIMED_INFO: std::time::Duration = std::time::Duration::from_millis(250);

impl Session {
    /// What the gateway says of itself now: its capabilities, and instructions that name each
    /// server with its status and fix (or, in front of one server alone, what that says);
    /// and whether it says when a server is tried again (relative to now: it ages).
    fn make_info(&self) -> (ServerConfig, bool) {
        if let Some(server) = self.shared.transparent_server()
            && let Some(info) = self.shared.hub.server_peer_info(&server)
        {
            let mut config = ServerConfig::new(info.capabilities.clone());
            if let Some(implementation) = info.server_info.clone() {
                config = config.with_server_info(implementation);
            }
            config.instructions = info.instructions.clone();
            return (config, false);
        }
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let servers = self.shared.hub.servers();
        let timed = servers.iter().any(|s| match &s.status {
            ServerStatus::Failed { retry, .. } | ServerStatus::Disconnected { retry, .. } => {
                retry.as_ref().is_some_and(|r| r.at_ms.is_some())
            }
            _ => false,
        });
        let config = ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("switchboard", env!("CARGO_PKG_VERSION")).with_title("switchboard gateway"),
            )
            .with_instructions(self.instructions(&servers));
        (config, timed)
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let made_from = (self.shared.hub.status_epoch(), self.shared.names());
        let now = std::time::Instant::now();
        {
            let cached = self.shared.info.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(c) = cached.as_ref()
                && c.made_from == made_from
                && c.until.is_none_or(|until| now < until)
            {
                return c.info.clone();
            }
        }
        let (info, timed) = self.make_info();
        let until = timed.then(|| now + TIMED_INFO);
        *self.shared.info.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(InfoCache { made_from, until, info: info.clone() });
        info
    }

    /// A session that starts is asked to sign in to each of its caller's own servers that
    /// needs a login ([`crate::signin`]), once they have had their first try.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let Some(principal) = crate::caller::principal_in(&context.extensions) else {
            tracing::debug!("a session started with no one signed in");
            return;
        };
        let Some(person) = self.shared.hub.person(&principal) else { return };
        tracing::debug!(person = %principal.shown(), "a session started; its sign-ins are looked at");
        let (shared, peer) = (self.shared.clone(), context.peer.clone());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(super::START_WAIT, person.started(|_| true)).await;
            shared.ask_sign_ins(&principal, Some(peer)).await;
        });
    }

    async fn set_level(&self, request: SetLevelRequestParams, ctx: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.register(&ctx)?;
        if let Some(s) = self.shared.sessions().get_mut(&self.id) {
            s.level = Some(request.level.into());
        }
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("initialize"), self.transport, &context);
        Box::pin(traced::within(span, self.handle_initialize(request, context), traced::never))
    }

    fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("server/discover"), self.transport, &context);
        Box::pin(traced::within(span, self.handle_discover(context), traced::never))
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("tools/list"), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_list_tools(_request, ctx), traced::never))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send + '_ {
        let span = traced::span(&Operation::tool(request.name.as_ref()), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_call_tool(request, ctx), failed_call))
    }

    fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("prompts/list"), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_list_prompts(_request, ctx), traced::never))
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + Send + '_ {
        let span = traced::span(&Operation::prompt(request.name.as_str()), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_get_prompt(request, ctx), traced::never))
    }

    fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("resources/list"), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_list_resources(_request, ctx), traced::never))
    }

    fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("resources/templates/list"), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_list_resource_templates(_request, ctx), traced::never))
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + Send + '_ {
        let span = traced::span(&Operation::resource("resources/read", request.uri.as_str()), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_read_resource(request, ctx), traced::never))
    }

    #[allow(deprecated)]
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        let span =
            traced::span(&Operation::resource("resources/subscribe", request.uri.as_str()), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_subscribe(request, ctx), traced::never))
    }

    #[allow(deprecated)]
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        let span =
            traced::span(&Operation::resource("resources/unsubscribe", request.uri.as_str()), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_unsubscribe(request, ctx), traced::never))
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + Send + '_ {
        let span = traced::span(&Operation::method("completion/complete"), self.transport, &ctx);
        Box::pin(traced::within(span, self.handle_complete(request, ctx), traced::never))
    }

    fn listen(&self, context: SubscriptionContext) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        Box::pin(self.handle_listen(context))
    }
}

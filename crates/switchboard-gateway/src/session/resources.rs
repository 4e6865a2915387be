//! A session's resources: its lists, reads (the gateway's own `switchboard://servers` among
//! them) and legacy subscriptions, each kept in the session's memory on a team's store
//! ([`super::memory`]).

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};

use super::Session;
use crate::call::{Done, Work};
use crate::caller::principal;
use crate::servers::error;
use crate::view::SERVERS_URI;

impl Session {
    pub(super) fn servers_resource(&self, ctx: &RequestContext<RoleServer>) -> ReadResourceResult {
        crate::servers::resource(&self.shared.servers_for(principal(ctx).as_ref()))
    }

    pub(super) async fn handle_list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let view = self.list_view(&ctx).await?;
        let mut items = view.resources.clone();
        if self.shared.transparent_server().is_none() {
            let mut servers = Resource::new(SERVERS_URI, "switchboard servers").with_mime_type("application/json");
            servers.description =
                Some("Every server behind this gateway, its status, and the command that fixes it".into());
            items.push(servers);
        }
        let result = ListResourcesResult::with_all_items(items);
        Ok(self.listing(&ctx, result))
    }

    pub(super) async fn handle_list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let view = self.list_view(&ctx).await?;
        let result = ListResourceTemplatesResult::with_all_items(view.templates.clone());
        Ok(self.listing(&ctx, result))
    }

    pub(super) async fn handle_read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri == SERVERS_URI && self.shared.transparent_server().is_none() {
            self.register(&ctx)?;
            return Ok(ReadResourceResponse::Complete(self.servers_resource(&ctx)));
        }
        let (view, owner) = self.lookup(&ctx, |view| view.resource_owner(&request.uri)).await?;
        let owner = owner.or_else(|| {
            // A URI no listing or template names: the only server in view, if one.
            (view.servers.len() == 1)
                .then(|| crate::view::Owner { server: view.servers[0].clone(), uri: request.uri.clone() })
        });
        let modern = crate::call::modern(&ctx);
        let Some(owner) = owner else {
            let e = McpError::resource_not_found(format!("no server offers `{}`", request.uri), None);
            return Err(not_found(e, &request.uri, modern));
        };
        let work = Work::Resource { server: owner.server, uri: owner.uri, exposed: request.uri.clone() };
        let work = request.request_state.is_none().then_some(work);
        let state = request.request_state.clone();
        let done =
            crate::call::run(&self.shared, self.id, work, state.as_deref(), request.input_responses.as_ref(), ctx)
                .await;
        match done.map_err(|e| not_found(e, &request.uri, modern))? {
            Done::Resource(r) => Ok(ReadResourceResponse::Complete(r)),
            Done::Input(i) => Ok(ReadResourceResponse::InputRequired(i)),
            _ => Err(McpError::internal_error("a parked request of another kind was resumed as resources/read", None)),
        }
    }

    #[allow(deprecated)]
    pub(super) async fn handle_subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (_, owner) = self.lookup(&ctx, |view| view.resource_owner(&request.uri)).await?;
        let owner =
            owner.ok_or_else(|| McpError::resource_not_found(format!("no server offers `{}`", request.uri), None))?;
        self.shared.subscribe(self.id, &owner.server, &owner.uri, principal(&ctx).as_ref()).await.map_err(error)?;
        self.remember_subscription(&ctx, &request.uri, true).await;
        Ok(())
    }

    #[allow(deprecated)]
    pub(super) async fn handle_unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let view = self.view(&ctx).await?;
        let Some(owner) = view.resource_owner(&request.uri) else { return Ok(()) };
        let caller = principal(&ctx);
        let key = self.shared.subscription_key(&owner.server, &owner.uri, caller.as_ref());
        let had = self.shared.sessions().get_mut(&self.id).is_some_and(|s| s.subscribed.remove(&key));
        if had {
            self.shared.unsubscribe(&owner.server, &owner.uri, caller.as_ref()).await;
            self.remember_subscription(&ctx, &request.uri, false).await;
        }
        Ok(())
    }
}

/// `-32002`, "resource not found" up to 2025-11-25.
const RESOURCE_NOT_FOUND: i32 = -32002;

/// A resource-not-found error as the client's era has it: the URI asked for in `data.uri`
/// (both eras' specs show it there; an upstream may leave it out), and for a client of
/// 2026-07-28 the code `-32602` that SEP-2164 gives it (a legacy upstream says `-32002`).
fn not_found(mut e: McpError, uri: &str, modern: bool) -> McpError {
    if e.code.0 != RESOURCE_NOT_FOUND && e.code != rmcp::model::ErrorCode::INVALID_PARAMS {
        return e;
    }
    if modern && e.code.0 == RESOURCE_NOT_FOUND {
        e.code = rmcp::model::ErrorCode::INVALID_PARAMS;
    }
    match &mut e.data {
        Some(serde_json::Value::Object(data)) => {
            data.entry("uri").or_insert_with(|| uri.into());
        }
        None => e.data = Some(serde_json::json!({"uri": uri})),
        Some(_) => {}
    }
    e
}

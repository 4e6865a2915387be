//! One downstream session: the rmcp `ServerHandler` the gateway serves.

mod handler;
pub(crate) use handler::InfoCache;
mod memory;
mod resources;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Reference,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};

use crate::call::{Done, Work};
use crate::relay::SessionPeer;
use crate::{Names, SessionState, Shared, UnknownProfile};

/// One downstream session (an rmcp `ServerHandler`). Made by [`crate::Gateway::session`].
pub struct Session {
    shared: Arc<Shared>,
    id: u64,
    registered: AtomicBool,
    /// Its first list has waited for the servers still starting (see [`FIRST_LIST_WAIT`]).
    listed: AtomicBool,
    /// When it began: its first list waits at most until [`FIRST_LIST_WAIT`] after.
    born: tokio::time::Instant,
    /// How its client reaches it, for its spans.
    transport: Transport,
    /// What its client was given, kept in a team's store ([`memory`]).
    memory: memory::Memory,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.session_gone(self.id);
    }
}

use crate::caller::principal;
use crate::servers::error;
use switchboard::telemetry::Transport;

fn profile_error(e: UnknownProfile) -> McpError {
    McpError::invalid_params(format!("no profile `{}` in the config", e.0), None)
}

/// The `profile` a request asked for in its URL (`/mcp?profile=NAME`).
fn asked_profile(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    let query = parts.uri.query()?;
    query.split('&').find_map(|kv| kv.strip_prefix("profile=")).map(|p| p.replace("%20", " "))
}

/// The names a request asked for in its URL (`/mcp?names=short|short:N|prefixed|bare`).
fn asked_names(ctx: &RequestContext<RoleServer>) -> Result<Option<Names>, McpError> {
    let Some(query) = ctx.extensions.get::<http::request::Parts>().and_then(|p| p.uri.query()) else {
        return Ok(None);
    };
    let Some(word) = query.split('&').find_map(|kv| kv.strip_prefix("names=")) else { return Ok(None) };
    Names::parse(word).map(Some).ok_or_else(|| {
        McpError::invalid_params(
            format!("`names={word}`: use short, short:N (N from 24 to 64), prefixed or bare"),
            None,
        )
    })
}

/// The four list results, which rmcp gives the same cache fields without a common trait.
trait Listing {
    /// Never cached, in `scope`.
    fn fresh(self, scope: CacheScope) -> Self;
}

macro_rules! listing {
    ($($t:ty),*) => {$(
        impl Listing for $t {
            fn fresh(self, scope: CacheScope) -> Self {
                self.with_ttl_ms(0).with_cache_scope(scope)
            }
        }
    )*};
}
listing!(ListToolsResult, ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult);

impl Session {
    pub(crate) fn new(shared: Arc<Shared>, transport: Transport) -> Session {
        let id = shared.new_session_id();
        Session {
            shared,
            transport,
            id,
            registered: AtomicBool::new(false),
            listed: AtomicBool::new(false),
            born: tokio::time::Instant::now(),
            memory: memory::Memory::default(),
        }
    }

    /// Records the session's peer, profile and names on its first request.
    fn register(&self, ctx: &RequestContext<RoleServer>) -> Result<(Option<String>, Option<Names>), McpError> {
        let profile = self.profile_for(ctx);
        let caller = principal(ctx);
        if let Some(p) = &profile {
            self.shared.filter(Some(p)).map_err(profile_error)?;
            // A profile bound to groups is theirs: another caller who signed in may not ask for it.
            let bound = self.shared.options.profiles.get(p).map(|p| p.groups.clone()).unwrap_or_default();
            if let Some(who) = &caller
                && !bound.is_empty()
                && !bound.iter().any(|g| who.groups.contains(g))
            {
                return Err(McpError::invalid_params(
                    format!("the profile `{p}` is for the group {}; you are not in it", bound.join(" or ")),
                    None,
                ));
            }
        }
        let names = asked_names(ctx)?;
        if !self.registered.swap(true, Ordering::AcqRel) {
            let state = SessionState {
                peer: Some(ctx.peer.clone()),
                profile: profile.clone(),
                names,
                caller: caller.clone(),
                ..Default::default()
            };
            self.shared.sessions().insert(self.id, state);
        } else {
            // A session is its first caller's: another's token on it is refused (a session
            // id that leaked must not serve someone else).
            let owner = self.shared.sessions().get(&self.id).and_then(|s| s.caller.clone());
            let same = |a: &switchboard::identity::Principal, b: &switchboard::identity::Principal| {
                a.issuer == b.issuer && a.subject == b.subject
            };
            if let (Some(owner), Some(now)) = (&owner, &caller)
                && !same(owner, now)
            {
                return Err(McpError::invalid_request("this session belongs to another caller", None));
            }
        }
        // A request of theirs starts their own servers (their hub), which exchange the token of
        // their latest request (kept in memory only).
        if let Some(who) = &caller
            && self.shared.hub.has_personal_servers()
            && let Some(person) = self.shared.hub.person(who)
            && let Some(token) = crate::caller::bearer(ctx)
        {
            person.set_caller_token(token);
        }
        // The relay picks who answers a question outside any call by who made a request last.
        if let Some(relay) = &self.shared.relay {
            let person = principal(ctx).map(|p| p.key().into());
            relay.session_used(&SessionPeer { id: self.id, peer: ctx.peer.clone(), person });
        }
        Ok((profile, names))
    }

    /// The profile a request is served with: the one it asked for in its URL, else, for a
    /// caller who signed in, the first profile (by name) bound to one of their groups, else
    /// none (the gateway's scope).
    fn profile_for(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(asked) = asked_profile(ctx) {
            return Some(asked);
        }
        let caller = principal(ctx)?;
        self.shared
            .options
            .profiles
            .iter()
            .find(|(_, p)| p.groups.iter().any(|g| caller.groups.contains(g)))
            .map(|(name, _)| name.clone())
    }

    /// The client's view of the catalog as it is now: no request waits for servers that are
    /// starting or reconnecting (a call waits only for its own server, in the hub).
    async fn view(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<crate::view::View>, McpError> {
        let (profile, names) = self.register(ctx)?;
        let view = self.shared.view(profile.as_deref(), names, principal(ctx).as_ref()).map_err(profile_error)?;
        // Once in a session's life at most (resumed here): its own future, boxed.
        if let Some(place) = self.to_catch_up(ctx) {
            Box::pin(self.catch_up(ctx, &view, place)).await;
        }
        Ok(view)
    }

    /// The view for a list: the session's first list waits (within [`FIRST_LIST_WAIT`] of the
    /// session's start) for the servers it can see that are on their first start with nothing
    /// remembered to stand in for their lists ([`switchboard::Hub::listed`]), so it holds every
    /// server's tools when they start quickly or were seen before; those that take longer are
    /// told with `list_changed` when they arrive, and so is a server whose lists differ from
    /// what was remembered of it. What a session listed is what later changes are told against
    /// (a call made meanwhile, whatever the catalog then, changes nothing the client saw).
    async fn list_view(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<crate::view::View>, McpError> {
        if !self.listed.swap(true, Ordering::AcqRel) {
            self.wait_for(ctx, Until::Listed, self.born + FIRST_LIST_WAIT).await;
        }
        let view = self.view(ctx).await?;
        if let Some(s) = self.shared.sessions().get_mut(&self.id) {
            s.seen = Some(view.clone());
        }
        self.remember_view(ctx, &view).await;
        Ok(view)
    }

    /// Waits until `deadline` for the servers this client sees that are on their first start
    /// (`Until::Started`), or only those with no remembered lists standing in (`Until::Listed`).
    async fn wait_for(&self, ctx: &RequestContext<RoleServer>, until: Until, deadline: tokio::time::Instant) {
        let Ok(filter) = self.shared.filter(self.profile_for(ctx).as_deref()) else { return };
        let person = principal(ctx).and_then(|p| self.shared.hub.person(&p));
        let wanted = |name: &str| filter.server(name);
        let done = async {
            for hub in std::iter::once(&self.shared.hub).chain(person.as_ref()) {
                match until {
                    Until::Started => hub.started(wanted).await,
                    Until::Listed => hub.listed(wanted).await,
                }
            }
        };
        let _ = tokio::time::timeout_at(deadline, done).await;
    }

    /// Finds something in the client's view; when it is not there and a server the client sees
    /// is still on its first start (the name may be one of its tools), looks again once that
    /// start is over, within [`START_WAIT`].
    async fn lookup<T>(
        &self,
        ctx: &RequestContext<RoleServer>,
        find: impl Fn(&crate::view::View) -> Option<T>,
    ) -> Result<(Arc<crate::view::View>, Option<T>), McpError> {
        let view = self.view(ctx).await?;
        if let Some(found) = find(&view) {
            return Ok((view, Some(found)));
        }
        let filter = self.shared.filter(self.profile_for(ctx).as_deref()).map_err(profile_error)?;
        let person = principal(ctx).and_then(|p| self.shared.hub.person(&p));
        if !self.shared.hub.starting(|name| filter.server(name))
            && !person.is_some_and(|p| p.starting(|name| filter.server(name)))
        {
            return Ok((view, None));
        }
        Box::pin(self.wait_for(ctx, Until::Started, tokio::time::Instant::now() + START_WAIT)).await;
        let view = Box::pin(self.view(ctx)).await?;
        let found = find(&view);
        Ok((view, found))
    }

    /// A list answer as the client's era takes it: to a 2026-07-28 client never to be cached
    /// (`ttlMs: 0`: the view changes with the servers) and scoped by [`Session::cache_scope`].
    fn listing<T: Listing>(&self, ctx: &RequestContext<RoleServer>, result: T) -> T {
        if crate::call::modern(ctx) { result.fresh(self.cache_scope(ctx)) } else { result }
    }

    /// `private` when the answer depends on the client (a profile or `--only` narrows it, or
    /// the caller signed in: what they are given depends on who they are).
    fn cache_scope(&self, ctx: &RequestContext<RoleServer>) -> CacheScope {
        if principal(ctx).is_some() {
            return CacheScope::Private;
        }
        let profile = self.profile_for(ctx);
        match self.shared.filter(profile.as_deref()) {
            // Names asked for in the URL are this client's own too.
            Ok(f) if !f.narrows() && !matches!(asked_names(ctx), Ok(Some(_))) => CacheScope::Public,
            _ => CacheScope::Private,
        }
    }

    /// Before the first answer: a transparent gateway waits for its one upstream (its answer
    /// is that server's); any other waits, until [`FIRST_LIST_WAIT`] after the session began,
    /// only for servers on their first start with nothing remembered of them (never for one
    /// whose remembered lists stand in), so that its client's first list, asked for the moment
    /// `initialize` is answered, holds them when they start quickly.
    async fn settle(&self, ctx: &RequestContext<RoleServer>) {
        if let Some(server) = self.shared.transparent_server() {
            self.shared.hub.started(|name| name == server).await;
        } else {
            self.wait_for(ctx, Until::Listed, self.born + FIRST_LIST_WAIT).await;
        }
    }

    /// The instructions: how tools are named, how to find them, and a line per server
    /// (`servers`: every server's now).
    fn instructions(&self, servers: &[switchboard::ServerInfo]) -> String {
        let filter = self.shared.filter(None).ok();
        let names = match self.shared.names() {
            crate::Names::Short(limit) => format!(
                "Tool names are <server>__<tool> (one longer than {limit} characters is shortened and ends with a \
                 hash)."
            ),
            crate::Names::Prefixed => "Tool names are mcp__<server>__<tool>.".to_string(),
            _ => "Tool names are each server's own; two servers' tools of the same name are \
                  mcp__<server>__<tool>, shortened with a hash."
                .to_string(),
        };
        let mut out = format!("switchboard: one MCP server in front of the servers below. {names}\n");
        match self.shared.options.tool_search {
            crate::ToolSearch::Off => {}
            crate::ToolSearch::On => out.push_str(
                "Tool definitions are not listed: find tools with search_tools, read their input schemas with \
                 describe_tools, and call them with call_tool.\n",
            ),
            _ => out.push_str(
                "When only search_tools, describe_tools and call_tool are listed, the catalog is large: find \
                 tools with search_tools, read their input schemas with describe_tools, and call them with \
                 call_tool.\n",
            ),
        }
        out.push_str(&crate::servers::lines(servers, |name| filter.as_ref().is_none_or(|f| f.server(name))));
        out
    }

    /// The catalog name behind a tool name of this client's view; an error that says why
    /// when there is none (the server is known but not connected, or no such tool).
    async fn resolve(&self, name: &str, ctx: &RequestContext<RoleServer>) -> Result<String, McpError> {
        let (_, found) = self.lookup(ctx, |view| view.tool(name).map(|t| t.catalog_name.clone())).await?;
        match found {
            Some(catalog_name) => Ok(catalog_name),
            None => Err(match self.shared.hub.missing_tool_for(name, principal(ctx).as_ref()) {
                switchboard::Error::UnknownTool { .. } => {
                    McpError::invalid_params(format!("unknown tool `{name}`"), None)
                }
                other => Box::pin(self.shared.said_error(other, ctx)).await,
            }),
        }
    }
}

/// What [`Session::wait_for`] waits for.
#[derive(Clone, Copy)]
enum Until {
    /// Every server's first start over.
    Started,
    /// Every server's lists there: started, or remembered.
    Listed,
}

/// How long a request naming something not (yet) in its session's view waits for the servers
/// it sees that are still on their first start (the name may be one of theirs). Nothing waits
/// for a server that is reconnecting: a call to it waits in the hub, a request to another
/// server does not wait at all.
pub const START_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long, from a session's start, its `initialize` (and so its first list) waits for the
/// servers it sees that are on their first start with nothing remembered of them; a server
/// whose lists are remembered is never waited for. Measured with the agents (README, "An
/// agent's first turn"): Codex sends its first model request about 1.4 s after it spawns its
/// servers, with the tools listed by then; Claude Code waits for the connection (up to about
/// 2.4 s) but sends its first request about 150 ms after it, whether or not its `tools/list`
/// was answered. So the wait is spent before `initialize` is answered, short enough for both,
/// long enough for a local server that starts at once.
pub const FIRST_LIST_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The requests' work, each boxed by the `ServerHandler` methods in [`handler`]: rmcp runs every
/// request as a task of its own sized by the largest of these futures (a tool call's was about
/// 10 KB, 20 KB in its span; 4.7 KB since the rarer branches are boxed and the hub's call
/// borrows what it passes down), moved and copied several times per request; boxed, the task
/// holds a pointer.
impl Session {
    async fn handle_initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.settle(&context).await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn handle_discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        self.settle(&context).await;
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
    }

    async fn handle_list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let view = self.list_view(&ctx).await?;
        let tools = if self.shared.defers(&view) {
            // The search tools, and the tools that must always load.
            let caller = principal(&ctx);
            let always: std::collections::HashSet<String> = self
                .shared
                .servers_for(caller.as_ref())
                .into_iter()
                .filter(|s| s.always_load)
                .map(|s| s.name)
                .collect();
            let catalog = self.shared.hub.catalog_for(caller.as_ref());
            let mut tools = crate::search::meta_tools(view.tools.len());
            tools.extend(view.tools.iter().filter_map(|t| {
                let server = catalog.tool(&t.catalog_name).map(|e| e.server.as_str()).unwrap_or_default();
                crate::search::always_loads(&t.tool, always.contains(server)).then(|| t.tool.clone())
            }));
            tools
        } else {
            view.tools.iter().map(|t| t.tool.clone()).collect()
        };
        let mut tools = tools;
        // A caller whose own servers wait for them is given the way to do it.
        if !tools.iter().any(|t| t.name == crate::signin::SIGN_IN)
            && let Some(sign_in) = self.shared.sign_in_tool(principal(&ctx).as_ref())
        {
            tools.push(sign_in);
        }
        let result = ListToolsResult::with_all_items(tools);
        Ok(self.listing(&ctx, result))
    }

    async fn handle_call_tool(
        &self,
        mut request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (mut name, mut arguments) = (request.name.to_string(), request.arguments.take());
        // The rarer paths' futures are boxed, here and below: what is awaited inline makes the
        // size of every call's future (and what is copied as it is made and moved).
        if name == crate::signin::SIGN_IN && request.request_state.is_none() {
            let view = Box::pin(self.view(&ctx)).await?;
            if view.tool(&name).is_none() {
                return Ok(CallToolResponse::Complete(Box::pin(self.shared.sign_in_call(&ctx)).await));
            }
        }
        // Off (the default), a call's path is as it was: no second look at the view.
        if request.request_state.is_none() && self.shared.options.tool_search != crate::ToolSearch::Off {
            let view = Box::pin(self.view(&ctx)).await?;
            if self.shared.defers(&view) {
                let args = arguments.clone().unwrap_or_default();
                match name.as_str() {
                    crate::search::SEARCH_TOOLS => {
                        let catalog = self.shared.hub.catalog_for(principal(&ctx).as_ref());
                        return Ok(CallToolResponse::Complete(crate::search::search(&view, &catalog, &args)));
                    }
                    crate::search::DESCRIBE_TOOLS => {
                        return Ok(CallToolResponse::Complete(crate::search::describe(&view, &args)));
                    }
                    // The same call as a direct one from here on.
                    crate::search::CALL_TOOL => {
                        (name, arguments) = crate::search::call_target(arguments.as_ref())
                            .map_err(|e| McpError::invalid_params(e, None))?;
                    }
                    _ => {}
                }
            }
        }
        let work = match &request.request_state {
            Some(_) => {
                self.register(&ctx)?;
                None
            }
            None => Some(Work::Tool {
                name: self.resolve(&name, &ctx).await?,
                exposed: name.clone(),
                arguments,
                caller: switchboard::policy::Caller::Gateway {
                    client: ctx.peer.peer_info().map_or_else(|| "unknown".to_string(), |i| i.client_info.name.clone()),
                    profile: self.profile_for(&ctx),
                    session: Some(self.id.to_string()),
                    principal: principal(&ctx).map(Box::new),
                },
                answers: request.input_responses.clone(),
            }),
        };
        let state = request.request_state.clone();
        match crate::call::run(&self.shared, self.id, work, state.as_deref(), request.input_responses.as_ref(), ctx)
            .await?
        {
            Done::Tool(r) => Ok(CallToolResponse::Complete(r)),
            Done::Input(i) => Ok(CallToolResponse::InputRequired(i)),
            _ => Err(McpError::internal_error("a parked request of another kind was resumed as tools/call", None)),
        }
    }

    async fn handle_list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let view = self.list_view(&ctx).await?;
        let result = ListPromptsResult::with_all_items(view.prompts.iter().map(|p| p.prompt.clone()).collect());
        Ok(self.listing(&ctx, result))
    }

    async fn handle_get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (_, prompt) =
            self.lookup(&ctx, |view| view.prompt(&request.name).map(|p| (p.server.clone(), p.raw.clone()))).await?;
        let (server, name) =
            prompt.ok_or_else(|| McpError::invalid_params(format!("unknown prompt `{}`", request.name), None))?;
        let work = Work::Prompt { server, name, arguments: request.arguments.clone() };
        let work = request.request_state.is_none().then_some(work);
        let state = request.request_state.clone();
        match crate::call::run(&self.shared, self.id, work, state.as_deref(), request.input_responses.as_ref(), ctx)
            .await?
        {
            Done::Prompt(r) => Ok(GetPromptResponse::Complete(r)),
            Done::Input(i) => Ok(GetPromptResponse::InputRequired(i)),
            _ => Err(McpError::internal_error("a parked request of another kind was resumed as prompts/get", None)),
        }
    }

    async fn handle_complete(
        &self,
        mut request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let server = match &mut request.r#ref {
            Reference::Prompt(p) => {
                let (_, prompt) =
                    self.lookup(&ctx, |view| view.prompt(&p.name).map(|x| (x.server.clone(), x.raw.clone()))).await?;
                let (server, raw) =
                    prompt.ok_or_else(|| McpError::invalid_params(format!("unknown prompt `{}`", p.name), None))?;
                p.name = raw;
                server
            }
            Reference::Resource(r) => {
                let (_, owner) = self
                    .lookup(&ctx, |view| view.template_owner(&r.uri).or_else(|| view.resource_owner(&r.uri)))
                    .await?;
                let owner =
                    owner.ok_or_else(|| McpError::invalid_params(format!("no server offers `{}`", r.uri), None))?;
                r.uri = owner.uri;
                owner.server
            }
            _ => return Err(McpError::invalid_params("unknown kind of completion reference", None)),
        };
        // The client's `notifications/cancelled` for this request (or the end of its session)
        // cancels `ctx.ct`: the upstream is told with its own request id.
        let options = switchboard::RequestOptions::new().cancel(ctx.ct.clone());
        let caller = principal(&ctx);
        let hub = self.shared.hub.route(&server, caller.as_ref()).map_err(error)?;
        let mut result = match hub.complete_with(&server, request, options).await {
            Ok(result) => result,
            Err(e) => return Err(self.shared.said_error(e, &ctx).await),
        };
        // A 2026-07-28 client needs `resultType` (an upstream of an earlier revision sends
        // none); rmcp takes it off again for clients of earlier revisions.
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(result)
    }

    async fn handle_listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let ctx = context.request_context();
        self.register(ctx)?;
        let sink = context.sink().clone();
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let view = self.list_view(ctx).await?;
        let caller = principal(ctx);
        let mut owned = Vec::new();
        for uri in &uris {
            if let Some(owner) = view.resource_owner(uri) {
                if let Err(e) = self.shared.subscribe(self.id, &owner.server, &owner.uri, caller.as_ref()).await {
                    tracing::debug!("subscribing to {uri} for a listen stream: {e}");
                } else {
                    owned.push(owner);
                }
            }
        }
        if let Some(s) = self.shared.sessions().get_mut(&self.id) {
            s.listens.push(sink);
        }
        context.cancelled().await;
        let id = context.sink().id().clone();
        if let Some(s) = self.shared.sessions().get_mut(&self.id) {
            s.listens.retain(|l| l.id() != &id);
        }
        for owner in owned {
            let key = self.shared.subscription_key(&owner.server, &owner.uri, caller.as_ref());
            let had = self.shared.sessions().get_mut(&self.id).is_some_and(|s| s.subscribed.remove(&key));
            if had {
                self.shared.unsubscribe(&owner.server, &owner.uri, caller.as_ref()).await;
            }
        }
        Ok(())
    }
}

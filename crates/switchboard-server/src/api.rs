//! The `/api` routes. Each handler is annotated for the OpenAPI description, which is built
//! from these annotations (`GET /api/openapi.json`), not kept by hand.

use std::time::Duration;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard::{CallOptions, Hub, ServerInfo};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::events::async_stream;
use crate::state::{ApiResult, AppState, find, known_server, query_of, rejected};

/// One server: where it comes from and how it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerView {
    /// Its name.
    name: String,
    /// `user`, `project` or `cli`.
    scope: String,
    /// The file that defines it.
    source: String,
    /// `stdio` or `http`.
    transport: String,
    /// The command line or URL as written (variables unexpanded).
    target: String,
    /// `{"state": "connected" | "failed" | ..., ...}`.
    #[schema(value_type = Object)]
    status: Value,
    /// What the person can do so that it works, when there is something:
    /// `{"action": "login" | "register_client" | "trust", "server"}`. The dashboard offers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    remedy: Option<switchboard::Remedy>,
    /// What screening its definitions found: `{"rule", "severity", "server", "target": {"kind",
    /// "name"}, "field", "why", "hidden"}` (hidden characters removed, and what they said).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    findings: Vec<switchboard::screen::Finding>,
    /// A stdio server's sandbox: `{"on", "network": {"kind": "open" | "off" | "domains",
    /// "domains"}, "refused": [{"kind": "read" | "write" | "domain", "target", "allow",
    /// "count"}]}` (`allow`: the entry's `sandbox` block that would allow it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    sandbox: Option<switchboard::sandbox::SandboxInfo>,
}

impl From<ServerInfo> for ServerView {
    fn from(s: ServerInfo) -> ServerView {
        ServerView {
            name: s.name,
            scope: s.scope.to_string(),
            source: s.source.display().to_string(),
            transport: s.transport.to_string(),
            target: s.target,
            status: serde_json::to_value(&s.status).unwrap_or_default(),
            remedy: s.remedy,
            findings: s.findings,
            sandbox: s.sandbox,
        }
    }
}

/// Every server.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerList {
    servers: Vec<ServerView>,
}

/// A server, with what it offers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerDetail {
    #[serde(flatten)]
    server: ServerView,
    /// Its tools, as `GET /api/tools` gives them.
    #[schema(value_type = Vec<Object>)]
    tools: Vec<Value>,
    /// The last lines it wrote on stderr (stdio servers).
    stderr_tail: Vec<String>,
}

#[utoipa::path(get, path = "/api/servers", tag = "servers",
    responses((status = 200, body = ServerList), (status = 401, body = ErrorBody)))]
pub async fn list_servers(State(app): State<AppState>) -> Json<ServerList> {
    Json(ServerList { servers: app.hub.servers().into_iter().map(ServerView::from).collect() })
}

#[utoipa::path(get, path = "/api/servers/{name}", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = ServerDetail), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get_server(State(app): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<ServerDetail>> {
    let info = find(&app.hub, &name)?;
    let catalog = app.hub.catalog();
    Ok(Json(ServerDetail {
        server: info.into(),
        tools: catalog.tools_of(&name).map(crate::tools::tool_view).collect(),
        stderr_tail: app.hub.stderr_tail(&name),
    }))
}

/// What a server action left.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionResult {
    /// The server afterwards.
    pub(crate) server: ServerView,
}

fn after(hub: &Hub, name: &str) -> ApiResult<Json<ActionResult>> {
    Ok(Json(ActionResult { server: find(hub, name)?.into() }))
}

#[utoipa::path(post, path = "/api/servers/{name}/connect", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = ActionResult), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "It cannot be started (disabled, untrusted, invalid)")))]
pub async fn connect(State(app): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<ActionResult>> {
    app.hub.connect(&name).await?;
    after(&app.hub, &name)
}

#[utoipa::path(post, path = "/api/servers/{name}/disconnect", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = ActionResult), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn disconnect(State(app): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<ActionResult>> {
    app.hub.disconnect(&name).await?;
    after(&app.hub, &name)
}

#[utoipa::path(post, path = "/api/servers/{name}/revalidate", tag = "servers",
    params(("name" = String, Path, description = "The server")),
    responses((status = 200, body = ActionResult), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revalidate(State(app): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<ActionResult>> {
    app.hub.revalidate(&name).await?;
    after(&app.hub, &name)
}

/// A tool call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    /// The tool's arguments.
    #[schema(value_type = Option<Object>)]
    arguments: Option<Map<String, Value>>,
    /// Time without a response or progress before the call is cancelled (default: the
    /// server's `tool_timeout_ms`).
    #[schema(minimum = 1)]
    timeout_ms: Option<u64>,
}

/// A tool call's outcome.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallResult {
    /// The model-visible name.
    name: String,
    /// The server.
    server: String,
    /// The raw tool name.
    tool: String,
    /// Whether the tool reported an error.
    is_error: bool,
    /// The result as the server sent it.
    #[schema(value_type = Object)]
    raw: Value,
    /// The result ready for a model (blocks, truncation, spill file).
    #[schema(value_type = Object)]
    model: Value,
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()).is_some_and(|a| a.contains("text/event-stream"))
}

#[utoipa::path(post, path = "/api/tools/{name}/call", tag = "catalog",
    params(("name" = String, Path, description = "Model-visible name (`mcp__server__tool`) or `server/tool`")),
    request_body = CallRequest,
    responses(
        (status = 200, description = "The result (JSON), or with `Accept: text/event-stream` `progress` events then a `result` (or `error`) event",
            content((CallResult = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "The tool-call policy refused the call (`denied`: the message names the rule and its file); nothing was sent"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Not connected, needs a login, or the server wants the person to open a page first (`url_required`: the message has the URLs)"),
        (status = 422, body = ErrorBody, description = "The arguments do not match the tool's input schema (`invalid_arguments`: each error by JSON pointer); nothing was sent"),
        (status = 502, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "switchboard is stopping: the call was cancelled (`stopping`)"),
        (status = 504, body = ErrorBody)))]
pub async fn call_tool(
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Json<CallRequest>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<Response> {
    let Json(request) = body.map_err(rejected)?;
    let max = switchboard::config::MAX_TIMEOUT.as_millis();
    if request.timeout_ms.is_some_and(|ms| ms == 0 || u128::from(ms) > max) {
        return Err(ApiError::bad_request(format!("`timeout_ms` must be 1 to {max} (7 days)")));
    }
    // A call still running when the server stops is cancelled (the server is told).
    // Who calls, for the policy and the audit log: a script with the token, or the dashboard.
    // A `switchboard` command of the workspace relaying a person's own `call` says so
    // (`X-Switchboard-Caller: cli`), with the token: it stays a person's request for the policy.
    let with_token = headers.contains_key(axum::http::header::AUTHORIZATION);
    let relayed = headers.get("x-switchboard-caller").and_then(|v| v.to_str().ok()).filter(|v| v.starts_with("cli"));
    let caller = match (with_token, relayed) {
        (true, Some(via)) => switchboard::policy::Caller::Person { via: via.chars().take(80).collect() },
        (true, None) => switchboard::policy::Caller::Api { session: "token".into() },
        (false, _) => switchboard::policy::Caller::Api { session: "dashboard".into() },
    };
    let mut options = CallOptions::new().cancel(app.events.stopping().child_token()).caller(caller);
    if let Some(ms) = request.timeout_ms {
        options = options.timeout(Duration::from_millis(ms));
    }
    if !app.hub.wait_for_tool(&name).await {
        // Fail before committing to a stream: unknown tool, or its server is not connected
        // (one still starting is waited for, up to its start-up timeout).
        return Err(app.hub.missing_tool(&name).into());
    }
    if !wants_stream(&headers) {
        let out = app.hub.call_tool(&name, request.arguments, options).await.map_err(|e| stopped(&app, e))?;
        let out = out.formatted().await?;
        return Ok(Json(result_view(out)).into_response());
    }
    let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let cancel = app.events.stopping().child_token();
    let options = options.progress(tx).cancel(cancel.clone());
    let hub = app.hub.clone();
    let app2 = app.clone();
    let stream = async_stream(move |events| async move {
        // The client going away drops this task, which cancels the call.
        let _cancel_on_drop = cancel.drop_guard();
        let call = hub.call_tool(&name, request.arguments, options);
        tokio::pin!(call);
        let progress_event = |p: &switchboard::Progress| {
            axum::response::sse::Event::default().event("progress").data(serde_json::to_string(p).unwrap_or_default())
        };
        let outcome = loop {
            tokio::select! {
                out = &mut call => break match out {
                    Ok(out) => out.formatted().await,
                    Err(e) => Err(e),
                },
                Some(p) = progress.recv() => {
                    if events.send(progress_event(&p)).await.is_err() {
                        return;
                    }
                }
            }
        };
        // Progress sent just before the response is still on its way: the hub closes the
        // channel once it is delivered, so everything comes before the result.
        while let Some(p) = progress.recv().await {
            if events.send(progress_event(&p)).await.is_err() {
                return;
            }
        }
        let event = match outcome {
            Ok(out) => axum::response::sse::Event::default()
                .event("result")
                .data(serde_json::to_string(&result_view(out)).unwrap_or_default()),
            Err(e) => {
                let e = stopped(&app2, e);
                let body = serde_json::to_string(&e.body()).unwrap_or_default();
                axum::response::sse::Event::default().event("error").data(body)
            }
        };
        let _ = events.send(event).await;
    });
    Ok(axum::response::sse::Sse::new(stream).into_response())
}

/// A call cancelled because the server stops says so (503 `stopping`).
fn stopped(app: &AppState, e: switchboard::Error) -> ApiError {
    if matches!(e, switchboard::Error::Cancelled) && app.events.stopping().is_cancelled() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "stopping",
            "switchboard is stopping: the call was cancelled (its server was told)",
        );
    }
    e.into()
}

fn result_view(out: switchboard::ToolOutput) -> CallResult {
    CallResult {
        name: out.name.clone(),
        server: out.server.clone(),
        tool: out.tool.clone(),
        is_error: out.is_error(),
        raw: serde_json::to_value(&out.raw).unwrap_or_default(),
        model: serde_json::to_value(out.model()).unwrap_or_default(),
    }
}

/// Resources and templates of every server.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResourceList {
    /// `{"server", "resource": {"uri", "name", ...}}`.
    #[schema(value_type = Vec<Object>)]
    resources: Vec<Value>,
    /// `{"server", "template": {"uriTemplate", "name", ...}}`.
    #[schema(value_type = Vec<Object>)]
    resource_templates: Vec<Value>,
}

/// `GET /api/resources` and `GET /api/prompts` filter.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ServerFilter {
    /// Only this server's.
    server: Option<String>,
}

impl ServerFilter {
    /// The filter from the query, the server checked to exist.
    fn checked(query: Result<Query<ServerFilter>, QueryRejection>, hub: &Hub) -> ApiResult<Option<String>> {
        known_server(hub, query_of(query)?.server)
    }
}

/// The JSON array of `items` whose `server` is `only` (all without a filter).
fn of_server<T: Serialize>(items: &[T], only: Option<&str>) -> Vec<Value> {
    let all = serde_json::to_value(items).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default();
    all.into_iter().filter(|v| only.is_none_or(|s| v["server"] == s)).collect()
}

#[utoipa::path(get, path = "/api/resources", tag = "catalog", params(ServerFilter),
    responses((status = 200, body = ResourceList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn list_resources(
    State(app): State<AppState>,
    query: Result<Query<ServerFilter>, QueryRejection>,
) -> ApiResult<Json<ResourceList>> {
    let only = ServerFilter::checked(query, &app.hub)?;
    let catalog = app.hub.catalog();
    Ok(Json(ResourceList {
        resources: of_server(catalog.resources(), only.as_deref()),
        resource_templates: of_server(catalog.resource_templates(), only.as_deref()),
    }))
}

/// Which resource to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReadQuery {
    /// The server.
    server: String,
    /// The resource URI.
    uri: String,
}

#[utoipa::path(get, path = "/api/resources/read", tag = "catalog", params(ReadQuery),
    responses((status = 200, description = "The server's `resources/read` result", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "The tool-call policy refused the call (`denied`: the message names the rule and its file); nothing was sent"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Not connected, needs a login, or the server wants the person to open a page first (`url_required`: the message has the URLs)"),
        (status = 422, body = ErrorBody, description = "The arguments do not match the tool's input schema (`invalid_arguments`: each error by JSON pointer); nothing was sent"),
        (status = 502, body = ErrorBody), (status = 504, body = ErrorBody)))]
pub async fn read_resource(
    State(app): State<AppState>,
    query: Result<Query<ReadQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let q = query_of(query)?;
    find(&app.hub, &q.server)?;
    let read = app.hub.read_resource(&q.server, &q.uri).await?;
    Ok(Json(serde_json::to_value(read).unwrap_or_default()))
}

/// Prompts of every server.
#[derive(Debug, Serialize, ToSchema)]
pub struct PromptList {
    /// `{"server", "prompt": {"name", "description", "arguments"}}`.
    #[schema(value_type = Vec<Object>)]
    prompts: Vec<Value>,
}

#[utoipa::path(get, path = "/api/prompts", tag = "catalog", params(ServerFilter),
    responses((status = 200, body = PromptList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn list_prompts(
    State(app): State<AppState>,
    query: Result<Query<ServerFilter>, QueryRejection>,
) -> ApiResult<Json<PromptList>> {
    let only = ServerFilter::checked(query, &app.hub)?;
    Ok(Json(PromptList { prompts: of_server(app.hub.catalog().prompts(), only.as_deref()) }))
}

/// A prompt's arguments.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    /// Argument values by name.
    #[schema(value_type = Option<Object>)]
    arguments: Option<Map<String, Value>>,
}

#[utoipa::path(post, path = "/api/prompts/{server}/{name}", tag = "catalog",
    params(("server" = String, Path, description = "The server"), ("name" = String, Path, description = "The prompt")),
    request_body = PromptRequest,
    responses((status = 200, description = "The server's `prompts/get` result", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "The tool-call policy refused the call (`denied`: the message names the rule and its file); nothing was sent"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Not connected, needs a login, or the server wants the person to open a page first (`url_required`: the message has the URLs)"),
        (status = 422, body = ErrorBody, description = "The arguments do not match the tool's input schema (`invalid_arguments`: each error by JSON pointer); nothing was sent"),
        (status = 502, body = ErrorBody), (status = 504, body = ErrorBody)))]
pub async fn get_prompt(
    State(app): State<AppState>,
    Path((server, name)): Path<(String, String)>,
    body: Result<Json<PromptRequest>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<Json<Value>> {
    let Json(request) = body.map_err(rejected)?;
    find(&app.hub, &server)?;
    match app.hub.get_prompt(&server, &name, request.arguments).await {
        Ok(prompt) => Ok(Json(serde_json::to_value(prompt).unwrap_or_default())),
        // The server refused it and does not list it: no such prompt.
        Err(switchboard::Error::Protocol { .. } | switchboard::Error::Rejected { .. })
            if !app.hub.catalog().prompts().iter().any(|p| p.server == server && p.prompt.name == name) =>
        {
            Err(ApiError::new(StatusCode::NOT_FOUND, "unknown_prompt", format!("`{server}` has no prompt `{name}`")))
        }
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(get, path = "/api/events", tag = "events",
    params(("Last-Event-ID" = Option<String>, Header, description = "Resume after this event")),
    responses((status = 200, description = "Server-Sent Events: `status_changed`, `catalog_changed`, `resource_updated`, `log`, `progress`, `auth_needed`, `server_removed`, `elicitation_requested` (a server asks the person; answer with POST /api/elicitations/{id}), `elicitation_settled`, `approval_requested` (the policy asks about a tool call; decide with POST /api/approvals/{id}), `approval_settled`, `sampling_requested` (a server asks for a completion; answer with POST /api/sampling/{id}), `sampling_settled`, `tool_called` (one per call: the audit line); `reset` when events were missed",
        content_type = "text/event-stream", body = String), (status = 401, body = ErrorBody)))]
pub async fn events(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    app.events.stream(last).into_response()
}

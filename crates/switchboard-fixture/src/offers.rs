//! What the fixture offers besides tools: resources (and a template), prompts, completions.
//! With `--slow-requests` it also offers a prompt `slow`, a resource `fixture://slow` and
//! completions that each take [`SLOW`] unless the client cancels them; a cancellation is
//! written to the call log as `cancelled prompt`, `cancelled resource`, `cancelled completion`.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::{Fixture, from, page};

/// How long a slow request takes when nobody cancels it.
const SLOW: Duration = Duration::from_secs(10);

/// The slow resource's URI.
const SLOW_URI: &str = "fixture://slow";

/// Waits [`SLOW`], or fails when the client cancels the request, writing `cancelled {what}` to
/// the call log.
async fn slowly(fixture: &Fixture, context: &RequestContext<RoleServer>, what: &str) -> Result<(), ErrorData> {
    tokio::select! {
        biased;
        () = context.ct.cancelled() => {
            eprintln!("fixture: {what} cancelled");
            if let Some(log) = &fixture.opts.call_log
                && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log)
            {
                let _ = f.write_all(format!("cancelled {what}\n").as_bytes());
            }
            Err(ErrorData::internal_error("cancelled", None))
        }
        () = tokio::time::sleep(SLOW) => Ok(()),
    }
}

pub(crate) fn list_resources(
    fixture: &Fixture,
    request: Option<PaginatedRequestParams>,
) -> Result<ListResourcesResult, ErrorData> {
    let mut items = vec![
        json!({"uri": "fixture://hello", "name": "hello", "mimeType": "text/plain"}),
        json!({"uri": "fixture://data.json", "name": "data", "mimeType": "application/json"}),
    ];
    for i in 0..fixture.added_resources.load(Ordering::SeqCst) {
        items.push(json!({"uri": format!("fixture://added/{i}"), "name": format!("added_{i}")}));
    }
    if fixture.opts.slow_requests {
        items.push(json!({"uri": SLOW_URI, "name": "slow", "mimeType": "text/plain"}));
    }
    page("resources", items, fixture.opts.page_size, request)
}

pub(crate) async fn read_resource(
    fixture: &Fixture,
    request: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    let text = match request.uri.as_str() {
        "fixture://hello" => "hello resource".to_string(),
        "fixture://data.json" => "{\"answer\": 42}".to_string(),
        SLOW_URI if fixture.opts.slow_requests => {
            slowly(fixture, &context, "resource").await?;
            "slow resource".to_string()
        }
        uri if uri.starts_with("fixture://item/") => format!("item {}", &uri["fixture://item/".len()..]),
        uri => return Err(ErrorData::resource_not_found(format!("no resource {uri}"), None)),
    };
    Ok(ReadResourceResponse::Complete(from(json!({
        "contents": [{"uri": request.uri, "mimeType": "text/plain", "text": text}]
    }))?))
}

pub(crate) fn list_prompts(
    fixture: &Fixture,
    request: Option<PaginatedRequestParams>,
) -> Result<ListPromptsResult, ErrorData> {
    let mut items = vec![json!({
        "name": "greet",
        "description": "Greets someone.",
        "arguments": [{"name": "who", "description": "Whom to greet", "required": true}],
    })];
    for i in 0..fixture.added_prompts.load(Ordering::SeqCst) {
        items.push(json!({"name": format!("added_{i}"), "description": "Added at run time."}));
    }
    if fixture.opts.slow_requests {
        items.push(json!({
            "name": "slow",
            "description": "Takes ten seconds.",
            "arguments": [{"name": "topic", "description": "Anything (completed slowly)"}],
        }));
    }
    page("prompts", items, fixture.opts.page_size, request)
}

pub(crate) async fn get_prompt(
    fixture: &Fixture,
    request: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    let text = match request.name.as_str() {
        "greet" => {
            let who = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("who"))
                .and_then(Value::as_str)
                .ok_or_else(|| ErrorData::invalid_params("argument `who` is required", None))?;
            format!("Hello, {who}!")
        }
        "slow" if fixture.opts.slow_requests => {
            slowly(fixture, &context, "prompt").await?;
            "slow prompt".to_string()
        }
        other => return Err(ErrorData::invalid_params(format!("no prompt named {other}"), None)),
    };
    Ok(GetPromptResponse::Complete(from(json!({
        "description": "A greeting",
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))?))
}

pub(crate) async fn complete(
    fixture: &Fixture,
    request: CompleteRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CompleteResult, ErrorData> {
    if !fixture.opts.slow_requests {
        return Err(ErrorData::method_not_found::<rmcp::model::CompleteRequestMethod>());
    }
    slowly(fixture, &context, "completion").await?;
    from(json!({"completion": {"values": [format!("{}-done", request.argument.value)]}}))
}

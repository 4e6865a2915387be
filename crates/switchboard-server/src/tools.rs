//! `GET /api/tools`: the catalog's tools, all or one server's, found by a search, in the
//! shape a model provider takes.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use switchboard::catalog::ToolEntry;
use switchboard::catalog::export::{Changed, ExportOptions, Skipped, ToolFormat, ToolsJson};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::state::{ApiResult, AppState, known_server, query_of};

/// Most tools a search gives when `limit` is not said.
const SEARCH_LIMIT: usize = 20;

/// `GET /api/tools` filters and format.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ToolsQuery {
    /// Only this server's tools.
    server: Option<String>,
    /// `mcp`, `openai`, `anthropic` or `gemini` (without it: the API's own view of each tool).
    /// A tool the provider cannot take is left out and listed in `skipped`.
    format: Option<Format>,
    /// With `format=openai`: OpenAI's strict mode.
    strict: Option<bool>,
    /// With `format=anthropic`: `defer_loading: true` and the tool-search tool declared.
    defer: Option<bool>,
    /// With a provider format: descriptions cut to this many characters (default 2048).
    #[param(minimum = 1)]
    description_cap: Option<usize>,
    /// Only the tools that answer this, best first: words (ranked by what they say, BM25 over
    /// names, titles, descriptions and parameters, and by what they mean), `select:NAME[,NAME]`
    /// or `/REGEX/`.
    search: Option<String>,
    /// Most tools a search gives (default 20).
    #[param(minimum = 1)]
    limit: Option<usize>,
    /// With `true`, each tool's `tokens`: what its definition costs in a model's context
    /// (o200k_base estimate of its name, title, description and input schema as JSON). The
    /// token table is loaded on the first such request.
    tokens: Option<bool>,
}

/// A tool list's format.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// MCP tools with model-visible names.
    Mcp,
    /// OpenAI function tools.
    Openai,
    /// Anthropic tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
}

/// Tools, in the asked format.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// Each tool: without `format`, `{"name" (model-visible), "server", "tool", "title"?,
    /// "description", "input_schema", "output_schema"?, "annotations"?}`, and its `score` when
    /// searched; with `format=mcp` its MCP definition with the model-visible name (as
    /// `switchboard tools --format mcp`).
    #[schema(value_type = Vec<Object>)]
    tools: Vec<Value>,
    /// With `format`: the tools the provider cannot take, each with why.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    skipped: Option<Vec<Skipped>>,
    /// With `format`: what was changed in tools to fit the provider's rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    changed: Option<Vec<Changed>>,
    /// A search no tool answered by a word or a near meaning: the tools given are the closest
    /// by meaning (a search always answers with its best candidates).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    nearest_only: bool,
}

#[utoipa::path(get, path = "/api/tools", tag = "catalog", params(ToolsQuery),
    responses((status = 200, body = ToolList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn list_tools(
    State(app): State<AppState>,
    query: Result<Query<ToolsQuery>, QueryRejection>,
) -> ApiResult<Json<ToolList>> {
    let q = query_of(query)?;
    let only = known_server(&app.hub, q.server)?;
    let catalog = app.hub.catalog();
    let keep = |t: &ToolEntry| only.as_deref().is_none_or(|s| t.server == s);
    let mut nearest_only = false;
    let found: Vec<(&ToolEntry, Option<f64>)> = match q.search.as_deref() {
        Some(query) => {
            if q.limit == Some(0) {
                return Err(ApiError::bad_request("`limit` must be at least 1"));
            }
            let hits = catalog
                .search_in(query, q.limit.unwrap_or(SEARCH_LIMIT), keep)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            nearest_only = !hits.is_empty() && hits.iter().all(|h| !h.close);
            hits.into_iter().map(|hit| (hit.tool, Some(hit.shown_score()))).collect()
        }
        None => catalog.tools().iter().filter(|t| keep(t)).map(|t| (t, None)).collect(),
    };
    let format = match q.format {
        None => None,
        Some(Format::Mcp) => Some(ToolFormat::Mcp),
        Some(Format::Openai) => Some(ToolFormat::OpenAi),
        Some(Format::Anthropic) => Some(ToolFormat::Anthropic),
        Some(Format::Gemini) => Some(ToolFormat::Gemini),
    };
    let strict = q.strict == Some(true);
    let defer = q.defer == Some(true);
    if strict && format != Some(ToolFormat::OpenAi) {
        return Err(ApiError::bad_request("`strict` goes with `format=openai`"));
    }
    if defer && format != Some(ToolFormat::Anthropic) {
        return Err(ApiError::bad_request("`defer` goes with `format=anthropic`"));
    }
    if q.description_cap == Some(0) || (q.description_cap.is_some() && format.is_none()) {
        return Err(ApiError::bad_request("`description_cap` is at least 1, with a provider `format`"));
    }
    let counter = if q.tokens == Some(true) {
        if format.is_some() {
            return Err(ApiError::bad_request("`tokens` goes with the plain list, not `format`"));
        }
        Some(app.token_counter().await?)
    } else {
        None
    };
    let (mut skipped, mut changed) = (None, None);
    let tools = match format {
        Some(f) => {
            let always = app.hub.servers().into_iter().filter(|s| s.always_load).map(|s| s.name).collect();
            let mut options = ExportOptions::new().strict(strict).defer(defer, always);
            if let Some(cap) = q.description_cap {
                options = options.description_cap(cap);
            }
            // A denied tool is not given to a model: left out, and said why.
            let denied = found
                .iter()
                .filter_map(|(t, _)| app.hub.denied_by(t).map(|rule| (t.name.clone(), format!("denied by {rule}"))))
                .collect();
            let export = ToolsJson::with_options(found.iter().map(|(t, _)| *t), f, options).leave_out(denied);
            let tools = serde_json::to_value(&export).map_err(|e| ApiError::internal(e.to_string()))?;
            (skipped, changed) = (Some(export.skipped()), Some(export.changed()));
            tools.as_array().cloned().unwrap_or_default()
        }
        None => found
            .iter()
            .map(|(t, score)| {
                let mut v = tool_view(t);
                if let Some(score) = score {
                    v["score"] = json!(score);
                }
                if let Some(c) = &counter {
                    v["tokens"] = json!(c.tool(t));
                }
                v
            })
            .collect(),
    };
    Ok(Json(ToolList { tools, skipped, changed, nearest_only }))
}

/// A tool as the API shows it: `{"name" (model-visible), "server", "tool" (its own name),
/// "title"?, "description", "input_schema", "output_schema"?, "annotations"?}`.
pub(crate) fn tool_view(t: &switchboard::catalog::ToolEntry) -> Value {
    let mut v = json!({"name": t.name, "server": t.server, "tool": t.tool.name, "description": t.tool.description,
                       "input_schema": *t.input_schema});
    if let Some(title) = &t.tool.title {
        v["title"] = json!(title);
    }
    if let Some(schema) = &t.tool.output_schema {
        v["output_schema"] = json!(**schema);
    }
    if let Some(annotations) = &t.tool.annotations {
        v["annotations"] = serde_json::to_value(annotations).unwrap_or_default();
    }
    v
}

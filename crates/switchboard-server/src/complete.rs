//! `POST /api/complete`: suggestions for an argument of a prompt or a variable of a resource
//! template (the server's `completion/complete`), for the dashboard's forms and any client.

use std::collections::HashMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use switchboard::Completing;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::{AppState, find, rejected};

/// What to complete.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    /// The server.
    server: String,
    /// A prompt's name (with `argument`)...
    #[serde(default)]
    prompt: Option<String>,
    /// ...or a resource template (`demo://resource/dynamic/text/{resourceId}`).
    #[serde(default)]
    resource_template: Option<String>,
    /// The argument (or template variable) to complete.
    argument: String,
    /// What is typed so far.
    #[serde(default)]
    value: String,
    /// Arguments already chosen (suggestions may depend on them).
    #[serde(default)]
    context: HashMap<String, String>,
}

/// The suggestions.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompleteResponse {
    /// At most 100, in the server's order.
    values: Vec<String>,
    /// How many there are in all, if the server said.
    total: Option<u32>,
    /// More than these exist.
    has_more: bool,
    /// The server offers completion (`false`: it was not asked, and `values` is empty).
    supported: bool,
}

#[utoipa::path(post, path = "/api/complete", tag = "catalog", request_body = CompleteRequest,
    responses((status = 200, body = CompleteResponse),
        (status = 400, body = ErrorBody, description = "Neither or both of `prompt` and `resource_template`"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The server is not connected"),
        (status = 502, body = ErrorBody), (status = 504, body = ErrorBody)))]
pub async fn complete(
    State(app): State<AppState>,
    body: Result<Json<CompleteRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<CompleteResponse>, ApiError> {
    let Json(request) = body.map_err(rejected)?;
    let completing = match (request.prompt, request.resource_template) {
        (Some(p), None) => Completing::Prompt(p),
        (None, Some(t)) => Completing::Resource(t),
        _ => return Err(ApiError::bad_request("give one of `prompt` and `resource_template`")),
    };
    find(&app.hub, &request.server)?;
    let found = app
        .hub
        .complete_argument(&request.server, completing, &request.argument, &request.value, request.context)
        .await
        .map_err(|e| match e {
            // The server refused: an unknown prompt or argument is the asker's to fix.
            switchboard::Error::Rejected { message, .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_params", message)
            }
            other => other.into(),
        })?;
    Ok(Json(match found {
        Some(c) => CompleteResponse {
            total: c.total,
            has_more: c.has_more.unwrap_or(false),
            values: c.values,
            supported: true,
        },
        None => CompleteResponse { values: Vec::new(), total: None, has_more: false, supported: false },
    }))
}

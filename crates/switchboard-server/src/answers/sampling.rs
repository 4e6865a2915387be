//! `/api/sampling`: servers' requests for a completion, as the dashboard sees them and the
//! person answers them (the queue is `crate::sampling`).

// Sampling is deprecated by SEP-2577 (protocol 2026-07-28); servers of every version still ask.
#![allow(deprecated)]

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use switchboard::sampling::{CreateMessageResult, SamplingMessage};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::sampling::{Answer, HUMAN, PendingSample};
use crate::state::{AppState, rejected};

/// The requests waiting.
#[derive(Debug, Serialize, ToSchema)]
pub struct SampleList {
    /// Oldest first.
    requests: Vec<PendingSample>,
}

/// What the person does.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SampleAction {
    /// Send `text` as the model's reply.
    Send,
    /// Refuse; the server is told.
    Decline,
}

/// The person's answer.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleAnswer {
    /// Send or decline.
    action: SampleAction,
    /// With `send`: the reply.
    #[serde(default)]
    text: Option<String>,
    /// With `send`: the model named in the result (default `human`).
    #[serde(default)]
    model: Option<String>,
}

#[utoipa::path(get, path = "/api/sampling", tag = "sampling",
    responses((status = 200, body = SampleList), (status = 401, body = ErrorBody)))]
pub async fn list(State(app): State<AppState>) -> Json<SampleList> {
    Json(SampleList { requests: app.sampling.as_ref().map(|q| q.waiting()).unwrap_or_default() })
}

#[utoipa::path(post, path = "/api/sampling/{id}", tag = "sampling", request_body = SampleAnswer,
    params(("id" = u64, Path, description = "The request waiting")),
    responses((status = 204, description = "Answered; the server has it"),
        (status = 400, body = ErrorBody, description = "`send` without `text`, or `text` with `decline`"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "No such request waits")))]
pub async fn answer(
    State(app): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<SampleAnswer>, axum::extract::rejection::JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let unknown = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_sampling",
            format!(
                "no sampling request `{}` waits (answered already, or withdrawn when its server stopped waiting)",
                switchboard::text::excerpt(&id, 40)
            ),
        )
    };
    let number: u64 = id.parse().map_err(|_| unknown())?;
    let Json(request) = body.map_err(rejected)?;
    let (answer, how) = match (request.action, request.text) {
        (SampleAction::Send, Some(text)) => {
            let model = request.model.filter(|m| !m.trim().is_empty()).unwrap_or_else(|| HUMAN.into());
            let result = CreateMessageResult::new(SamplingMessage::assistant_text(text), model)
                .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN);
            (Answer::Send(Box::new(result)), "send")
        }
        (SampleAction::Send, None) => return Err(ApiError::bad_request("`send` needs the reply in `text`")),
        (SampleAction::Decline, None) => (Answer::Decline, "decline"),
        (SampleAction::Decline, Some(_)) => return Err(ApiError::bad_request("`text` goes only with `send`")),
    };
    let queue = app.sampling.as_ref().ok_or_else(unknown)?;
    if !queue.answer(number, answer, how) {
        return Err(unknown());
    }
    Ok(StatusCode::NO_CONTENT)
}

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

use super::answer::{Queue, answer_in};
use crate::error::{ApiError, ErrorBody};
use crate::sampling::{Answer, HUMAN, PendingSample};
use crate::state::AppState;

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
    answer_in::<Samples>(&app, &id, body).await
}

/// The servers' requests for a completion, as their route answers them.
struct Samples;

impl Queue for Samples {
    type Body = SampleAnswer;
    /// The answer, and its word for the event.
    type Answer = (Answer, &'static str);

    fn unknown(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_sampling",
            format!(
                "no sampling request `{}` waits (answered already, or withdrawn when its server stopped waiting)",
                switchboard::text::excerpt(id, 40)
            ),
        )
    }

    fn answer_of(body: SampleAnswer) -> Result<(Answer, &'static str), ApiError> {
        match (body.action, body.text) {
            (SampleAction::Send, Some(text)) => {
                let model = body.model.filter(|m| !m.trim().is_empty()).unwrap_or_else(|| HUMAN.into());
                let result = CreateMessageResult::new(SamplingMessage::assistant_text(text), model)
                    .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN);
                Ok((Answer::Send(Box::new(result)), "send"))
            }
            (SampleAction::Send, None) => Err(ApiError::bad_request("`send` needs the reply in `text`")),
            (SampleAction::Decline, None) => Ok((Answer::Decline, "decline")),
            (SampleAction::Decline, Some(_)) => Err(ApiError::bad_request("`text` goes only with `send`")),
        }
    }

    async fn give(
        app: &AppState,
        number: u64,
        id: &str,
        (answer, how): (Answer, &'static str),
    ) -> Result<(), ApiError> {
        match &app.sampling {
            Some(queue) if queue.answer(number, answer, how) => Ok(()),
            _ => Err(Self::unknown(id)),
        }
    }
}

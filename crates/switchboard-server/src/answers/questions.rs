//! `/api/elicitations`: servers' questions, as the dashboard and clients of `/api/events`
//! see and answer them (the queue is `crate::questions`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard::elicitation::ElicitationAnswer;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::questions::{AnswerError, Question};
use crate::state::{AppState, rejected};

/// The questions waiting.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionList {
    /// Oldest first.
    elicitations: Vec<Question>,
}

/// How the person answered.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Send `content`.
    Accept,
    /// Say no; the server may go on without the values.
    Decline,
    /// Dismiss the whole operation.
    Cancel,
}

/// An answer.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// Accept, decline or cancel.
    action: Action,
    /// With `accept`: the values, checked against the question's schema.
    #[schema(value_type = Option<Object>)]
    content: Option<Map<String, Value>>,
}

#[utoipa::path(get, path = "/api/elicitations", tag = "elicitation",
    responses((status = 200, body = QuestionList), (status = 401, body = ErrorBody)))]
pub async fn list(State(app): State<AppState>) -> Json<QuestionList> {
    Json(QuestionList { elicitations: app.questions.as_ref().map(|q| q.waiting()).unwrap_or_default() })
}

#[utoipa::path(post, path = "/api/elicitations/{id}", tag = "elicitation", request_body = AnswerRequest,
    params(("id" = u64, Path, description = "The question")),
    responses((status = 204, description = "Answered; the server has it"),
        (status = 400, body = ErrorBody, description = "The answer does not fit the question"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "No such question waits")))]
pub async fn answer(
    State(app): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<AnswerRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<StatusCode, ApiError> {
    // An id that is not a number names no question.
    let unknown = || answer_error(AnswerError::Unknown(id.clone()));
    let id: u64 = id.parse().map_err(|_| unknown())?;
    let Json(request) = body.map_err(rejected)?;
    let answer = match (request.action, request.content) {
        (Action::Accept, content) => ElicitationAnswer::Accept(content.unwrap_or_default()),
        (Action::Decline, None) => ElicitationAnswer::Decline,
        (Action::Cancel, None) => ElicitationAnswer::Cancel,
        (_, Some(_)) => return Err(ApiError::bad_request("`content` goes only with `accept`")),
    };
    let questions = app.questions.as_ref().ok_or_else(unknown)?;
    questions.answer(id, answer).map_err(answer_error)?;
    Ok(StatusCode::NO_CONTENT)
}

fn answer_error(e: AnswerError) -> ApiError {
    match e {
        AnswerError::Unknown(_) => ApiError::new(StatusCode::NOT_FOUND, "unknown_question", e.to_string()),
        AnswerError::Invalid(_) => ApiError::new(StatusCode::BAD_REQUEST, "invalid_answer", e.to_string()),
    }
}

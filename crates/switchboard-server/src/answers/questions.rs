//! `/api/elicitations`: servers' questions, as the dashboard and clients of `/api/events`
//! see and answer them (the queue is `crate::questions`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard::elicitation::ElicitationAnswer;
use utoipa::ToSchema;

use super::answer::{Queue, answer_in};
use crate::error::{ApiError, ErrorBody};
use crate::questions::{AnswerError, Question};
use crate::state::AppState;

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
    answer_in::<Questions>(&app, &id, body).await
}

/// The servers' questions, as their route answers them.
struct Questions;

impl Queue for Questions {
    type Body = AnswerRequest;
    type Answer = ElicitationAnswer;

    fn unknown(id: &str) -> ApiError {
        answer_error(AnswerError::Unknown(id.to_string()))
    }

    fn answer_of(body: AnswerRequest) -> Result<ElicitationAnswer, ApiError> {
        match (body.action, body.content) {
            (Action::Accept, content) => Ok(ElicitationAnswer::Accept(content.unwrap_or_default())),
            (Action::Decline, None) => Ok(ElicitationAnswer::Decline),
            (Action::Cancel, None) => Ok(ElicitationAnswer::Cancel),
            (_, Some(_)) => Err(ApiError::bad_request("`content` goes only with `accept`")),
        }
    }

    async fn give(app: &AppState, number: u64, id: &str, answer: ElicitationAnswer) -> Result<(), ApiError> {
        let questions = app.questions.as_ref().ok_or_else(|| Self::unknown(id))?;
        questions.answer(number, answer).map_err(answer_error)
    }
}

fn answer_error(e: AnswerError) -> ApiError {
    match e {
        AnswerError::Unknown(_) => ApiError::new(StatusCode::NOT_FOUND, "unknown_question", e.to_string()),
        AnswerError::Invalid(_) => ApiError::new(StatusCode::BAD_REQUEST, "invalid_answer", e.to_string()),
    }
}

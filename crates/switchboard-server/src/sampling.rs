//! Servers asking for a completion (`sampling/createMessage`) under `switchboard serve`, when
//! no MCP client of `/mcp` can answer: the person reviews the request on the dashboard, writes
//! (or edits) the reply and sends it, or declines (the spec's human in the loop). Each request
//! is a `sampling_requested` event (`{id, server, request}`: messages, system prompt, token
//! limit, model preferences as the server sent them), answered with `POST /api/sampling/{id}`;
//! `sampling_settled` says how it ended (`send`, `decline`, `withdrawn`). With nobody following
//! the events the request is refused at once, saying so.

// Sampling is deprecated by SEP-2577 (protocol 2026-07-28), which still carries it.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard::sampling::{CreateMessageResult, Sampler, SamplingMessage, SamplingRequest};
use utoipa::ToSchema;

use crate::api::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::events::EventLog;
use crate::queue::{Asked, Queue};

/// The longest a request waits for the person.
pub const WAIT: Duration = Duration::from_secs(600);

/// The model a reply names when the person does not say: a person wrote it.
pub const HUMAN: &str = "human";

/// A request waiting for the person.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PendingSample {
    /// Its id, for the answer.
    pub id: u64,
    /// The server asking.
    pub server: String,
    /// What it asks: `messages`, `systemPrompt`, `maxTokens`, `modelPreferences`... as sent.
    #[schema(value_type = Object)]
    pub request: Value,
}

/// How the person answered.
#[derive(Debug)]
enum Answer {
    Send(Box<CreateMessageResult>),
    Decline,
}

/// The sampling queue: the gateway relay's sampler when no MCP client can answer. Give it to
/// `Relay::with_sampling_fallback` and to [`crate::ServeOptions::sampling`].
pub struct SamplingQueue {
    queue: Queue<PendingSample, Answer>,
}

impl Default for SamplingQueue {
    fn default() -> Self {
        SamplingQueue { queue: Queue::new("sampling", "action", WAIT) }
    }
}

impl std::fmt::Debug for SamplingQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplingQueue").field("queue", &self.queue).finish()
    }
}

impl SamplingQueue {
    /// An empty queue.
    pub fn new() -> Arc<SamplingQueue> {
        Arc::default()
    }

    pub(crate) fn attach(&self, log: &Arc<EventLog>) {
        self.queue.attach(log);
    }

    /// The requests waiting, oldest first.
    pub fn waiting(&self) -> Vec<PendingSample> {
        self.queue.waiting()
    }
}

impl Sampler for SamplingQueue {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn Future<Output = Result<CreateMessageResult, String>> + Send + '_>> {
        Box::pin(async move {
            let shown = serde_json::to_value(&request.params).unwrap_or_default();
            let server = request.server.clone();
            match self.queue.ask(|id| PendingSample { id, server, request: shown }).await {
                Asked::Answer(Answer::Send(result)) => Ok(*result),
                Asked::Answer(Answer::Decline) => Err("the person declined to answer".into()),
                Asked::Nobody => Err("nobody follows `switchboard serve`'s events to answer it".into()),
                Asked::NoAnswer => Err("nobody answered in time".into()),
            }
        })
    }
}

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
    let Json(request) = body.map_err(crate::api::rejected)?;
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
    match queue.queue.answer(number, answer, how, |_, _| Ok::<(), ()>(())) {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(unknown()),
    }
}

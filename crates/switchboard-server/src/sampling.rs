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

use serde::Serialize;
use serde_json::Value;
use switchboard::sampling::{CreateMessageResult, Sampler, SamplingRequest};
use utoipa::ToSchema;

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
pub(crate) enum Answer {
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

    /// Answers request `id` (`how`: `send` or `decline`, for the settled event); false when no
    /// such request waits.
    pub(crate) fn answer(&self, id: u64, answer: Answer, how: &'static str) -> bool {
        self.queue.answer(id, answer, how, |_, _| Ok::<(), ()>(())).is_some()
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

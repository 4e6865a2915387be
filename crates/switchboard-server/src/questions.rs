//! Questions servers ask the person (`elicitation/create`: a form, or a URL to open),
//! answered through the API: the dashboard shows each, and any client that follows
//! `/api/events` can answer with `POST /api/elicitations/{id}`.
//!
//! A question is published as an `elicitation_requested` event and waits for its answer (at
//! most [`WAIT`], then it is cancelled); `elicitation_settled` says when it went, however it
//! went (answered, cancelled by the server, the call ended, nobody answered). With nobody
//! following the events there is nobody to ask: the question is declined at once, so a
//! script's tool call does not hang on a form no one will see.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor, check_answer};
use utoipa::ToSchema;

use crate::events::EventLog;
use crate::queue::{Asked, Queue};

/// The longest a question waits for the person.
pub const WAIT: Duration = Duration::from_secs(600);

/// A question waiting for its answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Question {
    /// Its id, for the answer.
    pub id: u64,
    /// The server asking.
    pub server: String,
    /// What it says to the person.
    pub message: String,
    /// Form mode: the values it asks for, an object schema whose properties are strings (maybe
    /// with a `format`), numbers, integers, booleans, enums (`enum`, or `oneOf` of titled
    /// `const`s) and arrays of enum values. URL mode: `null`.
    #[schema(value_type = Option<Object>)]
    pub schema: Value,
    /// URL mode: the http(s) URL the person is asked to open; `accept` (with no content) says
    /// they agreed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The questions servers ask; the hub's [`Elicitor`] under `switchboard serve`. Give it to
/// [`switchboard::HubOptions::elicitor`] and to [`crate::ServeOptions::questions`].
pub struct Questions {
    queue: Queue<Question, ElicitationAnswer>,
}

impl Default for Questions {
    fn default() -> Self {
        Questions { queue: Queue::new("elicitation", "action", WAIT) }
    }
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").field("queue", &self.queue).finish()
    }
}

impl Questions {
    /// No questions yet.
    pub fn new() -> Arc<Questions> {
        Arc::default()
    }

    /// Publishes questions (and their endings) on `log`.
    pub(crate) fn attach(&self, log: &Arc<EventLog>) {
        self.queue.attach(log);
    }

    /// The questions waiting, oldest first.
    pub fn waiting(&self) -> Vec<Question> {
        self.queue.waiting()
    }

    /// Answers question `id`. An accepted answer must fit the question's schema (the problems
    /// are returned otherwise, and the question still waits).
    pub fn answer(&self, id: u64, answer: ElicitationAnswer) -> Result<(), AnswerError> {
        let how = action_of(&answer);
        let fits = |question: &Question, answer: &ElicitationAnswer| match answer {
            ElicitationAnswer::Accept(values) => {
                let problems = check_answer(&question.schema, values);
                if problems.is_empty() { Ok(()) } else { Err(AnswerError::Invalid(problems.join("; "))) }
            }
            _ => Ok(()),
        };
        self.queue.answer(id, answer, how, fits).unwrap_or_else(|| Err(AnswerError::Unknown(id.to_string())))
    }

    /// Asks whoever follows the events; declined at once when nobody does, cancelled when
    /// nobody answers in time or `serve` stops. The server giving up first takes it back.
    async fn ask(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let ElicitationRequest { server, message, schema, url, .. } = request;
        let asked = self.queue.ask(|id| Question { id, server: server.clone(), message, schema, url }).await;
        match asked {
            Asked::Answer(answer) => answer,
            Asked::Nobody => {
                tracing::info!(server = %server, "declined a question: nobody follows the events to answer it");
                ElicitationAnswer::Decline
            }
            Asked::NoAnswer => ElicitationAnswer::Cancel,
        }
    }
}

fn action_of(answer: &ElicitationAnswer) -> &'static str {
    match answer {
        ElicitationAnswer::Accept(_) => "accept",
        ElicitationAnswer::Cancel => "cancel",
        _ => "decline",
    }
}

impl Elicitor for Questions {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(self.ask(request))
    }

    fn takes_urls(&self) -> bool {
        true
    }
}

/// Why an answer was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// No such question waits (answered already, withdrawn, or never asked).
    #[error("no question `{0}` is waiting (answered already, or withdrawn when its call ended)")]
    Unknown(String),
    /// The values do not fit the schema.
    #[error("the answer does not fit the question: {0}")]
    Invalid(String),
}

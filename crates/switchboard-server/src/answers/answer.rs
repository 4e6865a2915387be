//! What the three `POST …/{id}` routes share: the id read as the number of what waits (any
//! other text names nothing, as an id that waits no longer), the body parsed and checked into
//! the queue's answer, the answer given, 204. Each queue says only what differs ([`Queue`]).

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::{AppState, rejected};

/// One kind of thing `serve` asks the person, as its answer route sees it.
pub(crate) trait Queue {
    /// The answer as posted.
    type Body: DeserializeOwned;
    /// The answer as the queue takes it.
    type Answer;
    /// The error for an `id` under which nothing waits (404).
    fn unknown(id: &str) -> ApiError;
    /// The posted answer, checked (400 when it does not fit).
    fn answer_of(body: Self::Body) -> Result<Self::Answer, ApiError>;
    /// Gives `answer` to what waits under `number` (`id` as posted, for the message).
    fn give(
        app: &AppState,
        number: u64,
        id: &str,
        answer: Self::Answer,
    ) -> impl Future<Output = Result<(), ApiError>> + Send;
}

/// Answers what waits under `id` in `Q`'s queue.
pub(crate) async fn answer_in<Q: Queue>(
    app: &AppState,
    id: &str,
    body: Result<Json<Q::Body>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let number: u64 = id.parse().map_err(|_| Q::unknown(id))?;
    let Json(body) = body.map_err(rejected)?;
    let answer = Q::answer_of(body)?;
    Q::give(app, number, id, answer).await?;
    Ok(StatusCode::NO_CONTENT)
}

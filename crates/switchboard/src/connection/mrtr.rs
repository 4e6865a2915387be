//! Protocol 2026-07-28's multi-round-trip requests (SEP-2322). A stateless server cannot send
//! the client requests of its own mid-call (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`); it answers `tools/call`, `prompts/get` or `resources/read` with an
//! `input_required` result listing what it needs, and the client asks again with the answers
//! and the server's opaque `requestState`. The answers come from the same handler that answers
//! those requests on earlier protocol versions, so an embedding application writes its
//! elicitor and sampler once.

use std::time::Duration;

use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};

use super::Connection;

/// Rounds one request may take before the server is deemed to be looping (rmcp's default).
pub(crate) const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What the next round carries: the answers, and the state to echo.
pub(crate) type Retry = (Option<InputResponses>, Option<String>);

impl Connection {
    /// Answers an `input_required` result. `state_only` counts the rounds in a row that asked
    /// nothing (the server is still working and only wants its state back): those wait a
    /// little longer each time instead of spinning.
    pub(crate) async fn answer_input(
        &self,
        result: InputRequiredResult,
        state_only: &mut u32,
    ) -> Result<Retry, String> {
        let requests = result.input_requests.unwrap_or_default();
        if requests.is_empty() {
            if result.request_state.is_none() {
                return Err("the server asked for input but listed no request and no state".into());
            }
            let wait = Duration::from_millis(50u64.saturating_mul(1 << (*state_only).min(5)));
            *state_only += 1;
            tokio::time::sleep(wait).await;
            return Ok((None, result.request_state));
        }
        *state_only = 0;
        let answers = futures::future::try_join_all(requests.into_iter().map(|(key, request)| async move {
            let value = match request {
                InputRequest::Elicitation(request) => {
                    to_value(self.handler.elicit(request.params, Some(key.clone())).await)?
                }
                InputRequest::ListRoots(_) => to_value(self.handler.roots_now(Some(key.clone())).await)?,
                InputRequest::CreateMessage(request) => to_value(
                    self.handler.sample(request.params, Some(key.clone())).await.map_err(|e| e.message.to_string())?,
                )?,
                other => {
                    let method = serde_json::to_value(&other)
                        .ok()
                        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string))
                        .unwrap_or_default();
                    return Err(format!("the server asked for `{method}`, which switchboard does not answer"));
                }
            };
            Ok::<_, String>((key, value))
        }))
        .await?;
        Ok((Some(answers.into_iter().collect()), result.request_state))
    }
}

fn to_value(value: impl serde::Serialize) -> Result<serde_json::Value, String> {
    serde_json::to_value(value).map_err(|e| format!("could not encode the answer: {e}"))
}

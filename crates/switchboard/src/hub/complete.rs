//! Completion (`completion/complete`): suggestions for a prompt's argument or a resource
//! template's variable, from what was typed so far and the arguments already chosen.

use rmcp::model::{ArgumentInfo, CompleteRequestParams, CompleteResult, CompletionContext, CompletionInfo, Reference};

use super::Hub;
use super::connect::ensure_connected;
use super::request::map_error;
use crate::error::Error;

/// What an argument being completed belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completing {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by its URI template (`file:///{path}`).
    Resource(String),
}

impl Hub {
    /// Asks a server for completions of a prompt's or a resource template's argument
    /// (`completion/complete`), as given (the gateway relays its clients' requests).
    pub async fn complete(&self, server: &str, params: CompleteRequestParams) -> Result<CompleteResult, Error> {
        let slot = self.inner.slot(server)?.clone();
        let _in_use = slot.begin_use();
        let timeout = slot.config().map(|c| c.tool_timeout).unwrap_or(crate::config::DEFAULT_TOOL_TIMEOUT);
        let conn = ensure_connected(&self.inner, &slot, timeout).await?;
        let what = "completion/complete".to_string();
        match tokio::time::timeout(timeout, conn.peer.complete(params)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Box::pin(map_error(&slot, &conn, e, &what)).await),
            Err(_) => Err(Error::Timeout { server: server.into(), what, after: timeout }),
        }
    }

    /// Suggestions for one argument of a prompt ([`Completing::Prompt`]) or one variable of a
    /// resource template ([`Completing::Resource`]) from what was typed so far (`value`), given
    /// the arguments already chosen (`context`). `Ok(None)`: the server does not offer
    /// completion (it did not declare `completions`; it is not asked). At most 100 values,
    /// as the spec allows, whatever the server sent.
    pub async fn complete_argument(
        &self,
        server: &str,
        completing: Completing,
        argument: &str,
        value: &str,
        context: std::collections::HashMap<String, String>,
    ) -> Result<Option<CompletionInfo>, Error> {
        let slot = self.inner.slot(server)?.clone();
        let _in_use = slot.begin_use();
        let timeout = slot.config().map(|c| c.tool_timeout).unwrap_or(crate::config::DEFAULT_TOOL_TIMEOUT);
        let conn = ensure_connected(&self.inner, &slot, timeout).await?;
        if !conn.identity.has_completions {
            return Ok(None);
        }
        let reference = match completing {
            Completing::Prompt(name) => Reference::for_prompt(name),
            Completing::Resource(template) => Reference::for_resource(template),
        };
        let mut params = CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value));
        if !context.is_empty() {
            params.context = Some(CompletionContext::with_arguments(context));
        }
        let mut completion = self.complete(server, params).await?.completion;
        if completion.values.len() > CompletionInfo::MAX_VALUES {
            completion.values.truncate(CompletionInfo::MAX_VALUES);
            completion.has_more = Some(true);
        }
        Ok(Some(completion))
    }
}

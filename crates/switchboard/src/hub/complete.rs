//! Completion (`completion/complete`): suggestions for a prompt's argument or a resource
//! template's variable, from what was typed so far and the arguments already chosen.

use rmcp::model::{
    ArgumentInfo, ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, CompletionContext,
    CompletionInfo, Reference, ServerResult,
};

use super::Hub;
use super::connect::ensure_connected;
use super::request::{Request, RequestOptions};
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
        self.complete_with(server, params, RequestOptions::default()).await
    }

    /// [`Hub::complete`], with a timeout, a cancellation token or a progress channel of the
    /// caller's.
    pub async fn complete_with(
        &self,
        server: &str,
        params: CompleteRequestParams,
        options: RequestOptions,
    ) -> Result<CompleteResult, Error> {
        let slot = self.inner.slot(server)?.clone();
        let body = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        let mut request = Request::new(&slot, body, "completion/complete".into(), options);
        match self.exchange(&slot, &mut request).await? {
            ServerResult::CompleteResult(r) => Ok(r),
            _ => Err(super::calls::unexpected(&slot, "completion/complete".into())),
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

//! Answering a server's `sampling/createMessage`: the server asks the host's model for a
//! completion. Only the embedding application has a model, so switchboard declares the
//! `sampling` capability only when it has been given a [`Sampler`]; without one a server is
//! never offered sampling (and a request that arrives anyway is refused as not supported).
//!
//! The request arrives the same way on every protocol version: as a server-to-client request
//! (up to 2025-11-25) or inside an `input_required` result (2026-07-28), which the hub
//! answers and retries.

// Sampling is deprecated by SEP-2577 (protocol 2026-07-28), which still carries it.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;

pub use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, Role, SamplingMessage};

/// A server's request for a completion.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking.
    pub server: String,
    /// What it asks for: messages, system prompt, token limit, model preferences.
    pub params: CreateMessageRequestParams,
    /// When the request is one of a 2026-07-28 `input_required` round: the server's key for it.
    pub input_key: Option<String>,
}

impl SamplingRequest {
    /// With the key of the `input_required` round it belongs to.
    pub fn with_input_key(mut self, key: Option<String>) -> Self {
        self.input_key = key;
        self
    }

    /// A request (for tests and for applications that relay requests).
    pub fn new(server: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        SamplingRequest { server: server.into(), params, input_key: None }
    }
}

/// Something that can run the host's model for a server: the embedding application, which
/// should let the person see and approve what the server asks (the spec says a human should
/// be in the loop).
pub trait Sampler: Send + Sync + 'static {
    /// Produces the completion, or says why not (the reason goes back to the server).
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn Future<Output = Result<CreateMessageResult, String>> + Send + '_>>;
}

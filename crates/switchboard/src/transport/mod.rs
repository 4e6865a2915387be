//! Transports, where rmcp's are not enough: stdio framed here (bounded messages, and every
//! message not taken is said), the legacy HTTP+SSE transport of protocol 2024-11-05, and the
//! HTTP client under rmcp's Streamable HTTP (reqwest, with a fix for servers that refuse a
//! session they forgot with an uncorrelated error, and which says the tools it leaves out for
//! invalid `x-mcp-header` declarations: [`header_params`]).

mod answers;
pub(crate) mod flood;
pub(crate) mod header_params;
pub mod http;
pub mod lines;
pub(crate) mod progress;
mod refusal;
pub mod sse;
pub mod stdio;

pub use http::{HttpClient, LeftOut};
pub(crate) use refusal::Refusal;
pub use sse::{SseClientTransport, SseError};
pub use stdio::StdioTransport;

//! Transports, where rmcp's are not enough: stdio framed here (bounded messages, and every
//! message not taken is said), the legacy HTTP+SSE transport of protocol 2024-11-05, and the
//! HTTP client under rmcp's Streamable HTTP (reqwest, with a fix for servers that refuse a
//! session they forgot with an uncorrelated error).

mod answers;
pub mod http;
pub mod sse;
pub mod stdio;

pub use http::HttpClient;
pub use sse::{SseClientTransport, SseError};
pub use stdio::StdioTransport;

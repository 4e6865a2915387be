//! Transports rmcp does not ship. rmcp speaks stdio (over our own spawned pipes) and
//! Streamable HTTP; the legacy HTTP+SSE transport of protocol 2024-11-05 is here, and the
//! HTTP client under Streamable HTTP (reqwest, with a fix for servers that refuse a session
//! they forgot with an uncorrelated error).

pub mod http;
pub mod sse;

pub use http::HttpClient;
pub use sse::{SseClientTransport, SseError};

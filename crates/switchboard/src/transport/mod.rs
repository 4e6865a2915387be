//! Transports rmcp does not ship. rmcp speaks stdio (over our own spawned pipes) and
//! Streamable HTTP; the legacy HTTP+SSE transport of protocol 2024-11-05 is here.

pub mod sse;

pub use sse::{SseClientTransport, SseError};

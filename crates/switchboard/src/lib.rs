//! # switchboard
//!
//! An MCP host runtime: the part of an AI agent that connects to many Model Context Protocol
//! servers and turns them into one catalog of tools, resources and prompts.
//!
//! ```no_run
//! # async fn demo() {
//! use switchboard::{Hub, HubOptions, Paths, config};
//! let paths = Paths::from_env();
//! let cwd = std::env::current_dir().unwrap_or_default();
//! let loaded = config::load(&config::LoadOptions::from_env(cwd, &paths));
//! let hub = Hub::start(&loaded, HubOptions::new(paths));
//! hub.ready().await;
//! for tool in hub.catalog().tools() {
//!     println!("{}", tool.name);
//! }
//! hub.shutdown().await;
//! # }
//! ```
//!
//! Modules, one per concern: [`config`] (files, shapes, precedence), [`process`] (children
//! and their trees), [`connection`] (one MCP session), [`catalog`] (names and the merged
//! catalog), [`output`] (results for models), [`policy`] (workspace trust), [`events`],
//! [`status`], and the [`Hub`] facade over all of them.

pub mod auth;
pub mod catalog;
pub mod config;
pub mod connection;
mod deadline;
pub mod elicitation;
mod error;
pub mod events;
mod fsutil;
mod hub;
pub mod output;
mod paths;
pub mod policy;
pub mod process;
pub mod sampling;
pub mod status;
pub mod text;
pub mod transport;

pub use connection::handler::Progress;
pub use error::Error;
pub use hub::{CallOptions, Hub, HubOptions, Reconnect, ServerInfo, ToolOutput};
pub use paths::Paths;

/// Writes a file whole (a temporary file renamed over it) with mode 0600, creating its folder:
/// for secrets.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    fsutil::write_atomic(path, bytes, Some(0o600))
}

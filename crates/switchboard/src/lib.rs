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
//! Modules, one per concern: [`config`] (files, shapes, precedence), [`catalog`] (names and the
//! merged catalog), [`output`] (results for models), [`trust`] (workspace trust), [`policy`]
//! (tool-call rules, approvals, audit), [`auth`] (OAuth), [`events`], [`status`], and the
//! [`Hub`] facade over all of them. How servers are started and spoken to (processes and their
//! supervisors, MCP sessions, transports) is the hub's business and private; what a program
//! needs of it is re-exported here ([`Progress`], [`lines`], [`SseClientTransport`]).

#![deny(missing_docs)]

pub mod auth;
pub mod catalog;
pub mod chain;
pub mod config;
mod connection;
mod deadline;
pub mod elicitation;
mod error;
pub mod events;
mod fsutil;
#[cfg(test)]
mod fuzz;
mod glob;
mod hub;
pub mod identity;
pub mod metrics;
pub mod output;
mod paths;
pub mod policy;
mod process;
pub mod remedy;
pub mod roots;
pub mod sampling;
pub mod sandbox;
pub mod screen;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod text;
mod transport;
pub mod trust;
pub mod workspace;

pub use error::{Cause, Error};
pub use hub::{
    CallOptions, Comeback, Completing, ConfigWatch, Hub, HubOptions, HubView, PersonEvent, PersonInfo, PersonOptions,
    Reconnect, ReloadReport, RequestOptions, ServerInfo, ToolOutput, ViewFilter,
};
pub use paths::Paths;
pub use remedy::Remedy;
pub use transport::progress::Progress;
pub use transport::{SseClientTransport, SseError, lines};

/// Writes a file whole (a temporary file renamed over it) with mode 0600, creating its folder
/// (0700): for secrets.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fsutil::create_private_dir(dir)?;
    }
    fsutil::write_atomic(path, bytes, Some(0o600))
}

/// Reads a token or state file of ours (`None` if absent): refused with a message when it is
/// not owned by this user or others can write to it (someone could have planted it); made 0600
/// when others can read it.
pub fn read_private(path: &std::path::Path) -> std::io::Result<Option<Vec<u8>>> {
    fsutil::read_private(path)
}

/// Makes `dir` a folder only this user can enter (0700 whatever the umask; a looser existing
/// one is tightened with a warning; one owned by someone else is refused).
pub fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    fsutil::create_private_dir(dir)
}

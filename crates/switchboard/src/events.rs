//! Events the hub publishes: status changes, catalog changes, resource updates, server log
//! messages.
//! Subscribe with [`crate::Hub::subscribe`]; a slow subscriber loses old events, never
//! blocks the hub.

use serde::Serialize;

use crate::status::ServerStatus;

/// Something that happened. Serialised as `{"type": "status_changed", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A server was removed from the hub.
    ServerRemoved {
        /// The server.
        server: String,
    },
    /// A server's status changed.
    StatusChanged {
        /// The server.
        server: String,
        /// Its new status.
        status: ServerStatus,
    },
    /// A server's tools, resources or prompts changed (after a `list_changed` refresh or a
    /// reconnect).
    CatalogChanged {
        /// The server.
        server: String,
        /// Number of its tools now in the catalog.
        tools: usize,
        /// Number of its resources.
        resources: usize,
        /// Number of its prompts.
        prompts: usize,
    },
    /// A resource the hub subscribed to changed (`notifications/resources/updated`); read it
    /// again for the new contents.
    ResourceUpdated {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
    },
    /// A server sent `notifications/message`.
    Log {
        /// The server.
        server: String,
        /// Its level (`info`, `error`, ...).
        level: String,
        /// Its logger name, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        /// The message.
        data: serde_json::Value,
    },
}

//! Events the hub publishes: status changes, catalog changes, resource updates, server log
//! messages, tool calls' progress and audit lines, servers that need a login.
//! Subscribe with [`crate::Hub::subscribe`] for every event, or with
//! [`crate::Hub::subscribe_changes`] for the changes of state alone (no
//! [per-call](Event::is_per_call) events; while only such subscribers listen, the hub builds
//! none). A slow subscriber loses old events, never blocks the hub.

use serde::Serialize;

use crate::status::ServerStatus;

/// Something that happened. Serialised as `{"type": "status_changed", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A tool call ended (every call through the hub, allowed or not): its audit line.
    ToolCalled(Box<crate::policy::audit::AuditRecord>),
    /// The config files changed and were applied ([`crate::Hub::watch_config`]): what changed,
    /// server by server, and the diagnostics of the files as they are now.
    ConfigReloaded {
        /// What the reload did.
        report: Box<ReloadReport>,
        /// Warnings and errors of the files now (an entry that turned invalid is kept running).
        diagnostics: Vec<crate::config::Diagnostic>,
    },
    /// The config files changed but a file cannot be read or is not JSON: nothing was applied
    /// and what runs keeps running.
    ConfigRejected {
        /// Why.
        diagnostics: Vec<crate::config::Diagnostic>,
    },
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
        /// What the person can do so that it works, when there is something
        /// ([`ServerStatus::remedy`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        remedy: Option<crate::Remedy>,
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
        /// Its level.
        level: LogLevel,
        /// Its logger name, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        /// The message.
        data: serde_json::Value,
    },
    /// A tool call in flight reported progress (`notifications/progress`). Published for every
    /// call, whether or not its caller asked for progress itself.
    Progress {
        /// The server.
        server: String,
        /// The tool, by model-visible name.
        tool: String,
        /// The call, numbered by the hub (unique for the hub's lifetime).
        call: u64,
        /// Progress so far.
        progress: f64,
        /// The total, if the server knows it.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What the server said, if anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A server sent something the hub did not take: a message over `max_message_bytes`, an
    /// answer that could not be decoded, notifications beyond the rate limit. At most one a
    /// second per server, saying how many.
    Dropped {
        /// The server.
        server: String,
        /// What was not taken, and why.
        reason: String,
    },
    /// A server asks for a login: it became `needs_auth`, or refused a call for want of a
    /// scope (`insufficient_scope`). [`crate::Hub::begin_login`] starts one.
    AuthNeeded {
        /// The server.
        server: String,
        /// Why, for people.
        reason: String,
        /// The scope the server asked for, from its challenge, if it named one.
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
    },
}

impl Event {
    /// An event of one tool call ([`Event::ToolCalled`], [`Event::Progress`]): as many as
    /// calls, where every other kind is a change of state.
    pub fn is_per_call(&self) -> bool {
        matches!(self, Event::ToolCalled(_) | Event::Progress { .. })
    }
}

/// How many events a subscriber may fall behind before it loses the oldest.
const CAPACITY: usize = 1024;

/// The hub's events, on two channels: every event, and the changes of state alone (no
/// [per-call](Event::is_per_call) events). A subscriber that wants only changes (the gateway,
/// which tells its clients of list changes and logs) then costs a tool call nothing: the hub
/// builds a call's events only while someone takes every event. Each channel is made by its
/// first subscriber (its 1,024 slots are about a tenth of a millisecond of a hub's start, which
/// a program that never listens does not pay); clones share them.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventBus {
    channels: std::sync::Arc<Channels>,
}

#[derive(Debug, Default)]
struct Channels {
    all: std::sync::OnceLock<tokio::sync::broadcast::Sender<Event>>,
    changes: std::sync::OnceLock<tokio::sync::broadcast::Sender<Event>>,
}

impl EventBus {
    /// Publishes `event` to those it is for (none listening is not an error).
    pub(crate) fn send(&self, event: Event) {
        if !event.is_per_call()
            && let Some(changes) = self.channels.changes.get()
            && changes.receiver_count() > 0
        {
            let _ = changes.send(event.clone());
        }
        if let Some(all) = self.channels.all.get() {
            let _ = all.send(event);
        }
    }

    /// Whether anyone takes per-call events (else the hub does not build them).
    pub(crate) fn wants_calls(&self) -> bool {
        self.channels.all.get().is_some_and(|all| all.receiver_count() > 0)
    }

    /// Every event from now on.
    pub(crate) fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.channels.all.get_or_init(|| tokio::sync::broadcast::channel(CAPACITY).0).subscribe()
    }

    /// The changes of state from now on (no per-call events).
    pub(crate) fn subscribe_changes(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.channels.changes.get_or_init(|| tokio::sync::broadcast::channel(CAPACITY).0).subscribe()
    }
}

/// How grave a server's log message is (MCP's levels, RFC 5424's, least grave first: a
/// session that asked for `warning` gets `warning` and above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

// rmcp marks logging deprecated (SEP-2577) while servers still send it: the conversions are
// the one place that names rmcp's type.
#[allow(deprecated)]
impl From<rmcp::model::LoggingLevel> for LogLevel {
    fn from(level: rmcp::model::LoggingLevel) -> LogLevel {
        use rmcp::model::LoggingLevel as L;
        match level {
            L::Debug => LogLevel::Debug,
            L::Info => LogLevel::Info,
            L::Notice => LogLevel::Notice,
            L::Warning => LogLevel::Warning,
            L::Error => LogLevel::Error,
            L::Critical => LogLevel::Critical,
            L::Alert => LogLevel::Alert,
            L::Emergency => LogLevel::Emergency,
        }
    }
}

#[allow(deprecated)]
impl From<LogLevel> for rmcp::model::LoggingLevel {
    fn from(level: LogLevel) -> rmcp::model::LoggingLevel {
        use rmcp::model::LoggingLevel as L;
        match level {
            LogLevel::Debug => L::Debug,
            LogLevel::Info => L::Info,
            LogLevel::Notice => L::Notice,
            LogLevel::Warning => L::Warning,
            LogLevel::Error => L::Error,
            LogLevel::Critical => L::Critical,
            LogLevel::Alert => L::Alert,
            LogLevel::Emergency => L::Emergency,
        }
    }
}

/// What a reload did, server by server (names in order).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReloadReport {
    /// New servers (started unless disabled or waiting for trust).
    pub added: Vec<String>,
    /// Servers no longer configured: stopped.
    pub removed: Vec<String>,
    /// Servers whose launch or transport changed: restarted.
    pub restarted: Vec<String>,
    /// Servers changed in a way that needs no restart (filters, timeouts, checks, enabled).
    pub updated: Vec<String>,
    /// Servers left as they were.
    pub unchanged: Vec<String>,
    /// Servers whose entry turned invalid: what runs is kept, `(server, why)`.
    pub kept: Vec<(String, String)>,
}

impl ReloadReport {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.restarted.is_empty()
            && self.updated.is_empty()
            && self.kept.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_to_changes_gets_no_call_events_and_does_not_make_them_wanted() {
        let bus = EventBus::default();
        let mut changes = bus.subscribe_changes();
        assert!(!bus.wants_calls(), "a changes-only subscriber does not ask for per-call events");
        bus.send(Event::Progress {
            server: "s".into(),
            tool: "t".into(),
            call: 1,
            progress: 1.0,
            total: None,
            message: None,
        });
        bus.send(Event::ServerRemoved { server: "s".into() });
        assert!(matches!(changes.try_recv(), Ok(Event::ServerRemoved { .. })));
        assert!(changes.try_recv().is_err());
        let mut all = bus.subscribe();
        assert!(bus.wants_calls());
        bus.send(Event::Progress {
            server: "s".into(),
            tool: "t".into(),
            call: 2,
            progress: 1.0,
            total: None,
            message: None,
        });
        bus.send(Event::ServerRemoved { server: "s".into() });
        assert!(matches!(all.try_recv(), Ok(Event::Progress { call: 2, .. })));
        assert!(matches!(all.try_recv(), Ok(Event::ServerRemoved { .. })));
        assert!(matches!(changes.try_recv(), Ok(Event::ServerRemoved { .. })));
    }
}

//! What a person can do about a server's status or a refused request, as data. The library
//! decides which fix applies; each front says it in its own words (the CLI as a command to
//! type, the gateway as a sentence for the agent to pass on, the dashboard as a button).

use serde::{Deserialize, Serialize};

/// A fix the person can make. Serialised as `{"action": "login", "server": "github"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Remedy {
    /// Log in to the server with OAuth: there is no login yet, the stored one expired or was
    /// revoked, the token lacks a scope the server asks for, or the authorization server
    /// forgot the client switchboard registered (logging in registers a new one).
    Login {
        /// The server.
        server: String,
    },
    /// Register a client with the server's authorization server by hand (it offers no
    /// registration), give it to the server's config (`oauth.client_id`, and
    /// `oauth.client_secret` if it has one), then log in.
    RegisterClient {
        /// The server.
        server: String,
    },
    /// Trust the project file's server, so that it starts.
    Trust {
        /// The server.
        server: String,
    },
    /// Allow the tool with a policy rule (`allow: TOOL`), or approve each call.
    Allow {
        /// The tool's model-visible name (a glob that matches only it).
        tool: String,
    },
}

impl Remedy {
    /// The server the fix is about, when it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Remedy::Login { server } | Remedy::RegisterClient { server } | Remedy::Trust { server } => Some(server),
            Remedy::Allow { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape the API serves and the dashboard reads.
    #[test]
    fn serialises_as_an_action_and_its_object() {
        let json = serde_json::to_value(Remedy::Login { server: "gh".into() }).unwrap_or_default();
        assert_eq!(json, serde_json::json!({"action": "login", "server": "gh"}));
        let json = serde_json::to_value(Remedy::Allow { tool: "mcp__gh__push".into() }).unwrap_or_default();
        assert_eq!(json, serde_json::json!({"action": "allow", "tool": "mcp__gh__push"}));
        let back: Option<Remedy> = serde_json::from_value(serde_json::json!({"action": "trust", "server": "p"})).ok();
        assert_eq!(back, Some(Remedy::Trust { server: "p".into() }));
    }
}

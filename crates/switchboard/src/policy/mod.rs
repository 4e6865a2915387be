//! Tool-call policy: which calls are allowed, asked about or denied ([`rules`]), who is asked
//! ([`Approver`]), approvals remembered across runs ([`approvals`]: "always", keyed by the
//! tool's definition, so a tool that changed is asked about again), arguments checked against
//! the tool's input schema before they leave ([`validate`]), and the audit log of every call
//! ([`audit`]).
//!
//! With no `policy` in any file every call is allowed, as before: the embedding host (or the
//! agent in front of a gateway) keeps its own approvals.

pub mod approvals;
pub mod audit;
pub(crate) mod gate;
pub(crate) mod rate;
pub mod rules;
pub mod suggest;
pub mod validate;

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{JsonObject, ToolAnnotations};
use serde::{Deserialize, Serialize};

pub use rules::{Decision, Policy, Rule, RuleKind, ToolRef, Verdict, from_annotations};

/// Who makes a call: decides which `ask` rules it satisfies, and what the audit log says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Caller {
    /// A model, or anything acting for one (the default): `ask` rules ask.
    #[default]
    Model,
    /// A person's own request (`switchboard call`): it satisfies `ask` rules of the person's
    /// and the project's files, but not the managed file's, and never a `deny`.
    Person {
        /// Where it came from (`cli`).
        via: String,
    },
    /// A session of the local API (the dashboard, a script).
    Api {
        /// The session.
        session: String,
    },
    /// A client of the gateway.
    Gateway {
        /// The client's name, as it said in `initialize` (or `clientInfo`).
        client: String,
        /// The gateway profile it uses.
        profile: Option<String>,
        /// The downstream session.
        session: Option<String>,
        /// Who signed in, on a gateway that is a protected resource ([`crate::identity`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<Box<crate::identity::Principal>>,
    },
}

impl Caller {
    /// A person at the command line.
    pub fn cli() -> Caller {
        Caller::Person { via: "cli".into() }
    }

    /// Who signed in, for a gateway's caller on a protected front.
    pub fn principal(&self) -> Option<&crate::identity::Principal> {
        match self {
            Caller::Gateway { principal, .. } => principal.as_deref(),
            _ => None,
        }
    }

    /// The key "for this session" approvals are kept under.
    pub fn session_key(&self) -> String {
        match self {
            Caller::Model => "model".into(),
            Caller::Person { via } => format!("person:{via}"),
            Caller::Api { session } => format!("api:{session}"),
            Caller::Gateway { client, session, .. } => {
                format!("gateway:{client}:{}", session.as_deref().unwrap_or_default())
            }
        }
    }
}

/// One answer to an approval request. In JSON and forms: `allow_once`, `allow_session`,
/// `allow_always`, `deny` (titled [`Approval::title`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Approval {
    /// This call only.
    AllowOnce,
    /// Calls of this tool by the same caller for as long as the hub runs.
    AllowSession,
    /// From now on (remembered in the data folder, until the tool's definition changes).
    AllowAlways,
    /// Refused.
    Deny,
}

impl Approval {
    /// Every answer, in the order they are offered.
    pub const ALL: [Approval; 4] = [Approval::AllowOnce, Approval::AllowSession, Approval::AllowAlways, Approval::Deny];

    /// `allow_once`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::AllowOnce => "allow_once",
            Approval::AllowSession => "allow_session",
            Approval::AllowAlways => "allow_always",
            Approval::Deny => "deny",
        }
    }

    /// "Allow once", "Allow for this session", "Always allow", "Deny".
    pub fn title(self) -> &'static str {
        match self {
            Approval::AllowOnce => "Allow once",
            Approval::AllowSession => "Allow for this session",
            Approval::AllowAlways => "Always allow",
            Approval::Deny => "Deny",
        }
    }

    /// The answer named `s` (`allow_once`, ...).
    pub fn parse(s: &str) -> Option<Approval> {
        Approval::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// Whether the call goes ahead.
    pub fn allows(self) -> bool {
        self != Approval::Deny
    }
}

/// What an [`Approver`] is asked. In JSON as `switchboard serve` takes it from approvers in
/// other processes (`POST /api/approvals`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// The model-visible name.
    pub name: String,
    /// The arguments the call would send.
    pub arguments: Option<JsonObject>,
    /// The tool's annotations, as the server gave them (hints, untrusted).
    pub annotations: Option<ToolAnnotations>,
    /// The rule that asks.
    pub rule: Rule,
    /// The tool's definition changed since it was last approved "always".
    #[serde(default)]
    pub changed: bool,
    /// Who makes the call.
    #[serde(default)]
    pub caller: Caller,
}

impl ApprovalRequest {
    /// A request for a call of `name` (for tests and relaying applications).
    pub fn new(server: impl Into<String>, tool: impl Into<String>, name: impl Into<String>, rule: Rule) -> Self {
        ApprovalRequest {
            server: server.into(),
            tool: tool.into(),
            name: name.into(),
            arguments: None,
            annotations: None,
            rule,
            changed: false,
            caller: Caller::Model,
        }
    }

    /// The question in one paragraph: the tool, its server, the rule, whether it changed.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "Allow `{}` (tool `{}` of server `{}`)? Asked by {}.",
            self.name, self.tool, self.server, self.rule
        );
        if self.changed {
            s.push_str(" Its definition changed since it was last approved.");
        }
        s
    }
}

/// A boxed future, as the trait returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who decides an `ask`: the embedding application (a dialog), the CLI (a terminal prompt),
/// `serve` (the dashboard's queue), the gateway (an elicitation to its client). A hub with
/// rules but no approver treats `ask` as deny, saying why.
pub trait Approver: Send + Sync {
    /// Answers one request. Dropping the future (the call was cancelled) withdraws it.
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval>;

    /// Why nobody can be asked right now (`serve` with nobody following its events), if so:
    /// the call is then denied at once with this reason and how to allow the tool.
    fn unavailable(&self) -> Option<String> {
        None
    }

    /// Answers one request, or says why nobody could be asked (an approver that asks another
    /// process learns it only by trying): `Err(reason)` denies the call with that reason and
    /// how to allow the tool. This is what the hub calls; by default it is [`Approver::approve`].
    fn consult<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move { Ok(self.approve(request).await) })
    }
}

/// An approver that always gives the same answer (for tests and unattended hosts).
#[derive(Debug, Clone, Copy)]
pub struct Always(pub Approval);

impl Approver for Always {
    fn approve<'a>(&'a self, _request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

impl std::fmt::Debug for dyn Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approver")
    }
}

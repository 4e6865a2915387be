//! Tool calls the policy asks about, answered through the API: the hub's
//! [`Approver`] under `switchboard serve`. Each is published as an `approval_requested` event
//! (server, tool, model-visible name, arguments, annotations, the rule, whether the tool
//! changed since it was last approved) and waits for `POST /api/approvals/{id}` with one of
//! the four decisions (at most [`WAIT`], then it is denied); `approval_settled` says how it
//! went. With nobody following the events there is nobody to ask: the call is denied at once,
//! with a message that says how to allow the tool.
//!
//! Hubs in other processes ask here too: a standalone `switchboard gateway` whose client
//! cannot elicit sends its request with `POST /api/approvals` ([`crate::ServeApprover`]); it
//! waits in the same queue, with the process it came from shown on the card, and the
//! response is the decision (409 `nobody_to_ask` when nobody follows the events). A request
//! whose connection closes (the call was cancelled, the gateway ended) is withdrawn.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture};
use utoipa::ToSchema;

use crate::events::EventLog;
use crate::queue::{Asked, Queue};

/// The longest an approval waits for the person.
pub const WAIT: Duration = Duration::from_secs(600);

/// A call waiting for approval.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PendingApproval {
    /// Its id, for the answer.
    pub id: u64,
    /// The request: `server`, `tool`, `name`, `arguments`, `annotations`, `rule`, `changed`,
    /// `caller`.
    #[schema(value_type = Object)]
    pub request: Value,
    /// The rule, as a sentence.
    pub rule: String,
    /// The question in one paragraph.
    pub summary: String,
    /// The answers, with their titles.
    #[schema(value_type = Vec<Object>)]
    pub choices: Vec<Value>,
    /// The process that asks, when it is not this server (`switchboard gateway (pid 4242) in
    /// /home/ada/project`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The approval queue. Give it to [`switchboard::HubOptions::approver`] and to
/// [`crate::ServeOptions::approvals`].
pub struct ApprovalQueue {
    queue: Queue<PendingApproval, Approval>,
}

impl Default for ApprovalQueue {
    fn default() -> Self {
        ApprovalQueue { queue: Queue::new("approval", "decision", WAIT) }
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue").field("queue", &self.queue).finish()
    }
}

/// The four answers, as the dashboard offers them.
pub fn choices() -> Vec<Value> {
    Approval::ALL.iter().map(|a| json!({"value": a.as_str(), "title": a.title()})).collect()
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> Arc<ApprovalQueue> {
        Arc::default()
    }

    pub(crate) fn attach(&self, log: &Arc<EventLog>) {
        self.queue.attach(log);
    }

    /// The calls waiting, oldest first.
    pub fn waiting(&self) -> Vec<PendingApproval> {
        self.queue.waiting()
    }

    /// Answers call `id`; `false` when no such call waits.
    pub fn answer(&self, id: u64, approval: Approval) -> bool {
        self.queue.answer(id, approval, approval.as_str(), |_, _| Ok::<(), ()>(())).is_some()
    }

    /// Puts `request` to whoever follows the events; `Err` with the reason when nobody does.
    pub(crate) async fn ask(&self, request: ApprovalRequest, origin: Option<String>) -> Result<Approval, String> {
        let asked = self
            .queue
            .ask(|id| PendingApproval {
                id,
                request: serde_json::to_value(&request).unwrap_or_default(),
                rule: request.rule.to_string(),
                summary: request.summary(),
                choices: choices(),
                origin,
            })
            .await;
        match asked {
            Asked::Answer(a) => Ok(a),
            Asked::Nobody => Err(NOBODY.into()),
            Asked::NoAnswer => Ok(Approval::Deny),
        }
    }
}

/// Why nobody is asked when nobody follows the events.
const NOBODY: &str =
    "nobody follows `switchboard serve`'s events to be asked (open the dashboard: `switchboard dashboard`)";

impl Approver for ApprovalQueue {
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.ask(request, None).await.unwrap_or(Approval::Deny) })
    }

    fn consult<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(self.ask(request, None))
    }

    fn unavailable(&self) -> Option<String> {
        match self.queue.watched() {
            Some(_) => None,
            None => Some(NOBODY.into()),
        }
    }
}

/// An answer.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// `allow_once`, `allow_session`, `allow_always` or `deny`.
    pub(crate) decision: String,
}

/// A call another process's policy asks about.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutsideRequest {
    /// What the approver was asked: `server`, `tool`, `name`, `arguments`, `annotations`,
    /// `rule` (as the library serialises it), `changed`, `caller`.
    #[schema(value_type = Object)]
    pub(crate) request: ApprovalRequest,
    /// The process that asks, shown on the card (`switchboard gateway (pid 4242) in
    /// /home/ada/project`).
    pub(crate) origin: String,
}

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
//!
//! On a team's store the replicas' queues are one ([`across`]): a call waiting at one replica
//! is shown and answered on the dashboard of any.

mod across;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture};
use switchboard::store::db::Database;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::events::EventLog;
use crate::queue::{Asked, Queue};
use across::Across;

/// The longest an approval waits for the person.
pub const WAIT: Duration = Duration::from_secs(600);

/// A call waiting for approval.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The approval queue. Give it to [`switchboard::HubOptions::approver`] and to
/// [`crate::ServeOptions::approvals`].
pub struct ApprovalQueue {
    queue: Queue<PendingApproval, Approval>,
    /// The other replicas' queues, on a team's store.
    across: OnceLock<Arc<Across>>,
}

impl Default for ApprovalQueue {
    fn default() -> Self {
        ApprovalQueue { queue: Queue::new("approval", "decision", WAIT), across: OnceLock::new() }
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

    /// Makes this queue one with the other replicas' on the team's store `db`, until
    /// `stopping` (once; later calls do nothing).
    pub(crate) fn share(self: &Arc<Self>, db: Database, stopping: CancellationToken) {
        let across = Arc::new(Across::new(db));
        if self.across.set(across.clone()).is_err() {
            return;
        }
        let told = Arc::downgrade(&across);
        self.queue.on_settled(Arc::new(move |id, how: &str| {
            if let Some(across) = told.upgrade() {
                across.settled(id, how);
            }
        }));
        tokio::spawn(across.run(Arc::downgrade(self), stopping));
    }

    /// The calls waiting here, oldest first.
    pub fn waiting(&self) -> Vec<PendingApproval> {
        self.queue.waiting()
    }

    /// The calls waiting here and, on a team's store, at the other live replicas.
    pub async fn waiting_anywhere(&self) -> Vec<PendingApproval> {
        let mut all = self.queue.waiting();
        if let Some(across) = self.across.get() {
            all.extend(across.waiting_elsewhere().await);
            all.sort_by_key(|a| a.id);
        }
        all
    }

    /// Answers call `id`; `false` when no such call waits.
    pub fn answer(&self, id: u64, approval: Approval) -> bool {
        self.queue.answer(id, approval, approval.as_str(), |_, _| Ok::<(), ()>(())).is_some()
    }

    /// Answers call `id` here or, on a team's store, at the live replica holding it: `Ok(false)`
    /// when none waits for it; `Err` when the replica holding it did not take the answer.
    pub async fn answer_anywhere(&self, id: u64, approval: Approval) -> Result<bool, String> {
        if self.answer(id, approval) {
            return Ok(true);
        }
        match self.across.get() {
            Some(across) => across.answer_elsewhere(id, approval).await,
            None => Ok(false),
        }
    }

    /// Puts `request` to whoever follows the events (here or, on a team's store, at another
    /// replica); `Err` with the reason when nobody does.
    pub(crate) async fn ask(&self, request: ApprovalRequest, origin: Option<String>) -> Result<Approval, String> {
        let across = self.across.get();
        let elsewhere = across.is_some_and(|a| a.others_watch());
        if self.queue.watched().is_none() && !elsewhere {
            return Err(NOBODY.into());
        }
        let id = match across {
            Some(a) => a.number(self.queue.next_id()).await,
            None => self.queue.next_id(),
        };
        let item = PendingApproval {
            id,
            request: serde_json::to_value(&request).unwrap_or_default(),
            rule: request.rule.to_string(),
            summary: request.summary(),
            choices: choices(),
            origin,
        };
        let shown = item.clone();
        let announce = async move {
            match across {
                Some(a) => a.announce(&shown).await,
                None => false,
            }
        };
        let asked = self.queue.ask_item(id, item, elsewhere, announce).await;
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
        let elsewhere = self.across.get().is_some_and(|a| a.others_watch());
        match self.queue.watched() {
            Some(_) => None,
            None if elsewhere => None,
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

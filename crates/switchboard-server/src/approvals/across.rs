//! Approvals across the replicas of a team's `serve` on one store: a call that waits for
//! approval at one replica is shown on the dashboard of every other and may be answered at any.
//!
//! - Each approval is numbered by the store (`switchboard_approvals`' sequence: ids unique
//!   across replicas), kept there while it waits, and told (`Signal::ApprovalAsked`): the
//!   others publish it as an `approval_requested` event of their own, and list it in
//!   `GET /api/approvals`.
//! - An answer at a replica that does not hold the call is sent to the one that does
//!   (`Signal::ApprovalAnswer`, to its `Database::origin`), which gives it to its queue and
//!   acknowledges (`Signal::ApprovalSettled`, `unknown` when it no longer waits); the answering
//!   replica waits for that at most [`ACK_WAIT`], so `POST /api/approvals/{id}` says whether the
//!   answer was taken.
//! - Every approval that ends is told (`Signal::ApprovalSettled`: the decision, or `withdrawn`),
//!   its row goes, and the other dashboards publish `approval_settled`.
//! - Who can be asked: each replica says how many follow its events (`switchboard_watchers`, on
//!   change and every [`BEAT`]), and a call waits when someone follows any live replica's
//!   events; a replica not heard from within `GONE_AFTER` is taken as gone, with its approvals.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use switchboard::policy::Approval;
use switchboard::store::db::Database;
use switchboard::store::signals::{Heard, Signal, Signals};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{ApprovalQueue, PendingApproval};

/// How long an answer given for another replica's call waits for that replica to take it.
pub const ACK_WAIT: Duration = Duration::from_secs(5);

/// How often a replica says how many follow its events, when that does not change.
pub const BEAT: Duration = Duration::from_secs(5);

/// How often the count is looked at, and whether someone follows another replica's events.
const LOOK: Duration = Duration::from_secs(1);

/// Ids of approvals numbered here when the store did not answer (far from the store's).
const LOCAL_IDS: u64 = 1 << 50;

/// What an approval is sealed for in the store.
fn context(id: u64) -> Vec<u8> {
    format!("approval\0{id}").into_bytes()
}

/// A replica's part in the approvals of the store.
pub(crate) struct Across {
    db: Database,
    /// Someone follows the events of another live replica.
    others_watch: AtomicBool,
    /// Approvals that ended anywhere (id, how), for answers waiting for their acknowledgement.
    settles: broadcast::Sender<(u64, String)>,
}

impl std::fmt::Debug for Across {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Across").field("store", &self.db.shown()).finish_non_exhaustive()
    }
}

impl Across {
    pub(crate) fn new(db: Database) -> Across {
        Across { db, others_watch: AtomicBool::new(false), settles: broadcast::channel(256).0 }
    }

    /// Whether someone follows the events of another live replica (as last looked).
    pub(crate) fn others_watch(&self) -> bool {
        self.others_watch.load(Ordering::Relaxed)
    }

    /// A new approval's id: the store's, else one of this replica's own.
    pub(crate) async fn number(&self, local: u64) -> u64 {
        match self.db.next_approval_id().await {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!("numbering an approval in the team's store (shown on this replica only): {e}");
                LOCAL_IDS + local
            }
        }
    }

    /// Shows `item` to the other replicas (sealed in the store: its arguments may hold
    /// secrets); `false` when it could not be (it is shown on this replica only).
    pub(crate) async fn announce(&self, item: &PendingApproval) -> bool {
        if item.id >= LOCAL_IDS {
            return false;
        }
        let plain = serde_json::to_vec(item).unwrap_or_default();
        let sealed = match self.db.key_ring().seal(&context(item.id), &plain) {
            Ok(sealed) => sealed,
            Err(e) => {
                tracing::warn!("sealing approval {} (shown on this replica only): {e}", item.id);
                return false;
            }
        };
        match self.db.put_approval(item.id, &sealed).await {
            Ok(()) => {
                self.db.tell(&Signal::ApprovalAsked { id: item.id }).await;
                true
            }
            Err(e) => {
                tracing::warn!("keeping approval {} in the team's store (shown on this replica only): {e}", item.id);
                false
            }
        }
    }

    /// Approval `id` ended here (`how`): its row goes, and the others are told.
    pub(crate) fn settled(self: &Arc<Self>, id: u64, how: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (me, how) = (self.clone(), how.to_string());
        runtime.spawn(async move {
            if id < LOCAL_IDS
                && let Err(e) = me.db.drop_approval(id).await
            {
                tracing::warn!("approval {id} ended, but its row stays in the team's store: {e}");
            }
            me.db.tell(&Signal::ApprovalSettled { id, how }).await;
        });
    }

    /// An approval as kept in the store, opened (`None`: not one this key ring opens).
    fn open(&self, id: u64, sealed: &str) -> Option<PendingApproval> {
        let plain = self.db.key_ring().open(&context(id), sealed).ok()?;
        serde_json::from_slice::<PendingApproval>(&plain).ok().filter(|item| item.id == id)
    }

    /// The approvals other live replicas wait for, oldest first.
    pub(crate) async fn waiting_elsewhere(&self) -> Vec<PendingApproval> {
        match self.db.approvals_elsewhere().await {
            Ok(items) => items.into_iter().filter_map(|(id, sealed)| self.open(id, &sealed)).collect(),
            Err(e) => {
                tracing::warn!("the other replicas' approvals in the team's store: {e}");
                Vec::new()
            }
        }
    }

    /// Gives `approval` to call `id` held by another replica: `Ok(false)` when no live replica
    /// waits for it, `Err` when the one holding it did not acknowledge in time.
    pub(crate) async fn answer_elsewhere(&self, id: u64, approval: Approval) -> Result<bool, String> {
        let held = self.db.approval(id).await.map_err(|e| format!("the team's store: {e}"))?;
        let Some((origin, _)) = held.filter(|(origin, _)| origin != self.db.origin()) else { return Ok(false) };
        let mut settles = self.settles.subscribe();
        let answer = Signal::ApprovalAnswer { id, to: origin, decision: approval.as_str().to_string() };
        self.db.signal(&answer).await.map_err(|e| format!("the team's store: {e}"))?;
        let acknowledged = async {
            loop {
                match settles.recv().await {
                    Ok((settled, how)) if settled == id => return Some(how),
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        };
        match tokio::time::timeout(ACK_WAIT, acknowledged).await {
            Ok(Some(how)) => Ok(how != "unknown"),
            _ => Err(format!(
                "the replica holding call {id} did not take the answer within {} s (it may have stopped)",
                ACK_WAIT.as_secs()
            )),
        }
    }

    /// Follows the other replicas' signals and says how many follow this one's events, until
    /// `stopping`; then this replica's rows go.
    pub(crate) async fn run(self: Arc<Self>, queue: Weak<ApprovalQueue>, stopping: CancellationToken) {
        let mut signals: Option<Signals> = None;
        let mut look = tokio::time::interval(LOOK);
        let (mut said, mut beat) = (None, Instant::now());
        loop {
            if signals.is_none() {
                match self.db.signals().await {
                    Ok(s) => signals = Some(s),
                    Err(e) => tracing::warn!("listening to the other replicas' approvals: {e}"),
                }
            }
            let heard = async {
                match signals.as_mut() {
                    Some(s) => s.next().await,
                    None => {
                        tokio::time::sleep(LOOK).await;
                        Ok(Heard::Missed)
                    }
                }
            };
            tokio::select! {
                () = stopping.cancelled() => break,
                _ = look.tick() => {
                    let Some(queue) = queue.upgrade() else { break };
                    let watchers = queue.queue.log().map_or(0, |l| l.watchers());
                    if said != Some(watchers) || beat.elapsed() >= BEAT {
                        match self.db.beat_watchers(watchers).await {
                            Ok(()) => (said, beat) = (Some(watchers), Instant::now()),
                            Err(e) => tracing::warn!("saying this replica's dashboard followers in the team's store: {e}"),
                        }
                    }
                    self.others_watch.store(self.db.watched_elsewhere().await.unwrap_or(false), Ordering::Relaxed);
                }
                heard = heard => match heard {
                    Ok(Heard::Signal(signal)) => {
                        let Some(queue) = queue.upgrade() else { break };
                        self.heard(&queue, signal).await;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!("listening to the other replicas' approvals: {e}");
                        signals = None;
                    }
                },
            }
        }
        if let Err(e) = self.db.leave_watchers().await {
            tracing::warn!("leaving the team's store's approvals: {e}");
        }
    }

    async fn heard(&self, queue: &ApprovalQueue, signal: Signal) {
        match signal {
            Signal::ApprovalAsked { id } => {
                let Some(log) = queue.queue.log() else { return };
                if let Ok(Some((_, sealed))) = self.db.approval(id).await
                    && let Some(item) = self.open(id, &sealed)
                {
                    log.publish_value(queue.queue.requested(&item));
                }
            }
            Signal::ApprovalAnswer { id, to, decision } if to == self.db.origin() => {
                let taken = Approval::parse(&decision).is_some_and(|a| queue.answer(id, a));
                if !taken {
                    // A row left behind (its call withdrawn while it was being kept) goes too.
                    if let Err(e) = self.db.drop_approval(id).await {
                        tracing::warn!("approval {id} waits no more, but its row stays in the team's store: {e}");
                    }
                    self.db.tell(&Signal::ApprovalSettled { id, how: "unknown".into() }).await;
                }
            }
            Signal::ApprovalSettled { id, how } => {
                if how != "unknown" {
                    queue.queue.publish_settled(id, &how);
                }
                let _ = self.settles.send((id, how));
            }
            _ => {}
        }
    }
}

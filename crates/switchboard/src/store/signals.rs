//! What the processes on one store tell each other: PostgreSQL's `LISTEN`/`NOTIFY` on the
//! channel [`CHANNEL`], one JSON [`Signal`] per notification with the sender's
//! [`Database::origin`], so that a process skips its own. Replicas of a gateway use it so that
//! what one of them learns reaches the others at once: a person logged out of a server (the
//! others' running hubs forget the tokens they hold), a server's lists changed, a resource
//! changed, the config changed; and `serve`'s dashboards, that a call waits for approval at
//! one of them and was answered at another.
//!
//! Notifications are not kept: one sent while a listener's connection is down is lost, and
//! [`Signals::next`] says so ([`Heard::Missed`]) once it listens again, so that the caller
//! catches up. They travel in the store's own connection, readable by whoever may read the
//! store: nothing secret is sent.

use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;

use super::StoreError;
use super::db::Database;

/// The channel.
pub const CHANNEL: &str = "switchboard_signals";

/// What a process tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Signal {
    /// The config changed: read it again.
    Reload,
    /// `server`'s lists changed (`owner`: the person whose own instance it is, `""` for the
    /// host's): list them again.
    ListChanged {
        /// Whose instance ([`crate::identity::Principal::key`], or `""`).
        owner: String,
        /// The server.
        server: String,
    },
    /// `server` said the resource `uri` changed.
    ResourceUpdated {
        /// Whose instance.
        owner: String,
        /// The server.
        server: String,
        /// The resource (as the server names it).
        uri: String,
    },
    /// `owner` logged out of `server`: tokens held in memory for it are forgotten.
    Logout {
        /// Whose login (`""`: the host's).
        owner: String,
        /// The server.
        server: String,
    },
    /// A call waits for approval at the sender (its row in `switchboard_approvals`): the
    /// others' dashboards show it.
    ApprovalAsked {
        /// The approval (unique on the store).
        id: u64,
    },
    /// The approval `id`, which the process `to` waits for, was answered elsewhere.
    ApprovalAnswer {
        /// The approval.
        id: u64,
        /// The process waiting for it ([`Database::origin`]).
        to: String,
        /// The decision (`allow_once`, `allow_session`, `allow_always`, `deny`).
        decision: String,
    },
    /// The approval `id` ended at the sender: `how` is the decision, `withdrawn`, or
    /// `unknown` when an answer came for an approval it no longer waits for.
    ApprovalSettled {
        /// The approval.
        id: u64,
        /// How it ended.
        how: String,
    },
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    #[serde(flatten)]
    signal: Signal,
}

/// What a listener heard.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Heard {
    /// Another process's signal.
    Signal(Signal),
    /// The connection was lost and made again: signals sent meanwhile are lost.
    Missed,
}

impl Database {
    /// Tells every other process listening on the store.
    pub async fn signal(&self, signal: &Signal) -> Result<(), StoreError> {
        let payload = serde_json::to_string(&Envelope { from: self.origin().to_string(), signal: signal.clone() })
            .unwrap_or_default();
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(payload)
            .execute(self.pool())
            .await
            .map(drop)
            .map_err(|e| self.db_error(e))
    }

    /// [`Database::signal`], a failure logged rather than returned: what is told is a hint,
    /// the store holds the truth.
    pub async fn tell(&self, signal: &Signal) {
        if let Err(e) = self.signal(signal).await {
            tracing::warn!("could not tell the other processes on the store ({signal:?}): {e}");
        }
    }

    /// Starts listening (a connection of its own, outside the pool's count).
    pub async fn signals(&self) -> Result<Signals, StoreError> {
        let mut listener = PgListener::connect_with(self.pool()).await.map_err(|e| self.db_error(e))?;
        listener.listen(CHANNEL).await.map_err(|e| self.db_error(e))?;
        Ok(Signals { listener, db: self.clone() })
    }
}

/// A listener ([`Database::signals`]).
pub struct Signals {
    listener: PgListener,
    db: Database,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").field("store", &self.db.shown()).finish_non_exhaustive()
    }
}

impl Signals {
    /// The next signal of another process (its own and unreadable ones skipped), or
    /// [`Heard::Missed`] after the connection was lost (sqlx connects again on the next call);
    /// `Err` when it cannot listen again now (the caller waits and calls again).
    pub async fn next(&mut self) -> Result<Heard, StoreError> {
        loop {
            let Some(notification) = self.listener.try_recv().await.map_err(|e| self.db.db_error(e))? else {
                return Ok(Heard::Missed);
            };
            match serde_json::from_str::<Envelope>(notification.payload()) {
                Ok(envelope) if envelope.from == self.db.origin() => {}
                Ok(envelope) => return Ok(Heard::Signal(envelope.signal)),
                Err(e) => tracing::debug!("a signal on {CHANNEL} that is not one of ours: {e}"),
            }
        }
    }
}

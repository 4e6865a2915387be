//! Sessions that outlive the gateway process, on a team's store: rmcp's [`SessionStore`] over
//! [`Database`] keeps what each session's `initialize` said, and [`crate::http`] records whose
//! the session is (the principal who made it) and how its streams are made. A gateway that is
//! asked about a session it does not hold (it was started again, or the session was made by
//! another gateway on the store) resumes it: rmcp replays the `initialize` into a new session
//! of this gateway, after [`crate::http`] checked that the caller is its owner (another caller
//! gets 404, as for an unknown session). Without a store nothing changes: a session ends with
//! its process, and its client starts a new one.

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use switchboard::store::db::Database;

/// See the module.
pub(crate) struct DurableSessions {
    db: Database,
}

impl DurableSessions {
    pub(crate) fn new(db: Database) -> DurableSessions {
        let pruning = db.clone();
        tokio::spawn(async move {
            match pruning.prune_sessions().await {
                Ok(0) => {}
                Ok(n) => tracing::info!("removed {n} session(s) older than the days a session can be resumed"),
                Err(e) => tracing::warn!("the sessions of the store: {e}"),
            }
        });
        DurableSessions { db }
    }
}

#[async_trait::async_trait]
impl SessionStore for DurableSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(kept) = self.db.session(session_id).await? else { return Ok(None) };
        // A row claimed before its `initialize` was kept holds no state yet: not resumable.
        Ok(serde_json::from_value(kept.state).ok())
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let value = serde_json::to_value(state)?;
        Ok(self.db.put_session(session_id, &value).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.db.delete_session(session_id).await?)
    }
}

//! Health of a connected server. A stdio server's exit is seen at once (its process is
//! watched); a remote server has no process, so its session can vanish unnoticed (server
//! restarted, session expired, network gone). `revalidate` asks.

use super::connect::connect;
use super::slot::{PING_TIMEOUT, drop_connection};
use super::{Hub, retry};
use crate::error::Error;
use crate::status::ServerStatus;

impl Hub {
    /// Checks that a server's session is alive with a `ping` (on 2026-07-28, which has none,
    /// with `server/discover`), and reconnects it when the
    /// session is gone (closed transport, or a ping that fails or goes unanswered). A server
    /// that is disabled, untrusted or failed for its configuration is left as it is. A server
    /// being connected already (a retry of its own under way) is waited for, and tried again
    /// if that attempt fails: the answer is a settled status, never `connecting`. Returns the
    /// status afterwards.
    pub async fn revalidate(&self, name: &str) -> Result<ServerStatus, Error> {
        let slot = self.inner.slot(name)?.clone();
        let (conn, status) = {
            let st = slot.state();
            (st.conn.clone(), st.status.clone())
        };
        let reconnectable = matches!(
            status,
            ServerStatus::Connected { .. }
                | ServerStatus::Connecting
                | ServerStatus::Disconnected { .. }
                | ServerStatus::Failed { .. }
        ) && slot.config().is_some();
        if let Some(conn) = conn.filter(|c| !c.is_closed()) {
            match tokio::time::timeout(PING_TIMEOUT, conn.check()).await {
                Ok(Ok(_)) => return Ok(slot.state().status.clone()),
                Ok(Err(e)) => tracing::info!(server = %name, "ping failed, reconnecting: {e}"),
                Err(_) => tracing::info!(server = %name, "no answer to ping within {PING_TIMEOUT:?}, reconnecting"),
            }
            drop_connection(&slot, &conn).await;
        } else if !reconnectable {
            return Ok(status);
        }
        // An attempt under way holds the slot's connect lock: `connect` waits for it, and
        // returns its connection or makes another. Whatever the outcome, the slot's status
        // now says it.
        retry::reset(&slot);
        let _ = connect(&self.inner, &slot).await;
        Ok(slot.state().status.clone())
    }
}

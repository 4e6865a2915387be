//! What a legacy session's client was given, kept in the team's store
//! ([`switchboard::store::sessions::SessionMemory`]): a digest of each list it was last sent
//! ([`crate::view::View::digests`]) and the resources it subscribed to. A replica that takes
//! the session over (its replica died; [`crate::http`] tells [`crate::replicas::Replicas`] of
//! a session it resumes, whatever the request: often the client's stream asked for again)
//! catches up on the session's first request that reaches the handler: it subscribes again to what the
//! client subscribed to, and tells the client `list_changed` for each list whose digest
//! differs from what it was sent. Written only when it changes, by the replica serving the
//! session; nothing without a store.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::service::{RequestContext, RoleServer};
use switchboard::store::sessions::SessionMemory;

use super::Session;
use crate::caller::principal;

/// A session's memory as last written, and whether it caught up after being resumed.
#[derive(Default)]
pub(crate) struct Memory {
    kept: tokio::sync::Mutex<SessionMemory>,
    /// The view whose digests were kept last (a view is made once per catalog and client).
    last: std::sync::Mutex<Option<std::sync::Weak<crate::view::View>>>,
    caught_up: std::sync::atomic::AtomicBool,
}

/// The legacy session id of `ctx`'s request.
fn session_id(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    parts.headers.get("mcp-session-id")?.to_str().ok().map(str::to_string)
}

impl Session {
    /// Where this session's memory is kept: the store, and the session's id there.
    fn memory_place(&self, ctx: &RequestContext<RoleServer>) -> Option<(switchboard::store::db::Database, String)> {
        Some((self.shared.hub.store()?.clone(), session_id(ctx)?))
    }

    async fn write(&self, ctx: &RequestContext<RoleServer>, change: impl FnOnce(&mut SessionMemory) -> bool) {
        let Some((db, id)) = self.memory_place(ctx) else { return };
        let mut kept = self.memory.kept.lock().await;
        if !change(&mut kept) {
            return;
        }
        if let Err(e) = db.remember_session(&id, &kept).await {
            tracing::warn!("a session's lists will not be compared after a replica change: {e}");
        }
    }

    /// The client was sent `view`'s lists: their digests kept, when they changed.
    pub(super) async fn remember_view(&self, ctx: &RequestContext<RoleServer>, view: &Arc<crate::view::View>) {
        if self.memory_place(ctx).is_none() {
            return;
        }
        {
            let mut last = self.memory.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.as_ref().and_then(std::sync::Weak::upgrade).is_some_and(|l| Arc::ptr_eq(&l, view)) {
                return;
            }
            *last = Some(Arc::downgrade(view));
        }
        let digests = view.digests();
        self.write(ctx, |m| {
            let mut changed = false;
            for (kind, digest) in digests {
                if m.lists.get(kind) != Some(&digest) {
                    m.lists.insert(kind.to_string(), digest);
                    changed = true;
                }
            }
            changed
        })
        .await;
    }

    /// The client subscribed to `uri` (`false`: unsubscribed).
    pub(super) async fn remember_subscription(&self, ctx: &RequestContext<RoleServer>, uri: &str, subscribed: bool) {
        self.write(ctx, |m| if subscribed { m.subscribed.insert(uri.to_string()) } else { m.subscribed.remove(uri) })
            .await;
    }

    /// On the first request of a session resumed here: its subscriptions made again, and
    /// `list_changed` for each list that differs from what its client was sent.
    /// Where the session's memory is, when this request is the first of a session resumed here
    /// (it is then marked caught up: [`Session::catch_up`] is its one turn).
    pub(super) fn to_catch_up(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<(switchboard::store::db::Database, String)> {
        if self.memory.caught_up.load(Ordering::Acquire) {
            return None;
        }
        let (db, id) = self.memory_place(ctx)?;
        if !self.shared.replicas.catches_up(&id) || self.memory.caught_up.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some((db, id))
    }

    /// Catches up the session at `place` ([`Session::to_catch_up`]).
    pub(super) async fn catch_up(
        &self,
        ctx: &RequestContext<RoleServer>,
        view: &Arc<crate::view::View>,
        (db, id): (switchboard::store::db::Database, String),
    ) {
        let memory = match db.session(&id).await {
            Ok(Some(kept)) => kept.memory,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("session {id} resumed without its memory: {e}");
                return;
            }
        };
        let caller = principal(ctx);
        for uri in &memory.subscribed {
            let Some(owner) = view.resource_owner(uri) else { continue };
            if let Err(e) = self.shared.subscribe(self.id, &owner.server, &owner.uri, caller.as_ref()).await {
                tracing::info!("session {id}: its subscription to {uri} could not be made again: {e:?}");
            }
        }
        let now = view.digests();
        tracing::debug!("session {id}: sent {:?}, now {now:?}", memory.lists);
        let differs = |kind: &str| {
            let sent = memory.lists.get(kind);
            sent.is_some() && now.iter().find(|(k, _)| *k == kind).map(|(_, d)| d) != sent
        };
        let (tools, prompts, resources) = (differs("tools"), differs("prompts"), differs("resources"));
        tracing::info!(
            "session {id} resumed here: {} subscription(s) made again; lists changed: tools {tools}, prompts {prompts}, resources {resources}",
            memory.subscribed.len()
        );
        *self.memory.kept.lock().await = memory;
        if let Some(s) = self.shared.sessions().get_mut(&self.id) {
            s.seen = Some(view.clone());
        }
        if tools {
            let _ = ctx.peer.notify_tool_list_changed().await;
        }
        if prompts {
            let _ = ctx.peer.notify_prompt_list_changed().await;
        }
        if resources {
            let _ = ctx.peer.notify_resource_list_changed().await;
        }
    }
}

//! Connecting a slot, and what watches a live connection: the exit watcher (an unexpected
//! exit marks the server `disconnected`, its supervisor ends what it left, and the hub tries
//! again: [`super::retry`]), the session-renewal watcher (a renewed HTTP session is listed and
//! subscribed again) and the refresh worker for `list_changed` (sequential per server, with a
//! sequence number so a refresh from an older connection can never overwrite a newer list).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Inner, Slot, calls, connected_status};
use crate::connection::handler::ListChange;
use crate::connection::{ConnectCtx, Connection, StartFailure};
use crate::status::{FailureKind, ServerStatus};

/// Connects a slot (no-op when it already has a live connection). A failure is the slot's
/// status, and is tried again as [`super::retry`] says.
pub(super) async fn connect(inner: &Arc<Inner>, slot: &Arc<Slot>) -> Result<Arc<Connection>, StartFailure> {
    let _guard = slot.connect_lock.lock().await;
    if let Some(conn) = slot.state().conn.clone().filter(|c| !c.is_closed()) {
        return Ok(conn);
    }
    // A closed connection still in the slot (its transport ended under a live process) is
    // ended while the new one starts.
    let stale = slot.state().conn.take();
    if let Some(stale) = stale {
        tokio::spawn(async move { stale.close().await });
    }
    let Some(config) = slot.config() else {
        return Err(StartFailure::new(FailureKind::ConfigInvalid, slot.state().status.summary()));
    };
    inner.set_status(slot, ServerStatus::Connecting);
    let epoch = slot.epoch.fetch_add(1, Ordering::SeqCst) + 1;
    let ctx = ConnectCtx {
        project_root: inner.project_root.clone(),
        host_env: inner.host_env.clone(),
        events: inner.events.clone(),
        marker: format!("{}-{}-{epoch}", inner.id, slot.name),
        trees: inner.trees.clone(),
        record: inner.record.clone(),
        notification_rate: inner.options.notification_rate,
        elicitor: inner.options.elicitor.clone(),
        sampler: inner.options.sampler.clone(),
        tokens: crate::auth::TokenStore::in_dir(&inner.options.paths.data_dir),
        roots: Arc::new(inner.options.roots.clone().unwrap_or_else(|| vec![inner.project_root.clone()])),
        roots_source: inner.options.roots_source.clone(),
        chain: inner.chain.clone(),
    };
    match Connection::start(&config, &ctx).await {
        Ok((conn, changes, lists)) => {
            let conn = Arc::new(conn);
            let status = connected_status(&conn, &lists, &slot.filter());
            slot.touch();
            {
                let mut st = slot.state();
                st.conn = Some(conn.clone());
                st.lists = Arc::new(lists);
                let seq = slot.list_seq.load(Ordering::SeqCst);
                st.applied = [ListChange::Tools, ListChange::Resources, ListChange::Prompts]
                    .into_iter()
                    .map(|k| (k, seq))
                    .collect();
            }
            inner.rebuild_catalog();
            super::retry::connected(slot);
            inner.set_status(slot, status);
            inner.publish_catalog(slot);
            spawn_watchers(inner, slot, &conn, changes, epoch);
            super::retry::watch_health(inner, slot, &conn);
            if !slot.state().subscribed.is_empty() {
                let (slot2, conn2) = (slot.clone(), conn.clone());
                let handle = tokio::spawn(async move { calls::resubscribe(&slot2, &conn2).await });
                inner.track(handle.abort_handle());
            }
            if inner.shutting_down.load(Ordering::SeqCst) {
                conn.close().await;
            }
            Ok(conn)
        }
        Err(failure) => {
            slot.state().lists = Arc::default();
            inner.rebuild_catalog();
            let status = ServerStatus::Failed {
                kind: failure.kind,
                message: failure.message.clone(),
                stderr_tail: failure.stderr_tail.clone(),
                auth_challenge: failure.auth_challenge.clone(),
                retry: None,
            };
            super::retry::lost(inner, slot, status);
            Err(failure)
        }
    }
}

pub(super) fn spawn_watchers(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    conn: &Arc<Connection>,
    mut changes: mpsc::UnboundedReceiver<ListChange>,
    epoch: u64,
) {
    if let Some(tree) = conn.tree.clone() {
        let (inner2, slot2, conn2) = (inner.clone(), slot.clone(), Arc::downgrade(conn));
        let mut stdout_closed = conn.stdout_closed.clone();
        let h = tokio::spawn(async move {
            let hung_up = async {
                match stdout_closed.as_mut() {
                    Some(rx) => {
                        let _ = rx.wait_for(|closed| *closed).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let exit = tokio::select! {
                exit = tree.exited() => exit,
                () = hung_up => match tree.exited_within(Duration::from_millis(500)).await {
                    Some(exit) => Some(exit),
                    // Its stdout ended and it lives on: it can no longer answer.
                    None => {
                        if inner2.shutting_down.load(Ordering::SeqCst) {
                            return;
                        }
                        if let Some(conn) = conn2.upgrade() {
                            let reason = "closed its stdout and kept running (its process was ended)".to_string();
                            super::health::drop_connection(&slot2, &conn).await;
                            tracing::warn!(server = %slot2.name, "{reason}");
                            let status = ServerStatus::Disconnected { exit_code: None, signal: None, stderr_tail: tree.stderr.lines(), reason: Some(reason), retry: None };
                            if !inner2.shutting_down.load(Ordering::SeqCst) && slot2.epoch.load(Ordering::SeqCst) == epoch {
                                super::retry::lost(&inner2, &slot2, status);
                            }
                        }
                        return;
                    }
                },
            };
            if inner2.shutting_down.load(Ordering::SeqCst) || slot2.epoch.load(Ordering::SeqCst) != epoch {
                return;
            }
            let is_current = {
                let mut st = slot2.state();
                let current = st.conn.as_ref().zip(conn2.upgrade()).is_some_and(|(a, b)| Arc::ptr_eq(a, &b));
                if current {
                    st.conn = None;
                }
                current
            };
            if !is_current {
                return;
            }
            // What the server left behind is ended by its supervisor; the status says at once.
            tree.stderr.settled(Duration::from_millis(300)).await;
            let tail = tree.stderr.lines();
            tracing::warn!(server = %slot2.name, "server exited unexpectedly ({})", exit.map(|e| e.to_string()).unwrap_or_default());
            let status = ServerStatus::Disconnected {
                exit_code: exit.and_then(|e| e.code),
                signal: exit.and_then(|e| e.signal),
                stderr_tail: tail,
                reason: None,
                retry: None,
            };
            super::retry::lost(&inner2, &slot2, status);
        });
        inner.track(h.abort_handle());
    }
    if let Some(mut renewals) = conn.session_renewals.clone() {
        // A renewed session starts with nothing: list again (lists may be per session) and
        // subscribe again.
        let (inner2, slot2, conn2) = (inner.clone(), slot.clone(), Arc::downgrade(conn));
        let h = tokio::spawn(async move {
            while renewals.changed().await.is_ok() {
                let Some(conn) = conn2.upgrade() else { return };
                if slot2.epoch.load(Ordering::SeqCst) != epoch {
                    return;
                }
                tracing::info!(server = %slot2.name, "the server started a new session: listing and subscribing again");
                for kind in [ListChange::Tools, ListChange::Resources, ListChange::Prompts] {
                    refresh(&inner2, &slot2, &conn, kind, epoch).await;
                }
                calls::resubscribe(&slot2, &conn).await;
            }
        });
        inner.track(h.abort_handle());
    }
    let (inner2, slot2, conn2) = (inner.clone(), slot.clone(), Arc::downgrade(conn));
    let h = tokio::spawn(async move {
        while let Some(first) = changes.recv().await {
            let mut kinds = BTreeSet::from([first as u8]);
            while let Ok(more) = changes.try_recv() {
                kinds.insert(more as u8);
            }
            let Some(conn) = conn2.upgrade() else { return };
            for kind in [ListChange::Tools, ListChange::Resources, ListChange::Prompts] {
                if kinds.contains(&(kind as u8)) {
                    refresh(&inner2, &slot2, &conn, kind, epoch).await;
                }
            }
        }
    });
    inner.track(h.abort_handle());
}

pub(super) async fn refresh(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Connection, kind: ListChange, epoch: u64) {
    let seq = slot.list_seq.fetch_add(1, Ordering::SeqCst) + 1;
    let mut lists = (*slot.state().lists).clone();
    if let Err(e) = conn.relist(&slot.name, kind, &mut lists).await {
        if inner.shutting_down.load(Ordering::SeqCst) || conn.is_closed() {
            return;
        }
        tracing::warn!(server = %slot.name, "refresh after list_changed failed, keeping the last good list: {e}");
        return;
    }
    let status = {
        let mut st = slot.state();
        let applied = st.applied.get(&kind).copied().unwrap_or(0);
        if slot.epoch.load(Ordering::SeqCst) != epoch || seq <= applied {
            return;
        }
        let mut merged = (*st.lists).clone();
        match kind {
            ListChange::Tools => merged.tools = lists.tools,
            ListChange::Resources => {
                merged.resources = lists.resources;
                merged.resource_templates = lists.resource_templates;
            }
            ListChange::Prompts => merged.prompts = lists.prompts,
        }
        st.applied.insert(kind, seq);
        st.lists = Arc::new(merged);
        match &st.status {
            ServerStatus::Connected { .. } => Some(connected_status(conn, &st.lists, &slot.filter())),
            _ => None,
        }
    };
    inner.rebuild_catalog();
    if let Some(status) = status {
        inner.set_status(slot, status);
    }
    inner.publish_catalog(slot);
}

//! A slot's connection, from start to loss and back: connecting it; what watches a live
//! connection: the exit watcher (an unexpected exit marks the server `disconnected`, its
//! supervisor ends what it left), the health check of a remote one, the session-renewal
//! watcher (a renewed HTTP session is listed and subscribed again) and the refresh worker for
//! `list_changed` (sequential per server, with a sequence number so a refresh from an older
//! connection can never overwrite a newer list); a loss (`lost`: the status, and the timer that
//! connects again, when [`super::retry`]'s policy says); and a caller's wait for a live
//! connection (`ensure_connected`). The policy (backoff, crash loop) is `retry.rs`; connecting
//! and losing call each other, so they are one file.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::info::connected_status;
use super::request;
use super::retry::{self, delay, tail_of, with_retry};
use super::slot::{PING_TIMEOUT, drop_connection};
use super::subscriptions::resubscribe;
use super::{Inner, Slot};
use crate::catalog::ServerLists;
use crate::connection::handler::ListChange;
use crate::connection::{ConnectCtx, Connection, StartFailure};
use crate::error::Error;
use crate::status::{FailureKind, Retry, ServerStatus, now_ms};
use crate::store::signals::Signal;

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
    // Each person's own: the host makes no connection of it (its people's hubs do).
    if inner.person.is_none() && config.per_person(inner.options.team) {
        if !matches!(slot.state().status, ServerStatus::PerPerson) {
            {
                let mut st = slot.state();
                st.lists = Arc::default();
                st.remembered = false;
            }
            inner.rebuild_catalog();
            inner.set_status(slot, ServerStatus::PerPerson);
        }
        return Err(StartFailure::new(FailureKind::Unsupported, ServerStatus::PerPerson.summary()));
    }
    inner.set_status(slot, ServerStatus::Connecting);
    let epoch = slot.epoch.fetch_add(1, Ordering::SeqCst) + 1;
    slot.refusals.count_in(&inner.options.metrics, &slot.name);
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
        tokens: inner.tokens.clone(),
        paths: inner.options.paths.clone(),
        refusals: slot.refusals.clone(),
        roots: Arc::new(inner.options.roots.clone().unwrap_or_else(|| vec![inner.project_root.clone()])),
        roots_source: inner.options.roots_source.clone(),
        chain: inner.chain.clone(),
        screening: inner.options.screening,
        subject: inner.subject.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone(),
    };
    match Connection::start(&config, &ctx).await {
        Ok((mut conn, changes, mut lists)) => {
            // What the server says is screened once, here, before any front sees it.
            // With `Screening::Keep` they are screened as a copy: found and told, passed on as sent.
            let keep = inner.options.screening == crate::screen::Screening::Keep;
            let mut copy = keep.then(|| lists.clone());
            let screened = copy.as_mut().unwrap_or(&mut lists);
            let mut findings = crate::screen::lists(&slot.name, screened);
            let mut instructions = conn.identity.instructions.clone();
            if let Some(text) = instructions.as_mut() {
                findings.extend(crate::screen::instructions(&slot.name, text));
            }
            let names = inner.tool_names();
            findings.extend(inner.checks.scanner().scan(&slot.name, screened, instructions.as_deref(), &names));
            if !keep {
                conn.identity.instructions = instructions;
            }
            warn_found(&slot.name, &findings);
            let conn = Arc::new(conn);
            let status = connected_status(&conn, &lists, &slot.filter());
            slot.touch();
            {
                let mut st = slot.state();
                st.conn = Some(conn.clone());
                st.lists = Arc::new(lists);
                st.remembered = false;
                st.findings = Arc::new(findings);
                let seq = slot.list_seq.load(Ordering::SeqCst);
                st.applied = [ListChange::Tools, ListChange::Resources, ListChange::Prompts]
                    .into_iter()
                    .map(|k| (k, seq))
                    .collect();
            }
            inner.rebuild_catalog();
            inner.remember_lists(slot);
            retry::connected(slot);
            inner.set_status(slot, status);
            inner.publish_catalog(slot);
            spawn_watchers(inner, slot, &conn, changes, epoch);
            watch_health(inner, slot, &conn);
            if !slot.state().subscribed.is_empty() {
                let (inner2, slot2, conn2) = (inner.clone(), slot.clone(), conn.clone());
                let handle = tokio::spawn(async move { resubscribe(&inner2, &slot2, &conn2).await });
                inner.track(handle.abort_handle());
            }
            if inner.shutting_down.load(Ordering::SeqCst) {
                conn.close().await;
            }
            Ok(conn)
        }
        Err(failure) => {
            {
                let mut st = slot.state();
                st.lists = Arc::default();
                st.remembered = false;
            }
            inner.rebuild_catalog();
            let status = ServerStatus::Failed {
                kind: failure.kind,
                message: failure.message.clone(),
                stderr_tail: failure.stderr_tail.clone(),
                auth_challenge: failure.auth_challenge.clone(),
                retry: None,
            };
            lost(inner, slot, status);
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
                            drop_connection(&slot2, &conn).await;
                            tracing::warn!(server = %slot2.name, "{reason}");
                            let status = ServerStatus::Disconnected { exit_code: None, signal: None, stderr_tail: tree.stderr.lines(), reason: Some(reason), retry: None };
                            if !inner2.shutting_down.load(Ordering::SeqCst) && slot2.epoch.load(Ordering::SeqCst) == epoch {
                                lost(&inner2, &slot2, status);
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
                // Ended past a limit: the status names it.
                reason: exit.and_then(|e| e.limit).map(|l| l.to_string()),
                retry: None,
            };
            lost(&inner2, &slot2, status);
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
                resubscribe(&inner2, &slot2, &conn).await;
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
            // A server may tell only the session that changed it: the other replicas list too.
            let changed = Signal::ListChanged { owner: inner2.owner(), server: slot2.name.clone() };
            inner2.tell(changed).await;
        }
    });
    inner.track(h.abort_handle());
}

/// Lists one kind again after its `list_changed`, on the request path.
async fn relist(
    inner: &Inner,
    slot: &Slot,
    conn: &Connection,
    kind: ListChange,
    lists: &mut ServerLists,
) -> Result<(), Error> {
    match kind {
        ListChange::Tools => lists.tools = request::list(inner, slot, conn).await?,
        ListChange::Resources => {
            lists.resources = request::list(inner, slot, conn).await?;
            lists.resource_templates = request::list(inner, slot, conn).await?;
        }
        ListChange::Prompts => lists.prompts = request::list(inner, slot, conn).await?,
    }
    Ok(())
}

pub(super) async fn refresh(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Connection, kind: ListChange, epoch: u64) {
    let seq = slot.list_seq.fetch_add(1, Ordering::SeqCst) + 1;
    let mut lists = (*slot.state().lists).clone();
    if let Err(e) = relist(inner, slot, conn, kind, &mut lists).await {
        if inner.shutting_down.load(Ordering::SeqCst) || conn.is_closed() {
            return;
        }
        tracing::warn!(server = %slot.name, "refresh after list_changed failed, keeping the last good list: {e}");
        return;
    }
    // Only the lists just fetched can have anything hidden (the rest were screened already).
    let mut copy = (inner.options.screening == crate::screen::Screening::Keep).then(|| lists.clone());
    let screened = copy.as_mut().unwrap_or(&mut lists);
    let mut fresh = crate::screen::lists(&slot.name, screened);
    let names = inner.tool_names();
    let checked = inner.checks.scanner().scan(&slot.name, screened, None, &names);
    fresh.extend(checked.into_iter().filter(|f| of_kind(&f.target, kind)));
    warn_found(&slot.name, &fresh);
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
        // The findings of the lists refreshed are the new ones; the others' are kept.
        let mut findings: Vec<crate::screen::Finding> =
            st.findings.iter().filter(|f| !of_kind(&f.target, kind)).cloned().collect();
        findings.extend(fresh);
        st.findings = Arc::new(findings);
        st.lists = Arc::new(merged);
        match &st.status {
            ServerStatus::Connected { .. } => Some(connected_status(conn, &st.lists, &slot.filter())),
            _ => None,
        }
    };
    inner.rebuild_catalog();
    inner.remember_lists(slot);
    if let Some(status) = status {
        inner.set_status(slot, status);
    }
    inner.publish_catalog(slot);
}

/// The server went away, as `status` (`disconnected` or `failed`) says: records it, decides
/// when it is tried again (or that it is a crash loop), publishes the status and, in a
/// long-running host, sets the timer.
pub(super) fn lost(inner: &Arc<Inner>, slot: &Arc<Slot>, status: ServerStatus) {
    let policy = inner.options.reconnect;
    let retryable = match &status {
        ServerStatus::Failed { kind, .. } => kind.is_retryable(),
        ServerStatus::Disconnected { .. } => true,
        _ => false,
    };
    if !retryable || inner.shutting_down.load(Ordering::SeqCst) {
        slot.backoff().cancel();
        inner.set_status(slot, status);
        return;
    }
    let now = Instant::now();
    let (attempt, crash) = slot.backoff().record(&policy, &status, now);
    if crash {
        let (what, stderr_tail) = match &status {
            ServerStatus::Failed { message, stderr_tail, .. } => (message.clone(), stderr_tail.clone()),
            other => (other.summary(), tail_of(other)),
        };
        let message = format!(
            "went away {} times within {} s (last: {}); not tried again by itself: connect it to try again",
            policy.crash_loop,
            policy.crash_window.as_secs(),
            what.lines().next().unwrap_or_default()
        );
        tracing::warn!(server = %slot.name, "{message}");
        let status = ServerStatus::Failed {
            kind: FailureKind::CrashLoop,
            message,
            stderr_tail,
            auth_challenge: None,
            retry: None,
        };
        inner.set_status(slot, status);
        return;
    }
    if !policy.background {
        // A short-lived host tries again when a call needs the server.
        inner.set_status(slot, with_retry(status, Some(Retry { attempt, at_ms: None })));
        return;
    }
    let wait = delay(
        &policy,
        attempt,
        now_ms() ^ u64::from(attempt) ^ slot.name.len() as u64 ^ slot.epoch.load(Ordering::Relaxed),
    );
    let retry = Retry { attempt, at_ms: Some(now_ms() + u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)) };
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let slot2 = slot.clone();
    let epoch = slot.epoch.load(Ordering::SeqCst);
    let timer = tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let Some(inner) = weak.upgrade() else { return };
        // Connected meanwhile (a call did it, or a person): nothing to do.
        if slot2.epoch.load(Ordering::SeqCst) != epoch || inner.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        slot2.backoff().started();
        tracing::info!(server = %slot2.name, "trying again (attempt {})", attempt + 1);
        let _ = connect(&inner, &slot2).await;
    });
    slot.backoff().schedule(now + wait, timer.abort_handle());
    inner.track(timer.abort_handle());
    inner.set_status(slot, with_retry(status, Some(retry)));
}

/// A remote connection that is gone (a request failed with its transport closed, or a health
/// check failed): takes it out of the slot and tries again.
pub(super) async fn remote_gone(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Arc<Connection>, reason: String) {
    let current = slot.state().conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn));
    if !current {
        return;
    }
    drop_connection(slot, conn).await;
    tracing::warn!(server = %slot.name, "{reason}");
    let status = ServerStatus::Disconnected {
        exit_code: None,
        signal: None,
        stderr_tail: Vec::new(),
        reason: Some(reason),
        retry: None,
    };
    lost(inner, slot, status);
}

/// In a long-running host, asks a connected remote server every `health_interval` whether it
/// is there; the first failure (or a minute without answer) is [`remote_gone`].
pub(super) fn watch_health(inner: &Arc<Inner>, slot: &Arc<Slot>, conn: &Arc<Connection>) {
    let policy = inner.options.reconnect;
    if !policy.background || conn.tree.is_some() {
        return;
    }
    let (weak, slot2, conn2) = (Arc::downgrade(inner), slot.clone(), Arc::downgrade(conn));
    let h = tokio::spawn(async move {
        loop {
            tokio::time::sleep(policy.health_interval).await;
            let (Some(inner), Some(conn)) = (weak.upgrade(), conn2.upgrade()) else { return };
            if conn.is_closed() || !slot2.state().conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                return;
            }
            let checked = tokio::time::timeout(PING_TIMEOUT, conn.check()).await;
            let reason = match checked {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => format!("stopped answering: {}", crate::connection::describe_error(&e)),
                Err(_) => {
                    format!("stopped answering (no answer to a health check within {:?})", PING_TIMEOUT)
                }
            };
            remote_gone(&inner, &slot2, &conn, reason).await;
            return;
        }
    });
    inner.track(h.abort_handle());
}

/// The slot's live connection. A server being connected is waited for, and so is one whose
/// next attempt is due within [`retry::WAIT_FOR_DUE`], at most `wait` in all; one that went away
/// is connected now when no timer will (a short-lived host, or no attempt scheduled); anything
/// else fails at once, saying why and when the next attempt is.
pub(super) async fn ensure_connected(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    wait: Duration,
) -> Result<Arc<Connection>, Error> {
    if let Some(conn) = slot.state().conn.as_ref().filter(|c| !c.is_closed()) {
        return Ok(conn.clone());
    }
    let deadline = tokio::time::Instant::now() + wait;
    let mut changed = inner.changed.subscribe();
    loop {
        let status = {
            let st = slot.state();
            if let Some(conn) = st.conn.as_ref().filter(|c| !c.is_closed()) {
                return Ok(conn.clone());
            }
            st.status.clone()
        };
        let not_connected = |status: &ServerStatus| Error::not_connected(&slot.name, status);
        let due = slot.backoff().due();
        let wait_now = match &status {
            ServerStatus::Connecting => true,
            ServerStatus::Disconnected { .. } | ServerStatus::Failed { .. } if due.is_some() => {
                let soon = due.is_some_and(|d| d <= std::time::Instant::now() + retry::WAIT_FOR_DUE);
                if !soon {
                    return Err(not_connected(&status));
                }
                true
            }
            // Idle: stopped while unused; this request starts it again.
            ServerStatus::Connected { .. } | ServerStatus::Disconnected { .. } | ServerStatus::Idle => false,
            ServerStatus::Failed { kind, .. } if kind.is_retryable() => false,
            other => return Err(not_connected(other)),
        };
        if wait_now {
            // The attempt under way (or due) changes the status when it ends.
            if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
                let status = slot.state().status.clone();
                return Err(Error::NotConnected {
                    server: slot.name.clone(),
                    reason: format!("{} (waited {})", status.summary(), crate::text::human(wait)),
                    remedy: status.remedy(&slot.name),
                    cause: None,
                });
            }
            continue;
        }
        // Boxed: a connect future is large, and it would otherwise make every call's future
        // (which callers move around) that large too.
        return Box::pin(connect(inner, slot))
            .await
            .map_err(|f| Error::failed_start(&slot.name, format!("reconnecting failed: {}", f.message), f));
    }
}

/// Says on stderr what screening a server's definitions found (what matters: `medium` and up).
fn warn_found(server: &str, findings: &[crate::screen::Finding]) {
    for f in findings {
        if f.severity >= crate::screen::Severity::Medium {
            tracing::warn!(server = %server, "{:?} {}: {} (`{}`)", f.target, f.field, f.why, server);
        } else {
            tracing::debug!(server = %server, "{:?} {}: {} (`{}`)", f.target, f.field, f.why, server);
        }
    }
}

/// Whether a finding is about a list of `kind`.
fn of_kind(target: &crate::screen::Target, kind: ListChange) -> bool {
    use crate::screen::Target;
    matches!(
        (target, kind),
        (Target::Tool(_), ListChange::Tools)
            | (Target::Prompt(_), ListChange::Prompts)
            | (Target::Resource(_) | Target::Template(_), ListChange::Resources)
    )
}

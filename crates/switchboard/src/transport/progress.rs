//! Progress notifications, taken by the transport in the order the server wrote them and
//! routed by token to the request that asked for them: its activity clock (progress resets the
//! idle timeout), the caller's channel, and the hub's events. Over stdio the transport reads
//! each line and dispatches progress itself ([`ProgressRouter::dispatch`]); over HTTP the client
//! takes it out of the response stream through a [`ProgressSink`] (the connection's handler
//! admits it under the notification rate first). rmcp would hand each notification to a task
//! of its own, so progress sent just before a result could reach its caller after the result.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::mpsc;

use crate::deadline::Activity;
use crate::events::Event;

/// A progress report for a tool call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far (increases).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// A message, when the server gives one.
    pub message: Option<String>,
}

/// Routes progress notifications to the call waiting for them. Notifications that arrive
/// before their call registered (the request is on the wire before the token is known here)
/// are held briefly and handed over on registration.
#[derive(Debug, Default)]
pub(crate) struct ProgressRouter {
    inner: Mutex<RouterState>,
}

#[derive(Debug, Default)]
struct RouterState {
    routes: HashMap<ProgressToken, Route>,
    early: VecDeque<(ProgressToken, Progress)>,
    /// Finished requests' routes, oldest first: each is dropped once its grace is over (at a
    /// later registration, so pruning costs one clock reading, not a scan of every route).
    retired: VecDeque<(Instant, ProgressToken)>,
    /// A sweeper is running: it prunes every [`ROUTE_GRACE`] while routes are retired, so a
    /// caller's channel closes soon after its request ended even when no other request follows.
    sweeping: bool,
}

/// Where one request's progress goes: its activity clock (progress resets the idle timeout),
/// the caller's channel when the caller asked for progress, and the hub's events when anyone
/// listens to them.
#[derive(Debug)]
struct Route {
    activity: Arc<Activity>,
    tx: Option<mpsc::UnboundedSender<Progress>>,
    publish: Option<Publish>,
    /// Set once the request is over: a notification sent just before the response may still
    /// arrive for [`ROUTE_GRACE`] after it.
    retired_at: Option<Instant>,
}

/// A tool call whose progress is also published as [`Event::Progress`].
#[derive(Debug, Clone)]
pub(crate) struct Publish {
    pub(crate) events: crate::events::EventBus,
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) call: u64,
}

impl Route {
    fn deliver(&self, progress: Progress) {
        self.activity.touch();
        if let Some(p) = &self.publish {
            p.events.send(Event::Progress {
                server: p.server.clone(),
                tool: p.tool.clone(),
                call: p.call,
                progress: progress.progress,
                total: progress.total,
                message: progress.message.clone(),
            });
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(progress);
        }
    }
}

/// How long a finished request's route still takes progress sent just before its response.
pub(crate) const ROUTE_GRACE: Duration = Duration::from_millis(50);

const EARLY_KEPT: usize = 64;

impl ProgressRouter {
    pub(crate) fn register(
        &self,
        token: ProgressToken,
        activity: Arc<Activity>,
        tx: Option<mpsc::UnboundedSender<Progress>>,
        publish: Option<Publish>,
    ) {
        let route = Route { activity, tx, publish, retired_at: None };
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        st.prune();
        if st.early.is_empty() {
            st.routes.insert(token, route);
            return;
        }
        let early: Vec<Progress> = {
            let mut kept = VecDeque::new();
            let mut mine = Vec::new();
            for (t, p) in st.early.drain(..) {
                if t == token { mine.push(p) } else { kept.push_back((t, p)) }
            }
            st.early = kept;
            mine
        };
        for p in early {
            route.deliver(p);
        }
        st.routes.insert(token, route);
    }

    pub(crate) fn unregister(&self, token: &ProgressToken) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).routes.remove(token);
    }

    /// Marks a finished request's route: it still takes late progress for [`ROUTE_GRACE`]
    /// and is dropped at a later registration (no timer).
    pub(crate) fn retire(&self, token: &ProgressToken) {
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(route) = st.routes.get_mut(token)
            && route.retired_at.is_none()
        {
            let now = Instant::now();
            route.retired_at = Some(now);
            st.retired.push_back((now, token.clone()));
        }
    }

    /// [`retire`](Self::retire), and the route is dropped (closing the caller's channel: it
    /// knows then that no more progress comes) within about two [`ROUTE_GRACE`]s even if no
    /// request follows. One sweeper task per router does it for every route retired meanwhile,
    /// not a timer per request.
    pub(crate) fn retire_then_close(self: &Arc<Self>, token: &ProgressToken) {
        self.retire(token);
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if st.sweeping || st.retired.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to sweep on: the route goes now (late progress is lost).
            st.routes.remove(token);
            return;
        };
        st.sweeping = true;
        drop(st);
        let router = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(ROUTE_GRACE).await;
                let Some(router) = router.upgrade() else { return };
                let mut st = router.inner.lock().unwrap_or_else(PoisonError::into_inner);
                st.prune();
                if st.retired.is_empty() {
                    st.sweeping = false;
                    return;
                }
            }
        });
    }

    pub(crate) fn dispatch(&self, param: ProgressNotificationParam) {
        let progress = Progress { progress: param.progress, total: param.total, message: param.message };
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match st.routes.get(&param.progress_token) {
            Some(route) => route.deliver(progress),
            None => {
                if st.early.len() == EARLY_KEPT {
                    st.early.pop_front();
                }
                st.early.push_back((param.progress_token, progress));
            }
        }
    }
}

impl RouterState {
    /// Drops the routes whose grace is over (a token registered again since it retired keeps
    /// its new route).
    fn prune(&mut self) {
        let Some(&(oldest, _)) = self.retired.front() else { return };
        let now = Instant::now();
        if now.duration_since(oldest) < ROUTE_GRACE {
            return;
        }
        while let Some((at, _)) = self.retired.front() {
            if now.duration_since(*at) < ROUTE_GRACE {
                break;
            }
            let Some((at, token)) = self.retired.pop_front() else { break };
            if self.routes.get(&token).is_some_and(|r| r.retired_at == Some(at)) {
                self.routes.remove(&token);
            }
        }
    }
}

/// A `notifications/progress` line's parameters (a line already known to be a notification).
pub(crate) fn progress_notification(line: &[u8]) -> Option<rmcp::model::ProgressNotificationParam> {
    const METHOD: &[u8] = b"\"notifications/progress\"";
    memchr::memmem::find(line, METHOD)?;
    #[derive(serde::Deserialize)]
    struct Note {
        method: String,
        params: rmcp::model::ProgressNotificationParam,
    }
    let note: Note = serde_json::from_slice(line).ok()?;
    (note.method == "notifications/progress").then_some(note.params)
}

/// Takes the progress notifications a transport reads, in the order it reads them.
#[derive(Clone)]
pub(crate) struct ProgressSink(pub(crate) Arc<dyn Fn(rmcp::model::ProgressNotificationParam) + Send + Sync>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(token: &ProgressToken, n: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(token.clone(), n)
    }

    #[test]
    fn a_retired_route_takes_late_progress_for_its_grace_then_goes() {
        let router = ProgressRouter::default();
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let route = || {
            let (tx, rx) = mpsc::unbounded_channel();
            router.register(token(0), Activity::unwatched(), None, None); // prunes
            (tx, rx)
        };
        let (tx1, mut rx1) = route();
        router.register(token(1), Activity::unwatched(), Some(tx1), None);
        router.retire(&token(1));
        router.dispatch(progress(&token(1), 1.0));
        assert_eq!(rx1.try_recv().map(|p| p.progress).ok(), Some(1.0), "late progress within the grace");
        // Never retired; and retired, then registered again under the same token.
        let (tx2, mut rx2) = route();
        router.register(token(2), Activity::unwatched(), Some(tx2), None);
        let (tx3, mut rx3) = route();
        router.register(token(3), Activity::unwatched(), None, None);
        router.retire(&token(3));
        router.register(token(3), Activity::unwatched(), Some(tx3), None);

        std::thread::sleep(ROUTE_GRACE + Duration::from_millis(20));
        router.register(token(4), Activity::unwatched(), None, None);
        for (n, rx) in [(2, &mut rx2), (3, &mut rx3)] {
            router.dispatch(progress(&token(n), n as f64));
            assert_eq!(rx.try_recv().map(|p| p.progress).ok(), Some(n as f64), "route {n} stays");
        }
        router.dispatch(progress(&token(1), 3.0));
        assert!(rx1.try_recv().is_err(), "nothing reaches a pruned route");
        let st = router.inner.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(!st.routes.contains_key(&token(1)) && st.retired.is_empty());
    }

    #[tokio::test]
    async fn a_route_retired_to_close_closes_its_channel_with_no_request_after_it() {
        let router = Arc::new(ProgressRouter::default());
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let mut channels = Vec::new();
        for n in 0..3 {
            let (tx, rx) = mpsc::unbounded_channel();
            router.register(token(n), Activity::unwatched(), Some(tx), None);
            router.retire_then_close(&token(n));
            channels.push(rx);
        }
        // Late progress still arrives within the grace; then each channel ends (one sweeper).
        router.dispatch(progress(&token(2), 7.0));
        let mut last = channels.pop().unwrap_or_else(|| unreachable!());
        assert_eq!(last.recv().await.map(|p| p.progress), Some(7.0));
        channels.push(last);
        for mut rx in channels {
            let end = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            assert!(matches!(end, Ok(None)), "the channel closes: {end:?}");
        }
        let st = router.inner.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(st.routes.is_empty() && st.retired.is_empty() && !st.sweeping);
    }
}

//! Several gateways behind one load balancer, with no affinity: what lets a request that
//! continues a call reach the replica holding it.
//!
//! A 2026-07-28 client answers an `input_required` round by calling again with the round's
//! `requestState`. The call it continues runs on the replica that parked it (its upstream
//! waits there for the answers), while the balancer may send the answers to any replica. So
//! the `requestState` is sealed (AES-256-GCM, [`switchboard::store::seal::KeyRing`]) around
//! the replica's id, the parked call's key and an expiry, bound to the caller (the principal's
//! key is the seal's associated data): another caller's request, a changed or an expired state
//! does not open. A replica that opens a state held elsewhere passes the request on to that
//! replica directly, at the address it registered in the team's store
//! ([`switchboard::store::replicas`]), and streams its answer back; one passed on already is
//! never passed again. A replica gone (killed, stopped) cannot continue its calls: the client
//! is told so, and calls the tool again.
//!
//! On a team's store the replicas share the store's key ring, so any of them opens what
//! another sealed (rotation as for the store's secrets: the first key seals, all open).
//! Without a store there is one gateway, and its states are sealed with a key of its own,
//! made when it starts.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use switchboard::store::db::Database;
use switchboard::store::seal::KeyRing;
use tokio_util::sync::CancellationToken;

/// The header on a request one replica passes to another: it is served where it arrives,
/// never passed on again. Its value is sealed by the sender ([`Replicas::passed_by`]), so a
/// client cannot make a replica take its session over by sending it.
pub(crate) const PASSED_BY: &str = "x-switchboard-passed-by";

/// The associated data of [`PASSED_BY`]'s value.
const PASSED_CONTEXT: &[u8] = b"switchboard passed-by";

/// How long a [`PASSED_BY`] value is good for (it is made for each request passed on).
const PASSED_TTL: Duration = Duration::from_secs(60);

/// The associated data a `requestState` is sealed with, before the caller's key.
const CONTEXT: &[u8] = b"switchboard requestState\0";

/// Where a parked call is, as its `requestState` says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Place {
    /// The replica holding it.
    #[serde(rename = "r")]
    pub(crate) replica: String,
    /// Its key among that replica's parked calls.
    #[serde(rename = "k")]
    pub(crate) key: String,
    /// When it is dropped (ms since the epoch).
    #[serde(rename = "e")]
    pub(crate) expires_ms: u64,
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateError {
    /// It does not open for this caller: changed, made for another caller, or by a gateway
    /// with other keys.
    #[error("this requestState was not made for this caller by this gateway (changed, or another's)")]
    NotOurs,
    /// Its call waited too long for the answers and was dropped.
    #[error("this requestState has expired (a call waits 10 minutes for its answers): call the tool again")]
    Expired,
}

/// This gateway as one of the replicas.
pub(crate) struct Replicas {
    id: String,
    store: Option<Database>,
    /// Without a store, a key of this process's own.
    own_keys: Option<KeyRing>,
    /// The address the others reach this one by (empty: none given).
    url: Mutex<String>,
    /// Made on first use (only a replica passing a request on needs one).
    http: std::sync::OnceLock<reqwest::Client>,
    /// Legacy sessions this process resumed (it did not hold them) whose first request has not
    /// come yet: that request catches up (`session/memory.rs`).
    resumed: Mutex<std::collections::HashSet<String>>,
}

/// The most sessions waiting to catch up that are remembered (a resumed stream whose client
/// never sends a request again leaves one).
const MAX_RESUMED: usize = 10_000;

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Replicas {
    /// A replica with a fresh id: on `store`'s keys, else a key of its own.
    pub(crate) fn new(store: Option<Database>) -> Replicas {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let own_keys = match store {
            Some(_) => None,
            None => KeyRing::new_key_line("own").and_then(|line| KeyRing::parse(&line)).ok(),
        };
        Replicas {
            id,
            store,
            own_keys,
            url: Mutex::new(String::new()),
            http: std::sync::OnceLock::new(),
            resumed: Mutex::default(),
        }
    }

    /// The session `id` was resumed here: its next request catches up.
    pub(crate) fn resumed(&self, id: &str) {
        let mut resumed = self.resumed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if resumed.len() >= MAX_RESUMED {
            resumed.clear();
        }
        resumed.insert(id.to_string());
    }

    /// Whether the session `id` was resumed here and has not caught up yet (it does now).
    pub(crate) fn catches_up(&self, id: &str) -> bool {
        self.resumed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id)
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(|| {
            // A replica passing a request on answers for it: a bounded wait for the other to
            // take the connection, none for the answer itself (a call may take long); the
            // other's answer as it is, a redirect included (a person's page sends their browser
            // on: the browser follows it, with its cookies, not this replica).
            reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_default()
        })
    }

    /// This replica's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    fn keys(&self) -> Option<&KeyRing> {
        self.store.as_ref().map(Database::key_ring).or(self.own_keys.as_ref())
    }

    fn context(caller: &str) -> Vec<u8> {
        [CONTEXT, caller.as_bytes()].concat()
    }

    /// The `requestState` of the call parked here under `key`, for `caller` (a principal's
    /// key, `""` for a caller who did not sign in), good for `ttl`.
    pub(crate) fn seal(&self, key: &str, caller: &str, ttl: Duration) -> Option<String> {
        let place =
            Place { replica: self.id.clone(), key: key.to_string(), expires_ms: now_ms() + ttl.as_millis() as u64 };
        let plain = serde_json::to_vec(&place).ok()?;
        match self.keys()?.seal(&Self::context(caller), &plain) {
            Ok(sealed) => Some(sealed),
            Err(e) => {
                tracing::warn!("sealing a requestState: {e}");
                None
            }
        }
    }

    /// The value of [`PASSED_BY`] for a request this replica passes on now.
    fn passed_mark(&self) -> Option<String> {
        let plain = serde_json::to_vec(&(self.id.as_str(), now_ms() + PASSED_TTL.as_millis() as u64)).ok()?;
        self.keys()?.seal(PASSED_CONTEXT, &plain).ok()
    }

    /// Which replica passed this request on (`None`: none did, or the header is not one a
    /// replica of this store sealed, or it is too old).
    pub(crate) fn passed_by(&self, headers: &http::HeaderMap) -> Option<String> {
        let value = headers.get(PASSED_BY)?.to_str().ok()?;
        let plain = self.keys()?.open(PASSED_CONTEXT, value).ok()?;
        let (replica, expires): (String, u64) = serde_json::from_slice(&plain).ok()?;
        (expires >= now_ms()).then_some(replica)
    }

    /// Where the call `state` continues is, if `caller` may continue it.
    pub(crate) fn open(&self, state: &str, caller: &str) -> Result<Place, StateError> {
        let keys = self.keys().ok_or(StateError::NotOurs)?;
        let plain = keys.open(&Self::context(caller), state).map_err(|_| StateError::NotOurs)?;
        let place: Place = serde_json::from_slice(&plain).map_err(|_| StateError::NotOurs)?;
        if place.expires_ms < now_ms() {
            return Err(StateError::Expired);
        }
        Ok(place)
    }

    /// Serves as a replica reached at `url` (`http://10.0.0.5:7342`; empty: the others cannot
    /// reach it): on a team's store, registers and says it is alive every
    /// [`switchboard::store::replicas::BEAT`] until `stop`, then leaves.
    pub(crate) fn join(self: &Arc<Self>, url: &str, stop: CancellationToken) {
        *self.url.lock().unwrap_or_else(PoisonError::into_inner) = url.to_string();
        let Some(db) = self.store.clone() else { return };
        let this = self.clone();
        let url = url.to_string();
        tokio::spawn(async move {
            let mut beat = tokio::time::interval(switchboard::store::replicas::BEAT);
            let mut said = false;
            loop {
                tokio::select! {
                    _ = beat.tick() => {}
                    () = stop.cancelled() => break,
                }
                match db.register_replica(&this.id, &url).await {
                    Ok(()) => said = false,
                    Err(e) if !said => {
                        said = true;
                        tracing::warn!("replica {}: saying it is alive in the store: {e}", this.id);
                    }
                    Err(_) => {}
                }
            }
            if let Err(e) = db.leave_replica(&this.id).await {
                tracing::warn!("replica {}: leaving the store: {e}", this.id);
            }
        });
    }

    /// Records in the store (when there is one) that the page `state` of `owner` is held
    /// here, for `keep`; a failure is logged (the page then opens at this replica alone).
    pub(crate) async fn record_page(&self, state: &str, owner: &str, keep: Duration) {
        let Some(db) = &self.store else { return };
        if let Err(e) = db.put_page(state, &self.id, owner, keep).await {
            tracing::warn!("a person's page will open at this replica alone: {e}");
        }
    }

    /// Forgets the page `state` in the store (done).
    pub(crate) async fn forget_page(&self, state: &str) {
        let Some(db) = &self.store else { return };
        if let Err(e) = db.drop_page(state).await {
            tracing::warn!("forgetting a page in the store: {e}");
        }
    }

    /// The address of the other replica holding the page `state`, if the store knows one
    /// that is alive (`keep`: how long a page lasts).
    pub(crate) async fn page_holder(&self, state: &str, keep: Duration) -> Option<String> {
        let db = self.store.as_ref()?;
        let row = match db.page(state, keep).await {
            Ok(row) => row?,
            Err(e) => {
                tracing::warn!("looking a page up in the store: {e}");
                return None;
            }
        };
        if row.replica == self.id {
            return None;
        }
        match self.address(&row.replica).await {
            Ok(url) => Some(url),
            Err(why) => {
                tracing::info!("the page's replica {} {why}", row.replica);
                None
            }
        }
    }

    /// Where the other replica `replica` is reached, or why it cannot be.
    pub(crate) async fn address(&self, replica: &str) -> Result<String, Unreachable> {
        let Some(db) = &self.store else { return Err(Unreachable::NotHere) };
        match db.replica(replica).await {
            Ok(Some(row)) if !row.alive(now_ms() as i64) => Err(Unreachable::Silent),
            Ok(Some(row)) if row.url.is_empty() => Err(Unreachable::NoAddress),
            Ok(Some(row)) => Ok(row.url),
            Ok(None) => Err(Unreachable::Stopped),
            Err(e) => Err(Unreachable::Store(e.to_string())),
        }
    }

    /// Sends `parts` and `body` on to the replica at `url` (marked as passed on by this one);
    /// its answer, streamed back as it comes. A break in an event stream of the answer ends
    /// it with a JSON-RPC error for `id` that says the replica stopped, so its client knows
    /// the request's fate is unknown rather than waiting.
    pub(crate) async fn send_to(
        &self,
        url: &str,
        parts: &http::request::Parts,
        body: Bytes,
        id: Option<&rmcp::model::RequestId>,
    ) -> Result<http::Response<BoxBody<Bytes, Infallible>>, reqwest::Error> {
        let path = parts.uri.path_and_query().map_or("/mcp", |p| p.as_str());
        let target = format!("{}{path}", url.trim_end_matches('/'));
        let mut request = self.http().request(parts.method.clone(), target).body(body);
        for (name, value) in &parts.headers {
            if !matches!(name.as_str(), "host" | "content-length" | "connection" | "transfer-encoding") {
                request = request.header(name, value);
            }
        }
        if let Some(mark) = self.passed_mark() {
            request = request.header(PASSED_BY, mark);
        }
        let answer = request.send().await?;
        tracing::debug!("passed a {} on to the replica at {url}: {}", parts.method, answer.status());
        let mut response = http::Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if !matches!(name.as_str(), "content-length" | "connection" | "transfer-encoding") {
                response = response.header(name, value);
            }
        }
        let events = answer
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let last_words = match id {
            Some(id) if events => {
                let message = format!(
                    "the replica at {url} that served this request stopped before it answered (killed, or cut off): \
                     whether it took effect is unknown"
                );
                let error =
                    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
                Some(Bytes::from(format!("event: message\ndata: {error}\n\n")))
            }
            _ => None,
        };
        let frames = futures::stream::unfold((answer.bytes_stream(), last_words), |(mut stream, last)| async move {
            use futures::StreamExt;
            match stream.next().await {
                Some(Ok(bytes)) => Some((Ok(http_body::Frame::data(bytes)), (stream, last))),
                Some(Err(e)) => {
                    tracing::warn!("the answer of another replica broke off: {e}");
                    last.map(|words| (Ok(http_body::Frame::data(words)), (stream, None)))
                }
                None => None,
            }
        });
        let body = BodyExt::boxed(http_body_util::StreamBody::new(frames));
        Ok(response.body(body).unwrap_or_else(|_| error(id, -32603, "another replica's answer could not be passed on")))
    }

    /// Passes `request` (its body read already) to the replica holding the call its
    /// `requestState` continues; its answer, or a JSON-RPC error for `id` that says why it
    /// could not be.
    pub(crate) async fn pass_on(
        &self,
        replica: &str,
        parts: &http::request::Parts,
        body: Bytes,
        id: Option<&rmcp::model::RequestId>,
    ) -> http::Response<BoxBody<Bytes, Infallible>> {
        let lost = |why: String| {
            let message = format!(
                "the call this requestState continues was held by replica {replica}, which {why}: it cannot go on; \
                 call the tool again"
            );
            error(id, -32603, &message)
        };
        let url = match self.address(replica).await {
            Ok(url) => url,
            Err(why) => return lost(why.to_string()),
        };
        match self.send_to(&url, parts, body, id).await {
            Ok(response) => response,
            Err(e) => lost(format!("did not answer at {url} ({e})")),
        }
    }
}

/// Why another replica cannot be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreachable {
    /// Without a store there are no other replicas.
    #[error("is not this gateway (and without a team's store there is no other)")]
    NotHere,
    /// It has not said it is alive for a while.
    #[error("stopped saying it is alive (killed, or cut off)")]
    Silent,
    /// It left (stopped).
    #[error("has stopped")]
    Stopped,
    /// It gave no address.
    #[error("gave the others no address to reach it (start each replica with `--advertise URL`)")]
    NoAddress,
    /// The store could not say.
    #[error("could not be looked up in the team's store ({0})")]
    Store(String),
}

/// A JSON-RPC error for `id`, as the body of a 200.
pub(crate) fn error(
    id: Option<&rmcp::model::RequestId>,
    code: i32,
    message: &str,
) -> http::Response<BoxBody<Bytes, Infallible>> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let bytes = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    let mut response = http::Response::new(http_body_util::Full::new(bytes).boxed());
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_for_its_caller_only_and_not_once_changed_or_expired() {
        let replicas = Replicas::new(None);
        let state = replicas.seal("k1", "alice", Duration::from_secs(60)).unwrap_or_default();
        let place = replicas.open(&state, "alice");
        assert_eq!(place.as_ref().map(|p| (p.replica.as_str(), p.key.as_str())), Ok((replicas.id(), "k1")));
        assert_eq!(replicas.open(&state, "bob"), Err(StateError::NotOurs), "another caller");
        assert_eq!(replicas.open(&state, ""), Err(StateError::NotOurs), "a caller who did not sign in");
        let mut changed = state.clone().into_bytes();
        let last = changed.len() - 3;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(replicas.open(&String::from_utf8_lossy(&changed), "alice"), Err(StateError::NotOurs));
        assert_eq!(Replicas::new(None).open(&state, "alice"), Err(StateError::NotOurs), "another gateway's key");
        // What marks a request passed on opens for replicas of the same keys only.
        let mut headers = http::HeaderMap::new();
        headers.insert(PASSED_BY, http::HeaderValue::from_static("a-replica-id"));
        assert_eq!(replicas.passed_by(&headers), None, "a client's own value");
        let mark = replicas.passed_mark().unwrap_or_default();
        headers.insert(PASSED_BY, http::HeaderValue::from_str(&mark).unwrap_or(http::HeaderValue::from_static("x")));
        assert_eq!(replicas.passed_by(&headers).as_deref(), Some(replicas.id()));
        assert_eq!(Replicas::new(None).passed_by(&headers), None, "another gateway's keys");
        let expired = replicas.seal("k2", "alice", Duration::ZERO).unwrap_or_default();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(replicas.open(&expired, "alice"), Err(StateError::Expired));
    }
}

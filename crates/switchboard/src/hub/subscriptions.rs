//! Resource subscriptions sent to a server: one change (`resources/subscribe` or
//! `unsubscribe`, or on 2026-07-28 the listen stream's set), and all of a slot's again on a new
//! connection, which starts with none. What the slot is subscribed to is kept in its state
//! (`Hub::subscribe_resource`, in `calls.rs`).

use std::time::Duration;

// `resources/subscribe` is legacy-only in rmcp (2026-07-28 has `subscriptions/listen`).
#[allow(deprecated)]
use rmcp::model::{
    ClientRequest, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};

use super::request::{Limits, ProgressTo, Request, send};
use super::{Inner, Slot};
use crate::connection::Connection;
use crate::error::Error;

/// Subscribes `conn` again to what its slot was subscribed to (a new connection starts with
/// none); a refusal is logged, the rest still tried.
pub(super) async fn resubscribe(inner: &Inner, slot: &Slot, conn: &Connection) {
    let uris: Vec<String> = slot.state().subscribed.iter().cloned().collect();
    for uri in uris {
        if let Err(e) = send_subscription(inner, slot, conn, &uri, true).await {
            tracing::warn!(server = %slot.name, uri, "could not subscribe again after reconnecting: {e}");
        }
    }
}

/// Sends one subscription change for `uri` on `conn`.
// `resources/subscribe` is what every protocol version up to 2025-11-25 has; rmcp marks it
// legacy in favour of 2026-07-28's `subscriptions/listen`.
#[allow(deprecated)]
pub(super) async fn send_subscription(
    inner: &Inner,
    slot: &Slot,
    conn: &Connection,
    uri: &str,
    on: bool,
) -> Result<(), Error> {
    // A server that did not declare `resources.subscribe` is not asked (one that cannot take
    // it may never answer, and a listen stream would wait for an acknowledgement in vain).
    let declared = conn
        .peer
        .peer_info()
        .is_some_and(|i| i.capabilities.resources.as_ref().is_some_and(|r| r.subscribe == Some(true)));
    if on && !declared {
        return Err(Error::Rejected {
            server: slot.name.clone(),
            code: rmcp::model::ErrorCode::METHOD_NOT_FOUND.0,
            message: format!("subscribing to {uri}: the server does not offer resource subscriptions"),
            data: None,
        });
    }
    if conn.is_stateless() {
        // 2026-07-28 has no `resources/subscribe`: the URI joins the listen stream.
        return conn.listen_resource(uri, on).await.map_err(|message| Error::Protocol {
            server: slot.name.clone(),
            message: format!("subscribing to {uri}: {message}"),
        });
    }
    let what = format!("resources/{} {uri}", if on { "subscribe" } else { "unsubscribe" });
    let body = if on {
        ClientRequest::SubscribeRequest(SubscribeRequest::new(SubscribeRequestParams::new(uri)))
    } else {
        ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(UnsubscribeRequestParams::new(uri)))
    };
    let request = Request {
        body,
        what,
        limits: Limits { idle: SUBSCRIBE_TIMEOUT, total: SUBSCRIBE_TIMEOUT },
        progress: ProgressTo { caller: None, publish: None },
        cancel: None,
        capabilities: None,
        answers: None,
    };
    match send(inner, slot, conn, &request, None).await {
        Ok(_) => Ok(()),
        Err(failure) => Err(failure.error),
    }
}

/// How long a server may take to acknowledge a subscription change.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(30);

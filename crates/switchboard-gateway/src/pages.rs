//! The pages a person opens in a browser, bound to that person. A person's own server asks
//! them, by URL-mode elicitation, to open a page of the gateway: their values page
//! (`/inputs?state=…`) or their sign-in page (`/sign-in?state=…`, which sends the browser on to
//! the upstream's authorization URL, and whose `/oauth/callback` finishes the login). The spec's
//! security considerations for URL-mode elicitation ask the server to make sure that the one
//! completing the page is the one it was made for: an address that reached someone else
//! (pasted in a chat, read over a shoulder, leaked from a log) must complete nothing. So each
//! page, and the callback, opens only for the person who is signed in in that browser with the
//! organisation's provider (the front signs them in first: `switchboard-server`'s people
//! sign-in) as the person the page was made for; anyone else is refused
//! ([`PageRefusal::NotYours`]) and the page waits on for its person.
//!
//! Behind a load balancer the browser may reach another replica than the one holding the page
//! (what it completes lives in that replica's memory: the login's PKCE verifier, the person's
//! hub): [`Gateway::page_held`] says where it is (the team's store records it,
//! `switchboard::store::pages`), and [`Gateway::pass_page`] sends the request on there.

use std::collections::BTreeMap;
use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use switchboard::identity::Principal;

use crate::Gateway;
use crate::signin::{InputAsked, PageRefusal, SIGN_IN_TIMEOUT};

/// Where the page a request names is held.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageHeld {
    /// Here.
    Here,
    /// At the other replica reached at this address.
    At(String),
    /// Nowhere: unknown, done, expired, or its replica is gone.
    Unknown,
}

impl Gateway {
    /// Where the page `state` is held, for a request with `headers` (one another replica
    /// passed on is never passed again).
    pub async fn page_held(&self, state: &str, headers: &http::HeaderMap) -> PageHeld {
        if self.shared.signins.holds(state) {
            return PageHeld::Here;
        }
        if self.shared.replicas.passed_by(headers).is_some() {
            return PageHeld::Unknown;
        }
        match self.shared.replicas.page_holder(state, SIGN_IN_TIMEOUT).await {
            Some(url) => PageHeld::At(url),
            None => PageHeld::Unknown,
        }
    }

    /// Sends a page's request (`parts`, its `body` read already) on to the replica at `url`
    /// that holds the page; its answer, or why it could not be had.
    pub async fn pass_page(
        &self,
        url: &str,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Result<http::Response<BoxBody<Bytes, Infallible>>, String> {
        self.shared
            .replicas
            .send_to(url, parts, body, None)
            .await
            .map_err(|e| format!("the replica holding this page, at {url}, did not answer: {e}"))
    }

    /// What the values page `state` asks `person` for.
    pub fn inputs_asked(&self, state: &str, person: &Principal) -> Result<Vec<InputAsked>, PageRefusal> {
        self.shared.signins.inputs_asked(state, person)
    }

    /// Keeps the values `person` gave on that page (by field name) as their own and starts
    /// their servers that waited for them: the servers, or why not.
    pub async fn give_inputs(
        &self,
        state: &str,
        person: &Principal,
        values: &BTreeMap<String, String>,
    ) -> Result<Result<String, String>, PageRefusal> {
        self.shared.signins.give_inputs(state, person, values).await
    }

    /// Where the sign-in page `state` sends `person`'s browser: the upstream's authorization
    /// URL.
    pub fn sign_in_authorization(&self, state: &str, person: &Principal) -> Result<String, PageRefusal> {
        self.shared.signins.authorization(state, person)
    }

    /// Finishes a person's sign-in with the URL their browser came back to (`/oauth/callback`
    /// with `code` and `state`), if `person` is the one it was made for: the server signed in
    /// to, or why not.
    pub async fn finish_sign_in(
        &self,
        callback_url: &str,
        person: &Principal,
    ) -> Result<Result<String, String>, PageRefusal> {
        let state = callback_state(callback_url).ok_or(PageRefusal::Unknown)?;
        self.shared.signins.finish(&state, callback_url, person).await
    }
}

/// The `state` of a callback URL, decoded.
pub fn callback_state(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let state = query.split('&').find_map(|kv| kv.strip_prefix("state="))?;
    Some(percent_decode(state))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

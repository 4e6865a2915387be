//! DPoP on the MCP requests themselves: under rmcp's authorised client (which gets, refreshes
//! and hands over the token), the bearer token becomes `Authorization: DPoP <token>` with a
//! fresh proof (`ath` of that token) on every POST, GET and DELETE; a `use_dpop_nonce`
//! challenge (RFC 9449 §9) is answered once with the server's nonce.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use super::{DPOP, DPOP_NONCE, Dpop};

/// Under rmcp's authorised client: DPoP instead of Bearer on every MCP request when the
/// server's token is bound (`dpop` set); otherwise the token goes as rmcp gives it.
#[derive(Clone)]
pub struct DpopLayer<C> {
    inner: C,
    dpop: Option<Arc<Dpop>>,
    probe: Option<reqwest::Client>,
}

impl<C> std::fmt::Debug for DpopLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopLayer").field("dpop", &self.dpop).finish_non_exhaustive()
    }
}

type Result2<T, E> = Result<T, StreamableHttpError<E>>;

impl<C: StreamableHttpClient> DpopLayer<C> {
    /// Over `inner`, with `dpop` when the token is bound.
    pub fn new(inner: C, dpop: Option<Arc<Dpop>>) -> DpopLayer<C> {
        let probe = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().ok();
        DpopLayer { inner, dpop, probe }
    }

    /// The headers of one request: `Authorization: DPoP` and its proof.
    fn headers(
        dpop: &Dpop,
        method: &str,
        uri: &str,
        token: &str,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<HashMap<HeaderName, HeaderValue>, String> {
        let nonce = Dpop::nonce(&dpop.rs_nonce);
        let proof = dpop.key.proof(method, uri, Some(token), nonce.as_deref()).map_err(|e| e.to_string())?;
        let mut auth = HeaderValue::from_str(&format!("DPoP {token}")).map_err(|e| e.to_string())?;
        auth.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, auth);
        headers.insert(DPOP, HeaderValue::from_str(&proof).map_err(|e| e.to_string())?);
        Ok(headers)
    }

    /// Learns the resource server's nonce: rmcp does not show the header of the answer that
    /// asked for it, so a `ping` (which changes nothing) is sent and its answer read.
    async fn learn_nonce(&self, dpop: &Dpop, uri: &str, session: Option<&str>, token: &str) -> bool {
        let (Ok(headers), Some(probe)) = (Self::headers(dpop, "POST", uri, token, HashMap::new()), &self.probe) else {
            return false;
        };
        let mut request = probe
            .post(uri)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":"switchboard-dpop-nonce","method":"ping"}"#);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        match request.send().await {
            Ok(r) => {
                let before = Dpop::nonce(&dpop.rs_nonce);
                Dpop::set_nonce(&dpop.rs_nonce, r.headers().get(DPOP_NONCE));
                Dpop::nonce(&dpop.rs_nonce).is_some() && Dpop::nonce(&dpop.rs_nonce) != before
            }
            Err(e) => {
                tracing::debug!("asking the server for its DPoP nonce: {e}");
                false
            }
        }
    }

    /// Runs `call` with DPoP headers, once more with the server's nonce if it asks for one.
    async fn with_proofs<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        session: Option<&str>,
        token: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> Result2<T, C::Error>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: std::future::Future<Output = Result2<T, C::Error>>,
    {
        let (Some(dpop), Some(token)) = (&self.dpop, token.clone()) else { return call(token, headers).await };
        let with = |headers: HashMap<HeaderName, HeaderValue>| {
            Self::headers(dpop, method, uri, &token, headers)
                .map_err(|e| StreamableHttpError::UnexpectedServerResponse(format!("DPoP: {e}").into()))
        };
        match call(None, with(headers.clone())?).await {
            Err(StreamableHttpError::AuthRequired(challenge))
                if challenge.www_authenticate_header.contains("use_dpop_nonce")
                    && self.learn_nonce(dpop, uri, session, &token).await =>
            {
                call(None, with(headers)?).await
            }
            other => other,
        }
    }
}

impl<C: StreamableHttpClient + Send + Sync> StreamableHttpClient for DpopLayer<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<StreamableHttpPostResponse, C::Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result2<StreamableHttpPostResponse, C::Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result2<StreamableHttpPostResponse, C::Error> {
        let session = session_id.as_deref().map(str::to_string);
        self.with_proofs("POST", &uri, session.as_deref(), auth_header, custom_headers, |token, headers| {
            let (uri, message, session_id) = (uri.clone(), message.clone(), session_id.clone());
            async move {
                self.inner.post_message_with_response_limits(uri, message, session_id, token, headers, limits).await
            }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<(), C::Error> {
        self.with_proofs("DELETE", &uri, Some(&session_id), auth_header, custom_headers, |token, headers| {
            let (uri, session_id) = (uri.clone(), session_id.clone());
            async move { self.inner.delete_session(uri, session_id, token, headers).await }
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result2<BoxStream<'static, Result<Sse, SseError>>, C::Error> {
        let session = session_id.as_deref().map(str::to_string);
        self.with_proofs("GET", &uri, session.as_deref(), auth_header, custom_headers, |token, headers| {
            let (uri, session_id, last_event_id) = (uri.clone(), session_id.clone(), last_event_id.clone());
            async move { self.inner.get_stream(uri, session_id, last_event_id, token, headers).await }
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result2<BoxStream<'static, Result<Sse, SseError>>, C::Error> {
        let session = session_id.as_deref().map(str::to_string);
        self.with_proofs("GET", &uri, session.as_deref(), auth_header, custom_headers, |token, headers| {
            let (uri, session_id, last_event_id) = (uri.clone(), session_id.clone(), last_event_id.clone());
            async move {
                self.inner
                    .get_stream_with_max_sse_event_size(
                        uri,
                        session_id,
                        last_event_id,
                        token,
                        headers,
                        max_sse_event_size,
                    )
                    .await
            }
        })
        .await
    }
}

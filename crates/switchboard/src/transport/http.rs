//! The HTTP client under rmcp's Streamable HTTP transport: reqwest (rustls) with rmcp's own
//! settings (no idle pool, same-origin 307/308 redirects only), plus one correction.
//!
//! A server that no longer knows a session should answer 404 (which rmcp turns into a
//! re-initialisation and one retry). Some answer 400 with a JSON-RPC error whose `id` is
//! `null` instead (the TypeScript SDK's "No valid session ID provided"; the Python SDK uses
//! the id `"server-error"`). rmcp cannot match such an error to the request, drops it, and the
//! request waits for its timeout. Here an error response that does not carry the request's id
//! means the HTTP request itself was refused: inside a session, the session is gone (so rmcp
//! renews it and retries once); outside one, the error is handed back as the request's own.
//!
//! A request whose answer comes back undecodable (a 2xx body that is not one JSON-RPC message,
//! or of another content type) fails alone, saying what came, as the stdio framing does;
//! rmcp would close the whole transport, failing every request in flight and the next ones
//! until the hub reconnected.
//!
//! Progress notifications on a response's event stream are handed to the connection's
//! [`ProgressSink`] as they are read, in order, before the result behind them (rmcp hands each
//! notification to a task of its own, so a result could overtake the last step).
//!
//! It also watches `tools/list` answers on 2026-07-28 (SEP-2243): rmcp leaves out every tool
//! whose `x-mcp-header` declarations are invalid, with only a log line; [`LeftOut`] keeps
//! which and why, for the server's status. Only `tools/list` answers are looked at (and an
//! event is parsed again only when it holds `x-mcp-header`): calls pay nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonObject, RequestId, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

/// How many same-origin redirects a request may follow (rmcp's number).
const MAX_REDIRECTS: usize = 10;

/// reqwest, configured as rmcp configures its default client, with uncorrelated error
/// responses put right. It also notices when the transport moves to a new session (the server
/// forgot the old one and rmcp initialised again), so what belonged to the old session
/// (resource subscriptions) can be set up again: [`HttpClient::session_renewals`].
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: reqwest::Client,
    session: Arc<SessionWatch>,
    /// The largest response body or event taken (`max_message_bytes`).
    max_message_bytes: usize,
    /// Tools the transport leaves out of `tools/list` answers.
    left_out: Arc<LeftOut>,
    /// Where progress read from response streams goes (rmcp's handler otherwise).
    progress: Option<super::progress::ProgressSink>,
}

/// The tools of the last `tools/list` that the transport leaves out because their
/// `x-mcp-header` declarations are invalid (SEP-2243), with why; shared by a client's clones.
#[derive(Debug, Default)]
pub struct LeftOut(Mutex<BTreeMap<String, String>>);

impl LeftOut {
    /// `(tool, why)`, by name.
    pub fn tools(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn clear(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn note<'a>(&self, tools: impl Iterator<Item = (&'a str, &'a JsonObject)>) {
        for (name, schema) in tools {
            if let Some(why) = super::header_params::problem(schema) {
                tracing::warn!(tool = %name, "left out: its x-mcp-header declarations are invalid ({why})");
                self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_string(), why);
            }
        }
    }

    /// The tools of an answer rmcp has parsed.
    fn note_message(&self, message: &ServerJsonRpcMessage) {
        if let ServerJsonRpcMessage::Response(r) = message
            && let ServerResult::ListToolsResult(list) = &r.result
        {
            self.note(list.tools.iter().map(|t| (t.name.as_ref(), t.input_schema.as_ref())));
        }
    }

    /// The tools of an event's data, read as plain JSON (the answer's own shape, whatever
    /// rmcp makes of it).
    fn note_event(&self, data: &str) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(data) else { return };
        let Some(tools) = value.pointer("/result/tools").and_then(|t| t.as_array()) else { return };
        self.note(tools.iter().filter_map(|t| Some((t.get("name")?.as_str()?, t.get("inputSchema")?.as_object()?))));
    }
}

/// The version from which rmcp mirrors and checks `x-mcp-header` (SEP-2243).
const HEADER_PARAMS_FROM: &str = "2026-07-28";

/// Whether `message` lists tools in a version that checks declarations, and if so whether it
/// asks for the first page.
fn lists_tools(message: &ClientJsonRpcMessage, headers: &HashMap<HeaderName, HeaderValue>) -> Option<bool> {
    let ClientJsonRpcMessage::Request(r) = message else { return None };
    let ClientRequest::ListToolsRequest(list) = &r.request else { return None };
    // By `HeaderName`: one looked up by `&str` hashes differently and is never found.
    let version = headers.get(&HeaderName::from_static("mcp-protocol-version")).and_then(|v| v.to_str().ok())?;
    (version >= HEADER_PARAMS_FROM).then(|| list.params.as_ref().is_none_or(|p| p.cursor.is_none()))
}

/// The trace context a request carries in `_meta` (put there by the hub's span,
/// [`crate::telemetry::inject`]) also in its HTTP headers, for a server or a proxy on the way
/// that reads only those.
fn trace_headers(message: &ClientJsonRpcMessage, headers: &mut HashMap<HeaderName, HeaderValue>) {
    use rmcp::model::GetMeta;
    let ClientJsonRpcMessage::Request(r) = message else { return };
    let meta = r.request.get_meta();
    for (name, value) in [("traceparent", meta.get_traceparent()), ("tracestate", meta.get_tracestate())] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

/// The session the last request went out in, and a count of the changes.
#[derive(Debug)]
struct SessionWatch {
    last: Mutex<Option<Arc<str>>>,
    renewals: tokio::sync::watch::Sender<u64>,
}

impl SessionWatch {
    fn seen(&self, session: &Arc<str>) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.as_ref().is_some_and(|prev| prev != session) {
            self.renewals.send_modify(|n| *n += 1);
        }
        *last = Some(session.clone());
    }
}

impl HttpClient {
    /// A client with rmcp's settings.
    pub fn new() -> Result<HttpClient, reqwest::Error> {
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let inner = reqwest::Client::builder().pool_max_idle_per_host(0).redirect(redirects).build()?;
        let session = SessionWatch { last: Mutex::new(None), renewals: tokio::sync::watch::channel(0).0 };
        Ok(HttpClient {
            inner,
            session: Arc::new(session),
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
            left_out: Arc::default(),
            progress: None,
        })
    }

    /// Hands progress notifications read from response streams to `sink`, in order.
    pub(crate) fn progress_sink(mut self, sink: super::progress::ProgressSink) -> HttpClient {
        self.progress = Some(sink);
        self
    }

    /// A response stream with its progress notifications taken out and given to the sink.
    fn route_progress(&self, result: PostResult) -> PostResult {
        let Some(sink) = self.progress.clone() else { return result };
        match result {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let stream = stream.filter(move |event| {
                    let taken = match event {
                        // A progress notification is small: a result is not read twice.
                        Ok(Sse { data: Some(data), .. }) if data.len() <= 64 * 1024 => {
                            super::progress::progress_notification(data.as_bytes()).map(|p| (sink.0)(p)).is_some()
                        }
                        _ => false,
                    };
                    std::future::ready(!taken)
                });
                Ok(StreamableHttpPostResponse::Sse(stream.boxed(), session))
            }
            other => other,
        }
    }

    /// The tools the transport leaves out of `tools/list` answers, and why.
    pub fn left_out(&self) -> Arc<LeftOut> {
        self.left_out.clone()
    }

    /// Notes what a `tools/list` answer has that the transport will leave out.
    fn watch_listing(&self, result: PostResult, first_page: bool) -> PostResult {
        if first_page {
            self.left_out.clear();
        }
        match result {
            Ok(StreamableHttpPostResponse::Json(message, session)) => {
                self.left_out.note_message(&message);
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let left_out = self.left_out.clone();
                let stream = stream.inspect(move |event| {
                    if let Ok(Sse { data: Some(data), .. }) = event
                        && data.contains("x-mcp-header")
                    {
                        left_out.note_event(data);
                    }
                });
                Ok(StreamableHttpPostResponse::Sse(stream.boxed(), session))
            }
            other => other,
        }
    }

    /// Takes response bodies and events of at most `bytes` (rmcp refuses larger ones).
    pub fn with_max_message_bytes(mut self, bytes: usize) -> HttpClient {
        self.max_message_bytes = bytes;
        self
    }

    /// Changes each time a request goes out in a session other than the previous request's:
    /// the server forgot a session and the transport started a new one.
    pub fn session_renewals(&self) -> tokio::sync::watch::Receiver<u64> {
        self.session.renewals.subscribe()
    }
}

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// The id of the request `message` carries, if it is one.
fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// An answer over the limit fails its own request, saying so, instead of closing the transport
/// (which is what rmcp does with the error): the same as the stdio framing's refusal.
fn refuse_oversize(result: PostResult, id: Option<RequestId>, session: Option<String>) -> PostResult {
    match (result, id) {
        (Err(StreamableHttpError::ResponseBodyTooLarge { max_size }), Some(id)) => {
            tracing::warn!("a response body over max_message_bytes ({max_size}) was refused");
            let error = super::Refusal::new(format!("a response body over max_message_bytes ({max_size})")).error();
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::error(error, Some(id)), session))
        }
        (other, _) => other,
    }
}

/// The start of rmcp's message for a 2xx body that is not one JSON-RPC message.
const UNPARSEABLE: &str = "could not parse JSON response as ServerJsonRpcMessage";

/// An answer that could not be decoded fails its own request, saying what came, instead of
/// closing the transport (which is what rmcp does with the error). Not for the lifecycle's
/// requests, whose errors decide the era and the fallback to legacy SSE.
fn refuse_undecodable(
    result: PostResult,
    id: Option<RequestId>,
    lifecycle: bool,
    session: Option<String>,
) -> PostResult {
    let why = match (&result, &id) {
        (_, None) => return result,
        _ if lifecycle => return result,
        (Err(StreamableHttpError::UnexpectedServerResponse(m)), _) if m.starts_with(UNPARSEABLE) => {
            format!("the response body is not one JSON-RPC message ({})", crate::text::excerpt(m, 300))
        }
        (Err(StreamableHttpError::UnexpectedContentType(t)), _) => {
            format!("a response of content type {} (neither JSON nor an event stream)", t.as_deref().unwrap_or("none"))
        }
        _ => return result,
    };
    tracing::warn!("{why}");
    let error = super::Refusal::new(why).error();
    Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::error(error, id), session))
}

/// Whether `message` starts a session or discovers the server.
fn is_lifecycle(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r)
        if matches!(r.request, ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_)))
}

/// Puts right an error response that does not answer the request it came back for.
fn correlate(result: PostResult, id: Option<RequestId>, in_session: bool) -> PostResult {
    match result {
        Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), session)) if id.is_some() && e.id != id => {
            if in_session {
                tracing::debug!(code = %e.error.code.0, "the server refused the session: {}", e.error.message);
                Err(StreamableHttpError::SessionExpired)
            } else {
                Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::error(e.error, id), session))
            }
        }
        other => other,
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
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
    ) -> PostResult {
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
        mut limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        limits.max_json_response_size = limits.max_json_response_size.min(self.max_message_bytes);
        limits.max_sse_event_size = limits.max_sse_event_size.min(self.max_message_bytes);
        let id = request_id(&message);
        let lifecycle = is_lifecycle(&message);
        let mut custom_headers = custom_headers;
        trace_headers(&message, &mut custom_headers);
        let listing = lists_tools(&message, &custom_headers);
        let in_session = session_id.is_some();
        if let Some(session) = &session_id {
            self.session.seen(session);
        }
        let session = session_id.as_deref().map(str::to_string);
        let result = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        let result = refuse_undecodable(result, id.clone(), lifecycle, session.clone());
        let result = correlate(refuse_oversize(result, id.clone(), session), id, in_session);
        let result = self.route_progress(result);
        match listing {
            Some(first_page) => self.watch_listing(result, first_page),
            None => result,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        self.inner.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>> {
        let max = self.max_message_bytes;
        self.inner
            .get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, max)
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
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>> {
        let max_sse_event_size = max_sse_event_size.min(self.max_message_bytes);
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorData, NumberOrString};

    use super::*;

    fn refused(id: Option<RequestId>) -> PostResult {
        let error = ErrorData::new(rmcp::model::ErrorCode(-32000), "Bad Request: No valid session ID provided", None);
        let mut message = ServerJsonRpcMessage::error(error, None);
        if let ServerJsonRpcMessage::Error(e) = &mut message {
            e.id = id;
        }
        Ok(StreamableHttpPostResponse::Json(message, None))
    }

    #[test]
    fn tool_listings_are_watched_from_2026_07_28_on() {
        let list = |cursor: Option<&str>| {
            let mut params = rmcp::model::PaginatedRequestParams::default();
            params.cursor = cursor.map(str::to_string);
            let request = ClientRequest::ListToolsRequest(rmcp::model::ListToolsRequest::with_param(params));
            ClientJsonRpcMessage::request(request, NumberOrString::Number(1))
        };
        let version = |v: &str| {
            HashMap::from([(
                HeaderName::from_static("mcp-protocol-version"),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("x")),
            )])
        };
        assert_eq!(lists_tools(&list(None), &version("2026-07-28")), Some(true));
        assert_eq!(lists_tools(&list(Some("p2")), &version("2026-07-28")), Some(false), "a later page");
        assert_eq!(lists_tools(&list(None), &version("2025-11-25")), None, "no declarations checked before");
        assert_eq!(lists_tools(&list(None), &HashMap::new()), None);
        let ping = ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(rmcp::model::PingRequest::default()),
            NumberOrString::Number(2),
        );
        assert_eq!(lists_tools(&ping, &version("2026-07-28")), None);
    }

    #[test]
    fn what_a_listing_leaves_out_is_kept_by_name() {
        let left_out = LeftOut::default();
        left_out.note_event(
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
                {"name":"ok","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}},
                {"name":"bad","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":""}}}}]}}"#,
        );
        assert_eq!(left_out.tools(), [("bad".to_string(), "property `r`: x-mcp-header must not be empty".to_string())]);
        left_out.clear();
        assert!(left_out.tools().is_empty());
    }

    #[test]
    fn an_undecodable_answer_fails_its_own_request_only() {
        let ours = Some(NumberOrString::Number(7));
        let unparseable = || -> PostResult {
            Err(StreamableHttpError::UnexpectedServerResponse(
                format!("{UNPARSEABLE}: trailing characters at line 2 column 1: {{\"jsonrpc\"...").into(),
            ))
        };
        match refuse_undecodable(unparseable(), ours.clone(), false, None) {
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) => {
                assert_eq!(e.id, ours);
                assert_eq!(e.error.code.0, super::super::refusal::REFUSED);
                assert!(e.error.message.contains("not one JSON-RPC message"), "{}", e.error.message);
            }
            other => panic!("{other:?}"),
        }
        let kind = || -> PostResult { Err(StreamableHttpError::UnexpectedContentType(Some("text/html".into()))) };
        assert!(matches!(
            refuse_undecodable(kind(), ours.clone(), false, None),
            Ok(StreamableHttpPostResponse::Json(..))
        ));
        // The lifecycle's errors decide the era and the fallback; a status error is the
        // server's, not one answer's; a notification has no request to fail.
        assert!(refuse_undecodable(unparseable(), ours.clone(), true, None).is_err());
        let status = Err(StreamableHttpError::UnexpectedServerResponse("HTTP 500: oops".into()));
        assert!(refuse_undecodable(status, ours, false, None).is_err());
        assert!(refuse_undecodable(unparseable(), None, false, None).is_err());
    }

    #[tokio::test]
    async fn progress_on_a_response_stream_goes_to_the_sink_before_the_result() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let into = taken.clone();
        let Ok(client) = HttpClient::new() else { return };
        let client = client.progress_sink(super::super::progress::ProgressSink(Arc::new(
            move |p: rmcp::model::ProgressNotificationParam| {
                into.lock().unwrap_or_else(PoisonError::into_inner).push(p.progress);
            },
        )));
        let event = |data: &str| Ok(Sse { event: None, data: Some(data.to_string()), id: None, retry: None });
        let events = futures::stream::iter(vec![
            event(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":50}}"#),
            event(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#),
            event(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":100}}"#),
            event(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
        ]);
        let routed = client.route_progress(Ok(StreamableHttpPostResponse::Sse(events.boxed(), None)));
        let Ok(StreamableHttpPostResponse::Sse(stream, _)) = routed else { panic!("not a stream") };
        let rest: Vec<String> = stream.filter_map(|e| async move { e.ok().and_then(|e| e.data) }).collect().await;
        assert_eq!(rest.len(), 2, "the log and the result pass on: {rest:?}");
        assert!(rest[1].contains("\"result\""));
        assert_eq!(*taken.lock().unwrap_or_else(PoisonError::into_inner), [50.0, 100.0]);
    }

    #[test]
    fn a_new_session_id_counts_as_a_renewal() {
        let Ok(client) = HttpClient::new() else { return };
        let renewals = client.session_renewals();
        let (a, b): (Arc<str>, Arc<str>) = ("session-a".into(), "session-b".into());
        client.session.seen(&a);
        client.session.seen(&a);
        assert_eq!(*renewals.borrow(), 0, "the first session and the same one again are no renewal");
        client.session.seen(&b);
        assert_eq!(*renewals.borrow(), 1);
        client.clone().session.seen(&a);
        assert_eq!(*renewals.borrow(), 2, "clones share the watch");
    }

    #[test]
    fn an_uncorrelated_error_in_a_session_means_the_session_is_gone() {
        let ours = Some(NumberOrString::Number(7));
        assert!(matches!(correlate(refused(None), ours.clone(), true), Err(StreamableHttpError::SessionExpired)));
        let other = Some(NumberOrString::String("server-error".into()));
        assert!(matches!(correlate(refused(other), ours.clone(), true), Err(StreamableHttpError::SessionExpired)));
    }

    #[test]
    fn outside_a_session_it_becomes_the_request_s_own_error() {
        let ours = Some(NumberOrString::Number(7));
        match correlate(refused(None), ours.clone(), false) {
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) => assert_eq!(e.id, ours),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_correlated_error_and_notifications_pass_through() {
        let ours = Some(NumberOrString::Number(7));
        assert!(matches!(
            correlate(refused(ours.clone()), ours, true),
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(_), _))
        ));
        // A notification has no id to answer: whatever came back is left alone.
        assert!(matches!(correlate(refused(None), None, true), Ok(StreamableHttpPostResponse::Json(..))));
    }
}

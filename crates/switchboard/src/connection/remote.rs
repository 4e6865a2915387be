//! Starting a remote server over Streamable HTTP (rmcp's client transport on reqwest with
//! rustls), and saying plainly why it did not start: unreachable, TLS, an HTTP status with
//! the first bytes of the body, a timeout, or a request for authorisation (with the
//! server's `WWW-Authenticate` challenge kept for the OAuth flow).

use std::collections::HashMap;

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::service::{ClientInitializeError as Init, RoleClient, RunningService};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use tokio::sync::watch;
use tokio::time::Instant;

use super::handler::Handler;
use super::{ConnectCtx, StartFailure};
use crate::config::{HttpConfig, HttpTransport, ServerConfig};
use crate::status::FailureKind;
use crate::transport::{HttpClient, SseClientTransport, SseError};

/// How much of an error body a message quotes.
const BODY_QUOTED: usize = 200;

/// What the Streamable HTTP client tells about its session: its renewals (the server forgot
/// it; per-session state is gone) and the tools it leaves out of `tools/list` answers.
pub(crate) struct HttpSession {
    pub renewals: watch::Receiver<u64>,
    pub left_out: std::sync::Arc<crate::transport::LeftOut>,
}

/// Connects and runs the handshake before `deadline`: Streamable HTTP, legacy SSE, or (the
/// default, `auto`) Streamable HTTP first and legacy SSE when the server answers the
/// initialize POST with 400, 404 or 405, as the spec's backward-compatibility rule says.
pub(super) async fn start(
    config: &ServerConfig,
    http: &HttpConfig,
    ctx: &ConnectCtx,
    handler: Handler,
    deadline: Instant,
) -> Result<(RunningService<RoleClient, Handler>, Option<HttpSession>), StartFailure> {
    let url = http.url_as_written.as_str();
    let mut headers = headers(http, &ctx.host_env)?;
    if !ctx.chain.is_empty()
        && let Ok(value) = HeaderValue::from_str(&ctx.chain)
    {
        headers.insert(HeaderName::from_static(crate::chain::CHAIN_HEADER), value);
    }
    let timeout = || {
        StartFailure::new(
            FailureKind::StartupTimeout,
            format!(
                "{url} did not finish start-up within {} (startup_timeout_ms)",
                crate::text::human(config.startup_timeout)
            ),
        )
    };
    let with_url = |mut f: StartFailure| {
        f.message = format!("{url}: {}", f.message);
        f
    };
    // OAuth: stored tokens (refreshed and saved by rmcp through our store), or a
    // client-credentials exchange. Not with a static bearer token.
    let manager = match &http.bearer_token_env_var {
        Some(_) => None,
        None => {
            crate::auth::connect::connection_manager(&config.name, http, &ctx.tokens, ctx.subject.clone())
                .await
                .map_err(|e| match e {
                    // Not a login to do: the server is tried again with the usual backoff.
                    crate::auth::LoginError::Unreachable { .. } => {
                        with_url(StartFailure::new(FailureKind::NetworkUnreachable, format!("OAuth: {e}")))
                    }
                    e => with_url(StartFailure::new(FailureKind::NeedsAuth, format!("OAuth: {e}"))),
                })?
        }
    };
    let oauth = manager.is_some();
    let client = HttpClient::new()
        .map_err(|e| StartFailure::new(FailureKind::ProtocolNegotiationFailed, format!("no HTTP client: {e}")))?
        .with_max_message_bytes(config.max_message_bytes)
        .progress_sink(handler.progress_sink());
    // A DPoP-bound token goes as `Authorization: DPoP` with a proof per request, under rmcp's
    // authorised client (which still refreshes it).
    let oauth_http = manager.as_ref().and_then(|a| a.oauth_http.clone());
    let authorised =
        manager.map(|a| AuthClient::new(crate::auth::dpop::DpopLayer::new(client.clone(), a.dpop), a.manager));
    // The legacy SSE transport takes the current token as a header (refreshed at the next
    // connection, not mid-session).
    let mut sse_headers = headers.clone();
    if let Some(auth) = &authorised
        && let Ok(token) = auth.get_access_token().await
        && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        value.set_sensitive(true);
        sse_headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let streamable = |handler: Handler| async {
        let outcome = match &authorised {
            Some(auth) => serve_streamable(auth.clone(), &http.url, &headers, handler, deadline).await,
            None => serve_streamable(client.clone(), &http.url, &headers, handler, deadline).await,
        };
        match outcome {
            Some(Ok(service)) => Ok(service),
            Some(Err(e)) => {
                let mut failure = classify(&e);
                if oauth_http.as_ref().is_some_and(|c| c.client_refused()) {
                    failure.kind = FailureKind::NeedsAuth;
                    failure.message = "the authorization server refused the client switchboard registered for it \
                                       (invalid_client); it is forgotten, and logging in registers a new one"
                        .into();
                } else if oauth && failure.kind == FailureKind::NeedsAuth {
                    failure.message =
                        "the stored login was refused (expired or revoked, and refreshing it failed)".into();
                } else if failure.kind == FailureKind::NeedsAuth {
                    // No browser opens during start-up; the status says what a login needs.
                    let can = tokio::time::timeout_at(
                        deadline,
                        crate::auth::login::can_identify(http, failure.auth_challenge.as_deref()),
                    )
                    .await;
                    if let Ok(Some(false)) = can {
                        failure.kind = FailureKind::NeedsClientRegistration;
                        failure.message = format!(
                            "asks for authorisation, but its authorization server offers no client registration: \
                             register a client with it and set `oauth.client_id` (and `oauth.client_secret`) for `{}`",
                            config.name
                        );
                    }
                }
                Err((failure, fallback_status(&e)))
            }
            None => Err((timeout(), None)),
        }
    };
    let sse = |handler: Handler| async {
        let sse_url = Url::parse(&http.url)
            .map_err(|e| StartFailure::new(FailureKind::ConfigInvalid, format!("field `url`: {e}")))?;
        let transport = match tokio::time::timeout_at(
            deadline,
            SseClientTransport::connect(
                sse_url,
                sse_headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                config.max_message_bytes,
            ),
        )
        .await
        {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(classify_sse(&e)),
            Err(_) => return Err(timeout()),
        };
        match tokio::time::timeout_at(deadline, handler.serve(transport)).await {
            Ok(Ok(service)) => Ok(service),
            Ok(Err(e)) => Err(classify(&e)),
            Err(_) => Err(timeout()),
        }
    };
    // Over Streamable HTTP, the client's session renewals go with the service.
    let renewals = client.session_renewals();
    let left_out = client.left_out();
    let with_renewals =
        |service| (service, Some(HttpSession { renewals: renewals.clone(), left_out: left_out.clone() }));
    let without = |service| (service, None);
    match http.transport {
        HttpTransport::StreamableHttp => streamable(handler).await.map(with_renewals).map_err(|(f, _)| with_url(f)),
        HttpTransport::Sse => sse(handler).await.map(without).map_err(with_url),
        _ => match streamable(handler.clone()).await {
            Ok(service) => Ok(with_renewals(service)),
            Err((first, Some(400 | 404 | 405))) => sse(handler).await.map(without).map_err(|second| {
                // Both attempts and their causes (OpenCode shows only the last).
                let mut f = StartFailure::new(
                    second.kind,
                    format!(
                        "{url}: Streamable HTTP failed ({}), then legacy SSE failed ({})",
                        first.message, second.message
                    ),
                );
                f.auth_challenge = second.auth_challenge;
                f
            }),
            Err((first, _)) => Err(with_url(first)),
        },
    }
}

/// Runs the Streamable HTTP start-up over `client`: `server/discover` first (a legacy server
/// answers it with a 4xx and gets `initialize`). `None`: the deadline passed.
async fn serve_streamable<C: StreamableHttpClient>(
    client: C,
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
    handler: Handler,
    deadline: Instant,
) -> Option<Result<RunningService<RoleClient, Handler>, Init>> {
    let transport = || {
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers.clone());
        StreamableHttpClientTransport::with_client(client.clone(), config)
    };
    let lifecycle = handler.lifecycle(true);
    let probing = matches!(lifecycle, ClientLifecycleMode::Auto { .. });
    let mut outcome =
        tokio::time::timeout_at(deadline, handler.clone().serve_with_lifecycle(transport(), lifecycle)).await;
    // Some legacy servers answer any request with a result (an empty one, say) rather than an
    // error: that is not a discovery either, so `initialize` gets its turn, on a fresh
    // transport (a discovery opens no session, so nothing is left behind).
    if probing && matches!(outcome, Ok(Err(Init::ExpectedInitResult(Some(_)) | Init::ExpectedInitResponse(Some(_))))) {
        outcome = tokio::time::timeout_at(
            deadline,
            handler.serve_with_lifecycle(transport(), ClientLifecycleMode::Initialize),
        )
        .await;
    }
    outcome.ok()
}

/// Static headers plus `Authorization: Bearer <value of bearer_token_env_var>`.
fn headers(
    http: &HttpConfig,
    host_env: &HashMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, StartFailure> {
    let invalid = |message: String| StartFailure::new(FailureKind::ConfigInvalid, message);
    let mut headers = HashMap::new();
    for (name, value) in &http.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("field `headers`: `{name}` is not a valid HTTP header name")))?;
        // The value is a secret: the message names the header only.
        let value = HeaderValue::from_str(value)
            .map_err(|_| invalid(format!("field `headers.{name}`: the value is not a valid HTTP header value")))?;
        headers.insert(header, value);
    }
    if let Some(var) = &http.bearer_token_env_var {
        let Some(token) = host_env.get(var).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
            return Err(invalid(format!(
                "field `bearer_token_env_var`: the environment variable `{var}` is not set (or empty)"
            )));
        };
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            invalid(format!("field `bearer_token_env_var`: the value of `{var}` is not a valid header value"))
        })?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The HTTP status of a Streamable HTTP initialize that the server refused outright.
fn fallback_status(e: &Init) -> Option<u16> {
    match http_error(e)? {
        StreamableHttpError::UnexpectedServerResponse(message) => {
            message.strip_prefix("HTTP ")?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        }
        StreamableHttpError::HttpStatus(status) => Some(status.status),
        _ => None,
    }
}

fn http_error(e: &Init) -> Option<&StreamableHttpError<reqwest::Error>> {
    match last_attempt(e) {
        Init::TransportError { error, .. } => error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
        _ => None,
    }
}

/// When `server/discover` said "legacy" and `initialize` then failed, the second failure is
/// the one that says what is wrong.
fn last_attempt(e: &Init) -> &Init {
    match e {
        Init::LegacyFallbackFailed { fallback, .. } => last_attempt(fallback),
        other => other,
    }
}

/// A failed handshake, classified (the message does not repeat the URL).
fn classify(e: &Init) -> StartFailure {
    let e = last_attempt(e);
    // A switchboard that refused to be its own upstream (508 Loop Detected): the config is to
    // change, trying again cannot help.
    let said = e.to_string();
    if let Some(at) = said.find("switchboard refuses to") {
        let why = said[at..].split(['"', '}']).next().unwrap_or_default();
        return StartFailure::new(FailureKind::ConfigInvalid, format!("is switchboard itself: {why}"));
    }
    if let Init::TransportError { error, .. } = e
        && let Some(sse) = error.error.downcast_ref::<SseError>()
    {
        return classify_sse(sse);
    }
    let Some(http_error) = http_error(e) else {
        return StartFailure::new(FailureKind::ProtocolNegotiationFailed, format!("initialize failed: {e}"));
    };
    match http_error {
        StreamableHttpError::AuthRequired(challenge) => {
            needs_auth("asks for authorisation (HTTP 401)".into(), &challenge.www_authenticate_header)
        }
        StreamableHttpError::InsufficientScope(scope) => needs_auth(
            format!(
                "refused the token's scope (HTTP 403){}",
                scope.required_scope.as_deref().map(|s| format!(": it needs `{s}`")).unwrap_or_default()
            ),
            &scope.www_authenticate_header,
        ),
        StreamableHttpError::HttpStatus(status) => StartFailure::new(
            FailureKind::HttpStatus,
            format!("answered HTTP {}{}", status.status, retry_after(status.retry_after.as_deref())),
        ),
        StreamableHttpError::UnexpectedServerResponse(message) if message.starts_with("HTTP ") => {
            StartFailure::new(FailureKind::HttpStatus, format!("answered {}", quote(message)))
        }
        StreamableHttpError::Client(err) => client_failure(err),
        other => StartFailure::new(FailureKind::ProtocolNegotiationFailed, format!("initialize failed: {other}")),
    }
}

fn needs_auth(message: String, challenge: &str) -> StartFailure {
    let mut f = StartFailure::new(FailureKind::NeedsAuth, message);
    f.auth_challenge = Some(challenge.to_string());
    f
}

fn classify_sse(e: &SseError) -> StartFailure {
    match e {
        SseError::Status { status: 401, challenge: Some(challenge), .. } => {
            needs_auth("asks for authorisation (HTTP 401)".into(), challenge)
        }
        SseError::Status { .. } => StartFailure::new(FailureKind::HttpStatus, format!("answered {e}")),
        SseError::Request(err) => client_failure(err),
        other => StartFailure::new(FailureKind::ProtocolNegotiationFailed, other.to_string()),
    }
}

fn retry_after(value: Option<&str>) -> String {
    value.map(|v| format!(" (Retry-After: {v})")).unwrap_or_default()
}

/// The first bytes of `message`, on one line.
fn quote(message: &str) -> String {
    let one_line: String = message.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if one_line.chars().count() > BODY_QUOTED {
        format!("{}…", one_line.chars().take(BODY_QUOTED).collect::<String>())
    } else {
        one_line
    }
}

/// A request that never got an HTTP answer: refused, not resolved, or a TLS failure.
fn client_failure(err: &reqwest::Error) -> StartFailure {
    // reqwest quotes the expanded URL, which may carry a secret from a `${VAR}` (a key in the
    // query): the message names the server by the URL as written, so the expanded one goes.
    let hide = |text: String| match err.url() {
        Some(url) => text.replace(url.as_str(), "<the server URL>"),
        None => text,
    };
    let chain = hide(error_chain(err));
    // The causes only: reqwest's own message quotes the URL, whose host could hold any word.
    let lower = std::error::Error::source(err).map(error_chain).unwrap_or_default().to_lowercase();
    let root = hide(root_cause(err));
    // rustls says what went wrong in its own words (certificate, alert, corrupt message...);
    // an https connection that failed after the TCP connect without an OS error is TLS too.
    let tls_words = ["certificate", "tls", "handshake", "alert", "corrupt message", "invalidcontenttype"];
    let os_level = root.contains("os error") || lower.contains("dns error");
    if tls_words.iter().any(|k| lower.contains(k))
        || (err.url().is_some_and(|u| u.scheme() == "https") && err.is_connect() && !os_level)
    {
        return StartFailure::new(FailureKind::TlsError, format!("the TLS handshake failed: {root}"));
    }
    if err.is_timeout() {
        return StartFailure::new(FailureKind::StartupTimeout, format!("timed out: {chain}"));
    }
    // The innermost cause says it best ("Connection refused (os error 111)").
    if lower.contains("dns error") {
        return StartFailure::new(
            FailureKind::NetworkUnreachable,
            format!("unreachable: its host name does not resolve ({root})"),
        );
    }
    if err.is_connect() {
        return StartFailure::new(FailureKind::NetworkUnreachable, format!("unreachable: {root}"));
    }
    StartFailure::new(FailureKind::NetworkUnreachable, format!("request failed: {chain}"))
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut last = err;
    while let Some(s) = last.source() {
        last = s;
    }
    last.to_string()
}

/// The error and its sources, joined (reqwest's own message hides the cause).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

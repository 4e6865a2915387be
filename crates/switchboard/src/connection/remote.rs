//! Starting a remote server over Streamable HTTP (rmcp's client transport on reqwest with
//! rustls), and saying plainly why it did not start: unreachable, TLS, an HTTP status with
//! the first bytes of the body, a timeout, or a request for authorisation (with the
//! server's `WWW-Authenticate` challenge kept for the OAuth flow).

use std::collections::HashMap;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::service::{ClientInitializeError as Init, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use tokio::time::Instant;

use super::handler::Handler;
use super::{ConnectCtx, StartFailure, human};
use crate::config::{HttpConfig, HttpTransport, ServerConfig};
use crate::status::FailureKind;

/// How much of an error body a message quotes.
const BODY_QUOTED: usize = 200;

/// Connects and runs the handshake before `deadline`.
pub(super) async fn start(
    config: &ServerConfig,
    http: &HttpConfig,
    ctx: &ConnectCtx,
    handler: Handler,
    deadline: Instant,
) -> Result<RunningService<RoleClient, Handler>, StartFailure> {
    if http.transport == HttpTransport::Sse {
        return Err(StartFailure::new(
            FailureKind::Unsupported,
            format!("{}: the legacy HTTP+SSE transport is not available in this build yet", http.url_as_written),
        ));
    }
    let transport_config = transport_config(http, &ctx.host_env)?;
    let transport = StreamableHttpClientTransport::from_config(transport_config);
    match tokio::time::timeout_at(deadline, handler.serve(transport)).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(e)) => Err(classify(&http.url_as_written, &e)),
        Err(_) => Err(StartFailure::new(
            FailureKind::StartupTimeout,
            format!(
                "{} did not finish start-up within {} (startup_timeout_ms)",
                http.url_as_written,
                human(config.startup_timeout)
            ),
        )),
    }
}

/// The transport's settings: URL, static headers, and the bearer token from the named host
/// variable.
fn transport_config(
    http: &HttpConfig,
    host_env: &HashMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, StartFailure> {
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
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str()).custom_headers(headers);
    if let Some(var) = &http.bearer_token_env_var {
        match host_env.get(var).filter(|v| !v.trim().is_empty()) {
            Some(token) => config = config.auth_header(token.trim()),
            None => {
                return Err(invalid(format!(
                    "field `bearer_token_env_var`: the environment variable `{var}` is not set (or empty)"
                )));
            }
        }
    }
    Ok(config)
}

/// A failed handshake, classified.
fn classify(url: &str, e: &Init) -> StartFailure {
    let http_error = match e {
        Init::TransportError { error, .. } => error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
        _ => None,
    };
    let Some(http_error) = http_error else {
        return StartFailure::new(FailureKind::ProtocolNegotiationFailed, format!("{url}: initialize failed: {e}"));
    };
    match http_error {
        StreamableHttpError::AuthRequired(challenge) => {
            let mut f = StartFailure::new(
                FailureKind::NeedsAuth,
                format!("{url} asks for authorisation (HTTP 401): run `switchboard auth <server>`"),
            );
            f.auth_challenge = Some(challenge.www_authenticate_header.clone());
            f
        }
        StreamableHttpError::InsufficientScope(scope) => {
            let mut f = StartFailure::new(
                FailureKind::NeedsAuth,
                format!(
                    "{url} refused the token's scope (HTTP 403){}",
                    scope.required_scope.as_deref().map(|s| format!(": it needs `{s}`")).unwrap_or_default()
                ),
            );
            f.auth_challenge = Some(scope.www_authenticate_header.clone());
            f
        }
        StreamableHttpError::HttpStatus(status) => StartFailure::new(
            FailureKind::HttpStatus,
            format!("{url} answered HTTP {}{}", status.status, retry_after(status.retry_after.as_deref())),
        ),
        StreamableHttpError::UnexpectedServerResponse(message) if message.starts_with("HTTP ") => {
            StartFailure::new(FailureKind::HttpStatus, format!("{url} answered {}", quote(message)))
        }
        StreamableHttpError::Client(err) => client_failure(url, err),
        other => {
            StartFailure::new(FailureKind::ProtocolNegotiationFailed, format!("{url}: initialize failed: {other}"))
        }
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
fn client_failure(url: &str, err: &reqwest::Error) -> StartFailure {
    let chain = error_chain(err);
    // The causes only: reqwest's own message quotes the URL, whose host could hold any word.
    let lower = std::error::Error::source(err).map(error_chain).unwrap_or_default().to_lowercase();
    let root = root_cause(err);
    // rustls says what went wrong in its own words (certificate, alert, corrupt message...);
    // an https connection that failed after the TCP connect without an OS error is TLS too.
    let tls_words = ["certificate", "tls", "handshake", "alert", "corrupt message", "invalidcontenttype"];
    let os_level = root.contains("os error") || lower.contains("dns error");
    if tls_words.iter().any(|k| lower.contains(k)) || (url.starts_with("https:") && err.is_connect() && !os_level) {
        return StartFailure::new(FailureKind::TlsError, format!("{url}: the TLS handshake failed: {root}"));
    }
    if err.is_timeout() {
        return StartFailure::new(FailureKind::StartupTimeout, format!("{url}: timed out: {chain}"));
    }
    // The innermost cause says it best ("Connection refused (os error 111)").
    if lower.contains("dns error") {
        return StartFailure::new(
            FailureKind::NetworkUnreachable,
            format!("{url} is unreachable: its host name does not resolve ({root})"),
        );
    }
    if err.is_connect() {
        return StartFailure::new(FailureKind::NetworkUnreachable, format!("{url} is unreachable: {root}"));
    }
    StartFailure::new(FailureKind::NetworkUnreachable, format!("{url}: request failed: {chain}"))
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

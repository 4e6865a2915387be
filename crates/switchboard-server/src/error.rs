//! Errors as the API returns them: `{"error": {"code", "message"}}` with a fitting status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchboard::{Error, Remedy};
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// An error's code and message.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable, machine-readable code (`unknown_server`, `timeout`...).
    pub code: String,
    /// What happened, for people (never a secret), and what to do about it when there is
    /// something.
    pub message: String,
    /// The fix, as data (`{"action": "login", "server": "gh"}`), when there is one: the
    /// dashboard offers it as a button.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub remedy: Option<Remedy>,
}

/// A fix in the API's words: what to run, or where on the dashboard.
pub fn advice(remedy: &Remedy) -> String {
    match remedy {
        Remedy::Login { server } => format!("log in: `switchboard auth {server}`, or Authenticate on the dashboard"),
        Remedy::RegisterClient { server } => format!(
            "register a client with its authorization server, set `oauth.client_id` of `{server}`, then log in \
             (`switchboard auth {server}`)"
        ),
        Remedy::Trust { server } => {
            format!("trust it: `switchboard trust {server}`, or Trust and start on the dashboard")
        }
        Remedy::Allow { tool } => format!("allow it: `switchboard allow {tool}`"),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    /// `Retry-After` (seconds), for a call over a rate limit.
    retry_after: Option<u64>,
}

impl ApiError {
    /// The JSON body (`{"error": {"code", "message"}}`).
    pub fn body(&self) -> &ErrorBody {
        &self.body
    }

    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody { error: ErrorDetail { code: code.into(), message: message.into(), remedy: None } },
            retry_after: None,
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 500: something of ours failed (never a caller's mistake).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        response
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let remedy = e.remedy();
        let message = match &remedy {
            Some(remedy) => format!("{e}; {}", advice(remedy)),
            None => e.to_string(),
        };
        let code = e.kind();
        let status = match code {
            "unknown_tool" | "unknown_server" | "unknown_resource" | "unsupported" => StatusCode::NOT_FOUND,
            // The person must log in, register again or open a page first, then call again.
            "not_connected" | "needs_auth" | "client_refused" | "exists" | "url_required" => StatusCode::CONFLICT,
            "timeout" => StatusCode::GATEWAY_TIMEOUT,
            "bad_request" | "invalid_params" => StatusCode::BAD_REQUEST,
            "denied" | "outside_view" => StatusCode::FORBIDDEN,
            "rate_limited" => StatusCode::TOO_MANY_REQUESTS,
            "invalid_arguments" => StatusCode::UNPROCESSABLE_ENTITY,
            "storage_failed" | "internal" => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_GATEWAY,
        };
        let mut error = ApiError::new(status, code, message);
        error.body.error.remedy = remedy;
        if let Error::RateLimited { retry_after, .. } = &e {
            error.retry_after = Some(u64::try_from(retry_after.as_millis().div_ceil(1000)).unwrap_or(u64::MAX).max(1));
        }
        error
    }
}

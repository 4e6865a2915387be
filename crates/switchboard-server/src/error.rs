//! Errors as the API returns them: `{"error": {"code", "message"}}` with a fitting status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchboard::Error;
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
    /// What happened, for people (never a secret).
    pub message: String,
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

impl ApiError {
    /// The JSON body (`{"error": {"code", "message"}}`).
    pub fn body(&self) -> &ErrorBody {
        &self.body
    }

    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError { status, body: ErrorBody { error: ErrorDetail { code: code.into(), message: message.into() } } }
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
        (self.status, Json(self.body)).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let message = e.to_string();
        let (status, code) = match &e {
            Error::UnknownTool { .. } => (StatusCode::NOT_FOUND, "unknown_tool"),
            Error::UnknownServer { .. } => (StatusCode::NOT_FOUND, "unknown_server"),
            Error::NotConnected { .. } => (StatusCode::CONFLICT, "not_connected"),
            Error::AuthRequired { .. } => (StatusCode::CONFLICT, "needs_auth"),
            Error::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
            Error::ServerExited { .. } => (StatusCode::BAD_GATEWAY, "server_exited"),
            Error::Cancelled => (StatusCode::BAD_GATEWAY, "cancelled"),
            Error::Auth { .. } => (StatusCode::BAD_GATEWAY, "auth_failed"),
            // The next login registers a new client: the person starts it again.
            Error::ClientRefused { .. } => (StatusCode::CONFLICT, "client_refused"),
            Error::Exists { .. } => (StatusCode::CONFLICT, "exists"),
            Error::Invalid { .. } => (StatusCode::BAD_REQUEST, "bad_request"),
            Error::Denied { .. } => (StatusCode::FORBIDDEN, "denied"),
            Error::InvalidArguments { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_arguments"),
            Error::Storage { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "storage_failed"),
            // What the server refused because of what was asked is the asker's to fix.
            Error::Rejected { code: -32602, .. } => (StatusCode::BAD_REQUEST, "invalid_params"),
            Error::Rejected { code: -32002, .. } => (StatusCode::NOT_FOUND, "unknown_resource"),
            Error::Rejected { code: -32601, .. } => (StatusCode::NOT_FOUND, "unsupported"),
            // The person must open a page first (the message has the URLs), then call again.
            Error::Rejected { code: -32042, .. } => (StatusCode::CONFLICT, "url_required"),
            Error::Rejected { .. } => (StatusCode::BAD_GATEWAY, "server_error"),
            _ => (StatusCode::BAD_GATEWAY, "server_error"),
        };
        ApiError::new(status, code, message)
    }
}

//! `/api/approvals`: the calls the policy asks about, as the dashboard and other processes
//! see and answer them (the queue is `crate::approvals`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use switchboard::policy::Approval;
use utoipa::ToSchema;

use super::answer::{Queue, answer_in};
use crate::approvals::{DecisionRequest, OutsideRequest, PendingApproval};
use crate::error::{ApiError, ErrorBody};
use crate::state::{AppState, rejected};

/// The calls waiting.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    /// Oldest first.
    approvals: Vec<PendingApproval>,
}

/// The longest `origin` shown.
const ORIGIN_MAX: usize = 300;

#[utoipa::path(post, path = "/api/approvals", tag = "approval", request_body = OutsideRequest,
    description = "Asks the person about a call of another process (a standalone `switchboard gateway` whose client cannot elicit). The request waits in the queue like the server's own (an `approval_requested` event, `GET /api/approvals`) and the response is the decision; closing the connection withdraws it.",
    responses((status = 200, body = DecisionRequest, description = "Decided (`deny` too when nobody answered in time)"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "`nobody_to_ask`: nobody follows the events")))]
pub async fn request(
    State(app): State<AppState>,
    body: Result<Json<OutsideRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<DecisionRequest>, ApiError> {
    let Json(OutsideRequest { request, origin }) = body.map_err(rejected)?;
    let nobody = |why: String| ApiError::new(StatusCode::CONFLICT, "nobody_to_ask", why);
    let queue = app.approvals.as_ref().ok_or_else(|| nobody("this server takes no approvals".into()))?;
    let origin = switchboard::text::excerpt(&switchboard::text::for_terminal(&origin), ORIGIN_MAX);
    let approval = queue.ask(request, Some(origin)).await.map_err(nobody)?;
    Ok(Json(DecisionRequest { decision: approval.as_str().into() }))
}

#[utoipa::path(get, path = "/api/approvals", tag = "approval",
    responses((status = 200, body = ApprovalList), (status = 401, body = ErrorBody)))]
pub async fn list(State(app): State<AppState>) -> Json<ApprovalList> {
    let approvals = match app.approvals.as_ref() {
        Some(q) => q.waiting_anywhere().await,
        None => Vec::new(),
    };
    Json(ApprovalList { approvals })
}

#[utoipa::path(post, path = "/api/approvals/{id}", tag = "approval", request_body = DecisionRequest,
    params(("id" = u64, Path, description = "The call waiting")),
    responses((status = 204, description = "Decided; the call goes on or is refused"),
        (status = 400, body = ErrorBody, description = "Not one of the four decisions"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "No such call waits"),
        (status = 504, body = ErrorBody, description = "`not_taken`: the replica holding the call (on a team's store) did not take the answer in time")))]
pub async fn decide(
    State(app): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<DecisionRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<StatusCode, ApiError> {
    answer_in::<Approvals>(&app, &id, body).await
}

/// The calls waiting for approval, as their route answers them.
struct Approvals;

impl Queue for Approvals {
    type Body = DecisionRequest;
    type Answer = Approval;

    fn unknown(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_approval",
            format!(
                "no call `{}` waits for approval (decided already, or withdrawn when it ended)",
                switchboard::text::excerpt(id, 40)
            ),
        )
    }

    fn answer_of(body: DecisionRequest) -> Result<Approval, ApiError> {
        Approval::parse(&body.decision).ok_or_else(|| {
            ApiError::bad_request("`decision` must be one of allow_once, allow_session, allow_always, deny")
        })
    }

    async fn give(app: &AppState, number: u64, id: &str, approval: Approval) -> Result<(), ApiError> {
        let Some(queue) = &app.approvals else { return Err(Self::unknown(id)) };
        match queue.answer_anywhere(number, approval).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Self::unknown(id)),
            Err(e) => Err(ApiError::new(StatusCode::GATEWAY_TIMEOUT, "not_taken", e)),
        }
    }
}

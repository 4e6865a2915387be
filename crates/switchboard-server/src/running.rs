//! The `switchboard serve` running with a data folder, as other processes find it (its address
//! in `<data>/serve.json`, its token in `<data>/serve-token`), and what they ask of it:
//! approvals ([`ServeApprover`]), so a standalone `switchboard gateway` whose client cannot
//! elicit puts its question on the dashboard instead of denying the call.
//!
//! Nothing here trusts the record: a `serve` that has ended leaves it behind, and the next
//! request finds nobody at the address (connection refused), which is said as such.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture};

use crate::approvals::{DecisionRequest, OutsideRequest, WAIT};

/// Where the last `switchboard serve` of a data folder answers.
#[derive(Clone)]
#[non_exhaustive]
pub struct RunningServe {
    /// `http://127.0.0.1:7341`.
    pub url: String,
    /// Its bearer token.
    token: String,
}

impl std::fmt::Debug for RunningServe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServe").field("url", &self.url).finish_non_exhaustive()
    }
}

/// Why the record of a `serve` could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A file that exists and cannot be read (not one that is missing).
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `serve.json` that is not what `serve` writes.
    #[error("{path} is not a record of `switchboard serve` ({why}): start `switchboard serve` again to rewrite it")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl RunningServe {
    /// The record in `data_dir`, if a `serve` ever ran with it (it may have ended since).
    pub fn find(data_dir: &Path) -> Result<Option<RunningServe>, RecordError> {
        let read = |name: &str| {
            let path = data_dir.join(name);
            switchboard::read_private(&path).map_err(|source| RecordError::Io { path, source })
        };
        let Some(info) = read("serve.json")? else { return Ok(None) };
        let path = data_dir.join("serve.json");
        let malformed = |why: &str| RecordError::Malformed { path: path.clone(), why: why.into() };
        let info: serde_json::Value = serde_json::from_slice(&info).map_err(|e| malformed(&e.to_string()))?;
        let url = info["url"].as_str().ok_or_else(|| malformed("no `url`"))?.trim_end_matches('/').to_string();
        let Some(token) = read("serve-token")? else {
            return Err(RecordError::Malformed {
                path: data_dir.join("serve-token"),
                why: "missing beside serve.json".into(),
            });
        };
        let token = String::from_utf8_lossy(&token).trim().to_string();
        Ok(Some(RunningServe { url, token }))
    }

    /// The `serve` of the workspace at `project_root` (its record in the data folder: a
    /// `serve` of another project does not overwrite it), else the last one of the data folder.
    pub fn find_for(data_dir: &Path, project_root: &Path) -> Result<Option<RunningServe>, RecordError> {
        let record = match switchboard::workspace::find(data_dir, project_root, "") {
            switchboard::workspace::Lookup::Live(r) | switchboard::workspace::Lookup::OtherConfig(r) => Some(r),
            _ => None,
        };
        match (record.filter(|r| r.kind == "serve"), RunningServe::find(data_dir)?) {
            (Some(r), Some(last)) => Ok(Some(RunningServe { url: r.url, token: last.token })),
            (_, last) => Ok(last),
        }
    }

    /// A request to `path` (`/api/...`) with the token.
    pub fn post(&self, client: &reqwest::Client, path: &str) -> reqwest::RequestBuilder {
        client.post(format!("{}{path}", self.url)).bearer_auth(&self.token)
    }
}

/// An [`Approver`] that asks the person on the dashboard of the `switchboard serve` running
/// with the same data folder (`POST /api/approvals`, which waits for the decision). Nobody to
/// ask (no `serve`, or nobody with its dashboard open) is a denial that says so.
pub struct ServeApprover {
    data_dir: PathBuf,
    project_root: Option<PathBuf>,
    origin: String,
    instead_of: Option<String>,
    client: Result<reqwest::Client, String>,
}

impl std::fmt::Debug for ServeApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeApprover").field("data_dir", &self.data_dir).field("origin", &self.origin).finish()
    }
}

impl ServeApprover {
    /// Asks the `serve` of `data_dir`; `origin` says on the card who asks
    /// (`switchboard gateway (pid 4242) in /home/ada/project`).
    pub fn new(data_dir: PathBuf, origin: impl Into<String>) -> ServeApprover {
        // The request waits as long as the queue does, and a little more for the answer.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(WAIT + Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string());
        ServeApprover { data_dir, project_root: None, origin: origin.into(), instead_of: None, client }
    }

    /// Asks the `serve` of this workspace first (see [`RunningServe::find_for`]).
    pub fn in_workspace(mut self, project_root: PathBuf) -> ServeApprover {
        self.project_root = Some(project_root);
        self
    }

    /// Who could not be asked first (`its client cannot be asked (it declared no
    /// elicitation)`): the reason a call is denied starts with it.
    pub fn instead_of(mut self, who: impl Into<String>) -> ServeApprover {
        self.instead_of = Some(who.into());
        self
    }

    /// The reason nobody is asked, from what went wrong with the dashboard.
    fn nobody(&self, why: &str) -> String {
        match &self.instead_of {
            Some(who) => format!("{who}, nor the dashboard of `switchboard serve`: {why}"),
            None => format!("nobody can be asked on the dashboard of `switchboard serve`: {why}"),
        }
    }

    async fn ask(&self, request: ApprovalRequest) -> Result<Approval, String> {
        let found = match &self.project_root {
            Some(root) => RunningServe::find_for(&self.data_dir, root),
            None => RunningServe::find(&self.data_dir),
        };
        let serve = match found {
            Ok(Some(serve)) => serve,
            Ok(None) => {
                return Err(self.nobody(&format!("none has run with {}", self.data_dir.display())));
            }
            Err(e) => return Err(self.nobody(&e.to_string())),
        };
        let client = self.client.as_ref().map_err(|e| self.nobody(&format!("no HTTP client ({e})")))?;
        let body = OutsideRequest { request, origin: self.origin.clone() };
        let response = match serve.post(client, "/api/approvals").json(&body).send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => {
                return Err(self.nobody(&format!("none is running (the last one answered at {})", serve.url)));
            }
            Err(e) if e.is_timeout() => return Err(self.nobody(&format!("{} did not answer in time", serve.url))),
            Err(e) => return Err(self.nobody(&format!("asking {}: {e}", serve.url))),
        };
        let status = response.status();
        if status == StatusCode::OK {
            let answer: DecisionRequest = response
                .json()
                .await
                .map_err(|e| self.nobody(&format!("{} answered with no decision ({e})", serve.url)))?;
            return Ok(Approval::parse(&answer.decision).unwrap_or(Approval::Deny));
        }
        let why = match status {
            StatusCode::CONFLICT => "nobody has its dashboard open (`switchboard dashboard` opens it)".to_string(),
            StatusCode::UNAUTHORIZED => {
                format!("{} refused the token in {}", serve.url, self.data_dir.join("serve-token").display())
            }
            StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => {
                format!("the one at {} takes no approvals from other processes (an older version)", serve.url)
            }
            other => format!("{} answered {other}", serve.url),
        };
        Err(self.nobody(&why))
    }
}

impl Approver for ServeApprover {
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.ask(request).await.unwrap_or(Approval::Deny) })
    }

    fn consult<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Result<Approval, String>> {
        Box::pin(self.ask(request))
    }
}

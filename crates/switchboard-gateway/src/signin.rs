//! A person signs in to their own upstream through the gateway. A server each person gets
//! their own of ([`switchboard::Hub::person`]) that needs a login for the caller is signed in
//! to by that caller, as themselves: the gateway starts the login in the caller's hub with
//! its own `/oauth/callback` as the redirect URI, and asks the caller's client to open the
//! authorization URL (URL-mode elicitation, `elicitation/create` with `mode: "url"`):
//!
//! - when a session of an earlier revision whose client takes URL elicitation starts, for each
//!   of the caller's servers that needs a login, and again whenever one of them comes to need
//!   one (its token expired for good, a logout, a scope it lacks);
//! - when a request needs such a server (a call, a read, a prompt), as the error
//!   `-32042` (URL elicitation required) carrying the same elicitation, which a client shows;
//!   its message says the URL for a client that does not.
//!
//! The URL the person is given is the gateway's own page (`/sign-in?state=…`), which sends
//! their browser on to the upstream's authorization URL only once they signed in there with
//! the organisation's provider as the person the sign-in is for ([`crate::pages`]). The browser
//! comes back to the gateway ([`crate::Gateway::finish_sign_in`]), which matches the login by
//! its `state` and the person signed in in that browser, finishes it in the caller's hub (the
//! tokens kept in their folder, never anyone else's), reconnects the server, and tells the
//! session that was asked `notifications/elicitation/complete`. A login unfinished after
//! [`SIGN_IN_TIMEOUT`] is forgotten.
//!
//! A person's own server that waits for their input values (`${input:ID}`: a token of theirs)
//! is asked for the same way, by URL: the gateway's own page (`/inputs?state=…`, where
//! `state` is 256 random bits, good once), never in the MCP messages (the spec keeps secrets
//! out of form elicitation), and for that person alone. What the person types there is kept as
//! theirs ([`switchboard::Hub::give_input`]) and their servers that waited start.
//!
//! On a team's store each page is recorded (`switchboard::store::pages`: the replica holding
//! it, whose it is), so that a replica the browser reaches instead passes the request on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{CustomNotification, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use switchboard::Hub;
use switchboard::auth::Login;
use switchboard::config::MissingInput;
use switchboard::identity::Principal;
use switchboard::status::{FailureKind, ServerStatus};

use crate::replicas::Replicas;

/// How long a sign-in waits for its browser to come back.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(600);

/// `-32042`: the request needs the person to open a URL first (2025-11-25).
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The sign-ins under way.
pub(crate) struct SignIns {
    /// The gateway's address as browsers reach it (`http://127.0.0.1:PORT`, or its public URL).
    base: Mutex<Option<String>>,
    pending: Mutex<HashMap<String, Pending>>,
    /// Where each page is recorded for the other replicas.
    replicas: Arc<Replicas>,
}

struct Pending {
    hub: Hub,
    task: Task,
    made: Instant,
    /// Whose, and for which server (for inputs: the servers that wait, joined).
    person: String,
    server: String,
    /// The page the person is sent to.
    url: String,
    elicitation_id: String,
    /// The sessions asked to open it, told when it is done.
    asked: Vec<Peer<RoleServer>>,
}

/// What the person does at the URL.
enum Task {
    /// Signs in; the browser comes back with the code.
    Login(Box<Login>),
    /// Gives the values of these inputs.
    Inputs(Vec<MissingInput>),
}

/// One input the page asks for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InputAsked {
    /// The form field's name.
    pub field: String,
    /// What to ask (the declaration's description, else its id).
    pub label: String,
    /// A secret: not shown as typed.
    pub password: bool,
    /// The servers that use it.
    pub servers: Vec<String>,
}

/// Why a page does not open for the person who opened it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PageRefusal {
    /// No such page here: unknown, done already, or older than `SIGN_IN_TIMEOUT`.
    #[error("this page is unknown or expired (over 10 minutes, or already used): ask your agent again")]
    Unknown,
    /// It was made for another person than the one signed in in this browser: it completes
    /// nothing.
    #[error(
        "this page was made for another person, not for {you}: it completes nothing here. If it is yours, sign in as yourself; if someone sent it to you, tell them it was seen"
    )]
    NotYours {
        /// Who is signed in in the browser.
        you: String,
    },
}

/// A sign-in started: where the person goes, and the elicitation that says so.
#[derive(Debug, Clone)]
pub(crate) struct Started {
    pub url: String,
    pub elicitation_id: String,
    pub server: String,
    /// Started now (not one under way already).
    pub new: bool,
}

impl Started {
    /// What the person is asked.
    fn message(&self) -> String {
        if self.url.contains("/inputs?state=") {
            return format!(
                "`{}` needs values only you have: give them at {} in your browser. switchboard keeps them for you alone.",
                self.server, self.url
            );
        }
        format!(
            "Sign in to `{}` as yourself: open {} in your browser. switchboard keeps the login for you alone.",
            self.server, self.url
        )
    }

    /// The `elicitation/create` parameters (URL mode).
    fn params(&self) -> Option<rmcp::model::ElicitRequestParams> {
        serde_json::from_value(serde_json::json!({
            "mode": "url", "message": self.message(), "url": self.url, "elicitationId": self.elicitation_id,
        }))
        .ok()
    }

    /// The error `-32042` a request that needs the login gets.
    pub(crate) fn error(&self) -> McpError {
        let elicitation = serde_json::json!({
            "mode": "url", "message": self.message(), "url": self.url, "elicitationId": self.elicitation_id,
        });
        McpError::new(
            rmcp::model::ErrorCode(URL_ELICITATION_REQUIRED),
            format!("`{}` needs you to sign in first (or give your values): open {}", self.server, self.url),
            Some(serde_json::json!({"elicitations": [elicitation]})),
        )
    }
}

impl SignIns {
    pub(crate) fn new(replicas: Arc<Replicas>) -> SignIns {
        SignIns { base: Mutex::default(), pending: Mutex::default(), replicas }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the page `state` is held here now.
    pub(crate) fn holds(&self, state: &str) -> bool {
        self.pending().get(state).is_some_and(|p| p.made.elapsed() < SIGN_IN_TIMEOUT)
    }

    /// Whether the page `state`, of a kind `kind` accepts, opens for `person`: the one it was
    /// made for.
    fn check(&self, state: &str, person: &Principal, kind: fn(&Task) -> bool) -> Result<(), PageRefusal> {
        let pending = self.pending();
        let Some(p) = pending.get(state).filter(|p| p.made.elapsed() < SIGN_IN_TIMEOUT && kind(&p.task)) else {
            return Err(PageRefusal::Unknown);
        };
        if p.person != person.key() {
            tracing::warn!(
                server = %p.server,
                signed_in = %person.shown(),
                "a page made for another person was opened by someone signed in as another: refused"
            );
            return Err(PageRefusal::NotYours { you: person.shown().to_string() });
        }
        Ok(())
    }

    pub(crate) fn set_base(&self, base: &str) {
        *self.base.lock().unwrap_or_else(PoisonError::into_inner) = Some(base.trim_end_matches('/').to_string());
    }

    fn redirect_uri(&self) -> Option<String> {
        let base = self.base.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
        Some(format!("{base}/oauth/callback"))
    }

    /// The sign-in of `principal` to `server` under way, or a new one (in `hub`, theirs).
    /// `None` when the gateway takes no browser back (no address of its own) or the server
    /// has no browser login.
    pub(crate) async fn start(&self, hub: &Hub, principal: &Principal, server: &str) -> Option<Started> {
        let person = principal.key();
        {
            let mut pending = self.pending();
            pending.retain(|_, p| p.made.elapsed() < SIGN_IN_TIMEOUT);
            if let Some(p) = pending.values().find(|p| p.person == person && p.server == server) {
                return Some(Started {
                    url: p.url.clone(),
                    elicitation_id: p.elicitation_id.clone(),
                    server: server.to_string(),
                    new: false,
                });
            }
        }
        let redirect = self.redirect_uri()?;
        if hub.logs_in_without_browser(server).unwrap_or(true) {
            return None;
        }
        let login = match hub.begin_login(server, &redirect).await {
            Ok(login) => login,
            Err(e) => {
                tracing::warn!(server, person = %principal.shown(), "could not start a sign-in: {e}");
                return None;
            }
        };
        let state = login.state()?;
        // The person's own page first (signed in there as themselves), which sends the browser
        // on to the upstream's authorization URL.
        let base = redirect.strip_suffix("/oauth/callback").unwrap_or(&redirect).to_string();
        let url = format!("{base}/sign-in?state={}", encode(&state));
        let started =
            Started { url: url.clone(), elicitation_id: state.clone(), server: server.to_string(), new: true };
        self.pending().insert(
            state.clone(),
            Pending {
                hub: hub.clone(),
                task: Task::Login(Box::new(login)),
                made: Instant::now(),
                person: person.clone(),
                server: server.to_string(),
                url,
                elicitation_id: state.clone(),
                asked: Vec::new(),
            },
        );
        self.replicas.record_page(&state, &person, SIGN_IN_TIMEOUT).await;
        Some(started)
    }

    /// Where the sign-in page `state` sends `person`'s browser: the upstream's authorization
    /// URL, for the person it was made for alone.
    pub(crate) fn authorization(&self, state: &str, person: &Principal) -> Result<String, PageRefusal> {
        self.check(state, person, |t| matches!(t, Task::Login(_)))?;
        match self.pending().get(state).map(|p| &p.task) {
            Some(Task::Login(login)) => Ok(login.authorization_url().to_string()),
            _ => Err(PageRefusal::Unknown),
        }
    }

    /// Notes that a session was told of `started` (the error `-32042`): it is told when done.
    pub(crate) fn told(&self, started: &Started, peer: &Peer<RoleServer>) {
        if let Some(p) = self.pending().get_mut(&started.elicitation_id) {
            note(&mut p.asked, peer);
        }
    }

    /// Asks a session's client to open the sign-in (URL-mode elicitation, outside any request).
    pub(crate) async fn ask(&self, peer: &Peer<RoleServer>, started: &Started) {
        let takes_urls =
            peer.peer_info().is_some_and(|i| i.capabilities.elicitation.as_ref().is_some_and(|e| e.url.is_some()));
        let Some(params) = started.params().filter(|_| takes_urls) else { return };
        if let Some(p) = self.pending().get_mut(&started.elicitation_id) {
            note(&mut p.asked, peer);
        }
        match peer.create_elicitation(params).await {
            Ok(answer) => tracing::debug!(server = %started.server, "sign-in: the client answered {:?}", answer.action),
            Err(e) => tracing::info!(server = %started.server, "sign-in: the client did not take the URL: {e}"),
        }
    }

    /// Finishes the sign-in `state` belongs to with the URL `person`'s browser came back to,
    /// if it is theirs (else it waits on for its person).
    pub(crate) async fn finish(
        &self,
        state: &str,
        callback_url: &str,
        person: &Principal,
    ) -> Result<Result<String, String>, PageRefusal> {
        self.check(state, person, |t| matches!(t, Task::Login(_)))?;
        let pending = self.pending().remove(state).ok_or(PageRefusal::Unknown)?;
        self.replicas.forget_page(state).await;
        let Task::Login(login) = pending.task else { return Err(PageRefusal::Unknown) };
        let server = pending.server.clone();
        let outcome = pending.hub.finish_login(*login, callback_url).await;
        tell_done(&pending.asked, &pending.elicitation_id).await;
        Ok(match outcome {
            Ok(ServerStatus::Connected { .. }) => Ok(server),
            Ok(status) => Err(format!("signed in, but `{server}` did not connect: {}", status.summary())),
            Err(e) => Err(e.to_string()),
        })
    }
}

impl SignIns {
    /// A request for `principal`'s values of `missing` (their hub's), or the one under way.
    pub(crate) async fn start_inputs(
        &self,
        hub: &Hub,
        principal: &Principal,
        missing: Vec<MissingInput>,
    ) -> Option<Started> {
        let person = principal.key();
        let mut servers: Vec<String> = missing.iter().flat_map(|m| m.servers.iter().cloned()).collect();
        servers.sort();
        servers.dedup();
        let server = servers.join(", ");
        let started = {
            let mut pending = self.pending();
            pending.retain(|_, p| p.made.elapsed() < SIGN_IN_TIMEOUT);
            if let Some(p) = pending.values().find(|p| p.person == person && matches!(p.task, Task::Inputs(_))) {
                return Some(Started {
                    url: p.url.clone(),
                    elicitation_id: p.elicitation_id.clone(),
                    server,
                    new: false,
                });
            }
            let base = self.base.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).ok()?;
            let state: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let url = format!("{base}/inputs?state={state}");
            let started =
                Started { url: url.clone(), elicitation_id: state.clone(), server: server.clone(), new: true };
            pending.insert(
                state.clone(),
                Pending {
                    hub: hub.clone(),
                    task: Task::Inputs(missing),
                    made: Instant::now(),
                    person: person.clone(),
                    server,
                    url,
                    elicitation_id: state,
                    asked: Vec::new(),
                },
            );
            started
        };
        self.replicas.record_page(&started.elicitation_id, &person, SIGN_IN_TIMEOUT).await;
        Some(started)
    }

    /// What the page of `state` asks `person` for.
    pub(crate) fn inputs_asked(&self, state: &str, person: &Principal) -> Result<Vec<InputAsked>, PageRefusal> {
        self.check(state, person, |t| matches!(t, Task::Inputs(_)))?;
        let pending = self.pending();
        let Some(Task::Inputs(missing)) = pending.get(state).map(|p| &p.task) else {
            return Err(PageRefusal::Unknown);
        };
        Ok(missing
            .iter()
            .enumerate()
            .map(|(i, m)| InputAsked {
                field: format!("input{i}"),
                label: m.input.description.clone().unwrap_or_else(|| m.input.id.clone()),
                password: m.input.password,
                servers: m.servers.iter().cloned().collect(),
            })
            .collect())
    }

    /// Keeps the values `person` gave on the page of `state` (by field) as their own; every
    /// field must have one.
    pub(crate) async fn give_inputs(
        &self,
        state: &str,
        person: &Principal,
        values: &std::collections::BTreeMap<String, String>,
    ) -> Result<Result<String, String>, PageRefusal> {
        self.check(state, person, |t| matches!(t, Task::Inputs(_)))?;
        let pending = {
            let mut all = self.pending();
            let Some(Task::Inputs(missing)) = all.get(state).map(|p| &p.task) else {
                return Err(PageRefusal::Unknown);
            };
            let complete = (0..missing.len()).all(|i| values.get(&format!("input{i}")).is_some_and(|v| !v.is_empty()));
            if !complete {
                return Ok(Err("every value is needed".into()));
            }
            all.remove(state).ok_or(PageRefusal::Unknown)?
        };
        self.replicas.forget_page(state).await;
        let Task::Inputs(missing) = &pending.task else { return Err(PageRefusal::Unknown) };
        for (i, m) in missing.iter().enumerate() {
            let value = values.get(&format!("input{i}")).map(String::as_str).unwrap_or_default();
            if let Err(e) = pending.hub.give_input(&m.file, &m.input.id, value).await {
                return Ok(Err(e.to_string()));
            }
        }
        tell_done(&pending.asked, &pending.elicitation_id).await;
        Ok(Ok(pending.server.clone()))
    }
}

/// `text` as a URL query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The most sessions told of one sign-in (each request that met it tells its session: many
/// calls at once would otherwise keep one entry each).
const MAX_TOLD: usize = 16;

/// Notes a session to tell when a sign-in is done, up to [`MAX_TOLD`].
fn note(asked: &mut Vec<Peer<RoleServer>>, peer: &Peer<RoleServer>) {
    if asked.len() < MAX_TOLD {
        asked.push(peer.clone());
    }
}

/// Tells the sessions that were asked that the elicitation `id` is done.
async fn tell_done(asked: &[Peer<RoleServer>], id: &str) {
    let done =
        CustomNotification::new("notifications/elicitation/complete", Some(serde_json::json!({"elicitationId": id})));
    for peer in asked {
        let _ = peer.send_notification(ServerNotification::CustomNotification(done.clone())).await;
    }
}

/// The name of the gateway's own tool that starts a caller's sign-ins.
pub const SIGN_IN: &str = "sign_in";

/// The `sign_in` tool, listed to a caller whose own servers need their login (`logins`) or
/// wait for their values (`waiting`): what any client of any revision can call, so that its
/// person is given the addresses (a 2026-07-28 client takes no request outside a call).
pub(crate) fn tool(logins: &[String], waiting: &[String]) -> rmcp::model::Tool {
    let mut needs = Vec::new();
    if !logins.is_empty() {
        needs.push(format!("your login to {}", logins.join(", ")));
    }
    if !waiting.is_empty() {
        needs.push(format!("your values for {}", waiting.join(", ")));
    }
    let schema = serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false});
    let schema = match schema {
        serde_json::Value::Object(o) => std::sync::Arc::new(o),
        _ => std::sync::Arc::default(),
    };
    rmcp::model::Tool::new(
        SIGN_IN,
        format!(
            "Some of your own servers need {} before their tools appear. Call this to get the address to \
             open in a browser, and give it to the person; their tools are listed once they are done.",
            needs.join(" and ")
        ),
        schema,
    )
}

/// What a call of `sign_in` returns: each address to open.
pub(crate) fn result(started: &[Started]) -> rmcp::model::CallToolResult {
    let lines: Vec<String> = started.iter().map(|s| format!("- {}", s.message())).collect();
    let text = if lines.is_empty() {
        "These sign-ins cannot start here: the gateway has no address a browser comes back to.".to_string()
    } else {
        format!("Ask the person to open, in their browser:\n{}", lines.join("\n"))
    };
    rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)])
}

/// What a call of `sign_in` returns when there is nothing to do.
pub(crate) fn nothing_to_do() -> rmcp::model::CallToolResult {
    rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(
        "Nothing to sign in to: your own servers have your logins and values.",
    )])
}

/// Whether a status asks for a browser login.
pub(crate) fn needs_login(status: &ServerStatus) -> bool {
    matches!(status, ServerStatus::Failed { kind: FailureKind::NeedsAuth, .. })
}

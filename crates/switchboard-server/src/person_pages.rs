//! The pages a person of a team opens in a browser when their own server needs them (a
//! gateway whose callers sign in, `identity`): their values page (`GET`/`POST /inputs?state=…`,
//! the values only they have for their own servers, `${input:ID}`), their sign-in page
//! (`GET /sign-in?state=…`, which sends the browser on to their upstream's authorization URL)
//! and its callback (`GET /oauth/callback`). The gateway sent them there by URL-mode
//! elicitation ([`switchboard_gateway::Gateway::inputs_asked`]).
//!
//! The address is not the key: each page opens only for the person signed in in that browser
//! with the organisation's provider ([`PeopleLogin`]: a browser not signed in is sent to
//! `/people/login` first, and comes back), and only if the page was made for them. Anyone else
//! gets a page that says why ([`PageRefusal::NotYours`]) and completes nothing; the page waits on
//! for its person. Behind a load balancer the browser may reach a replica that does not hold
//! the page: the team's store says which one does, and the request is passed on there
//! ([`switchboard_gateway::Gateway::page_held`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header, request::Parts};
use axum::response::{Html, IntoResponse, Response};
use switchboard_gateway::{Gateway, PageHeld, PageRefusal};

use crate::identity::Principal;
use crate::people_login::PeopleLogin;

/// The most a page's request body may be (a form of a few values).
const FORM_LIMIT: usize = 64 * 1024;

/// A person's pages: the gateway that made them and the sign-in that says who opens them.
#[derive(Clone)]
pub(crate) struct PersonPages {
    gateway: Gateway,
    login: Arc<PeopleLogin>,
}

/// Where a page's request goes on.
enum Opened {
    /// Here, for this person.
    Here(Principal),
    /// Answered already: passed on to the replica holding it, unknown, or sign in first.
    Answered(Response),
}

impl PersonPages {
    pub(crate) fn new(gateway: Gateway, login: Arc<PeopleLogin>) -> PersonPages {
        PersonPages { gateway, login }
    }

    /// Opens the page `state` for the request `parts` (its `body` read): passes it on to the
    /// replica holding it, or says it is unknown, or sends a browser not signed in to sign in
    /// first; else the person signed in.
    async fn open(&self, state: &str, parts: &Parts, body: Bytes) -> Opened {
        match self.gateway.page_held(state, &parts.headers).await {
            PageHeld::Here => {}
            PageHeld::At(url) => {
                return Opened::Answered(match self.gateway.pass_page(&url, parts, body).await {
                    Ok(answer) => answer.map(Body::new).into_response(),
                    Err(why) => page(StatusCode::BAD_GATEWAY, "Not reached", &format!("{}.", escape(&why))),
                });
            }
            _ => return Opened::Answered(refused(&PageRefusal::Unknown)),
        }
        match self.login.person(&parts.headers).await {
            Some(person) => Opened::Here(person),
            None => Opened::Answered(sign_in_first(parts)),
        }
    }

    /// Finishes a person's sign-in to their own upstream at `GET /oauth/callback`: `None`
    /// when no page of the gateway has the callback's `state` (it may be another login's).
    pub(crate) async fn finish_callback(&self, parts: &Parts, callback_url: &str) -> Option<Response> {
        let state = switchboard_gateway::callback_state(callback_url)?;
        let person = match self.open(&state, parts, Bytes::new()).await {
            Opened::Here(person) => person,
            Opened::Answered(r) if r.status() == StatusCode::NOT_FOUND => return None,
            Opened::Answered(r) => return Some(r),
        };
        Some(match self.gateway.finish_sign_in(callback_url, &person).await {
            Ok(Ok(server)) => outcome(Ok(&server)),
            Ok(Err(why)) => outcome(Err(&why)),
            Err(refusal) => refused(&refusal),
        })
    }
}

/// `GET /sign-in?state=…`: on to the upstream's authorization URL, for the person the
/// sign-in is for.
async fn sign_in(State(pages): State<PersonPages>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let Some(state) = query_state(&parts) else { return refused(&PageRefusal::Unknown) };
    let person = match pages.open(&state, &parts, Bytes::new()).await {
        Opened::Here(person) => person,
        Opened::Answered(r) => return r,
    };
    match pages.gateway.sign_in_authorization(&state, &person) {
        Ok(url) => no_store((StatusCode::FOUND, [(header::LOCATION, url)]).into_response()),
        Err(refusal) => refused(&refusal),
    }
}

/// `GET /oauth/callback` of `gateway --http`: a person's sign-in to their own upstream.
async fn callback(State(pages): State<PersonPages>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let url = format!("{}{}", crate::security::public_base(&parts.headers, None), parts.uri);
    match pages.finish_callback(&parts, &url).await {
        Some(r) => r,
        None => refused(&PageRefusal::Unknown),
    }
}

/// `GET /inputs?state=…`: the form.
async fn form(State(pages): State<PersonPages>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let Some(state) = query_state(&parts) else { return refused(&PageRefusal::Unknown) };
    let person = match pages.open(&state, &parts, Bytes::new()).await {
        Opened::Here(person) => person,
        Opened::Answered(r) => return r,
    };
    let fields = match pages.gateway.inputs_asked(&state, &person) {
        Ok(fields) => fields,
        Err(refusal) => return refused(&refusal),
    };
    let mut rows = String::new();
    for f in &fields {
        let kind = if f.password { "password" } else { "text" };
        rows.push_str(&format!(
            "<p><label>{}<br><input name=\"{}\" type=\"{kind}\" autocomplete=\"off\" required size=\"48\"></label>\
             <br><small>for {}</small></p>",
            escape(&f.label),
            escape(&f.field),
            escape(&f.servers.join(", ")),
        ));
    }
    page(
        StatusCode::OK,
        "Your values",
        &format!(
            "<p>Your own servers need these, {}. switchboard keeps them for you alone (your agent never sees them).</p>\
             <form method=\"post\" action=\"/inputs\"><input type=\"hidden\" name=\"state\" value=\"{}\">{rows}\
             <p><button type=\"submit\">Keep</button></p></form>",
            escape(person.shown()),
            escape(&state)
        ),
    )
}

/// `POST /inputs`: keeps the values.
async fn give(State(pages): State<PersonPages>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, FORM_LIMIT).await else {
        return page(StatusCode::PAYLOAD_TOO_LARGE, "Too large", "The form is too large.");
    };
    let mut values: BTreeMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let Some(state) = values.remove("state") else { return refused(&PageRefusal::Unknown) };
    let person = match pages.open(&state, &parts, body.clone()).await {
        Opened::Here(person) => person,
        Opened::Answered(r) => return r,
    };
    match pages.gateway.give_inputs(&state, &person, &values).await {
        Ok(Ok(servers)) => page(
            StatusCode::OK,
            "Kept",
            &format!("Your values are kept; {} can start now. You can close this tab.", escape(&servers)),
        ),
        Ok(Err(why)) => page(StatusCode::BAD_REQUEST, "Not kept", &format!("{}.", escape(&why))),
        Err(refusal) => refused(&refusal),
    }
}

/// The `state` of a request's query.
fn query_state(parts: &Parts) -> Option<String> {
    let query = parts.uri.query()?;
    form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "state").map(|(_, v)| v.into_owned())
}

/// A browser not signed in: to the organisation's sign-in, and back to this page after. A
/// form posted without a sign-in goes back to its page (a `GET`), to be filled in again.
fn sign_in_first(parts: &Parts) -> Response {
    let back = match parts.method {
        axum::http::Method::GET => parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        _ => "/".to_string(),
    };
    let next: String = form_urlencoded::byte_serialize(back.as_bytes()).collect();
    no_store((StatusCode::SEE_OTHER, [(header::LOCATION, format!("/people/login?next={next}"))]).into_response())
}

fn refused(refusal: &PageRefusal) -> Response {
    let (status, title) = match refusal {
        PageRefusal::NotYours { .. } => (StatusCode::FORBIDDEN, "Not yours"),
        _ => (StatusCode::NOT_FOUND, "Unknown or expired"),
    };
    let text = refusal.to_string();
    let mut said = text.chars();
    let first = said.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
    page(status, title, &format!("<p>{}{}.</p>", escape(&first), escape(said.as_str())))
}

/// How a person's sign-in to their own upstream went.
fn outcome(outcome: Result<&str, &str>) -> Response {
    let status = if outcome.is_ok() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    no_store((status, Html(switchboard::auth::page(outcome).1)).into_response())
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title} · switchboard</title>\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <style>body{{font:16px system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}}</style></head>\
         <body><h1>{title}</h1>{body}</body></html>"
    );
    no_store((status, Html(html)).into_response())
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    response
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// `/inputs` and `/sign-in`, and with `callback` `/oauth/callback` too (`gateway --http`;
/// `serve`'s own callback tries its dashboard logins first, then [`PersonPages::finish_callback`]).
pub(crate) fn routes(pages: &PersonPages, callback_too: bool) -> axum::Router {
    let mut router = axum::Router::new()
        .route("/inputs", axum::routing::get(form).post(give))
        .route("/sign-in", axum::routing::get(sign_in));
    if callback_too {
        router = router.route("/oauth/callback", axum::routing::get(callback));
    }
    router.with_state(pages.clone())
}

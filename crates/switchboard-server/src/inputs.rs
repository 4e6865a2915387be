//! The page where a person gives the values only they have for their own servers
//! (`${input:ID}`: a token of theirs), which the gateway sent them to by URL
//! ([`switchboard_gateway::Gateway::inputs_asked`]): `GET /inputs?state=…` shows a form (a
//! secret's field does not show what is typed), `POST /inputs` keeps the values as theirs and
//! starts their servers that waited. The `state` is the page's only key (256 random bits, good
//! once, for 10 minutes): it is neither behind the token nor the caller's sign-in, since a
//! browser has neither.

use std::collections::BTreeMap;

use axum::extract::{Query, RawForm, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use switchboard_gateway::Gateway;

/// `?state=…`.
#[derive(Debug, serde::Deserialize)]
pub struct Asked {
    state: String,
}

/// `GET /inputs?state=…`: the form.
pub async fn form(State(gateway): State<Gateway>, Query(asked): Query<Asked>) -> Response {
    let Some(fields) = gateway.inputs_asked(&asked.state) else { return gone() };
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
            "<p>Your own servers need these. switchboard keeps them for you alone (your agent never sees them).</p>\
             <form method=\"post\" action=\"/inputs\"><input type=\"hidden\" name=\"state\" value=\"{}\">{rows}\
             <p><button type=\"submit\">Keep</button></p></form>",
            escape(&asked.state)
        ),
    )
}

/// `POST /inputs`: keeps the values.
pub async fn give(State(gateway): State<Gateway>, RawForm(body): RawForm) -> Response {
    let mut values: BTreeMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let Some(state) = values.remove("state") else { return gone() };
    match gateway.give_inputs(&state, &values).await {
        None => gone(),
        Some(Ok(servers)) => page(
            StatusCode::OK,
            "Kept",
            &format!("Your values are kept; {} can start now. You can close this tab.", escape(&servers)),
        ),
        Some(Err(why)) => page(StatusCode::BAD_REQUEST, "Not kept", &format!("{}.", escape(&why))),
    }
}

fn gone() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Unknown or expired",
        "This page is unknown or expired (over 10 minutes, or already used): ask your agent again.",
    )
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title} · switchboard</title>\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <style>body{{font:16px system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}}</style></head>\
         <body><h1>{title}</h1>{body}</body></html>"
    );
    let mut response = (status, Html(html)).into_response();
    response.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    response
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// `/inputs`, for a gateway whose callers sign in.
pub fn routes(gateway: &Gateway) -> axum::Router {
    axum::Router::new().route("/inputs", axum::routing::get(form).post(give)).with_state(gateway.clone())
}

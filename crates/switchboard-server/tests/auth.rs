//! OAuth through the API against a real authorization server (the Python `mcp` package's,
//! `tests/peers/py_oauth_server.py`): `POST /api/servers/{name}/auth` gives the URL, the browser
//! comes back to this server's `/oauth/callback`, the server connects; `DELETE` logs out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Served, error_code, fixture, python_oauth_peer, send};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_login_started_from_the_api_finishes_on_its_callback() {
    let (_peer, port) = python_oauth_peer(3600, &[]);
    let demo = json!({"command": fixture().display().to_string()});
    let s = Served::start(json!({"py": {"url": format!("http://127.0.0.1:{port}/mcp")}, "demo": demo})).await;
    let (_, body) = send(s.get("/api/servers/py")).await;
    assert_eq!(body["status"]["kind"], "needs_auth", "{body}");

    let (status, started) = send(s.post("/api/servers/py/auth", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let url = started["authorization_url"].as_str().unwrap().to_string();
    assert_eq!(started["redirect_uri"], format!("{}/oauth/callback", s.base));
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    // The "browser" follows the authorization server's redirect back to this server.
    let page = reqwest::get(&url).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let text = page.text().await.unwrap();
    assert!(text.contains("Logged in") && text.contains("py"), "{text}");
    let (_, body) = send(s.get("/api/servers/py")).await;
    assert_eq!(body["status"]["state"], "connected", "{body}");
    let (status, body) = send(s.post("/api/tools/py%2Fwhoami/call", json!({}))).await;
    assert_eq!((status, body["is_error"].as_bool()), (StatusCode::OK, Some(false)), "{body}");

    // The same callback again: that login is finished.
    let again = reqwest::get(format!("{}/oauth/callback?code=x&state=nope", s.base)).await.unwrap();
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert!(again.text().await.unwrap().contains("unknown or expired"));

    // Logout: the server asks for a login again.
    let request = s.client.delete(format!("{}/api/servers/py/auth", s.base)).bearer_auth(&s.token);
    let (status, body) = send(request).await;
    assert_eq!((status, body["had_tokens"].as_bool()), (StatusCode::OK, Some(true)), "{body}");
    assert_eq!(body["server"]["status"]["kind"], "needs_auth");
    // ... which the event stream says, with the reason.
    let events = s.events_of(0, "auth_needed", 1).await;
    let needed = events.lines().filter_map(|l| l.strip_prefix("data:")).find(|d| d.contains("auth_needed")).unwrap();
    let needed: serde_json::Value = serde_json::from_str(needed.trim()).unwrap();
    assert_eq!(needed["server"], "py", "{needed}");
    assert!(!needed["reason"].as_str().unwrap().is_empty(), "{needed}");
    // A server without a login.
    let (status, body) = send(s.post("/api/servers/demo/auth", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "no_login"));
    assert_eq!(send(s.post("/api/servers/nope/auth", json!({}))).await.0, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

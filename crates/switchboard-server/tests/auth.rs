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

/// A login started from the dashboard comes back where the server's config says: the loopback
/// callback on a chosen `oauth.callback_port` (listened on for that login, as the CLI does),
/// or a pre-registered `oauth.redirect_uri`; a stale tab's callback there is refused and the
/// login goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_dashboard_login_honours_the_callback_port_and_a_registered_redirect_uri() {
    let (_peer, port) = python_oauth_peer(3600, &[]);
    let (chosen, registered) = (common::free_port(), common::free_port());
    let url = format!("http://127.0.0.1:{port}/mcp");
    let s = Served::start(json!({
        "by_port": {"url": url, "oauth": {"callback_port": chosen}},
        "by_uri": {"url": url, "oauth": {"redirect_uri": format!("http://localhost:{registered}/auth/done")}},
    }))
    .await;
    for (server, expected) in [
        ("by_port", format!("http://127.0.0.1:{chosen}/oauth/callback")),
        ("by_uri", format!("http://localhost:{registered}/auth/done")),
    ] {
        let (status, started) = send(s.post(&format!("/api/servers/{server}/auth"), json!({}))).await;
        assert_eq!(status, StatusCode::OK, "{started}");
        assert_eq!(started["redirect_uri"], expected.as_str(), "{started}");
        let base = expected.split('?').next().unwrap();
        let stale = reqwest::get(format!("{base}?code=x&state=an-old-tab")).await.unwrap();
        assert_eq!(stale.status(), StatusCode::BAD_REQUEST);
        // The "browser" follows the authorization server's redirect to that address.
        let page = reqwest::get(started["authorization_url"].as_str().unwrap()).await.unwrap();
        let text = page.text().await.unwrap();
        assert!(text.contains("Logged in") && text.contains(server), "{text}");
        let (_, body) = send(s.get(&format!("/api/servers/{server}"))).await;
        assert_eq!(body["status"]["state"], "connected", "{server}: {body}");
    }
    s.shutdown().await;
}

/// Behind a TLS-terminating proxy the browser comes back to the address the proxy says it
/// forwarded (`X-Forwarded-Proto` / `-Host`, or RFC 7239 `Forwarded`), or to `--public-url`.
#[tokio::test(flavor = "multi_thread")]
async fn a_dashboard_login_behind_a_tls_proxy_comes_back_to_the_public_address() {
    let (_peer, port) = python_oauth_peer(3600, &[]);
    let servers = json!({"py": {"url": format!("http://127.0.0.1:{port}/mcp")}});
    let s = Served::start(servers.clone()).await;
    let request = s
        .post("/api/servers/py/auth", json!({}))
        .header("x-forwarded-proto", "https")
        .header("x-forwarded-host", "sb.example");
    let (status, started) = send(request).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(started["redirect_uri"], "https://sb.example/oauth/callback");
    let request = s.post("/api/servers/py/auth", json!({})).header("forwarded", "proto=https;host=mcp.example:8443");
    assert_eq!(send(request).await.1["redirect_uri"], "https://mcp.example:8443/oauth/callback");
    s.shutdown().await;
    let s = Served::start_with(servers, |o| o.public_url = Some("https://public.example/sb".into())).await;
    let (_, started) = send(s.post("/api/servers/py/auth", json!({}))).await;
    assert_eq!(started["redirect_uri"], "https://public.example/sb/oauth/callback");
    s.shutdown().await;
}

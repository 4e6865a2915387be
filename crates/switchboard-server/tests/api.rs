//! The HTTP API end to end: a hub with the fixture server (and one that cannot start), served
//! on a free loopback port, driven with an HTTP client. Every route, each error status, the
//! security checks, events with resume, and the OpenAPI description against the routes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Served, error_code, fixture, follow_events, next_event, send};
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use switchboard_server::{COOKIE, ServeOptions};

fn demo_and_broken() -> serde_json::Value {
    let demo = json!({"command": fixture().display().to_string(), "args": ["--name", "demo"]});
    json!({"demo": demo, "broken": {"command": "/nonexistent/switchboard-test-server"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_or_a_session_and_the_right_host_are_required() {
    let s = Served::start(demo_and_broken()).await;
    let url = format!("{}/api/servers", s.base);
    // No token.
    let response = s.client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    assert_eq!(error_code(&response.json().await.unwrap()), "unauthorized");
    // A wrong token.
    assert_eq!(send(s.client.get(&url).bearer_auth("nope")).await.0, StatusCode::UNAUTHORIZED);
    // The right token, but a Host that is not this server (DNS rebinding).
    let (status, body) = send(s.get("/api/servers").header("host", "evil.example")).await;
    assert_eq!((status, error_code(&body)), (StatusCode::MISDIRECTED_REQUEST, "bad_host"));
    assert_eq!(send(s.get("/api/servers")).await.0, StatusCode::OK);
    // The token is kept private in the data folder.
    let token_file = switchboard_testkit::data_dir(s.dir.path()).join("serve-token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let served: Value =
        serde_json::from_slice(&std::fs::read(switchboard_testkit::data_dir(s.dir.path()).join("serve.json")).unwrap())
            .unwrap();
    assert_eq!(served["url"], s.base.replace("localhost", "127.0.0.1"));

    // The one-time login URL: a session cookie, then the URL is spent.
    let login = s.client.get(&s.login_url).send().await.unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!s.login_url.contains(&s.token), "the token never goes into a URL");
    let session = cookie.split(';').next().unwrap().to_string();
    assert!(session.starts_with(COOKIE));
    assert_eq!(send(s.client.get(&url).header("cookie", &session)).await.0, StatusCode::OK);
    // The cookie from a page of another origin does not work (CSRF).
    let foreign = s
        .client
        .post(format!("{}/api/servers/demo/revalidate", s.base))
        .header("cookie", &session)
        .header("origin", "http://evil.example");
    assert_eq!(send(foreign).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(send(s.client.get(&s.login_url)).await.0, StatusCode::UNAUTHORIZED, "a login URL works once");
    // A new link, asked for with the token (or a session), works once too.
    assert_eq!(send(s.client.post(format!("{}/api/login-links", s.base))).await.0, StatusCode::UNAUTHORIZED);
    let (status, link) = send(s.post("/api/login-links", json!({}))).await;
    assert_eq!((status, link["expires_in"].as_u64()), (StatusCode::OK, Some(600)), "{link}");
    let url = link["login_url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/login?code=", s.base)), "{url}");
    assert_eq!(s.client.get(url).send().await.unwrap().status(), StatusCode::SEE_OTHER);
    assert_eq!(s.client.get(url).send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn answering_the_network_needs_allow_remote_and_names_its_hosts() {
    // Not without --allow-remote.
    let dir = tempfile::tempdir().unwrap();
    let hub = switchboard::Hub::start(
        &switchboard::config::LoadedConfig::default(),
        switchboard::HubOptions::new(switchboard::Paths::new(dir.path().join("u.json"), dir.path().join("d"))),
    );
    let mut options = ServeOptions::new(dir.path().join("d"));
    (options.bind, options.port) = ("0.0.0.0".parse().unwrap(), 0);
    let Err(refused) = switchboard_server::bind(&hub, &options).await else { panic!("0.0.0.0 without allow_remote") };
    assert!(refused.to_string().contains("--allow-remote"), "{refused}");
    hub.shutdown().await;

    let s = Served::start_with(demo_and_broken(), |o| {
        (o.bind, o.allow_remote, o.hosts) = ("0.0.0.0".parse().unwrap(), true, vec!["box.lan".into()]);
    })
    .await;
    let port = s.base.rsplit(':').next().unwrap().to_string();
    assert!(s.login_url.starts_with(&format!("http://box.lan:{port}/login?code=")), "{}", s.login_url);
    // The listed name and any address literal (what a remote browser sends) are this server...
    for host in [format!("box.lan:{port}"), format!("10.9.8.7:{port}"), format!("[fd00::7]:{port}")] {
        assert_eq!(send(s.get("/api/servers").header("host", &host)).await.0, StatusCode::OK, "{host}");
    }
    // ...other names are not (DNS rebinding), nor another port.
    for host in [format!("evil.example:{port}"), "10.9.8.7:1".to_string()] {
        let (status, body) = send(s.get("/api/servers").header("host", &host)).await;
        assert_eq!((status, error_code(&body)), (StatusCode::MISDIRECTED_REQUEST, "bad_host"), "{host}");
    }
    // A session cookie used from the page of that remote address works; from another, not.
    let login = s.client.get(s.login_url.replace("box.lan", "127.0.0.1")).header("host", format!("10.9.8.7:{port}"));
    let cookie = login.send().await.unwrap().headers()["set-cookie"].to_str().unwrap().to_string();
    let session = cookie.split(';').next().unwrap().to_string();
    let from = |origin: &str| {
        s.client
            .get(format!("{}/api/servers", s.base))
            .header("host", format!("10.9.8.7:{port}"))
            .header("cookie", &session)
            .header("origin", origin)
    };
    assert_eq!(send(from(&format!("http://10.9.8.7:{port}"))).await.0, StatusCode::OK);
    assert_eq!(send(from(&format!("http://box.lan:{port}"))).await.0, StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cors_only_for_the_origins_allowed_and_only_with_the_token() {
    let preflight = |s: &Served, origin: &str| {
        s.client
            .request(reqwest::Method::OPTIONS, format!("{}/api/servers", s.base))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
    };
    // None configured: no CORS at all.
    let s = Served::start(demo_and_broken()).await;
    let response = preflight(&s, "https://app.example").send().await.unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none());
    let response = s.get("/api/servers").header("origin", "https://app.example").send().await.unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none());
    s.shutdown().await;

    let s = Served::start_with(demo_and_broken(), |o| o.cors_origins = vec!["https://app.example".into()]).await;
    let response = preflight(&s, "https://app.example").send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(response.headers()["access-control-allow-origin"], "https://app.example");
    let allowed = response.headers()["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(allowed.contains("authorization"), "{allowed}");
    assert!(response.headers().get("access-control-allow-credentials").is_none(), "no cookies across origins");
    let other = preflight(&s, "https://evil.example").send().await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // The real request still needs the token.
    let response = s.get("/api/servers").header("origin", "https://app.example").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["access-control-allow-origin"], "https://app.example");
    let anonymous = s.client.get(format!("{}/api/servers", s.base)).header("origin", "https://app.example");
    assert_eq!(anonymous.send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    s.shutdown().await;

    // Not an origin: refused at start.
    let dir = tempfile::tempdir().unwrap();
    let hub = switchboard::Hub::start(
        &switchboard::config::LoadedConfig::default(),
        switchboard::HubOptions::new(switchboard::Paths::new(dir.path().join("u.json"), dir.path().join("d"))),
    );
    for bad in ["app.example", "https://app.example/path", "ftp://x"] {
        let mut options = ServeOptions::new(dir.path().join("d"));
        (options.port, options.cors_origins) = (0, vec![bad.into()]);
        let Err(e) = switchboard_server::bind(&hub, &options).await else { panic!("{bad} accepted") };
        assert!(e.to_string().contains("not a web origin"), "{e}");
    }
    hub.shutdown().await;
}

/// The official npm server-everything through the API: tools, a call with streamed progress,
/// an image result, resources (paged by the server), a prompt.
#[tokio::test(flavor = "multi_thread")]
async fn server_everything_through_the_api() {
    let everything = json!({"command": "node", "args": [common::node_peer("server-everything"), "stdio"]});
    let s = Served::start(json!({"everything": everything})).await;
    let (status, body) = send(s.get("/api/servers/everything")).await;
    assert_eq!((status, body["status"]["state"].as_str()), (StatusCode::OK, Some("connected")), "{body}");
    let tools: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["tool"].as_str()).collect();
    assert!(tools.contains(&"echo") && tools.contains(&"get-tiny-image"), "{tools:?}");

    let (status, body) =
        send(s.post("/api/tools/mcp__everything__echo/call", json!({"arguments": {"message": "over http"}}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["model"]["blocks"][0]["text"].as_str().unwrap().contains("over http"), "{body}");

    let response = s
        .post(
            "/api/tools/mcp__everything__trigger-long-running-operation/call",
            json!({"arguments": {"duration": 1, "steps": 4}}),
        )
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(text.matches("event: progress").count() >= 3, "{text}");
    assert!(text.contains("event: result"), "{text}");

    let (_, body) = send(s.post("/api/tools/mcp__everything__get-tiny-image/call", json!({}))).await;
    let blocks = body["model"]["blocks"].as_array().unwrap();
    assert!(blocks.iter().any(|b| b["data_url"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,"))));

    let (_, body) = send(s.get("/api/resources?server=everything")).await;
    let resources = body["resources"].as_array().unwrap();
    assert!(resources.len() >= 7, "every page followed: {}", resources.len());
    let uri = resources[0]["resource"]["uri"].as_str().unwrap();
    let url = format!("/api/resources/read?server=everything&uri={}", uri.replace(':', "%3A").replace('/', "%2F"));
    let (status, body) = send(s.get(&url)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["contents"][0]["uri"] == uri, "{body}");
    let (status, body) = send(s.post("/api/prompts/everything/simple-prompt", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body["messages"].as_array().unwrap().is_empty(), "{body}");

    // Completion: a prompt's argument from what is typed, the next one from the first's value,
    // a template's variable.
    let complete = |body: serde_json::Value| send(s.post("/api/complete", body));
    let (status, body) = complete(
        json!({"server": "everything", "prompt": "completable-prompt", "argument": "department", "value": "Eng"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["values"], json!(["Engineering"]), "{body}");
    assert_eq!(body["supported"], true);
    let (_, body) =
        complete(json!({"server": "everything", "prompt": "completable-prompt", "argument": "name", "value": "",
        "context": {"department": "Sales"}}))
        .await;
    assert_eq!(body["values"], json!(["David", "Eve", "Frank"]), "the department chosen decides: {body}");
    let (_, body) =
        complete(json!({"server": "everything", "resource_template": "demo://resource/dynamic/text/{resourceId}",
        "argument": "resourceId", "value": "1"}))
        .await;
    assert!(body["values"].as_array().unwrap().iter().any(|v| v == "1"), "{body}");
    let (status, body) = complete(json!({"server": "everything", "argument": "x"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    let (status, body) = complete(json!({"server": "nope", "prompt": "p", "argument": "x"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_server"), "{body}");
    s.shutdown().await;
}

/// server-everything asks for a completion (`trigger-sampling-request`): the person reads it
/// through the API and sends the reply, which the tool returns; declined, the tool says so;
/// with nobody following the events, it is refused at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_request_for_a_completion_is_answered_by_the_person() {
    let everything = json!({"command": "node", "args": [common::node_peer("server-everything"), "stdio"]});
    let s = Served::start(json!({"everything": everything})).await;
    let call = |prompt: &str| {
        let request = s.post(
            "/api/tools/mcp__everything__trigger-sampling-request/call",
            json!({"arguments": {"prompt": prompt, "maxTokens": 40}}),
        );
        tokio::spawn(send(request))
    };
    let (status, body) = call("nobody").await.unwrap();
    let text = body.to_string();
    assert!(text.contains("nobody follows"), "refused at once: {status} {body}");

    let mut events = follow_events(&s).await;
    let asked = call("What is the capital of France?");
    let pending = next_event(&mut events, "sampling_requested").await;
    assert_eq!(pending["server"], "everything", "{pending}");
    let said = pending["request"]["messages"].to_string();
    assert!(said.contains("What is the capital of France?"), "{pending}");
    assert_eq!(pending["request"]["maxTokens"], 40, "{pending}");
    let id = pending["id"].as_u64().unwrap();
    assert_eq!(send(s.get("/api/sampling")).await.1["requests"][0]["id"], id);
    let answer = |id: u64, body: serde_json::Value| send(s.post(&format!("/api/sampling/{id}"), body));
    let (status, body) = answer(id, json!({"action": "send"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    assert_eq!(answer(id, json!({"action": "send", "text": "Paris.", "model": "me"})).await.0, StatusCode::NO_CONTENT);
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.to_string().contains("Paris."), "the server got the reply: {body}");
    let settled = next_event(&mut events, "sampling_settled").await;
    assert_eq!(settled, json!({"type": "sampling_settled", "id": id, "action": "send"}));
    let (status, body) = answer(id, json!({"action": "decline"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_sampling"), "{body}");

    let asked = call("Say no");
    let id = next_event(&mut events, "sampling_requested").await["id"].as_u64().unwrap();
    assert_eq!(answer(id, json!({"action": "decline"})).await.0, StatusCode::NO_CONTENT);
    let (_, body) = asked.await.unwrap();
    assert!(body.to_string().contains("declined"), "{body}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_completion_is_not_asked() {
    let s = Served::start(demo_and_broken()).await;
    let (status, body) =
        send(s.post("/api/complete", json!({"server": "demo", "prompt": "greet", "argument": "who", "value": "A"})))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"values": [], "total": null, "has_more": false, "supported": false}));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_tools_resources_and_prompts_with_their_errors() {
    let s = Served::start(demo_and_broken()).await;
    let (status, body) = send(s.get("/api/servers")).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = body["servers"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2, "{body}");
    let (status, body) = send(s.get("/api/servers/demo")).await;
    assert_eq!((status, body["status"]["state"].as_str()), (StatusCode::OK, Some("connected")));
    assert_eq!(body["tools"].as_array().unwrap().len(), 14);
    let (status, body) = send(s.get("/api/servers/broken")).await;
    assert_eq!((status, body["status"]["kind"].as_str()), (StatusCode::OK, Some("process_start_failed")));
    let (status, body) = send(s.get("/api/servers/nope")).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_server"));

    // Tools in each format; a bad format or server is refused.
    let (status, body) = send(s.get("/api/tools?server=demo")).await;
    assert_eq!((status, body["tools"].as_array().unwrap().len()), (StatusCode::OK, 14));
    assert_eq!(body["tools"][0]["server"], "demo");
    let (_, body) = send(s.get("/api/tools?format=openai")).await;
    assert_eq!(body["tools"][0]["type"], "function");
    let (_, body) = send(s.get("/api/tools?format=anthropic")).await;
    assert!(body["tools"][0]["input_schema"].is_object());
    assert_eq!(send(s.get("/api/tools?format=yaml")).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(send(s.get("/api/tools?server=nope")).await.0, StatusCode::NOT_FOUND);

    // Search: ranked words (the description's "sum" finds `add`), `select:`, `/regex/`.
    let (status, body) = send(s.get("/api/tools?search=sum%20of%20two%20numbers&limit=3")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["tools"][0]["name"], "mcp__demo__add", "{body}");
    assert!(body["tools"][0]["score"].as_f64().is_some_and(|s| s > 0.0), "{body}");
    assert!(body["tools"].as_array().unwrap().len() <= 3);
    let (_, body) = send(s.get("/api/tools?search=select:demo/echo,mcp__demo__big&format=openai")).await;
    let names: Vec<&str> =
        body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(names, ["mcp__demo__echo", "mcp__demo__big"]);
    let (_, body) = send(s.get("/api/tools?search=%2F%5E(crash%7Cfail)%24%2F")).await;
    let names: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["tool"].as_str()).collect();
    assert_eq!(names, ["crash", "fail"]);
    let (status, body) = send(s.get("/api/tools?search=%2F(%2F")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("not a regular expression"), "{body}");
    assert_eq!(send(s.get("/api/tools?search=echo&limit=0")).await.0, StatusCode::BAD_REQUEST);

    // Provider formats: what each changed and left out is said beside the tools.
    let (status, body) = send(s.get("/api/tools?format=gemini&server=demo")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let add = body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__demo__add").unwrap();
    assert_eq!(add["parameters"]["properties"]["a"]["type"], "NUMBER", "{body}");
    assert_eq!(body["skipped"], json!([]));
    let (_, body) = send(s.get("/api/tools?format=openai&strict=true&description_cap=10")).await;
    let echo = body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__demo__echo").unwrap();
    assert_eq!(echo["function"]["strict"], true);
    assert!(echo["function"]["description"].as_str().unwrap().chars().count() <= 10, "{echo}");
    assert!(body["changed"].as_array().unwrap().iter().any(|c| c["name"] == "mcp__demo__echo"), "{body}");
    let (_, body) = send(s.get("/api/tools?format=anthropic&defer=true")).await;
    assert_eq!(body["tools"][0]["type"], "tool_search_tool_bm25_20251119");
    assert_eq!(body["tools"][1]["defer_loading"], true);
    for bad in [
        "/api/tools?format=anthropic&strict=true",
        "/api/tools?format=openai&defer=true",
        "/api/tools?description_cap=5",
    ] {
        assert_eq!(send(s.get(bad)).await.0, StatusCode::BAD_REQUEST, "{bad}");
    }

    // Calls.
    let (status, body) = send(s.post("/api/tools/demo%2Fecho/call", json!({"arguments": {"text": "hi"}}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!((body["server"].as_str(), body["is_error"].as_bool()), (Some("demo"), Some(false)));
    assert_eq!(body["model"]["blocks"][0]["text"], "hi");
    let (status, body) = send(s.post("/api/tools/mcp__demo__fail/call", json!({}))).await;
    assert_eq!((status, body["is_error"].as_bool()), (StatusCode::OK, Some(true)), "a tool error is a result");
    let (status, body) = send(s.post("/api/tools/mcp__demo__nothing/call", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_tool"));
    let (status, body) = send(s.post("/api/tools/mcp__broken__x/call", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "not_connected"));
    let (status, body) = send(
        s.post("/api/tools/mcp__demo__slow/call", json!({"arguments": {"ms": 2000, "steps": 1}, "timeout_ms": 200})),
    )
    .await;
    assert_eq!((status, error_code(&body)), (StatusCode::GATEWAY_TIMEOUT, "timeout"));
    let (status, body) = send(s.post("/api/tools/mcp__demo__echo/call", json!({"argumentz": {}}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let raw = s
        .client
        .post(format!("{}/api/tools/mcp__demo__echo/call", s.base))
        .bearer_auth(&s.token)
        .header("content-type", "application/json")
        .body("{not json");
    assert_eq!(send(raw).await.0, StatusCode::BAD_REQUEST);
    let huge = json!({"arguments": {"text": "x".repeat(2 * 1024 * 1024)}});
    let response = s.post("/api/tools/mcp__demo__echo/call", huge).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(response.headers()["connection"], "close", "the unread body ends the connection");
    let (status, body) = send(s.post("/api/tools/mcp__demo__crash/call", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_GATEWAY, "server_exited"));

    // Resources and prompts.
    let (_, body) = send(s.get("/api/resources")).await;
    assert!(body["resources"].as_array().unwrap().iter().any(|r| r["resource"]["uri"] == "fixture://hello"), "{body}");
    assert_eq!(body["resource_templates"][0]["template"]["uriTemplate"], "fixture://item/{id}");
    let (status, body) = send(s.get("/api/resources/read?server=demo&uri=fixture%3A%2F%2Fhello")).await;
    assert_eq!((status, body["contents"][0]["text"].as_str()), (StatusCode::OK, Some("hello resource")), "{body}");
    assert_eq!(send(s.get("/api/resources/read?server=demo")).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(send(s.get("/api/resources/read?server=nope&uri=x")).await.0, StatusCode::NOT_FOUND);
    let (status, body) = send(s.get("/api/resources/read?server=demo&uri=fixture%3A%2F%2Fmissing")).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_resource"), "the server's -32002");
    let (_, body) = send(s.get("/api/prompts")).await;
    assert_eq!(body["prompts"][0]["prompt"]["name"], "greet");
    // Filtered by server: a known one, one with none (not connected), an unknown one.
    let (_, body) = send(s.get("/api/resources?server=demo")).await;
    assert!(body["resources"].as_array().unwrap().iter().all(|r| r["server"] == "demo"), "{body}");
    assert!(!body["resources"].as_array().unwrap().is_empty() && body["resource_templates"][0]["server"] == "demo");
    let (status, body) = send(s.get("/api/prompts?server=broken")).await;
    assert_eq!((status, body["prompts"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{body}");
    let (status, body) = send(s.get("/api/prompts?server=nope")).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_server"));
    assert_eq!(send(s.get("/api/resources?server=nope")).await.0, StatusCode::NOT_FOUND);
    let (status, body) = send(s.post("/api/prompts/demo/greet", json!({"arguments": {"who": "Ada"}}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.to_string().contains("Ada"), "{body}");
    assert_eq!(send(s.post("/api/prompts/demo/nothing", json!({}))).await.0, StatusCode::NOT_FOUND);
    let (status, body) = send(s.post("/api/prompts/demo/greet", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "invalid_params"), "the server's -32602: {body}");
    assert_eq!(send(s.post("/api/prompts/nope/greet", json!({}))).await.0, StatusCode::NOT_FOUND);
    assert_eq!(send(s.get("/api/nothing-here")).await.0, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connect_disconnect_revalidate_and_live_events_with_resume() {
    let s = Served::start(demo_and_broken()).await;
    let events = s.get("/api/events").send().await.unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    assert!(events.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut stream = events.bytes_stream();

    let (status, body) = send(s.post("/api/servers/demo/disconnect", json!({}))).await;
    assert_eq!((status, body["server"]["status"]["state"].as_str()), (StatusCode::OK, Some("stopped")));
    let (status, body) = send(s.post("/api/tools/mcp__demo__echo/call", json!({"arguments": {"text": "x"}}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "not_connected"), "a stopped server stays stopped");
    let (status, body) = send(s.post("/api/servers/demo/connect", json!({}))).await;
    assert_eq!((status, body["server"]["status"]["state"].as_str()), (StatusCode::OK, Some("connected")));
    let (status, body) = send(s.post("/api/servers/demo/revalidate", json!({}))).await;
    assert_eq!((status, body["server"]["status"]["state"].as_str()), (StatusCode::OK, Some("connected")));
    let (status, body) = send(s.post("/api/servers/broken/connect", json!({}))).await;
    assert_eq!((status, body["server"]["status"]["state"].as_str()), (StatusCode::OK, Some("failed")));
    assert_eq!(send(s.post("/api/servers/nope/connect", json!({}))).await.0, StatusCode::NOT_FOUND);

    // The live stream saw the status changes, with ids.
    let mut text = String::new();
    let mut ids = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ids.len() < 3 {
        let chunk = tokio::time::timeout_at(deadline, stream.next()).await.expect("events").unwrap().unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
        ids = text.lines().filter_map(|l| l.strip_prefix("id:")).map(|i| i.trim().parse::<u64>().unwrap()).collect();
    }
    assert!(text.contains("event: status_changed") && text.contains("\"state\":\"stopped\""), "{text}");
    assert!(ids.windows(2).all(|w| w[1] > w[0]), "{ids:?}");
    drop(stream);

    // Reconnecting with Last-Event-ID replays what came after it.
    let first = ids[0];
    let resumed = s.get("/api/events").header("last-event-id", first.to_string()).send().await.unwrap();
    let mut stream = resumed.bytes_stream();
    let mut replay = String::new();
    while !replay.contains(&format!("id: {}", ids[2])) && !replay.contains(&format!("id:{}", ids[2])) {
        let chunk =
            tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("replay").unwrap().unwrap();
        replay.push_str(&String::from_utf8_lossy(&chunk));
    }
    let replayed: Vec<u64> =
        replay.lines().filter_map(|l| l.strip_prefix("id:")).map(|i| i.trim().parse().unwrap()).collect();
    assert_eq!(replayed.first(), Some(&(first + 1)), "{replay}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_streams_its_progress_before_the_result() {
    let s = Served::start(demo_and_broken()).await;
    let response = s
        .post("/api/tools/mcp__demo__slow/call", json!({"arguments": {"ms": 50, "steps": 3}}))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let progress = text.matches("event: progress").count();
    assert_eq!(progress, 3, "{text}");
    let result = text.find("event: result").expect("a result event");
    assert!(text.rfind("event: progress").unwrap() < result, "{text}");
    assert!(text.contains("slept 3 x 50 ms"), "{text}");
    // The hub's event stream carried the same progress, named by server, tool and call.
    let events = s.events_of(0, "progress", 3).await;
    let data: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).unwrap())
        .filter(|v| v["type"] == "progress")
        .collect();
    assert_eq!(data.len(), 3, "{events}");
    assert!(data.iter().all(|v| v["server"] == "demo" && v["tool"] == "mcp__demo__slow"), "{events}");
    assert!(data.iter().all(|v| v["call"] == data[0]["call"]), "one call: {events}");
    assert_eq!(data[2]["progress"], 3.0, "{events}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_description_matches_the_routes() {
    let s = Served::start(demo_and_broken()).await;
    let (status, doc) = send(s.get("/api/openapi.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/api/servers", "get"),
        ("/api/servers", "post"),
        ("/api/servers/{name}", "delete"),
        ("/api/servers/{name}/trust", "post"),
        ("/api/servers/{name}", "get"),
        ("/api/servers/{name}/connect", "post"),
        ("/api/servers/{name}/disconnect", "post"),
        ("/api/servers/{name}/revalidate", "post"),
        ("/api/servers/{name}/auth", "post"),
        ("/api/servers/{name}/auth", "delete"),
        ("/api/tools", "get"),
        ("/api/tools/{name}/call", "post"),
        ("/api/resources", "get"),
        ("/api/resources/read", "get"),
        ("/api/prompts", "get"),
        ("/api/prompts/{server}/{name}", "post"),
        ("/api/events", "get"),
        ("/api/login-links", "post"),
        ("/api/elicitations", "get"),
        ("/api/elicitations/{id}", "post"),
        ("/api/approvals", "get"),
        ("/api/approvals/{id}", "post"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing from the description");
    }
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_are_added_removed_and_trusted_at_run_time() {
    let s = Served::start(demo_and_broken()).await;
    let fixture_entry = |name: &str| json!({"command": fixture().display().to_string(), "args": ["--name", name]});
    let (status, body) = send(s.post("/api/servers", json!({"name": "extra", "config": fixture_entry("extra")}))).await;
    assert_eq!(
        (status, body["server"]["status"]["state"].as_str()),
        (StatusCode::CREATED, Some("connected")),
        "{body}"
    );
    let (_, body) = send(s.get("/api/tools?server=extra")).await;
    assert_eq!(body["tools"].as_array().unwrap().len(), 14);
    let (status, body) = send(s.post("/api/servers", json!({"name": "extra", "config": fixture_entry("extra")}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "exists"));
    let (status, body) = send(s.post("/api/servers", json!({"name": "bad", "config": {"command": 5}}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    assert!(body["error"]["message"].as_str().unwrap().contains("command"), "{body}");
    let (status, body) =
        send(s.post("/api/servers", json!({"name": "odd", "config": {"command": "x", "colour": 1}}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"].as_str().unwrap().contains("colour"), "{body}");
    assert_eq!(send(s.post("/api/servers", json!({"config": {}}))).await.0, StatusCode::BAD_REQUEST);

    // Persisted to the user's file; removed from it on request.
    let user_file = s.dir.path().join("user.json");
    let (status, _) =
        send(s.post("/api/servers", json!({"name": "kept", "config": fixture_entry("kept"), "persist": "user"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(std::fs::read_to_string(&user_file).unwrap().contains("\"kept\""));
    // A project server waits for trust, and starts once trusted.
    let (status, body) =
        send(s.post("/api/servers", json!({"name": "proj", "config": fixture_entry("proj"), "persist": "project"})))
            .await;
    assert_eq!(
        (status, body["server"]["status"]["state"].as_str()),
        (StatusCode::CREATED, Some("untrusted")),
        "{body}"
    );
    assert!(s.dir.path().join("switchboard.json").exists());
    let (status, body) = send(s.post("/api/servers/proj/trust", json!({}))).await;
    assert_eq!((status, body["server"]["status"]["state"].as_str()), (StatusCode::OK, Some("connected")), "{body}");
    // A trust store that cannot be read is the host's failure (500, naming the file), and
    // the server stays untrusted.
    let (status, _) =
        send(s.post("/api/servers", json!({"name": "proj2", "config": fixture_entry("proj2"), "persist": "project"})))
            .await;
    assert_eq!(status, StatusCode::CREATED);
    let trust_file = switchboard_testkit::data_dir(s.dir.path()).join("trust.json");
    let kept_trust = std::fs::read(&trust_file).unwrap();
    std::fs::write(&trust_file, "{ not json").unwrap();
    let (status, body) = send(s.post("/api/servers/proj2/trust", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::INTERNAL_SERVER_ERROR, "storage_failed"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("trust.json"), "{body}");
    let (_, body) = send(s.get("/api/servers/proj2")).await;
    assert_eq!(body["status"]["state"], "untrusted", "{body}");
    std::fs::write(&trust_file, kept_trust).unwrap();
    let (status, body) = send(s.post("/api/servers/kept/trust", json!({}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "user servers need no trust");

    // Removal ends the server and drops its tools.
    let delete = |name: &str, query: &str| {
        s.client.delete(format!("{}/api/servers/{name}{query}", s.base)).bearer_auth(&s.token)
    };
    assert_eq!(delete("extra", "").send().await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(send(s.get("/api/servers/extra")).await.0, StatusCode::NOT_FOUND);
    let (_, body) = send(s.get("/api/tools")).await;
    assert!(body["tools"].as_array().unwrap().iter().all(|t| t["server"] != "extra"));
    assert_eq!(delete("kept", "?from_file=true").send().await.unwrap().status(), StatusCode::NO_CONTENT);
    assert!(!std::fs::read_to_string(&user_file).unwrap().contains("\"kept\""));
    assert_eq!(delete("nope", "").send().await.unwrap().status(), StatusCode::NOT_FOUND);
    s.shutdown().await;
}

/// A server's question (elicitation) reaches whoever follows the events and is answered with
/// `POST /api/elicitations/{id}`, checked against its schema; with nobody following, it is
/// declined at once. The fixture's `ask` and server-everything's `trigger-elicitation-request`.
#[tokio::test(flavor = "multi_thread")]
async fn servers_questions_are_answered_through_the_api() {
    let everything = json!({"command": "node", "args": [common::node_peer("server-everything"), "stdio"]});
    let mut servers = demo_and_broken();
    servers["everything"] = everything;
    let s = Served::start(servers).await;
    let call = |tool: &str| {
        let request = s.post(&format!("/api/tools/{tool}/call"), json!({}));
        tokio::spawn(send(request))
    };

    // Nobody to ask: declined, no question left behind.
    let (status, body) = call("mcp__demo__ask").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["model"]["blocks"][0]["text"].as_str().unwrap().starts_with("decline"), "{body}");
    assert_eq!(send(s.get("/api/elicitations")).await.1["elicitations"], json!([]));

    let mut events = follow_events(&s).await;
    let asked = call("mcp__demo__ask");
    let question = next_event(&mut events, "elicitation_requested").await;
    assert_eq!((question["server"].as_str(), question["message"].as_str()), (Some("demo"), Some("Who is calling?")));
    assert_eq!(question["schema"]["required"], json!(["name"]), "{question}");
    let id = question["id"].as_u64().unwrap();
    let (_, list) = send(s.get("/api/elicitations")).await;
    assert_eq!(list["elicitations"][0]["id"], id, "{list}");
    let answer = |id: u64, body: Value| send(s.post(&format!("/api/elicitations/{id}"), body));

    // Answers that do not fit are refused, and the question still waits.
    let (status, body) = answer(id, json!({"action": "accept", "content": {"age": "old"}})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "invalid_answer"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`name` is required") && message.contains("`age` must be of type integer"), "{body}");
    let (status, body) = answer(id, json!({"action": "decline", "content": {}})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    let (status, body) = answer(id, json!({"action": "maybe"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = answer(id + 100, json!({"action": "cancel"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_question"), "{body}");
    let (status, body) = send(s.post("/api/elicitations/-1", json!({"action": "cancel"}))).await;
    assert_eq!((status, error_code(&body)), (StatusCode::NOT_FOUND, "unknown_question"), "{body}");

    let (status, body) = answer(id, json!({"action": "accept", "content": {"name": "Ada", "age": 36}})).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let settled = next_event(&mut events, "elicitation_settled").await;
    assert_eq!(settled, json!({"type": "elicitation_settled", "id": id, "action": "accept"}));
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = body["model"]["blocks"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("accept") && text.contains("\"name\":\"Ada\"") && text.contains("\"age\":36"), "{text}");
    assert_eq!(answer(id, json!({"action": "cancel"})).await.0, StatusCode::NOT_FOUND, "answered once");
    assert_eq!(send(s.get("/api/elicitations")).await.1["elicitations"], json!([]));

    // server-everything offers its elicitation tool only to a client that declares the
    // capability; its schema has every kind of field.
    let asked = call("mcp__everything__trigger-elicitation-request");
    let question = next_event(&mut events, "elicitation_requested").await;
    assert_eq!(question["server"], "everything", "{question}");
    let properties = question["schema"]["properties"].as_object().unwrap();
    assert!(properties.contains_key("untitledMultipleSelectEnum"), "{question}");
    let id = question["id"].as_u64().unwrap();
    let (status, body) = answer(id, json!({"action": "accept", "content": {"integer": 1000}})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "invalid_answer"), "{body}");
    let content = json!({"name": "Ada Lovelace", "check": true, "integer": 7, "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Piano", "Violin"], "titledSingleSelectEnum": "hero-3",
        "titledMultipleSelectEnum": ["fish-2"], "email": "ada@example.org", "birthdate": "1815-12-10"});
    let (status, body) = answer(id, json!({"action": "accept", "content": content})).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = body["model"]["blocks"].to_string();
    assert!(text.contains("Ada Lovelace") && text.contains("Violin") && text.contains("hero-3"), "{text}");

    // URL mode: server-everything asks the person to open a page; `accept` is the consent and
    // carries no values. A URL that is not http(s) is never put to the person.
    let url_call = |url: &str| {
        let request =
            s.post("/api/tools/mcp__everything__trigger-url-elicitation/call", json!({"arguments": {"url": url}}));
        tokio::spawn(send(request))
    };
    let asked = url_call("https://example.com/consent?step=2");
    let question = next_event(&mut events, "elicitation_requested").await;
    assert_eq!(
        (question["url"].as_str(), &question["schema"]),
        (Some("https://example.com/consent?step=2"), &Value::Null),
        "{question}"
    );
    let id = question["id"].as_u64().unwrap();
    let (status, body) = answer(id, json!({"action": "accept", "content": {"ok": true}})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::BAD_REQUEST, "invalid_answer"), "{body}");
    assert_eq!(answer(id, json!({"action": "accept"})).await.0, StatusCode::NO_CONTENT);
    let (_, body) = asked.await.unwrap();
    let text = body["model"]["blocks"].to_string();
    assert!(text.contains("completed the URL elicitation") && text.contains("example.com/consent"), "{text}");
    let (_, body) = url_call("javascript:alert(1)").await.unwrap();
    assert!(body["model"]["blocks"].to_string().contains("declined to open"), "{body}");
    // The error path (-32042): the call is refused with the pages to open, then works.
    let error_path = json!({"arguments": {"url": "https://example.com/other", "errorPath": true}});
    let (status, body) =
        send(s.post("/api/tools/mcp__everything__trigger-url-elicitation/call", error_path.clone())).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "url_required"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("open https://modelcontextprotocol.io (Open this link"), "{message}");
    let again = tokio::spawn(send(s.post("/api/tools/mcp__everything__trigger-url-elicitation/call", error_path)));
    let id = next_event(&mut events, "elicitation_requested").await["id"].as_u64().unwrap();
    assert_eq!(answer(id, json!({"action": "accept"})).await.0, StatusCode::NO_CONTENT);
    assert_eq!(again.await.unwrap().0, StatusCode::OK, "the call again goes through");

    // A question from a server that goes away is taken back.
    let asked = call("mcp__demo__ask");
    let id = next_event(&mut events, "elicitation_requested").await["id"].as_u64().unwrap();
    assert_eq!(send(s.post("/api/servers/demo/disconnect", json!({}))).await.0, StatusCode::OK);
    let settled = next_event(&mut events, "elicitation_settled").await;
    assert_eq!(settled, json!({"type": "elicitation_settled", "id": id, "action": "withdrawn"}));
    assert_eq!(send(s.get("/api/elicitations")).await.1["elicitations"], json!([]));
    let (status, _) = asked.await.unwrap();
    assert!(status.is_server_error() || status == StatusCode::CONFLICT, "the call ended with its server: {status}");
    assert_eq!(send(s.post("/api/servers/demo/connect", json!({}))).await.0, StatusCode::OK);

    // Declining through the API reaches the server as `decline`.
    let asked = call("mcp__demo__ask");
    let id = next_event(&mut events, "elicitation_requested").await["id"].as_u64().unwrap();
    assert_eq!(answer(id, json!({"action": "decline"})).await.0, StatusCode::NO_CONTENT);
    let (_, body) = asked.await.unwrap();
    assert!(body["model"]["blocks"][0]["text"].as_str().unwrap().starts_with("decline"), "{body}");
    s.shutdown().await;
}

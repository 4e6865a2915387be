//! A client's trace through the gateway to its servers, as an OTLP receiver gets it (the
//! tests' own, decoding with the official protobuf definitions): the gateway exports when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set, its upstreams are the Python SDK's servers (whose
//! OpenTelemetry middleware makes a span for each request, parented by its `_meta`) exporting
//! to the same receiver, one over stdio and one over Streamable HTTP. Every span of a request,
//! from the client's `traceparent` to the upstream's own span, lands in one tree with the
//! attributes of OpenTelemetry's MCP conventions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Home, Killed, answered, http_gateway_env, initialize, post_mcp};
use serde_json::{Value, json};
use switchboard_testkit::otlp::{Received, Receiver};

const SERVER: i32 = 2;
const CLIENT: i32 = 3;

/// A trace id and a parent span id of the client's.
fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

fn call(id: u64, name: &str, arguments: Value, traceparent: Option<&str>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(t) = traceparent {
        params["_meta"] = json!({"traceparent": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The spans of `trace`.
fn of(spans: &[Received], trace: &str) -> Vec<Received> {
    spans.iter().filter(|s| s.trace_id() == trace).cloned().collect()
}

/// The one span of `service` and `kind` in `spans` whose name is `name`.
fn one<'a>(spans: &'a [Received], service: &str, kind: i32, name: &str) -> &'a Received {
    let found: Vec<&Received> =
        spans.iter().filter(|s| s.service == service && s.span.kind == kind && s.span.name == name).collect();
    assert_eq!(found.len(), 1, "{service} {kind} `{name}` in {:#?}", names(spans));
    found[0]
}

fn names(spans: &[Received]) -> Vec<String> {
    spans.iter().map(|s| format!("{} {} {} <- {}", s.service, s.span.name, s.span_id(), s.parent_id())).collect()
}

/// What a tool call answered: its text, whether it was an error.
fn text_of(answer: &Value) -> (String, bool) {
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {answer}")).to_string();
    (text, result["isError"].as_bool().unwrap_or(false))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_reaches_a_stdio_and_an_http_server_through_the_gateway_as_one_tree() {
    let receiver = Receiver::start();
    let endpoint = receiver.endpoint();
    let python = switchboard_testkit::python_otel();
    let script = switchboard_testkit::workspace().join("tests/peers/py_traced.py");
    let port = switchboard_testkit::free_port();
    let http_peer = Command::new(&python)
        .arg(&script)
        .args(["streamable-http", &port.to_string()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "python-http")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _http_peer = Killed(http_peer);
    switchboard_testkit::wait_listening(port, "the Python HTTP server", Duration::from_secs(60));
    let home = Home::with(
        false,
        json!({"servers": {
            "pystdio": {"command": python, "args": [script],
                        "env": {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "python-stdio"}},
            "pyhttp": {"url": format!("http://127.0.0.1:{port}/mcp")},
            // The same server spoken to on 2025-11-25: requests in a session.
            "pyold": {"url": format!("http://127.0.0.1:{port}/mcp"), "protocol_version": "2025-11-25"},
        }}),
    );
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")];
    let (_gateway, url) = http_gateway_env(&home, &[], &env);
    common::wait_ready(&url);
    let bearer = home.token();
    let token = Some(bearer.as_str());

    let started = post_mcp(&url, token, None, &initialize()).await;
    let session_id = started.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let session = Some(session_id.as_str());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_mcp(&url, token, session, &initialized).await;
    let listed = answered(
        &post_mcp(&url, token, session, &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
            .await
            .text()
            .await
            .unwrap(),
    );
    let tools: Vec<String> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    let name = |server: &str, tool: &str| {
        tools
            .iter()
            .find(|n| n.contains(server) && n.ends_with(tool))
            .unwrap_or_else(|| panic!("no {tool} of {server} in {tools:?}"))
            .clone()
    };

    // One trace: a call of each server, `_meta` carrying the client's context; the HTTP one
    // also with another context in its header (a proxy's), which becomes a link.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let stdio_parent = traceparent(trace, "00f067aa0ba902b7");
    let http_parent = traceparent(trace, "00f067aa0ba902b8");
    let proxy = traceparent("11111111111111111111111111111111", "2222222222222222");
    let said =
        post_mcp(&url, token, session, &call(2, &name("pystdio", "trace_header"), json!({}), Some(&stdio_parent)))
            .await;
    let (text, _) = text_of(&answered(&said.text().await.unwrap()));
    assert_eq!(text, "", "no header over stdio");
    let said = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", session_id.as_str())
        .header("traceparent", &proxy)
        .bearer_auth(bearer.as_str())
        .body(call(3, &name("pyhttp", "trace_header"), json!({}), Some(&http_parent)).to_string())
        .send()
        .await
        .unwrap();
    let (upstream_header, _) = text_of(&answered(&said.text().await.unwrap()));

    // Another trace given in the header alone: a tool error.
    let failing = "0af7651916cd43dd8448eb211c80319c";
    let said = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", session_id.as_str())
        .header("traceparent", traceparent(failing, "b7ad6b7169203331"))
        .bearer_auth(bearer.as_str())
        .body(call(4, &name("pyhttp", "fail"), json!({"reason": "no"}), None).to_string())
        .send()
        .await
        .unwrap();
    let (_, is_error) = text_of(&answered(&said.text().await.unwrap()));
    assert!(is_error, "the tool failed");

    // A prompt and a resource of the stdio server, in a third trace.
    let third = "5bf92f3577b34da6a3ce929d0e0e4736";
    let parent = traceparent(third, "00f067aa0ba902b9");
    let prompts = answered(
        &post_mcp(&url, token, session, &json!({"jsonrpc": "2.0", "id": 10, "method": "prompts/list"}))
            .await
            .text()
            .await
            .unwrap(),
    );
    let prompt = prompts["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .find(|n| n.contains("pystdio") && n.ends_with("review"))
        .unwrap_or_else(|| panic!("no review prompt: {prompts}"));
    let get = json!({"jsonrpc": "2.0", "id": 11, "method": "prompts/get",
                     "params": {"name": prompt, "arguments": {"code": "x"}, "_meta": {"traceparent": parent}}});
    let got = answered(&post_mcp(&url, token, session, &get).await.text().await.unwrap());
    assert!(got["result"]["messages"].is_array(), "{got}");
    let resources = answered(
        &post_mcp(&url, token, session, &json!({"jsonrpc": "2.0", "id": 12, "method": "resources/list"}))
            .await
            .text()
            .await
            .unwrap(),
    );
    let uri = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .find(|u| u.contains("greeting") && u.contains("pystdio"))
        .unwrap_or_else(|| resources["result"]["resources"][0]["uri"].as_str().unwrap().to_string());
    let read = json!({"jsonrpc": "2.0", "id": 13, "method": "resources/read",
                      "params": {"uri": uri, "_meta": {"traceparent": parent}}});
    let read = answered(&post_mcp(&url, token, session, &read).await.text().await.unwrap());
    assert!(read["result"]["contents"].is_array(), "{read}");

    // A 2026-07-28 request (no session; the version in `_meta`) in a fourth.
    let fourth = "6bf92f3577b34da6a3ce929d0e0e4736";
    let stateless = json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {
    "name": stdio_name_of(&tools), "arguments": {},
    "_meta": {
        "traceparent": traceparent(fourth, "00f067aa0ba902ba"),
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "traces-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let said = reqwest::Client::new()
        .post(&url)
        .bearer_auth(bearer.as_str())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", stdio_name_of(&tools))
        .body(stateless.to_string())
        .send()
        .await
        .unwrap();
    let (text, _) = text_of(&answered(&said.text().await.unwrap()));
    assert_eq!(text, "");

    // The HTTP server spoken to on 2025-11-25, in a fifth.
    let old_trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let old_tool = name("pyold", "trace_header");
    let said = post_mcp(
        &url,
        token,
        session,
        &call(15, &old_tool, json!({}), Some(&traceparent(old_trace, "00f067aa0ba902bb"))),
    )
    .await;
    let (old_header, _) = text_of(&answered(&said.text().await.unwrap()));

    let spans = receiver.wait(Duration::from_secs(20), |spans| {
        of(spans, trace).len() >= 6
            && of(spans, failing).len() >= 3
            && of(spans, third).len() >= 6
            && of(spans, fourth).len() >= 3
            && of(spans, old_trace).len() >= 3
    });
    let ours = of(&spans, trace);
    assert_eq!(ours.len(), 6, "two requests of three spans each: {:#?}", names(&ours));

    // The stdio branch: client → the gateway's server span → its client span → Python's.
    let stdio_tool = name("pystdio", "trace_header");
    let served = one(&ours, "switchboard", SERVER, &format!("tools/call {stdio_tool}"));
    assert_eq!(served.parent_id(), "00f067aa0ba902b7");
    for (key, want) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", stdio_tool.as_str()),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "2"),
        ("mcp.session.id", session_id.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("switchboard.server", "pystdio"),
    ] {
        assert_eq!(served.attr(key).as_deref(), Some(want), "{key} of {:?}", served.span);
    }
    let sent: Vec<&Received> = ours.iter().filter(|s| s.service == "switchboard" && s.span.kind == CLIENT).collect();
    let to_stdio = sent.iter().find(|s| s.parent_id() == served.span_id()).expect("the upstream request's span");
    for (key, want) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "trace_header"),
        ("network.transport", "pipe"),
        ("switchboard.server", "pystdio"),
    ] {
        assert_eq!(to_stdio.attr(key).as_deref(), Some(want), "{key} of {:?}", to_stdio.span);
    }
    assert!(to_stdio.attr("jsonrpc.request.id").is_some() && to_stdio.attr("mcp.protocol.version").is_some());
    let python_stdio = one(&ours, "python-stdio", SERVER, "tools/call trace_header");
    assert_eq!(python_stdio.parent_id(), to_stdio.span_id(), "the stdio server got the context in `_meta`");

    // The HTTP branch, with the header's context as a link, and the same context in the header
    // the upstream got.
    let http_tool = name("pyhttp", "trace_header");
    let served = one(&ours, "switchboard", SERVER, &format!("tools/call {http_tool}"));
    assert_eq!(served.parent_id(), "00f067aa0ba902b8", "`_meta` wins over the header");
    assert_eq!(served.span.links.len(), 1);
    assert_eq!(hex(&served.span.links[0].trace_id), "11111111111111111111111111111111");
    let to_http = sent.iter().find(|s| s.parent_id() == served.span_id()).expect("the upstream request's span");
    assert_eq!(to_http.attr("network.transport").as_deref(), Some("tcp"));
    assert_eq!(to_http.attr("switchboard.server").as_deref(), Some("pyhttp"));
    let python_http = one(&ours, "python-http", SERVER, "tools/call trace_header");
    assert_eq!(python_http.parent_id(), to_http.span_id());
    assert_eq!(upstream_header, traceparent(trace, &to_http.span_id()), "the HTTP header carries it too");

    // The call's audit record leads to its trace.
    let record = home.audit_record(|r| r["server"] == "pystdio" && r["trace_id"] == trace).await;
    assert_eq!(record["tool"], "trace_header", "{record}");

    // A prompt is named by it, a resource is an attribute.
    let third = of(&spans, third);
    let served = one(&third, "switchboard", SERVER, &format!("prompts/get {prompt}"));
    assert_eq!(served.attr("gen_ai.prompt.name").as_deref(), Some(prompt.as_str()));
    assert_eq!(served.attr("switchboard.server").as_deref(), Some("pystdio"));
    let sent = one(&third, "switchboard", CLIENT, "prompts/get review");
    assert_eq!(sent.parent_id(), served.span_id());
    assert_eq!(one(&third, "python-stdio", SERVER, "prompts/get review").parent_id(), sent.span_id());
    let served = one(&third, "switchboard", SERVER, "resources/read");
    assert_eq!(served.attr("mcp.resource.uri").as_deref(), Some(uri.as_str()));
    let sent = one(&third, "switchboard", CLIENT, "resources/read");
    assert_eq!(sent.parent_id(), served.span_id());
    assert!(sent.attr("mcp.resource.uri").is_some());
    assert_eq!(one(&third, "python-stdio", SERVER, "resources/read").parent_id(), sent.span_id());

    // A 2026-07-28 request: its version from its `_meta`, no session.
    let fourth = of(&spans, fourth);
    let served = one(&fourth, "switchboard", SERVER, &format!("tools/call {}", stdio_name_of(&tools)));
    assert_eq!(served.attr("mcp.protocol.version").as_deref(), Some("2026-07-28"));
    assert_eq!(served.attr("mcp.session.id"), None);
    assert_eq!(served.parent_id(), "00f067aa0ba902ba");

    // What the hub asks at start-up (its lists) is traced too, each a root of its own.
    let listed = spans
        .iter()
        .find(|s| s.service == "python-stdio" && s.span.name == "tools/list" && !s.parent_id().is_empty())
        .expect("the start-up tools/list in a trace");
    let asked = spans.iter().find(|s| s.span_id() == listed.parent_id()).expect("its parent");
    assert_eq!((asked.service.as_str(), asked.span.kind), ("switchboard", CLIENT));
    assert_eq!(asked.attr("switchboard.server").as_deref(), Some("pystdio"));
    assert_eq!(asked.parent_id(), "");

    // On 2025-11-25 over HTTP: the context in the session's request's `_meta` and in its
    // header, the version said.
    let fifth = of(&spans, old_trace);
    let served = one(&fifth, "switchboard", SERVER, &format!("tools/call {old_tool}"));
    assert_eq!(served.parent_id(), "00f067aa0ba902bb");
    let to_old = one(&fifth, "switchboard", CLIENT, "tools/call trace_header");
    assert_eq!(to_old.parent_id(), served.span_id());
    assert_eq!(to_old.attr("mcp.protocol.version").as_deref(), Some("2025-11-25"), "{:?}", to_old.span);
    assert_eq!(to_old.attr("network.transport").as_deref(), Some("tcp"));
    assert_eq!(to_old.attr("switchboard.server").as_deref(), Some("pyold"));
    assert_eq!(one(&fifth, "python-http", SERVER, "tools/call trace_header").parent_id(), to_old.span_id());
    assert_eq!(old_header, traceparent(old_trace, &to_old.span_id()), "the header too");

    // The header alone is taken as the parent; a tool error is one at every hop.
    let failed = of(&spans, failing);
    let served = failed.iter().find(|s| s.service == "switchboard" && s.span.kind == SERVER).expect("served");
    assert_eq!(served.parent_id(), "b7ad6b7169203331");
    for span in &failed {
        assert_eq!(span.attr("error.type").as_deref(), Some("tool_error"), "{} {}", span.service, span.span.name);
    }
}

/// The stdio front: its spans say `pipe`, and the last ones are sent when it ends (the client
/// closed stdin before the exporter's next batch).
#[test]
fn the_stdio_front_traces_its_requests_and_sends_the_last_spans_when_it_ends() {
    use std::io::{BufRead, BufReader, Write};
    let receiver = Receiver::start();
    let home = Home::new(false);
    let mut gateway = home.switchboard(&["gateway"]);
    gateway
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut gateway = Killed(gateway.spawn().unwrap());
    let mut stdin = gateway.stdin.take().unwrap();
    let mut stdout = BufReader::new(gateway.stdout.take().unwrap());
    let trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "fx__echo", "arguments": {"text": "hi"},
        "_meta": {"traceparent": traceparent(trace, "00f067aa0ba902bb")}}});
    for message in [initialize(), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), call] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut answered = false;
    for _ in 0..10 {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let message: Value = serde_json::from_str(&line).unwrap_or_default();
        if message["id"] == 2 {
            assert_eq!(message["result"]["content"][0]["text"], "hi", "{message}");
            answered = true;
            break;
        }
    }
    assert!(answered, "the call was answered");
    drop(stdin);
    let status = gateway.wait().unwrap();
    assert!(status.success(), "{status}");
    let spans = of(&receiver.wait(Duration::from_secs(10), |s| of(s, trace).len() >= 2), trace);
    let served = one(&spans, "switchboard", SERVER, "tools/call fx__echo");
    assert_eq!(served.attr("network.transport").as_deref(), Some("pipe"));
    assert_eq!(served.attr("mcp.session.id"), None);
    assert_eq!(served.parent_id(), "00f067aa0ba902bb");
    let sent = one(&spans, "switchboard", CLIENT, "tools/call echo");
    assert_eq!(sent.parent_id(), served.span_id());
    assert_eq!(sent.attr("switchboard.server").as_deref(), Some("fx"));
}

/// On a gateway people sign in to, each served span names who asked (the token's subject),
/// and each of its upstream spans the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_callers_spans_name_them() {
    use switchboard_testkit::issuer::{Issuer, Key};
    let receiver = Receiver::start();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]);
    let home = Home::new(false);
    home.edit(|config| config["identity"] = json!({"issuers": [issuer.issuer]}));
    let endpoint = receiver.endpoint();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "100")];
    let (_gateway, url) = http_gateway_env(&home, &[], &env);
    common::wait_ready(&url);
    let token = key.sign(&issuer.claims(&url, "alice", &["devs"]));
    let started = post_mcp(&url, Some(&token), None, &initialize()).await;
    assert_eq!(started.status(), 200);
    let session = started.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_mcp(&url, Some(&token), Some(&session), &initialized).await;
    let trace = "8bf92f3577b34da6a3ce929d0e0e4736";
    let body = call(2, "fx__echo", json!({"text": "hi"}), Some(&traceparent(trace, "00f067aa0ba902bc")));
    let said = post_mcp(&url, Some(&token), Some(&session), &body).await;
    assert_eq!(text_of(&answered(&said.text().await.unwrap())).0, "hi");
    let spans = of(&receiver.wait(Duration::from_secs(20), |s| of(s, trace).len() >= 2), trace);
    let served = one(&spans, "switchboard", SERVER, "tools/call fx__echo");
    assert_eq!(served.attr("switchboard.principal").as_deref(), Some("alice"));
    assert_eq!(served.attr("switchboard.server").as_deref(), Some("fx"));
    let sent = one(&spans, "switchboard", CLIENT, "tools/call echo");
    assert_eq!(sent.parent_id(), served.span_id());
}

/// The gateway's name of the stdio server's `trace_header`.
fn stdio_name_of(tools: &[String]) -> String {
    tools.iter().find(|n| n.contains("pystdio") && n.ends_with("trace_header")).cloned().unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

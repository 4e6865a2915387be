//! Who answers an upstream's question that belongs to no call in flight (the relay's rule 2):
//! of the sessions that can answer it, the one that most recently made a request to that
//! server; not the one that connected last, nor the one that made the last request of any
//! kind, nor one that cannot answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Home;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use switchboard_testkit::fixture;

/// A client that answers every form with its own name (or cannot elicit at all).
#[derive(Clone)]
struct Named {
    name: &'static str,
    elicits: bool,
}

impl ClientHandler for Named {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicits {
            let mut e = ElicitationCapability::new();
            e.form = Some(FormElicitationCapability::default());
            caps.elicitation = Some(e);
        }
        ClientConfig::new(caps, Implementation::new(self.name, "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = Some(json!({"name": self.name}));
        Ok(r)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_outside_any_call_goes_to_the_session_that_last_used_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("later.log");
    let home = Home::with(
        false,
        json!({"servers": {"later": {"command": fixture(), "args": ["--name", "later", "--ask-later", "--call-log", log]}}}),
    );
    let (gateway, url) = common::http_gateway(&home, &[]);
    let connect = |name: &'static str, elicits: bool| {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(home.token());
        Named { name, elicits }.serve(StreamableHttpClientTransport::from_config(config))
    };
    let alice = connect("alice", true).await.unwrap();
    alice.list_all_tools().await.unwrap();
    // Alice uses `later`: it will ask a question once her call is over.
    let args = json!({"ms": 1500}).as_object().cloned();
    let r = alice.call_tool(CallToolRequestParams::new("later__ask_later").with_arguments(args.unwrap())).await;
    assert!(serde_json::to_string(&r.unwrap().content).unwrap().contains("will ask"));
    // Meanwhile Bob connects and makes requests (of another server, and lists), and Carol,
    // who cannot answer forms, makes the very last request of all, to `later` itself.
    let bob = connect("bob", true).await.unwrap();
    bob.list_all_tools().await.unwrap();
    let echo = json!({"text": "hi"}).as_object().cloned().unwrap();
    bob.call_tool(CallToolRequestParams::new("fx__echo").with_arguments(echo.clone())).await.unwrap();
    let carol = connect("carol", false).await.unwrap();
    carol.call_tool(CallToolRequestParams::new("later__echo").with_arguments(echo)).await.unwrap();

    let started = Instant::now();
    let answered = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with("asked later:")) {
            break line.to_string();
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no question was answered: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(answered, r#"asked later: {"name":"alice"}"#);
    for c in [alice, bob, carol] {
        c.cancel().await.unwrap();
    }
    drop(gateway);
}

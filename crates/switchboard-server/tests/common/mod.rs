//! What the API tests share: the fixture server, a Python with the `mcp` package, and a hub
//! served on a free loopback port.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use switchboard::config::{self, LoadOptions};
use switchboard::{Hub, HubOptions, Paths};
use switchboard_server::{ApprovalQueue, Questions, SamplingQueue, ServeOptions};

#[allow(unused_imports)]
pub use switchboard_testkit::*;

pub struct Served {
    pub dir: tempfile::TempDir,
    pub hub: Hub,
    pub base: String,
    pub token: String,
    pub login_url: String,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Served {
    /// Serves a hub of `servers` (a config's `servers` object) on a free loopback port.
    pub async fn start(servers: Value) -> Served {
        Served::start_with(servers, |_| {}).await
    }

    /// Same, with the serve options changed by `configure` first (the port is 0).
    pub async fn start_with(servers: Value, configure: impl FnOnce(&mut ServeOptions)) -> Served {
        Served::start_config(json!({"servers": servers}), configure).await
    }

    /// Serves a hub of a whole config file (`servers`, `policy`...).
    pub async fn start_config(config_file: Value, configure: impl FnOnce(&mut ServeOptions)) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        std::fs::write(&file, config_file.to_string()).unwrap();
        let paths = Paths::new(dir.path().join("user.json"), switchboard_testkit::data_dir(dir.path()));
        let mut options = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
        options.extra_files = vec![file];
        // As `switchboard serve` does: servers' questions go to whoever follows the events.
        options.managed_file = Some(dir.path().join("managed.json"));
        let questions = Questions::new();
        // Calls the policy asks about wait in the API's queue; servers' requests for a
        // completion too (in `serve` they go there when no MCP client can answer).
        let approvals = ApprovalQueue::new();
        let sampling = SamplingQueue::new();
        let hub = Hub::start(
            &config::load(&options),
            HubOptions::new(paths.clone())
                .elicitor(questions.clone())
                .approver(approvals.clone())
                .sampler(sampling.clone()),
        );
        hub.ready().await;
        let mut serve = ServeOptions::new(paths.data_dir.clone());
        serve.port = 0;
        serve.questions = Some(questions);
        serve.approvals = Some(approvals);
        serve.sampling = Some(sampling);
        configure(&mut serve);
        let bound = switchboard_server::bind(&hub, &serve).await.unwrap();
        let base = format!("http://127.0.0.1:{}", bound.addr.port());
        let (token, login_url) = (bound.token.clone(), bound.login_url.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(bound.serve(async move {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Served { dir, hub, base, token, login_url, client, stop: Some(stop) }
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.token)
    }

    pub fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.client.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body)
    }

    /// The kept and live events after id `after`, read until `count` of them are of `kind`
    /// (10 s at most).
    pub async fn events_of(&self, after: u64, kind: &str, count: usize) -> String {
        use futures::StreamExt;
        let response = self.get("/api/events").header("last-event-id", after.to_string()).send().await.unwrap();
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        let marker = format!("event: {kind}\n");
        while text.matches(&marker).count() < count {
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next()).await;
            let chunk = chunk.unwrap_or_else(|_| panic!("{count} `{kind}` events; got:\n{text}")).unwrap().unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    }

    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.hub.shutdown().await;
    }
}

/// The status and JSON body of a request.
pub async fn send(request: reqwest::RequestBuilder) -> (reqwest::StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text})))
}

/// The `code` of an error body.
pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_else(|| panic!("not an error body: {body}"))
}

/// Follows `/api/events` (so the hub has someone to ask): each event's kind and data.
pub async fn follow_events(s: &Served) -> tokio::sync::mpsc::UnboundedReceiver<(String, Value)> {
    let response = s.get("/api/events").send().await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = response.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = futures::StreamExt::next(&mut stream).await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default()
                };
                let data = serde_json::from_str(&field("data:")).unwrap_or(Value::Null);
                if tx.send((field("event:"), data)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The next event of `kind` (10 s at most).
pub async fn next_event(events: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>, kind: &str) -> Value {
    loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), events.recv()).await;
        let (k, data) = next.unwrap_or_else(|_| panic!("no `{kind}` event")).expect("the event stream ended");
        if k == kind {
            return data;
        }
    }
}

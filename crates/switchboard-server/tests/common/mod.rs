//! What the API tests share: the fixture server, a Python with the `mcp` package, and a hub
//! served on a free loopback port.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use switchboard::config::{self, LoadOptions};
use switchboard::{Hub, HubOptions, Paths};
use switchboard_server::{Questions, ServeOptions};

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
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        std::fs::write(&file, json!({"servers": servers}).to_string()).unwrap();
        let paths = Paths::new(dir.path().join("user.json"), dir.path().join("data"));
        let mut options = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
        options.extra_files = vec![file];
        // As `switchboard serve` does: servers' questions go to whoever follows the events.
        let questions = Questions::new();
        let hub = Hub::start(&config::load(&options), HubOptions::new(paths.clone()).elicitor(questions.clone()));
        hub.ready().await;
        let mut serve = ServeOptions::new(paths.data_dir.clone());
        serve.port = 0;
        serve.questions = Some(questions);
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

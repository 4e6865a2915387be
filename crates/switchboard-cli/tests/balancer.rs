//! What an operator is told to run, run as written behind a real balancer that sends what a
//! TLS proxy on 443 sends: the name clients reached it by, without a port (Debian's HAProxy
//! with `http-request set-header Host …`, round robin, `/readyz` checks).
//!
//! - The Kubernetes manifest's command line (`deploy/kubernetes/switchboard.yaml`: `gateway
//!   --http 0.0.0.0:7342 --allow-remote --host mcp.example.com --advertise http://$(POD_IP):7342
//!   --drain 25`, its config from the ConfigMap, the store from the Secret's environment), three
//!   replicas on a real PostgreSQL: the first with the line exactly (its `$(VAR)`s set as
//!   Kubernetes sets them), the others with their own port (a pod each has its own address;
//!   one machine has one). Legacy sessions and 2026-07-28 calls of two people reach every
//!   replica through the balancer; a name that is not the server's is still 421.
//! - README's `serve` behind a TLS proxy (`switchboard serve --host sb.example --public-url
//!   https://sb.example`), as written: the API with the token, the dashboard's one-time link and
//!   its cookie from an https page, and `/mcp`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::haproxy::HaProxy;
use switchboard_testkit::issuer::{Issuer, Key};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `c` and reads its stdout to the line starting with `prefix` (then drains it).
fn started(mut c: Command, prefix: &str) -> (Running, String) {
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Running(c.spawn().unwrap());
    let stderr = child.0.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        BufReader::new(stderr).lines().map_while(Result::ok).take(200).collect::<Vec<_>>().join("\n")
    });
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut lines = Vec::new();
    let rest = loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            drop(child);
            panic!("{c:?} printed no line starting {prefix:?}: {lines:?}\n{}", said.join().unwrap_or_default());
        }
        if let Some(rest) = line.trim().strip_prefix(prefix) {
            break rest.to_string();
        }
        lines.push(line);
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, rest)
}

/// The documents of the manifest, as JSON.
fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes/switchboard.yaml")).unwrap();
    text.split("\n---")
        .filter(|d| !d.trim().is_empty())
        .map(|d| yaml_serde::from_str::<Value>(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// A POST to `/mcp` through the balancer at `url`.
async fn post(url: &str, token: &str, session: Option<&str>, version: &str, body: &Value) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", version)
        .timeout(Duration::from_secs(30))
        .body(body.to_string());
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    if version == "2026-07-28"
        && let Some(method) = body["method"].as_str()
    {
        r = r.header("mcp-method", method);
        if let Some(name) = body["params"]["name"].as_str() {
            r = r.header("mcp-name", name);
        }
    }
    r.send().await.unwrap()
}

/// The JSON-RPC message of a body (JSON, or the first `data:` of a stream).
fn answered(said: &str) -> Value {
    said.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
        .or_else(|| serde_json::from_str(said).ok())
        .unwrap_or(Value::Null)
}

fn modern(method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "balanced", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_replicas_serve_behind_a_balancer_that_sends_the_name_alone() {
    let docs = manifest();
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> =
        container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let config_map = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    let mut config: Value = serde_json::from_str(config_map["data"]["config.json"].as_str().unwrap()).unwrap();
    let resource = config["identity"]["resource"].as_str().unwrap().to_string();
    let name = reqwest::Url::parse(&resource).unwrap().host_str().unwrap().to_string();
    let at = |flag: &str| args.iter().position(|a| a == flag).map(|i| args[i + 1].clone()).unwrap();
    assert_eq!(at("--host"), name, "the manifest's --host is its resource's host");
    let bound = at("--http");
    let port: u16 = bound.rsplit(':').next().unwrap().parse().unwrap();
    assert!(
        std::net::TcpListener::bind(("0.0.0.0", port)).is_ok(),
        "port {port} (the manifest's) is taken on this machine: this test runs its command line as written"
    );

    // The test's own parts where the manifest names the organisation's: its issuer, its
    // PostgreSQL, a key ring; and a server to call (the fixture, shared by everyone).
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]);
    config["identity"]["issuers"] = json!([issuer.issuer]);
    config["servers"]["fx"] = json!({"command": switchboard_testkit::fixture(), "args": ["--name", "fx"]});
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("user.json"), "{}").unwrap();
    let config_file = home.path().join("config.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let keys = switchboard::store::seal::KeyRing::new_key_line("k1").unwrap();
    let store = pg.database("sb");
    // Each replica's command line: the manifest's, its `$(VAR)`s set as Kubernetes sets them
    // (POD_IP: this machine's one address), the ConfigMap's mount path given the file here.
    let line = |replica_port: u16| -> Vec<String> {
        args.iter()
            .map(|a| {
                a.replace("/etc/switchboard/config.json", config_file.to_str().unwrap())
                    .replace("$(SWITCHBOARD_STORE_URL)", &store)
                    .replace("$(POD_IP)", "127.0.0.1")
                    .replace(&format!(":{port}"), &format!(":{replica_port}"))
            })
            .collect()
    };
    let ports = [port, switchboard_testkit::free_port(), switchboard_testkit::free_port()];
    assert_eq!(line(port).iter().filter(|a| a.contains("$(")).count(), 0, "{:?}", line(port));
    let mut replicas = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let mut c = Command::new(switchboard_testkit::cli());
        c.args(line(*p))
            .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
            .env("SWITCHBOARD_DATA_DIR", home.path().join(format!("data-{i}")))
            .env("SWITCHBOARD_STORE_KEYS", &keys)
            .env_remove("RUST_LOG");
        replicas.push(started(c, "switchboard gateway: MCP (Streamable HTTP) at ").0);
    }
    let backends: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let set_host = format!("http-request set-header Host {name}");
    let proxy = HaProxy::start_with(&backends, &[&set_host, "http-request set-header X-Forwarded-Proto https"]);
    proxy.wait_up(3, Duration::from_secs(30));
    let url = format!("{}/mcp", proxy.url());

    // Two people, each with a legacy session (its requests reach every replica in turn) and
    // 2026-07-28 calls.
    for person in ["alice", "bob"] {
        let token = key.sign(&issuer.claims(&resource, person, &["devs"]));
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": person, "version": "1"}}});
        let r = post(&url, &token, None, "2025-11-25", &init).await;
        assert_eq!(r.status(), 200, "{person}: {:?}", r.text().await);
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let _ = r.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(post(&url, &token, Some(&session), "2025-11-25", &initialized).await.status(), 202);
        for n in 0..3 {
            let call = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                              "params": {"name": "fx__echo", "arguments": {"text": format!("{person} {n}")}}});
            let r = post(&url, &token, Some(&session), "2025-11-25", &call).await;
            assert_eq!(r.status(), 200, "{person} {n}");
            let said = answered(&r.text().await.unwrap());
            assert_eq!(said["result"]["content"][0]["text"], format!("{person} {n}"), "{said}");
            let call = modern("tools/call", json!({"name": "fx__echo", "arguments": {"text": "now"}}));
            let r = post(&url, &token, None, "2026-07-28", &call).await;
            assert_eq!(r.status(), 200, "{person} {n}");
            let said = answered(&r.text().await.unwrap());
            assert_eq!(said["result"]["content"][0]["text"], "now", "{said}");
        }
    }
    // Every replica served some of them (HAProxy's count of sessions per server).
    let stats = proxy.stats_csv();
    let header: Vec<&str> = stats.lines().next().unwrap().trim_start_matches("# ").split(',').collect();
    let (sv, stot) =
        (header.iter().position(|h| *h == "svname").unwrap(), header.iter().position(|h| *h == "stot").unwrap());
    for line in stats.lines().filter(|l| l.starts_with("replicas,r")) {
        let fields: Vec<&str> = line.split(',').collect();
        assert!(fields[stot].parse::<u64>().unwrap() > 2, "{} served too little: {stats}", fields[sv]);
    }
    // Reached directly: its name alone, with the port bound, and with 443 are it; any other
    // name is not (DNS rebinding stays closed).
    let token = key.sign(&issuer.claims(&resource, "alice", &["devs"]));
    let direct = format!("http://127.0.0.1:{}/mcp", ports[1]);
    for (host, status) in [
        (name.clone(), 200),
        (format!("{name}:{}", ports[1]), 200),
        (format!("{name}:443"), 200),
        ("evil.example".to_string(), 421),
        (format!("{name}.evil.example"), 421),
    ] {
        let call = modern("tools/call", json!({"name": "fx__echo", "arguments": {"text": "direct"}}));
        let r = reqwest::Client::new()
            .post(&direct)
            .header("host", &host)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "fx__echo")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "Host: {host}");
    }
    // Its protected resource metadata says the public resource, through the balancer.
    let meta: Value = reqwest::get(format!("{}/.well-known/oauth-protected-resource/mcp", proxy.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["resource"], resource.as_str(), "{meta}");
    drop(replicas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readmes_serve_behind_a_tls_proxy_answers_the_name_alone() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("switchboard serve") && l.contains("behind a TLS proxy"))
        .expect("README's serve behind a TLS proxy");
    let command = line.split('#').next().unwrap().trim();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let at = |flag: &str| args.iter().position(|a| *a == flag).map(|i| args[i + 1]).unwrap();
    let public = at("--public-url").to_string();
    let name = reqwest::Url::parse(&public).unwrap().host_str().unwrap().to_string();
    assert_eq!(at("--host"), name);
    assert!(!args.contains(&"--port"), "README's line binds the default port: {command}");
    let port = switchboard_server::DEFAULT_PORT;
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "port {port} (serve's default) is taken on this machine: this test runs README's line as written"
    );

    let home = tempfile::tempdir().unwrap();
    let fixture = switchboard_testkit::fixture();
    std::fs::write(
        home.path().join("user.json"),
        json!({"servers": {"fx": {"command": fixture, "args": ["--name", "fx"]}}}).to_string(),
    )
    .unwrap();
    let mut c = switchboard_testkit::switchboard(home.path());
    c.args(&args);
    let (serve, addr) = started(c, "switchboard is serving on http://");
    assert_eq!(addr, format!("127.0.0.1:{port}"));
    let token = std::fs::read_to_string(switchboard_testkit::data_dir(home.path()).join("serve-token"))
        .unwrap()
        .trim()
        .to_string();
    let set_host = format!("http-request set-header Host {name}");
    let proxy = HaProxy::start_with(std::slice::from_ref(&addr), &[&set_host]);
    proxy.wait_up(1, Duration::from_secs(30));
    let base = proxy.url();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    // The API with the token.
    let r = http.get(format!("{base}/api/servers")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    // A one-time link to the dashboard, at the public URL; its cookie, from an https page of it.
    let r = http.post(format!("{base}/api/login-links")).bearer_auth(&token).send().await.unwrap();
    let link: Value = r.json().await.unwrap();
    let link = link["login_url"].as_str().unwrap().to_string();
    assert!(link.starts_with(&format!("{public}/login?code=")), "{link}");
    let path = link.strip_prefix(&public).unwrap();
    let r = http.get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let r = http.get(format!("{base}/")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .get(format!("{base}/api/servers"))
        .header("cookie", &cookie)
        .header("origin", public.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the dashboard's own request: {:?}", r.text().await);
    let r = http
        .get(format!("{base}/api/servers"))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "a page of another site");
    // `/mcp` with the token.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "behind", "version": "1"}}});
    let r = post(&format!("{base}/mcp"), &token, None, "2025-11-25", &init).await;
    assert_eq!(r.status(), 200);
    let said = answered(&r.text().await.unwrap());
    assert_eq!(said["result"]["protocolVersion"], "2025-11-25", "{said}");
    drop(serve);
}

/// README's step-by-step replica line (step 4 of "A team's gateway, step by step") is the
/// manifest's, which `the_manifests_replicas_serve_behind_a_balancer_that_sends_the_name_alone`
/// runs as written: the same flags and values, but the store (README's is in the config, the
/// manifest's from the Secret) and the pod's address (README names one).
#[test]
fn readmes_replica_line_is_the_manifests() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let steps = readme.split("### A team's gateway, step by step").nth(1).expect("README's step by step");
    let step = steps.split("\n4. ").nth(1).expect("its step 4");
    let line = step
        .lines()
        .find(|l| l.trim_start().starts_with("switchboard "))
        .expect("step 4's command line")
        .trim()
        .to_string();
    let readme_args: Vec<String> = line.split_whitespace().skip(1).map(str::to_string).collect();
    let docs = manifest();
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let mut args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let store = args.iter().position(|a| a == "--store").unwrap();
    args.drain(store..store + 2);
    let advertise = readme_args.iter().position(|a| a == "--advertise").unwrap();
    let pod = reqwest::Url::parse(&readme_args[advertise + 1]).unwrap().host_str().unwrap().to_string();
    let args: Vec<String> = args.iter().map(|a| a.replace("$(POD_IP)", &pod)).collect();
    assert_eq!(readme_args, args, "README: {line}");
}

//! OAuth end to end against real authorization servers on loopback, through the `switchboard`
//! binary as a person would use it: the TypeScript SDK's example server with `--oauth`, and a
//! Python server on the `mcp` package's auth support with short-lived access tokens and
//! rotating refresh tokens (`tests/peers/py_oauth_server.py`). Both authorize endpoints
//! approve at once, so an HTTP client that follows redirects plays the browser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Peer, cli, free_port, node_peers, wait_listening};
use serde_json::{Value, json};

/// The TypeScript SDK's `simpleStreamableHttp` example with its OAuth server.
fn ts_oauth_server() -> (Peer, u16) {
    let (port, auth_port) = (free_port(), free_port());
    let script =
        node_peers().join("node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");
    let child = Command::new("node")
        .arg(script)
        .arg("--oauth")
        .env("MCP_PORT", port.to_string())
        .env("MCP_AUTH_PORT", auth_port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let peer = Peer::new(child);
    wait_listening(port, "the TS SDK OAuth example", Duration::from_secs(30));
    wait_listening(auth_port, "its authorization server", Duration::from_secs(30));
    (peer, port)
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn sb(&self) -> Command {
        let mut c = Command::new(cli());
        c.env("SWITCHBOARD_CONFIG", self.dir.path().join("user.json"))
            .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(self.dir.path()))
            .env_remove("RUST_LOG")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .current_dir(self.dir.path());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.sb().args(args).stdin(Stdio::null()).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    fn store(&self) -> Value {
        serde_json::from_slice(
            &std::fs::read(switchboard_testkit::data_dir(self.dir.path()).join("auth.json")).unwrap(),
        )
        .unwrap()
    }

    /// `switchboard auth <server> --print-url --force`, with the browser played by an HTTP client that
    /// follows the authorization server's redirect to the loopback callback.
    fn login(&self, server: &str) -> (String, String) {
        let mut child = self
            .sb()
            .args(["auth", server, "--print-url", "--force"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        stdout.read_line(&mut url).unwrap();
        assert!(url.starts_with("http"), "no URL printed: {url:?}");
        let page = browse(url.trim());
        let out = child.wait_with_output().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        assert!(out.status.success(), "auth failed: {}{rest}", String::from_utf8_lossy(&out.stderr));
        (page, url)
    }
}

/// The "browser": GET following redirects, returning the final page's text.
fn browse(url: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() })
}

fn state(v: &Value, server: &str) -> (String, String) {
    let s = v["servers"].as_array().unwrap().iter().find(|s| s["name"] == server).unwrap();
    (s["status"]["state"].as_str().unwrap_or("").into(), s["status"]["kind"].as_str().unwrap_or("").into())
}

#[test]
fn log_in_call_list_and_log_out_through_the_cli() {
    let (_server, port) = ts_oauth_server();
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let callback_port = free_port();
    let config = home.dir.path().join("user.json");
    std::fs::write(
        &config,
        json!({"servers": {"ts": {"url": format!("http://localhost:{port}/mcp"), "oauth": {"callback_port": callback_port}}}})
            .to_string(),
    )
    .unwrap();

    // Before a login: the status says so, and which command to run; no browser opened.
    let (state0, kind) = state(&home.json(&["list", "--json"]), "ts");
    assert_eq!((state0.as_str(), kind.as_str()), ("failed", "needs_auth"));
    let text = String::from_utf8_lossy(&home.run(&["list"]).stdout).to_string();
    assert!(text.contains("needs auth") && text.contains("switchboard auth ts"), "{text}");

    let (page, url) = home.login("ts");
    assert!(page.contains("Logged in") && page.contains("ts"), "{page}");
    // PKCE S256, state and the RFC 8707 resource are in the authorization URL.
    for part in ["code_challenge_method=S256", "state=", "resource=http%3A%2F%2Flocalhost"] {
        assert!(url.contains(part), "{part} missing from {url}");
    }

    let out = home.run(&["call", "ts/greet", r#"{"name":"Ada"}"#]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hello, Ada"), "{out:?}");

    // The store: private, and its tokens never shown.
    let store_path = switchboard_testkit::data_dir(home.dir.path()).join("auth.json");
    assert_eq!(std::fs::metadata(&store_path).unwrap().permissions().mode() & 0o777, 0o600);
    let stored = home.store();
    let entry = &stored["servers"][format!("http://localhost:{port}/mcp")];
    let token = entry["credentials"]["token_response"]["access_token"].as_str().unwrap().to_string();
    let client_id = entry["client"]["client_id"].as_str().unwrap().to_string();
    let listed = home.json(&["auth", "--list", "--json"]);
    assert_eq!(listed["logins"][0]["servers"], json!(["ts"]));
    assert_eq!(listed["logins"][0]["logged_in"], true);
    assert!(listed["logins"][0]["expires_at"].as_u64().is_some());
    let mut shown = String::new();
    for args in [
        &["auth", "--list"][..],
        &["auth", "--list", "--json"],
        &["list", "--json"],
        &["get", "ts", "--json"],
        &["-vv", "list"],
    ] {
        let out = home.run(args);
        shown.push_str(&String::from_utf8_lossy(&out.stdout));
        shown.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    assert!(!shown.contains(&token), "a token was printed");

    // Logout: the tokens go, the server asks for a login again; the registered client stays
    // and the next login reuses it (no second registration).
    let out = home.run(&["logout", "ts"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Logged out"), "{out:?}");
    assert_eq!(state(&home.json(&["list", "--json"]), "ts").1, "needs_auth");
    home.login("ts");
    let again = home.store();
    assert_eq!(again["servers"][format!("http://localhost:{port}/mcp")]["client"]["client_id"], client_id.as_str());
    assert_eq!(state(&home.json(&["list", "--json"]), "ts").0, "connected");
}

/// Two logins at once on the same callback port: the second says plainly that the port is
/// taken and how to choose another (OpenCode's callback went to the wrong process instead).
#[test]
fn a_busy_callback_port_is_reported_with_the_option() {
    let (_server, port) = ts_oauth_server();
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().port();
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"ts": {"url": format!("http://localhost:{port}/mcp"), "oauth": {"callback_port": busy}}}})
            .to_string(),
    )
    .unwrap();
    let out = home.run(&["auth", "ts", "--no-browser"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("port {busy}")) && err.contains("oauth.callback_port"), "{err}");
}

/// The Python peer with access tokens that live `ttl` seconds (and `extra` flags).
fn python_oauth_server(ttl: u64, extra: &[&str]) -> (Peer, u16) {
    common::python_oauth_peer(ttl, extra)
}

#[test]
fn tokens_refresh_rotate_and_a_revoked_login_asks_for_a_new_one() {
    let (_server, port) = python_oauth_server(3, &[]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": url, "oauth": {"callback_port": free_port()}}}}).to_string(),
    )
    .unwrap();
    home.login("py");
    let call = |tool: &str| {
        let out = home.run(&["call", &format!("py/{tool}"), "{}"]);
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let refresh_token = || {
        home.store()["servers"][&url]["credentials"]["token_response"]["refresh_token"].as_str().unwrap().to_string()
    };
    let (ok, out) = call("whoami");
    assert!(ok && out.contains("refreshes=0"), "{out}");
    let first = refresh_token();

    // Past the access token's life: the next run refreshes it, and saves the rotated pair.
    std::thread::sleep(Duration::from_secs(4));
    let (ok, out) = call("whoami");
    assert!(ok && out.contains("refreshes=1"), "{out}");
    let second = refresh_token();
    assert_ne!(first, second, "the rotated refresh token was not saved");
    // And the saved one is the live one: another expiry, another refresh with it.
    std::thread::sleep(Duration::from_secs(4));
    let (ok, out) = call("whoami");
    assert!(ok && out.contains("refreshes=2"), "{out}");

    // Revoked: refreshing is refused (invalid_grant), and the server asks for a login again.
    let (ok, out) = call("revoke_everything");
    assert!(ok, "{out}");
    let (ok, out) = call("whoami");
    assert!(!ok && out.contains("switchboard auth py"), "{out}");
    let listed = home.json(&["list", "--json"]);
    assert_eq!(state(&listed, "py"), ("failed".to_string(), "needs_auth".to_string()));
    let detail = listed["servers"][0]["status"]["message"].as_str().unwrap_or_default().to_string();
    assert!(detail.contains("refused"), "{detail}");
    // A new login brings it back.
    home.login("py");
    let (ok, out) = call("whoami");
    assert!(ok && out.contains("authorised"), "{out}");
}

/// A running hub counts each refresh of a token by how it ended (`/metrics`'
/// `switchboard_token_refreshes_total`): `ok` when the new tokens were saved, `rejected` when
/// the authorization server refused the refresh token (revoked).
#[test]
fn a_running_hub_counts_its_refreshes_by_outcome() {
    let (_server, port) = python_oauth_server(2, &[]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": url, "oauth": {"callback_port": free_port()}}}}).to_string(),
    )
    .unwrap();
    home.login("py");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let paths =
            switchboard::Paths::new(home.dir.path().join("user.json"), switchboard_testkit::data_dir(home.dir.path()));
        let loaded =
            switchboard::config::load(&switchboard::config::LoadOptions::from_env(home.dir.path().into(), &paths));
        let hub = switchboard::Hub::start(&loaded, switchboard::HubOptions::new(paths));
        tokio::time::timeout(Duration::from_secs(60), hub.ready()).await.unwrap();
        let refreshes = |hub: &switchboard::Hub| {
            let mut registry = prometheus_client::registry::Registry::default();
            hub.metrics().register(&mut registry);
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text.lines()
                .filter(|l| l.starts_with("switchboard_token_refreshes_total{"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let call = |tool: &'static str| {
            let hub = hub.clone();
            async move { hub.call_tool(&format!("py__{tool}"), None, Default::default()).await }
        };
        call("whoami").await.unwrap();
        assert_eq!(refreshes(&hub), Vec::<String>::new(), "no refresh yet");
        tokio::time::sleep(Duration::from_secs(3)).await;
        call("whoami").await.unwrap();
        assert_eq!(refreshes(&hub), vec![r#"switchboard_token_refreshes_total{server="py",outcome="ok"} 1"#]);
        call("revoke_everything").await.unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(call("whoami").await.is_err(), "revoked");
        let counted = refreshes(&hub);
        assert!(
            counted.contains(&r#"switchboard_token_refreshes_total{server="py",outcome="rejected"} 1"#.to_string()),
            "{counted:?}"
        );
        hub.shutdown().await;
    });
}

/// Replicas on a team's store: a logout in one process (`switchboard logout`) reaches a hub
/// running in another at once (the store's signals): it connects the server again, finds no
/// tokens, and says the server needs a login, without waiting for a request to fail.
#[test]
fn a_logout_elsewhere_on_the_store_reaches_a_running_hub_at_once() {
    let pg = switchboard_testkit::postgres::Postgres::start();
    let store_url = pg.database("sb");
    let keys = switchboard::store::seal::KeyRing::new_key_line("k1").unwrap();
    let (_server, port) = python_oauth_server(60, &[]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let url = format!("http://127.0.0.1:{port}/mcp");
    // The key ring in a file of the person's alone, as `store.key_file` asks.
    let key_file = home.dir.path().join("store.keys");
    std::fs::write(&key_file, &keys).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = json!({"url": store_url, "key_file": key_file});
    let servers = json!({"py": {"url": url, "oauth": {"callback_port": free_port()}}});
    std::fs::write(home.dir.path().join("user.json"), json!({"store": store, "servers": servers}).to_string()).unwrap();
    home.login("py");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let paths =
            switchboard::Paths::new(home.dir.path().join("user.json"), switchboard_testkit::data_dir(home.dir.path()));
        let loaded =
            switchboard::config::load(&switchboard::config::LoadOptions::from_env(home.dir.path().into(), &paths));
        let db = switchboard::store::db::Database::open(
            &store_url,
            switchboard::store::seal::KeyRing::parse(&keys).unwrap(),
        )
        .await
        .unwrap();
        let hub = switchboard::Hub::start(&loaded, switchboard::HubOptions::new(paths).store(db));
        tokio::time::timeout(Duration::from_secs(60), hub.ready()).await.unwrap();
        assert!(
            matches!(hub.status("py"), Some(switchboard::status::ServerStatus::Connected { .. })),
            "{:?}",
            hub.status("py")
        );
        hub.call_tool("py__whoami", None, Default::default()).await.unwrap();

        let out = tokio::task::spawn_blocking({
            let mut logout = home.sb();
            logout.args(["logout", "py"]);
            move || logout.output().unwrap()
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let started = std::time::Instant::now();
        loop {
            let status = hub.status("py");
            if matches!(
                &status,
                Some(switchboard::status::ServerStatus::Failed {
                    kind: switchboard::status::FailureKind::NeedsAuth,
                    ..
                })
            ) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(5), "still {status:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        hub.shutdown().await;
    });
}

/// A registered client the authorization server refuses: after the server restarts (it
/// forgot its clients and tokens), the refresh is answered `invalid_client`, the client is
/// forgotten, and the next `switchboard auth` registers a new one; `auth` on a server whose
/// tokens work says so and does nothing unless `--force`.
#[test]
fn a_refused_client_is_forgotten_and_registered_again() {
    let port = free_port();
    let start = || common::python_script("py_oauth_server.py", &[port.to_string(), "60".into()], port);
    let server = start();
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": url, "oauth": {"callback_port": free_port()}}}}).to_string(),
    )
    .unwrap();
    home.login("py");
    let client = || home.store()["servers"][&url]["client"]["client_id"].as_str().map(str::to_string);
    let first = client().expect("a registered client");
    let out = home.run(&["auth", "py"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("is logged in and its tokens work"), "{said}");
    assert_eq!(client().as_deref(), Some(first.as_str()), "nothing changed");

    drop(server);
    let _server = start();
    let out = home.run(&["call", "py/whoami", "{}"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success() && said.contains("switchboard auth py"), "{said}");
    assert_eq!(client(), None, "the refused client is forgotten: {}", home.store());
    home.login("py");
    let second = client().expect("a new client");
    assert_ne!(first, second);
    let out = home.run(&["call", "py/whoami", "{}"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // `logout --forget-client` deletes it by hand.
    let out = home.run(&["logout", "py", "--forget-client"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("the registered client are deleted"));
    assert!(home.store()["servers"].get(&url).is_none_or(|e| e.get("client").is_none()), "{}", home.store());
}

/// A registered client's secret that expired (`client_secret_expires_at`, kept with it) is not
/// used again: the next login registers a new client.
#[test]
fn a_client_whose_secret_expired_is_registered_again() {
    let (_server, port) = python_oauth_server(60, &["--secret-ttl", "2"]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": url, "oauth": {"callback_port": free_port()}}}}).to_string(),
    )
    .unwrap();
    home.login("py");
    let store = home.store();
    let record = &store["servers"][&url]["client"];
    let expires = record["client_secret_expires_at"].as_u64().unwrap_or_else(|| panic!("the expiry is kept: {store}"));
    assert!(expires > 0, "{record}");
    let first = record["client_id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_secs(3));
    home.login("py");
    let second = home.store()["servers"][&url]["client"]["client_id"].as_str().unwrap().to_string();
    assert_ne!(first, second, "a new client was registered");
}

/// Over SSH the browser is elsewhere: `--no-browser` prints the URL, and the address the
/// browser ended on is pasted back on the terminal.
#[test]
fn a_login_finishes_with_the_address_pasted_back() {
    let (_server, port) = python_oauth_server(3600, &[]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    std::fs::write(
        home.dir.path().join("user.json"),
        // A callback port nobody listens on after the login: the browser "elsewhere" cannot reach it.
        json!({"servers": {"py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {"callback_port": free_port()}}}})
            .to_string(),
    )
    .unwrap();
    let mut child = home
        .sb()
        .args(["-vv", "auth", "py", "--no-browser"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no URL printed");
        if line.trim().starts_with("http") {
            break line.trim().to_string();
        }
    };
    // The browser on the other machine: the authorization server redirects to the loopback
    // address, which that machine cannot open; the person copies it from the address bar.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let location = runtime.block_on(async {
        let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let answer = browser.get(&url).send().await.unwrap();
        answer.headers()[reqwest::header::LOCATION].to_str().unwrap().to_string()
    });
    assert!(location.contains("/oauth/callback?"), "{location}");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "not the address").unwrap();
        writeln!(stdin, "{location}").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Logged in to `py`"), "{out:?}");
    assert!(rest.contains("That is not the address"), "{rest}");
    // Even with debug logs, the authorization code is not written anywhere.
    let code = location.split("code=").nth(1).unwrap().split('&').next().unwrap();
    assert!(!rest.contains(code), "the authorization code was logged");
    assert_eq!(state(&home.json(&["list", "--json"]), "py").0, "connected");
}

/// An authorization server that offers no registration, and no client id configured: the
/// status says what to do instead of sending the person to a login that cannot work.
#[test]
fn no_registration_and_no_client_id_is_its_own_status() {
    let (_server, port) = python_oauth_server(3600, &["--no-registration"]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": format!("http://127.0.0.1:{port}/mcp")}}}).to_string(),
    )
    .unwrap();
    let listed = home.json(&["list", "--json"]);
    assert_eq!(state(&listed, "py"), ("failed".to_string(), "needs_client_registration".to_string()));
    let message = listed["servers"][0]["status"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("oauth.client_id"), "{message}");
    let out = home.run(&["auth", "py", "--no-browser"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("oauth.client_id"), "{err}");
}

/// The callback is checked before any code is spent: a `state` from another login, an `iss`
/// naming another authorization server (RFC 9207), or an error from the authorization page
/// each fail the login with a plain reason, and the real callback still works after.
#[tokio::test(flavor = "multi_thread")]
async fn a_callback_that_is_not_this_logins_is_refused() {
    let (_server, port) = python_oauth_server(3600, &[]);
    let env = common::TestEnv::new();
    let hub = env.hub(&json!({"servers": {"py": {"url": format!("http://127.0.0.1:{port}/mcp")}}})).await;
    let redirect = format!("http://127.0.0.1:{}/oauth/callback", free_port());
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    async fn attempt(
        hub: &switchboard::Hub,
        browser: &reqwest::Client,
        redirect: &str,
        tamper: fn(&str) -> String,
    ) -> Result<switchboard::status::ServerStatus, switchboard::Error> {
        let login = hub.begin_login("py", redirect).await.unwrap();
        let answer = browser.get(login.authorization_url()).send().await.unwrap();
        let location = answer.headers()[reqwest::header::LOCATION].to_str().unwrap().to_string();
        hub.finish_login(login, &tamper(&location)).await
    }
    let attempt = |tamper: fn(&str) -> String| attempt(&hub, &browser, &redirect, tamper);
    fn other_state(l: &str) -> String {
        let (head, state) = l.split_once("state=").unwrap();
        let rest = state.split_once('&').map(|(_, r)| format!("&{r}")).unwrap_or_default();
        format!("{head}state=someone-elses{rest}")
    }
    let err = attempt(other_state).await.unwrap_err().to_string();
    assert!(err.contains("does not belong to this login"), "{err}");
    let err = attempt(|l: &str| format!("{l}&iss=https%3A%2F%2Fevil.example")).await.unwrap_err().to_string();
    assert!(err.contains("issuer mismatch") && err.contains("evil.example"), "{err}");
    let err = attempt(|l: &str| {
        format!("{}?error=access_denied&error_description=no%20thanks", l.split('?').next().unwrap())
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("refused") && err.contains("access_denied") && err.contains("no thanks"), "{err}");
    let status = attempt(|l: &str| l.to_string()).await.unwrap();
    assert_eq!(status.state(), "connected");
    hub.shutdown().await;
}

/// A TCP proxy on a port of its own, which can be taken down (the port refuses connections,
/// those open are cut) and brought back on the same port.
struct Proxy {
    port: u16,
    target: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    fn new(port: u16, target: u16) -> Proxy {
        let mut p = Proxy { port, target, stop: Default::default(), open: Default::default(), thread: None };
        p.up();
        p
    }

    fn up(&mut self) {
        use std::sync::atomic::Ordering;
        self.stop.store(false, Ordering::SeqCst);
        let listener = std::net::TcpListener::bind(("127.0.0.1", self.port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let (stop, open, target) = (self.stop.clone(), self.open.clone(), self.target);
        self.thread = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", target)) else { continue };
                open.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                let (mut c1, s1) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || std::io::copy(&mut c1, &mut s1.try_clone().unwrap()).ok());
                let (mut c2, mut s2) = (client, server);
                std::thread::spawn(move || std::io::copy(&mut s2, &mut c2).ok());
            }
        }));
    }

    fn down(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.down();
    }
}

/// An authorization server that cannot be reached is not a login to do: the server is
/// `failed` for want of its network (tried again with the usual backoff), not `needs_auth`,
/// and a long-running hub connects by itself once the authorization server is back.
#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_that_is_down_is_tried_again_not_a_login_to_do() {
    let proxy_port = free_port();
    let issuer = format!("http://127.0.0.1:{proxy_port}");
    let (_server, port) = python_oauth_server(2, &["--issuer", &issuer]);
    let mut proxy = Proxy::new(proxy_port, port);
    let env = common::TestEnv::new();
    let config = json!({"servers": {"py": {"url": format!("http://127.0.0.1:{port}/mcp")}}});
    let hub = env.hub(&config).await;
    let redirect = format!("http://127.0.0.1:{}/oauth/callback", free_port());
    let login = hub.begin_login("py", &redirect).await.unwrap();
    assert!(login.authorization_url().starts_with(&issuer), "{}", login.authorization_url());
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answer = browser.get(login.authorization_url()).send().await.unwrap();
    let location = answer.headers()[reqwest::header::LOCATION].to_str().unwrap().to_string();
    assert_eq!(hub.finish_login(login, &location).await.unwrap().state(), "connected");
    hub.shutdown().await;

    // The authorization server goes away; the access token expires.
    proxy.down();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hub = env.hub(&config).await;
    let status = common::settled(&hub, "py").await.unwrap();
    let shown = serde_json::to_value(&status).unwrap();
    assert_eq!(shown["state"], "failed", "{shown}");
    assert_eq!(shown["kind"], "network_unreachable", "not a login to do: {shown}");
    let message = shown["message"].as_str().unwrap_or_default();
    assert!(message.contains("authorization server") && message.contains(&issuer), "{message}");
    assert!(shown["retry"].is_object(), "tried again: {shown}");

    // Back: the hub connects by itself (backoff 1 s, 2 s, 4 s...).
    proxy.up();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if hub.status("py").is_some_and(|s| s.state() == "connected") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not connected again: {:?}", hub.status("py"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    hub.shutdown().await;
}

/// A redirect URI registered with the authorization server (`oauth.redirect_uri`) is used as it
/// is: `switchboard auth` listens on its port and path.
#[test]
fn the_cli_login_comes_back_to_a_registered_redirect_uri() {
    let (_server, port) = python_oauth_server(3600, &[]);
    let home = Home { dir: tempfile::tempdir().unwrap() };
    let redirect = format!("http://localhost:{}/sso/done", free_port());
    std::fs::write(
        home.dir.path().join("user.json"),
        json!({"servers": {"py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {"redirect_uri": redirect}}}})
            .to_string(),
    )
    .unwrap();
    let (page, url) = home.login("py");
    let encoded: String = form_urlencoded::byte_serialize(redirect.as_bytes()).collect();
    assert!(url.contains(&format!("redirect_uri={encoded}")), "{url}");
    assert!(page.contains("Logged in"), "{page}");
    assert_eq!(state(&home.json(&["list", "--json"]), "py").0, "connected");
}

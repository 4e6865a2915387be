//! An agent's first turn (issue 50): time from spawning the gateway to its `initialize` answer
//! and to its first complete list, with two upstreams of which one (server-memory behind a 6 s
//! `sleep`) starts late, in each configuration an agent meets: the stdio gateway cold (nothing
//! remembered), warm (each server's lists remembered from its last run), with a remembered
//! tool the server no longer offers, then `serve`'s `/mcp` and a stdio gateway attached to the
//! workspace's daemon, both warm. Generous bounds, not benchmarks (the bench's `time to tools`
//! rows measure): before, `initialize` waited up to 5 s for the slow server, and Codex and
//! Claude Code had begun their first turn without any of the gateway's tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Home, Recorder, Seen};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use tokio::sync::mpsc;

/// The bound on an answer that must not wait for the slow server (it waited 5 s before).
const PROMPT: Duration = Duration::from_secs(3);

/// `fx` (the fixture) and `mem`, server-memory that starts 6 s late, both with the home's
/// marker.
fn home() -> Home {
    let home = Home::new(false);
    home.edit(|c| c["servers"]["mem"] = common::slow_memory(&home.marker, home.path()));
    home
}

/// Waits until no server of `home`'s is left (through `/proc`: the fixture, the slow server's
/// shell or the server it became).
fn none_left(home: &Home, after: &str) {
    let left = switchboard_testkit::wait_gone(&home.marker, Duration::from_secs(10));
    assert!(left.is_empty(), "{after}: servers left: {left:?}");
}

/// A client of `serve`'s `/mcp` at `base` with `token`.
async fn serve_client(base: &str, token: String, seen: mpsc::UnboundedSender<Seen>) -> Client {
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
            .auth_header(token),
    );
    Recorder { seen, elicitation: false }.serve(transport).await.unwrap()
}

type Client = RunningService<rmcp::RoleClient, Recorder>;

/// A client of `cmd`: how long its `initialize` and its first `tools/list` (asked at once)
/// took from the spawn, and the names listed.
async fn first_turn(
    cmd: tokio::process::Command,
) -> (Client, mpsc::UnboundedReceiver<Seen>, Duration, Duration, Vec<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let started = Instant::now();
    let client = Recorder { seen: tx, elicitation: false }.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let initialized = started.elapsed();
    let names = names(&client).await;
    (client, rx, initialized, started.elapsed(), names)
}

async fn names(client: &Client) -> Vec<String> {
    client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect()
}

/// Waits (up to `limit`) for `notifications/tools/list_changed`.
async fn tools_changed(rx: &mut mpsc::UnboundedReceiver<Seen>, limit: Duration) -> bool {
    tokio::time::timeout(limit, async {
        while let Some(seen) = rx.recv().await {
            if seen == Seen::ToolsChanged {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

fn call(name: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(json!({}).as_object().cloned().unwrap())
}

/// The file where `mem`'s lists are remembered (the one that holds `read_graph`).
fn remembered_mem(home: &Home) -> std::path::PathBuf {
    let dir = switchboard_testkit::data_dir(home.path()).join("lists");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains("read_graph"))
        .unwrap_or_else(|| panic!("no remembered lists of mem in {}", dir.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_servers_tools_are_there_on_the_first_list() {
    let home = home();

    // Cold: nothing remembered. The fast server is there at once, the slow one is told of
    // with `list_changed` when it is up.
    let (client, mut rx, initialized, listed, first) = first_turn(home.gateway(&[])).await;
    println!("stdio, cold: initialize {initialized:?}, first tools/list {listed:?}");
    assert!(initialized < PROMPT && listed < PROMPT, "cold: initialize {initialized:?}, list {listed:?}");
    assert!(first.contains(&"fx__echo".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mem__")), "never seen, still starting: {first:?}");
    assert!(tools_changed(&mut rx, Duration::from_secs(30)).await, "no list_changed when mem came up");
    let later = names(&client).await;
    assert!(later.contains(&"mem__read_graph".to_string()), "{later:?}");
    client.cancel().await.unwrap();
    none_left(&home, "the cold gateway ended (stdin closed)");
    let kept = remembered_mem(&home);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&kept).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "{}", kept.display());

    // Warm: both servers' tools on the first list, at once; a call to the slow one waits for
    // it; its lists are what was remembered, so nothing is told.
    let (client, mut rx, initialized, listed, first) = first_turn(home.gateway(&[])).await;
    println!("stdio, warm: initialize {initialized:?}, first tools/list {listed:?}");
    assert!(initialized < PROMPT && listed < PROMPT, "warm: initialize {initialized:?}, list {listed:?}");
    assert!(first.contains(&"fx__echo".to_string()) && first.contains(&"mem__read_graph".to_string()), "{first:?}");
    let t = Instant::now();
    let graph = client.call_tool(call("mem__read_graph")).await.unwrap();
    assert_ne!(graph.is_error, Some(true), "{graph:?}");
    assert!(serde_json::to_string(&graph.content).unwrap().contains("entities"), "{graph:?}");
    println!("a call to mem while it started: {:?}", t.elapsed());
    assert!(!tools_changed(&mut rx, Duration::from_millis(500)).await, "the same lists were told as changed");
    client.cancel().await.unwrap();
    none_left(&home, "the warm gateway ended (stdin closed)");

    // A remembered tool the server no longer offers: listed while it starts, a call to it
    // says why once the server is up, and the list is told as changed.
    let kept = remembered_mem(&home);
    let mut lists: serde_json::Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    let mut gone = lists["lists"]["tools"][0].clone();
    gone["name"] = json!("vanished");
    lists["lists"]["tools"].as_array_mut().unwrap().push(gone);
    std::fs::write(&kept, lists.to_string()).unwrap();
    let (client, mut rx, _, _, first) = first_turn(home.gateway(&[])).await;
    assert!(first.contains(&"mem__vanished".to_string()), "{first:?}");
    let err = client.call_tool(call("mem__vanished")).await.unwrap_err().to_string();
    assert!(err.contains("`mem` offered when it last ran") && err.contains("no longer offers it"), "{err}");
    assert!(tools_changed(&mut rx, Duration::from_secs(10)).await, "no list_changed for the tool gone");
    let now = names(&client).await;
    assert!(!now.contains(&"mem__vanished".to_string()) && now.contains(&"mem__read_graph".to_string()), "{now:?}");
    client.cancel().await.unwrap();
    none_left(&home, "the gateway with a tool gone ended (stdin closed)");
    assert!(!std::fs::read_to_string(&kept).unwrap().contains("vanished"), "the lists kept are the server's own again");

    // `serve`'s /mcp, started now: its first list has both at once.
    let (serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let token = home.token();
    let started = Instant::now();
    let (tx, _rx) = mpsc::unbounded_channel();
    let http = serve_client(&base, token, tx).await;
    let listed: Vec<String> = http.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    let took = started.elapsed();
    println!("serve's /mcp, warm: first tools/list {took:?}");
    assert!(took < PROMPT, "{took:?}");
    assert!(listed.contains(&"fx__echo".to_string()) && listed.contains(&"mem__read_graph".to_string()), "{listed:?}");
    http.cancel().await.unwrap();

    // A stdio gateway attached to it (the workspace's hub, while mem still starts there).
    let served = switchboard_testkit::pids_with_arg(&home.marker);
    let (client, _rx, initialized, listed, first) = first_turn(home.gateway(&[])).await;
    // Attached: the fixture is serve's alone (a gateway of its own would start another).
    assert_eq!(switchboard_testkit::pids_with_arg(&home.marker), served, "not attached");
    println!("attached, warm: initialize {initialized:?}, first tools/list {listed:?}");
    assert!(initialized < PROMPT && listed < PROMPT, "attached: initialize {initialized:?}, list {listed:?}");
    assert!(first.contains(&"fx__echo".to_string()) && first.contains(&"mem__read_graph".to_string()), "{first:?}");
    client.cancel().await.unwrap();
    // serve killed (SIGKILL) while mem may still be starting: its supervisors end them all.
    drop(serve);
    none_left(&home, "serve killed");
}

/// `serve`'s `/mcp` and a gateway attached to it, cold (nothing remembered, serve started a
/// moment before): each first list comes at once with the fixture's tools, without mem's, and
/// mem's arrive with `list_changed` when it is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_an_attached_gateway_give_what_is_up_at_once_cold() {
    let home = home();
    let (serve, base) = common::served(home.switchboard(&["serve", "--port", "0"]));
    let token = home.token();
    let started = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let http = serve_client(&base, token, tx).await;
    let listed = names(&http).await;
    let took = started.elapsed();
    println!("serve's /mcp, cold: first tools/list {took:?}");
    assert!(took < PROMPT, "{took:?}");
    assert!(listed.contains(&"fx__echo".to_string()), "{listed:?}");
    assert!(!listed.iter().any(|n| n.starts_with("mem__")), "never seen, still starting: {listed:?}");

    // Attached while mem still starts in serve's hub.
    let served = switchboard_testkit::pids_with_arg(&home.marker);
    let (client, mut attached_rx, initialized, took, first) = first_turn(home.gateway(&[])).await;
    println!("attached, cold: initialize {initialized:?}, first tools/list {took:?}");
    assert_eq!(switchboard_testkit::pids_with_arg(&home.marker), served, "not attached");
    assert!(initialized < PROMPT && took < PROMPT, "attached: initialize {initialized:?}, list {took:?}");
    assert!(first.contains(&"fx__echo".to_string()) && !first.iter().any(|n| n.starts_with("mem__")), "{first:?}");

    // Both are told when mem is up, and list it then.
    assert!(tools_changed(&mut rx, Duration::from_secs(30)).await, "serve's session: no list_changed");
    assert!(names(&http).await.contains(&"mem__read_graph".to_string()));
    assert!(tools_changed(&mut attached_rx, Duration::from_secs(30)).await, "attached: no list_changed");
    assert!(names(&client).await.contains(&"mem__read_graph".to_string()));
    client.cancel().await.unwrap();
    http.cancel().await.unwrap();
    drop(serve);
    none_left(&home, "serve killed");
}

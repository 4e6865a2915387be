//! `conformance-client <server-url>`: what the official MCP conformance suite runs. The
//! scenario comes in `MCP_CONFORMANCE_SCENARIO`; everything goes through switchboard's public
//! API (config, `Hub`), as an embedding agent would use it.
//!
//! Run it through the suite: `.ci/conformance client --command target/debug/conformance-client
//! --scenario tools_call`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::json;
use switchboard::config::{self, LoadOptions};
use switchboard::elicitation::AcceptDefaults;
use switchboard::status::ServerStatus;
use switchboard::{CallOptions, Hub, HubOptions, Paths};

/// The one server's name in the generated config.
const SERVER: &str = "s";

#[tokio::main]
async fn main() -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server-url>   (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: {scenario}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("conformance.json");
    let server = json!({"url": url, "transport": "streamable-http", "startup_timeout_ms": 20000});
    std::fs::write(&file, json!({"servers": {SERVER: server}}).to_string())?;
    let paths = Paths::new(dir.path().join("user.json"), dir.path().join("data"));
    let mut options = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
    options.extra_files = vec![file];
    let loaded = config::load(&options);
    // Unattended: a server's request for input is answered with its schema's defaults.
    let hub = Hub::start(&loaded, HubOptions::new(paths).elicitor(Arc::new(AcceptDefaults)));
    hub.ready().await;
    let outcome = scenario_steps(&hub, scenario).await;
    hub.shutdown().await;
    outcome
}

async fn scenario_steps(hub: &Hub, scenario: &str) -> anyhow::Result<()> {
    match hub.status(SERVER) {
        Some(ServerStatus::Connected { .. }) => {}
        other => bail!("not connected: {}", other.map(|s| s.summary()).unwrap_or_default()),
    }
    let call = |tool: &str, arguments: serde_json::Value| {
        let name = format!("{SERVER}/{tool}");
        async move {
            let out = hub
                .call_tool(&name, arguments.as_object().cloned(), CallOptions::new())
                .await
                .with_context(|| format!("calling {name}"))?;
            if out.is_error() {
                bail!("{name} returned an error: {:?}", out.model.blocks);
            }
            anyhow::Ok(())
        }
    };
    match scenario {
        // The handshake (and the tool listing that follows it) is the whole scenario.
        "initialize" => Ok(()),
        "tools_call" => call("add_numbers", json!({"a": 2, "b": 3})).await,
        "sse-retry" => call("test_reconnection", json!({})).await,
        "elicitation-sep1034-client-defaults" => call("test_client_elicitation_defaults", json!({})).await,
        other => bail!("unknown scenario `{other}`"),
    }
}

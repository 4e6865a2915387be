//! `conformance-client <server-url>`: what the official MCP conformance suite runs. The
//! scenario comes in `MCP_CONFORMANCE_SCENARIO`; everything goes through switchboard's public
//! API (config, `Hub`), as an embedding agent would use it.
//!
//! Run it through the suite: `.ci/conformance client --command target/debug/conformance-client
//! --scenario tools_call`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard::auth::Callback;
use switchboard::config::{self, LoadOptions};
use switchboard::elicitation::AcceptDefaults;
use switchboard::status::{FailureKind, ServerStatus};
use switchboard::{CallOptions, Error, Hub, HubOptions, Paths};

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

/// The client ID metadata document URL the suite expects (SEP-991 scenarios).
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Authorization attempts before giving up (the suite's `scope-retry-limit` wants ≤ 3).
const MAX_LOGINS: usize = 3;

async fn run(scenario: &str, url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let context: serde_json::Value =
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
    let mut oauth = json!({"client_metadata_url": CIMD_URL, "callback_port": 0});
    for key in ["client_id", "client_secret", "signing_algorithm"] {
        if let Some(v) = context[key].as_str() {
            oauth[key] = json!(v);
        }
    }
    if context["valid_jwt"].is_string() {
        // Workload identity (SEP-1933): the platform's JWT for this workload.
        oauth["grant"] = json!("jwt_bearer");
        oauth["assertion"] = context["valid_jwt"].clone();
    }
    if context["idp_issuer"].is_string() {
        // SEP-990: the identity provider and the person's ID token come in the context.
        oauth["grant"] = json!("enterprise");
        oauth["enterprise"] = json!({
            "idp_issuer": context["idp_issuer"],
            "idp_token_endpoint": context["idp_token_endpoint"],
            "idp_client_id": context["idp_client_id"],
            "id_token": context["idp_id_token"],
        });
    }
    if scenario.starts_with("auth/client-credentials") {
        oauth["grant"] = json!("client_credentials");
        if let Some(pem) = context["private_key_pem"].as_str() {
            let key = dir.path().join("client-key.pem");
            std::fs::write(&key, pem)?;
            oauth["private_key_file"] = json!(key);
            oauth.as_object_mut().map(|o| o.remove("client_secret"));
        }
    }
    let file = dir.path().join("conformance.json");
    let mut server = json!({"url": url, "transport": "streamable-http", "startup_timeout_ms": 20000, "oauth": oauth});
    if scenario == "http-custom-headers" {
        // The scenario's own arguments break its schema on purpose (`verbose: null` for a
        // boolean, to see the header left out): switchboard would refuse them before sending.
        server["validate_arguments"] = json!(false);
    }
    std::fs::write(&file, json!({"servers": {SERVER: server}}).to_string())?;
    let paths = Paths::new(dir.path().join("user.json"), dir.path().join("data"));
    let mut options = LoadOptions::from_env(dir.path().to_path_buf(), &paths);
    options.extra_files = vec![file];
    let loaded = config::load(&options);
    if loaded.has_errors() {
        bail!("config: {:?}", loaded.diagnostics);
    }
    // Unattended: a server's request for input is answered with its schema's defaults.
    let hub = Hub::start(&loaded, HubOptions::new(paths).elicitor(Arc::new(AcceptDefaults)));
    hub.ready().await;
    let outcome = scenario_steps(&hub, scenario, &context).await;
    hub.shutdown().await;
    outcome
}

/// Logs in the way `switchboard auth` does, with the browser played by an HTTP client: the
/// suite's authorization endpoints redirect at once, so the `Location` they answer with is
/// the address the browser would come back to.
async fn login(hub: &Hub, challenge: Option<&str>) -> anyhow::Result<()> {
    if hub.logs_in_without_browser(SERVER)? {
        hub.login_without_browser(SERVER).await?;
        return Ok(());
    }
    let callback = Callback::bind(0).await?;
    let login = hub.begin_login_with(SERVER, &callback.redirect_uri(), challenge).await?;
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let answer = browser.get(login.authorization_url()).send().await?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .with_context(|| format!("the authorization endpoint answered {} without a redirect", answer.status()))?
        .to_string();
    hub.finish_login(login, &location).await?;
    Ok(())
}

async fn scenario_steps(hub: &Hub, scenario: &str, context: &Value) -> anyhow::Result<()> {
    let mut logins = 0;
    loop {
        match hub.status(SERVER) {
            Some(ServerStatus::Connected { .. }) => break,
            Some(ServerStatus::Failed { kind: FailureKind::NeedsAuth, auth_challenge, .. }) if logins < MAX_LOGINS => {
                logins += 1;
                login(hub, auth_challenge.as_deref()).await?;
            }
            other => bail!("not connected: {}", other.map(|s| s.summary()).unwrap_or_default()),
        }
    }
    let logins = std::sync::Mutex::new(logins);
    let call = |tool: String, arguments: Value| {
        let logins = &logins;
        async move {
            let name = format!("{SERVER}/{tool}");
            loop {
                match hub.call_tool(&name, arguments.as_object().cloned(), CallOptions::new()).await {
                    Ok(out) if out.is_error() => bail!("{name} returned an error: {:?}", out.model().blocks),
                    Ok(_) => return anyhow::Ok(()),
                    // A token without the scope this tool needs: log in again for it (step-up).
                    Err(Error::AuthRequired { challenge, .. }) if take_login(logins) => {
                        login(hub, challenge.as_deref()).await?;
                    }
                    Err(e) => return Err(anyhow::Error::new(e).context(format!("calling {name}"))),
                }
            }
        }
    };
    match scenario {
        // The handshake (and the tool listing that follows it) is the whole scenario.
        "initialize" => Ok(()),
        "tools_call" => call("add_numbers".into(), json!({"a": 2, "b": 3})).await,
        "sse-retry" => call("test_reconnection".into(), json!({})).await,
        "elicitation-sep1034-client-defaults" => call("test_client_elicitation_defaults".into(), json!({})).await,
        // SEP-2322: two calls at once, one of them in `input_required` rounds (its request
        // state and answers must stay its own), then a round without state, then a result
        // with no `resultType` (complete).
        "sep-2322-client-request-state" => {
            let (rounds, unrelated) = tokio::join!(
                call("test_mrtr_echo_state".into(), json!({})),
                call("test_mrtr_unrelated".into(), json!({}))
            );
            rounds?;
            unrelated?;
            call("test_mrtr_no_state".into(), json!({})).await?;
            call("test_mrtr_no_result_type".into(), json!({})).await
        }
        // The focal tool's input schema goes back to the server as the catalog keeps it.
        "json-schema-2020-12-preservation" => {
            let catalog = hub.catalog();
            let focal = catalog
                .tools()
                .iter()
                .find(|t| t.server == SERVER && t.tool.name != "json_schema_echo")
                .context("no tool beside json_schema_echo")?;
            let schema = Value::Object((*focal.tool.input_schema).clone());
            call("json_schema_echo".into(), json!({"schema": schema})).await
        }
        // Every authorization scenario: log in as the server asks, then list and call its tool.
        auth if auth.starts_with("auth/") => match hub.catalog().tools().first() {
            Some(tool) => call(tool.tool.name.to_string(), json!({})).await,
            None => Ok(()),
        },
        // The calls the scenario names (`http-custom-headers`: values for each header case).
        _ if context["toolCalls"].is_array() => {
            for c in context["toolCalls"].as_array().into_iter().flatten() {
                let name = c["name"].as_str().context("a tool call without a name")?;
                call(name.to_string(), c["arguments"].clone()).await?;
            }
            Ok(())
        }
        // Any other scenario checks how requests are made (`request-metadata`,
        // `http-standard-headers`, `http-invalid-tool-headers`, `json-schema-ref-no-deref`):
        // everything the server offers is used once, as a host would.
        _ => exercise(hub, &call).await,
    }
}

/// Takes one login for a step-up, if any is left.
fn take_login(logins: &std::sync::Mutex<usize>) -> bool {
    let mut n = logins.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    *n += 1;
    *n <= MAX_LOGINS
}

/// Calls every tool in the catalog (with the smallest arguments its schema accepts), reads
/// every resource and gets every prompt.
async fn exercise<F, Fut>(hub: &Hub, call: &F) -> anyhow::Result<()>
where
    F: Fn(String, Value) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let catalog = hub.catalog();
    for tool in catalog.tools() {
        call(tool.tool.name.to_string(), smallest(&tool.tool.input_schema)).await?;
    }
    for resource in catalog.resources() {
        hub.read_resource(SERVER, &resource.resource.uri)
            .await
            .with_context(|| format!("reading {}", resource.resource.uri))?;
    }
    for prompt in catalog.prompts() {
        let arguments = prompt
            .prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| (a.name.clone(), Value::String("x".into())))
            .collect();
        hub.get_prompt(SERVER, &prompt.prompt.name, Some(arguments))
            .await
            .with_context(|| format!("getting prompt {}", prompt.prompt.name))?;
    }
    Ok(())
}

/// The smallest arguments `schema` accepts: a value of its type for each required property.
fn smallest(schema: &serde_json::Map<String, Value>) -> Value {
    let mut arguments = serde_json::Map::new();
    for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let kind =
            schema.get("properties").and_then(|p| p.get(name)).and_then(|p| p.get("type")).and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("x"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

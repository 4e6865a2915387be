//! `switchboard serve`: the hub with every configured server, over HTTP, until SIGINT,
//! SIGTERM, SIGHUP or SIGQUIT, which end every stream and call, then close every server (and
//! their process trees) before the process ends, with 128 + the first signal's number; a second
//! signal stops waiting for them (their supervisors finish the job).

use std::net::IpAddr;

use anyhow::{Result, anyhow};
use switchboard::{Hub, HubOptions};
use switchboard_server::{Questions, ServeOptions};

use crate::ctx::Ctx;

/// Where and to whom to answer.
pub struct Listen {
    pub port: u16,
    pub bind: IpAddr,
    pub allow_remote: bool,
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
    pub public_url: Option<String>,
    /// How long SIGTERM lets calls in flight finish.
    pub drain: std::time::Duration,
    /// How the other replicas reach this one.
    pub advertise: Option<String>,
}

pub async fn serve(ctx: &Ctx, listen: Listen) -> Result<u8> {
    if let Some(code) = crate::gateway::refuses_to_serve(ctx) {
        return Ok(code);
    }
    // Signals are ours from the start: one while the servers start (their trees may already
    // run) stops the server as soon as it is up, instead of killing this process unannounced.
    let mut stop = crate::signals::Stop::listen();
    // Servers' questions (elicitation) go to the MCP client whose call caused them (`/mcp`),
    // else to whoever follows the events: the dashboard asks.
    let questions = Questions::new();
    let relay = switchboard_gateway::Relay::new();
    relay.with_fallback(questions.clone());
    // The same for a server's request for a completion: the person answers it there.
    let sampling = switchboard_server::SamplingQueue::new();
    relay.with_sampling_fallback(sampling.clone());
    // Calls the policy asks about go to the MCP client that made them, when it can be asked
    // (the gateway's own approver), else to the dashboard's queue.
    let approvals = switchboard_server::ApprovalQueue::new();
    let options = relay
        .answering(HubOptions::new(ctx.paths.clone()))
        .approver(approvals.clone())
        .team(ctx.loaded.identity.is_some())
        .person_config(ctx.options.clone());
    let hub = Hub::start(&ctx.loaded, ctx.with_store(options).await?);
    let _follow = ctx.follow(&hub);
    let gateway = switchboard_gateway::Gateway::new(
        hub.clone(),
        switchboard_gateway::GatewayOptions::new().profiles(ctx.loaded.profiles.clone()),
        Some(relay),
    );
    let mut options = ServeOptions::new(ctx.paths.data_dir.clone());
    options.questions = Some(questions);
    options.approvals = Some(approvals);
    options.sampling = Some(sampling);
    options.gateway = Some(gateway);
    options.bind = listen.bind;
    options.port = listen.port;
    options.allow_remote = listen.allow_remote;
    options.hosts = listen.hosts;
    options.cors_origins = listen.origins;
    if let Some(url) = &listen.public_url {
        let ok = reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            return Err(anyhow!("--public-url {url}: write it as http(s)://host[:port][/path]"));
        }
    }
    options.public_url = listen.public_url;
    options.identity = ctx.loaded.identity.clone();
    options.advertise = listen.advertise.clone();
    if !listen.bind.is_loopback() {
        note!(
            "warning: answering the network over plain HTTP: the token and session cookie cross it unencrypted \
             (put a TLS proxy in front, or use an SSH tunnel to the loopback default)"
        );
    }
    let bound = match switchboard_server::bind(&hub, &options).await {
        Ok(b) => b,
        Err(e) => {
            hub.shutdown().await;
            return Err(e.into());
        }
    };
    out!("switchboard is serving on http://{}", bound.addr);
    // The workspace's gateways and commands use these servers (not those of a serve whose
    // `/mcp` callers sign in: a stdio gateway attaches with the local token).
    let offered = bound.addr.ip().is_loopback() && ctx.loaded.identity.is_none();
    let _published = crate::daemon::publish(ctx, "serve", bound.addr, offered);
    out!("  dashboard login (works once): {}", bound.login_url);
    out!("  API: Authorization: Bearer <the token in {}>", ctx.paths.data_dir.join("serve-token").display());
    out!("  OpenAPI: http://{}/api/openapi.json", bound.addr);
    out!("  MCP (every server as one): http://{}/mcp, with the same token", bound.addr);
    // How many signals have arrived, and the first one's number (the exit code says which).
    let (signals_tx, mut signals) = tokio::sync::watch::channel((0u32, 0i32));
    tokio::spawn(async move {
        loop {
            let number = stop.next().await;
            signals_tx.send_modify(|(n, first)| {
                if *n == 0 {
                    *first = number;
                }
                *n += 1;
            });
        }
    });
    let first = {
        let mut signals = signals.clone();
        let drain = listen.drain;
        async move {
            match signals.wait_for(|(n, _)| *n >= 1).await {
                Ok(s) if s.1 == crate::signals::SIGTERM => drain,
                _ => std::time::Duration::ZERO,
            }
        }
    };
    let served = {
        let mut again = signals.clone();
        tokio::select! {
            served = bound.serve_draining(first) => served,
            // A second signal while it drains: stop now.
            _ = again.wait_for(|(n, _)| *n >= 2) => Ok(()),
        }
    };
    note!("stopping: closing every server");
    tokio::select! {
        () = hub.shutdown() => {}
        _ = signals.wait_for(|(n, _)| *n >= 2) => note!("stopped waiting for the servers: their supervisors end them"),
    }
    served?;
    // `serve` ends only on a signal (or an error above): 128 + its number, as every command.
    let (_, signal) = *signals.borrow();
    Ok(if signal == 0 { 0 } else { crate::signals::exit_code(signal) })
}

/// `switchboard dashboard`: a fresh login link from the running server (its address in
/// `<data>/serve.json`, its token in `<data>/serve-token`), opened or printed.
pub async fn dashboard(ctx: &Ctx, print_url: bool) -> Result<u8> {
    let data = &ctx.paths.data_dir;
    let serve = switchboard_server::RunningServe::find_for(data, &ctx.loaded.project_root)?.ok_or_else(|| {
        anyhow!("no `switchboard serve` has run with this data folder ({}): start one", data.display())
    })?;
    let base = &serve.url;
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build()?;
    let response = serve.post(&client, "/api/login-links").send().await.map_err(|e| {
        if e.is_connect() {
            anyhow!("`switchboard serve` is not running at {base} (it was, last): start it again")
        } else {
            anyhow!("asking {base} for a login link: {e}")
        }
    })?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        return Err(anyhow!("{base} refused a login link ({status}): {body}"));
    }
    let link: serde_json::Value = response.json().await?;
    let url = link["login_url"].as_str().ok_or_else(|| anyhow!("{base} answered without a link"))?;
    if !print_url && crate::terminal::has_display() && crate::terminal::open_browser(url) {
        out!("Opened the dashboard in your browser. If nothing opened, this link works once within 10 minutes:");
    } else {
        out!("Open this link in a browser (it works once, within 10 minutes):");
    }
    out!("  {url}");
    Ok(0)
}

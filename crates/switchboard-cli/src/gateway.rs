//! `switchboard gateway`: every configured server as one MCP server, on stdio (what goes into
//! an agent's config) or on Streamable HTTP (`--http [ADDR:]PORT`, loopback and the token by
//! default). Upstreams start at once, in parallel. When stdin closes (stdio), or on SIGINT,
//! SIGTERM, SIGHUP or SIGQUIT, every upstream is closed (process trees included) before the
//! process ends; nothing but MCP is ever written to stdout in stdio mode.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use anyhow::{Result, anyhow, bail};
use switchboard::{Hub, HubOptions};
use switchboard_gateway::{Gateway, GatewayOptions, Names, Relay, Scope, ToolSearch};
use tokio_util::sync::CancellationToken;

use crate::ctx::Ctx;

/// The flags of `switchboard gateway`.
pub struct Args {
    pub http: Option<String>,
    pub allow_remote: bool,
    pub no_auth: bool,
    pub hosts: Vec<String>,
    /// How long SIGTERM lets calls in flight finish (`--http`).
    pub drain: std::time::Duration,
    /// How the other replicas reach this one (`--http`).
    pub advertise: Option<String>,
    pub only: Vec<String>,
    pub profile: Option<String>,
    pub names: String,
    pub name_limit: u16,
    pub model_results: bool,
    pub no_attach: bool,
    pub require: Vec<String>,
    pub tool_search: String,
    /// Hidden characters found and told but passed on (`--keep-hidden`, with `--names bare`).
    pub keep_hidden: bool,
}

/// `[ADDR:]PORT`: the address defaults to 127.0.0.1.
pub fn parse_listen(s: &str) -> Result<SocketAddr> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| anyhow!("`--http {s}`: expected PORT or ADDR:PORT (e.g. 7342, 127.0.0.1:0, [::1]:7342)"))
}

/// Whether this process must not serve: a switchboard with the same config started it (it
/// would start itself without end; see `switchboard::chain`). Said on stderr, which the hub
/// above shows in the server's status.
pub(crate) fn refuses_to_serve(ctx: &Ctx) -> Option<u8> {
    let chain = switchboard::chain::Chain::inherited(&switchboard::config::host_env());
    let why = switchboard::chain::refusal(&chain, &switchboard::workspace::config_key(&ctx.loaded))?;
    note!("{why}");
    Some(u8::try_from(switchboard::chain::REFUSED_EXIT).unwrap_or(1))
}

pub async fn gateway(ctx: &Ctx, args: Args) -> Result<u8> {
    if let Some(code) = refuses_to_serve(ctx) {
        return Ok(code);
    }
    let tool_search: ToolSearch =
        args.tool_search.parse().map_err(|e: String| anyhow!("`--tool-search {}`: {e}", args.tool_search))?;
    let names = match args.names.as_str() {
        "short" => Names::Short(usize::from(args.name_limit)),
        word => Names::parse(word).ok_or_else(|| anyhow!("`--names {word}`: use short, prefixed or bare"))?,
    };
    if args.keep_hidden && names != Names::Bare {
        bail!(
            "`--keep-hidden` passes servers' text on as they sent it: only with `--names bare` (a transparent gateway)"
        );
    }
    let profile = match &args.profile {
        Some(name) => Some(ctx.loaded.profiles.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = ctx.loaded.profiles.keys().map(String::as_str).collect();
            anyhow!(
                "no profile `{name}` in the config (profiles: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            )
        })?),
        None => None,
    };
    for server in &args.only {
        if !ctx.loaded.servers.contains_key(server) {
            bail!("`--only {server}`: no such server in the config");
        }
    }
    let listen = args.http.as_deref().map(parse_listen).transpose()?;
    // A stdio gateway of a workspace whose hub runs (with this config) uses its servers (not
    // with `--keep-hidden`: that hub removed what this gateway is asked to pass on).
    if listen.is_none()
        && !args.no_attach
        && !args.keep_hidden
        && args.only.is_empty()
        && let Some(record) = crate::daemon::attachable(ctx)
        && (args.require.is_empty() || record.kind != "gateway")
    {
        return attached(ctx, &args, &record, tool_search, names).await;
    }
    for d in ctx.loaded.diagnostics.iter().filter(|d| d.severity == switchboard::config::Severity::Error) {
        note!("config: {}", switchboard::text::for_terminal(&d.to_string()));
    }
    if let Some(file) = &ctx.loaded.mcp_off {
        note!("MCP is turned off: `features.mcp: false` in {} (no server starts)", file.display());
    }
    let relay = Relay::new();
    // A call the policy asks about goes to the client that made it; one that cannot elicit
    // is put on the dashboard of a running `switchboard serve` of the same data folder.
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
    let approver = switchboard_server::ServeApprover::new(
        ctx.paths.data_dir.clone(),
        format!("switchboard gateway (pid {}) in {cwd}", std::process::id()),
    )
    .instead_of("its client cannot be asked (it declared no elicitation)")
    .in_workspace(ctx.loaded.project_root.clone());
    // Over HTTP with `identity`, callers sign in: servers each person gets their own of.
    let team = listen.is_some() && ctx.loaded.identity.is_some();
    let mut options =
        relay.answering(HubOptions::new(ctx.paths.clone())).approver(std::sync::Arc::new(approver)).team(team);
    if team {
        // Each person's hub loads the config again with their own input values.
        options = options.person_config(ctx.options.clone());
    }
    if args.keep_hidden {
        options = options.screening(switchboard::screen::Screening::Keep);
    }
    // Start only what any client can see.
    let mut only: BTreeSet<String> = args.only.iter().cloned().collect();
    if only.is_empty()
        && listen.is_none()
        && let Some(servers) = profile.as_ref().and_then(|p| p.servers.clone())
    {
        only = servers.into_iter().collect();
    }
    if !only.is_empty() {
        options.only = Some(only);
    }
    let options = ctx.with_store(options).await?;
    let hub = Hub::start(&ctx.loaded, options);
    if !args.require.is_empty() {
        hub.ready().await;
        if let Err(e) = crate::daemon::require_local(&hub, &args.require) {
            hub.shutdown().await;
            return Err(e);
        }
    }
    // Edits to the config files are applied as they happen, server by server; clients stay
    // connected and are told what lists changed.
    let _follow = ctx.follow(&hub);
    let gateway_options = GatewayOptions::new()
        .names(names)
        .scope(Scope { only: args.only.clone(), profile })
        .profiles(ctx.loaded.profiles.clone())
        .model_results(args.model_results)
        .tool_search(tool_search);
    let gateway = Gateway::new(hub.clone(), gateway_options, Some(relay));
    let mut stop = crate::signals::Stop::listen();
    let outcome = match listen {
        None => Ok(serve_stdio(&gateway, &mut stop).await),
        Some(addr) => serve_http(ctx, &gateway, &args, addr, &mut stop).await,
    };
    close(&hub, &mut stop).await;
    outcome
}

async fn serve_http(
    ctx: &Ctx,
    gateway: &Gateway,
    args: &Args,
    addr: SocketAddr,
    stop: &mut crate::signals::Stop,
) -> Result<u8> {
    let mut options = switchboard_server::GatewayHttpOptions::new(addr, ctx.paths.data_dir.clone());
    options.allow_remote = args.allow_remote;
    options.no_auth = args.no_auth;
    options.hosts = args.hosts.clone();
    options.identity = ctx.loaded.identity.clone();
    options.advertise = args.advertise.clone();
    let bound = switchboard_server::bind_gateway(gateway, &options).await?;
    out!("switchboard gateway: MCP (Streamable HTTP) at http://{}/mcp", bound.addr);
    let team = ctx.loaded.identity.as_ref();
    // The workspace's stdio gateways use this one's servers (when it shows them all, with the
    // local token: not a gateway whose callers sign in).
    let offered = bound.addr.ip().is_loopback()
        && args.only.is_empty()
        && args.profile.is_none()
        && !args.no_auth
        && team.is_none();
    let _published = crate::daemon::publish(ctx, "gateway", bound.addr, offered);
    if let Some(identity) = team {
        let issuers: Vec<&str> = identity.issuers.iter().map(|i| i.issuer.as_str()).collect();
        out!("  callers sign in with: {} (`identity` in the config)", issuers.join(", "));
        out!(
            "  metrics: http://{}/metrics with the token in {}",
            bound.addr,
            ctx.paths.data_dir.join("serve-token").display()
        );
    } else if args.no_auth {
        note!("warning: --no-auth: any program on this machine can use every server through this gateway");
    } else {
        out!("  token: Authorization: Bearer <the token in {}>", ctx.paths.data_dir.join("serve-token").display());
    }
    if !args.profiles_hint().is_empty() {
        out!("  profiles: {}", args.profiles_hint());
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<i32>();
    let drain = args.drain;
    let serving = bound.serve_draining(async move {
        match rx.await {
            Ok(crate::signals::SIGTERM) => drain,
            _ => std::time::Duration::ZERO,
        }
    });
    tokio::pin!(serving);
    let signal = tokio::select! {
        served = &mut serving => { served?; return Ok(0) }
        signal = stop.next() => signal,
    };
    if signal == crate::signals::SIGTERM && !drain.is_zero() {
        note!(
            "switchboard gateway: SIGTERM: draining (calls in flight get up to {drain:?}; a second signal stops at once)"
        );
    }
    let _ = tx.send(signal);
    tokio::select! {
        served = &mut serving => served?,
        _ = stop.next() => {}
    }
    Ok(crate::signals::exit_code(signal))
}

impl Args {
    fn profiles_hint(&self) -> String {
        self.profile.as_ref().map(|p| format!("{p} by default; others with /mcp?profile=NAME")).unwrap_or_default()
    }
}

/// A stdio gateway whose one upstream is the workspace's running hub: transparent (its tool
/// names are that hub's), elicitation, sampling and roots relayed both ways; the hub keeps the
/// servers, their sessions and tokens, and applies the policy. When that hub goes away the
/// gateway carries on by itself (see [`follow_the_hub`]).
async fn attached(
    ctx: &Ctx,
    args: &Args,
    record: &switchboard::workspace::WorkspaceRecord,
    tool_search: ToolSearch,
    names: Names,
) -> Result<u8> {
    if !args.require.is_empty() {
        crate::daemon::require_remote(ctx, record, &args.require).await?;
    }
    let loaded = crate::daemon::attached_config(ctx, record, args.profile.as_deref(), names)?;
    tracing::info!("using the servers of the workspace's {} (pid {}) at {}", record.kind, record.pid, record.url);
    let relay = Relay::new();
    let options =
        HubOptions::new(ctx.paths.clone()).elicitor(relay.clone()).sampler(relay.clone()).roots_source(relay.clone());
    let hub = Hub::start(&loaded, options);
    hub.ready().await;
    if let Some(status) = hub.status(crate::daemon::UPSTREAM).filter(|s| s.state() != "connected") {
        hub.shutdown().await;
        bail!(
            "the workspace's {} (pid {}) at {} did not take this gateway: {} (`--no-attach` starts servers here)",
            record.kind,
            record.pid,
            record.url,
            status.summary()
        );
    }
    // Search over the workspace hub's tools happens here, on this client's view of them.
    let options = GatewayOptions::new().names(Names::Bare).tool_search(tool_search);
    let gateway = Gateway::new(hub.clone(), options, Some(relay));
    gateway.say_server_as(crate::daemon::UPSTREAM, &hub_name(record));
    let follower = tokio::spawn(follow_the_hub(
        hub.clone(),
        gateway.clone(),
        Following {
            own: ctx.loaded.clone(),
            data_dir: ctx.paths.data_dir.clone(),
            profile: args.profile.clone(),
            names,
            record: record.clone(),
        },
    ));
    let mut stop = crate::signals::Stop::listen();
    let code = serve_stdio(&gateway, &mut stop).await;
    follower.abort();
    close(&hub, &mut stop).await;
    Ok(code)
}

/// How an attached gateway's upstream is named in what its client reads.
fn hub_name(record: &switchboard::workspace::WorkspaceRecord) -> String {
    format!("the workspace's {} (pid {}) at {}", record.kind, record.pid, record.url)
}

/// What an attached gateway needs to carry on without the hub it used.
struct Following {
    /// The config it would run by itself.
    own: switchboard::config::LoadedConfig,
    data_dir: std::path::PathBuf,
    profile: Option<String>,
    names: Names,
    /// The hub in use.
    record: switchboard::workspace::WorkspaceRecord,
}

/// How often the hub's process is looked at.
const HUB_CHECK: std::time::Duration = std::time::Duration::from_millis(200);

/// Watches the hub an attached gateway uses (its process, and its connection's status). When
/// it is gone, the gateway goes on without the agent doing anything: attached to another hub
/// of the same workspace and config if one runs, else with its own servers (the config it
/// would have run without a hub, names as the hub gave them). Calls in flight on the old hub
/// fail saying so; the next call is served; the lists changed are told with `list_changed`.
async fn follow_the_hub(hub: Hub, gateway: Gateway, mut f: Following) {
    use switchboard::workspace::{self, Lookup};
    let key = workspace::config_key(&f.own);
    let mut events = hub.subscribe_changes();
    let mut tick = tokio::time::interval(HUB_CHECK);
    // While the hub is not connected its lists are not to be told as gone: they come back
    // (it reconnects, another hub, this gateway's own servers) and are told then if changed.
    let mut held = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            event = events.recv() => match event {
                Ok(switchboard::events::Event::StatusChanged { server, .. }) if server == crate::daemon::UPSTREAM => {}
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            },
        }
        let connected = hub.status(crate::daemon::UPSTREAM).is_some_and(|s| s.state() == "connected");
        if connected {
            held = None;
        } else if held.is_none() {
            held = Some(gateway.hold_list_changes());
        }
        if process_alive(f.record.pid) {
            continue;
        }
        match workspace::find(&f.data_dir, &f.own.project_root, &key) {
            Lookup::Live(record) if record.pid != f.record.pid => {
                let loaded =
                    crate::daemon::attached_config_for(&f.data_dir, &f.own, &record, f.profile.as_deref(), f.names);
                match loaded {
                    Ok(loaded) => {
                        note!(
                            "switchboard gateway: {} is gone; attached to {}",
                            hub_name(&f.record),
                            hub_name(&record)
                        );
                        hub.reload(&loaded).await;
                        gateway.say_server_as(crate::daemon::UPSTREAM, &hub_name(&record));
                        f.record = record;
                        continue;
                    }
                    Err(e) => note!("switchboard gateway: attaching to {}: {e}", hub_name(&record)),
                }
            }
            _ => {}
        }
        note!(
            "switchboard gateway: {} is gone; this gateway now runs the workspace's servers itself",
            hub_name(&f.record)
        );
        // Told once the servers are up (within the first start's bound): not at all when the
        // lists end up as the hub had them.
        let held = held.take().unwrap_or_else(|| gateway.hold_list_changes());
        gateway.set_names(f.names);
        hub.reload(&f.own).await;
        let _ = tokio::time::timeout(switchboard_gateway::START_WAIT, hub.started(|_| true)).await;
        drop(held);
        return;
    }
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command's closing parenthesis: `Z` is a zombie, `X` dead.
    !matches!(stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()), Some('Z' | 'X') | None)
}

/// Serves MCP on stdin/stdout until stdin closes (exit code 0) or a signal (128 + it).
async fn serve_stdio(gateway: &Gateway, stop: &mut crate::signals::Stop) -> u8 {
    let cancel = CancellationToken::new();
    let serving = switchboard_gateway::serve_stdio(gateway, cancel.clone());
    tokio::pin!(serving);
    tokio::select! {
        served = &mut serving => {
            if let Err(e) = served {
                note!("gateway: {e}");
            }
            0
        }
        signal = stop.next() => {
            cancel.cancel();
            crate::signals::exit_code(signal)
        }
    }
}

/// Closes every upstream; a second signal stops waiting (the supervisors finish the job).
async fn close(hub: &Hub, stop: &mut crate::signals::Stop) {
    tokio::select! {
        () = hub.shutdown() => {}
        _ = stop.next() => {}
    }
}

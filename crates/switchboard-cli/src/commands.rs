//! What each subcommand does.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};
use switchboard::catalog::export::{ToolFormat, ToolsJson};
use switchboard::catalog::naming::sanitize;
use switchboard::config::{self, LoadOptions, LoadedConfig};
use switchboard::status::{FailureKind, ServerStatus};
use switchboard::trust::TrustStore;
use switchboard::{CallOptions, Hub, HubOptions, Paths};
use tokio_util::sync::CancellationToken;

use crate::ask;
use crate::render::{self, safe, short, status_word, table};
use crate::{Cli, Command, ConfigAction, InputsAction};

/// Runs the command; returns the exit code.
pub async fn run(cli: Cli, secrets: crate::logs::Secrets) -> u8 {
    match dispatch(cli, secrets).await {
        Ok(code) => code,
        // `switchboard tools | head -1`: the reader has what it wanted.
        Err(e) if crate::out::is_broken_pipe(&e) => 0,
        Err(e) => {
            // What a server said may be in the message: no escape sequence reaches the terminal.
            let message = format!("{e:#}");
            note!(
                "{} {}",
                if render::stderr_tty() { console::style("error:").red().bold().to_string() } else { "error:".into() },
                switchboard::text::for_terminal_lines(&message)
            );
            2
        }
    }
}

pub(crate) struct Ctx {
    /// What is drawn on stderr now (so questions are not drawn over it).
    pub(crate) screen: ask::Screen,
    pub(crate) paths: Paths,
    /// How the config was loaded (to load it again when its files change).
    pub(crate) options: LoadOptions,
    pub(crate) loaded: LoadedConfig,
}

fn load(cli: &Cli) -> Result<Ctx> {
    let paths = Paths::from_env();
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let mut options = LoadOptions::from_env(cwd, &paths);
    options.extra_files = cli.configs.clone();
    let mut loaded = config::load(&options);
    // Inputs servers need (`${input:ID}`): asked once, at a terminal, then kept.
    let asks = !matches!(cli.command, Command::Config { .. } | Command::Inputs { .. } | Command::Import { .. });
    if asks && crate::import::ask_missing(&paths, &loaded.inputs_missing) {
        loaded = config::load(&options);
    }
    Ok(Ctx { screen: ask::Screen::default(), paths, options, loaded })
}

impl Ctx {
    /// Follows the config files while `hub` runs (serve, gateway): edits are applied server
    /// by server. `None` (said on stderr) when the files cannot be watched.
    pub(crate) fn follow(&self, hub: &Hub) -> Option<switchboard::ConfigWatch> {
        match hub.watch_config(self.options.clone(), &self.loaded) {
            Ok(w) => Some(w),
            Err(e) => {
                note!("warning: {e}; edits to the config take effect at the next start");
                None
            }
        }
    }
}

/// Starts the hub (only `only`, when given), with a spinner while servers connect, and runs
/// `body`; SIGINT, SIGTERM, SIGHUP or SIGQUIT at any point shut the hub down (ending every
/// server tree) and exit with 128 + the signal.
async fn with_hub<F, Fut>(ctx: &Ctx, only: Option<BTreeSet<String>>, body: F) -> Result<u8>
where
    F: FnOnce(Hub, CancellationToken) -> Fut,
    Fut: std::future::Future<Output = Result<u8>>,
{
    // One command is a short-lived host: servers that went away are tried again when a call
    // needs them, not on timers.
    let mut options = HubOptions::new(ctx.paths.clone()).short_lived();
    options.only = only;
    // A server's request for input is put to the person only when there is one at a terminal.
    // The same for a server asking for a completion: the person answers as the model.
    if std::io::stdin().is_terminal() && render::stderr_tty() {
        let terminal = ask::Terminal::new(ctx.screen.clone());
        options = options.elicitor(Arc::new(ask::TerminalElicitor::new(terminal.clone())));
        options = options.approver(crate::policy::TerminalApprover::new(terminal.clone()));
        options = options.sampler(Arc::new(crate::sample::TerminalSampler::new(terminal)));
    }
    let hub = Hub::start(&ctx.loaded, options);
    let cancel = CancellationToken::new();
    let work = async {
        let connecting = hub.servers().iter().filter(|s| matches!(s.status, ServerStatus::Connecting)).count();
        let spinner = (connecting > 0 && render::stderr_tty()).then(|| {
            let pb = indicatif::ProgressBar::new_spinner();
            pb.set_message(format!("connecting to {connecting} server{}…", if connecting == 1 { "" } else { "s" }));
            pb.enable_steady_tick(Duration::from_millis(80));
            ctx.screen.set(Some(pb.clone()));
            pb
        });
        hub.ready().await;
        if let Some(pb) = spinner {
            pb.finish_and_clear();
            ctx.screen.set(None);
        }
        body(hub.clone(), cancel.clone()).await
    };
    tokio::pin!(work);
    let mut stop = crate::signals::Stop::listen();
    let result = tokio::select! {
        r = &mut work => r,
        signal = stop.next() => {
            cancel.cancel();
            // Give a call in flight a moment to send its cancellation.
            let _ = tokio::time::timeout(Duration::from_millis(300), &mut work).await;
            if signal == crate::signals::SIGINT {
                note!("interrupted");
            }
            Ok(crate::signals::exit_code(signal))
        }
    };
    // A second signal while the servers are being closed ends the wait; their supervisors
    // finish the job.
    tokio::select! {
        () = hub.shutdown() => {}
        _ = stop.next() => {}
    }
    result
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> Result<()> {
    // Buffered: stdout is line-buffered, and pretty JSON of a big catalog has a million lines.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

fn split_args(args: &[String]) -> Result<Vec<(String, String)>> {
    args.iter()
        .map(|a| {
            let (k, v) = a.split_once('=').ok_or_else(|| anyhow!("`--arg {a}`: expected key=value"))?;
            Ok((k.to_string(), v.to_string()))
        })
        .collect()
}

fn kv_args(args: &[String]) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    for a in args {
        let (k, v) = a.split_once('=').ok_or_else(|| anyhow!("`--arg {a}`: expected key=value"))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        map.insert(k.to_string(), value);
    }
    Ok(map)
}

fn only(name: &str, loaded: &LoadedConfig) -> Result<BTreeSet<String>> {
    if !loaded.servers.contains_key(name) {
        bail!("no server named `{name}` (see `switchboard list`)");
    }
    Ok(BTreeSet::from([name.to_string()]))
}

async fn dispatch(cli: Cli, secrets: crate::logs::Secrets) -> Result<u8> {
    let ctx = load(&cli)?;
    let no_attach = cli.no_attach;
    secrets.add(&ctx.loaded.secrets);
    let ctx = &ctx;
    for d in ctx
        .loaded
        .diagnostics
        .iter()
        .filter(|d| !matches!(cli.command, Command::Config { .. }) && d.severity == config::Severity::Error)
    {
        note!("{d}");
    }
    match cli.command {
        Command::List { json } => match crate::remote::Remote::of(ctx, no_attach) {
            Some(remote) => crate::remote::list(ctx, &remote, json).await,
            None => with_hub(ctx, None, |hub, _| async move { list(ctx, &hub, json) }).await,
        },
        Command::Get { ref server, check, json } => {
            let only = only(server, &ctx.loaded)?;
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::get(ctx, &remote, server, check, json).await;
            }
            with_hub(ctx, Some(only), |hub, _| async move {
                let checked = if check {
                    let started = std::time::Instant::now();
                    let status = hub.revalidate(server).await?;
                    Some((status.state() == "connected", started.elapsed()))
                } else {
                    None
                };
                crate::get::Server::of_hub(&hub, server)?.show(ctx, json, checked)
            })
            .await
        }
        Command::Tools { ref server, ref format, json } => {
            let only = server.as_deref().map(|s| only(s, &ctx.loaded)).transpose()?;
            let format_name = format.clone();
            let format: Option<ToolFormat> =
                format.as_deref().map(str::parse).transpose().map_err(|e: String| anyhow!(e))?;
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return match format_name {
                    Some(f) => crate::remote::tools_in(&remote, server.as_deref(), &f).await,
                    None => crate::remote::tools(&remote, server.as_deref(), json).await,
                };
            }
            with_hub(ctx, only, |hub, _| async move {
                let catalog = hub.catalog();
                let tools: Vec<_> =
                    catalog.tools().iter().filter(|t| server.as_ref().is_none_or(|s| &t.server == s)).collect();
                if let Some(format) = format {
                    print_json(&ToolsJson::new(tools, format))?;
                } else if json {
                    // Borrowed, written as it goes (no copy of every schema first).
                    #[derive(serde::Serialize)]
                    struct Listed<'a> {
                        name: &'a str,
                        server: &'a str,
                        tool: &'a str,
                        description: Option<&'a str>,
                        input_schema: &'a serde_json::Map<String, Value>,
                    }
                    #[derive(serde::Serialize)]
                    struct Tools<'a> {
                        tools: Vec<Listed<'a>>,
                    }
                    let listed = tools
                        .iter()
                        .map(|t| Listed {
                            name: &t.name,
                            server: &t.server,
                            tool: &t.tool.name,
                            description: t.tool.description.as_deref(),
                            input_schema: &t.input_schema,
                        })
                        .collect();
                    print_json(&Tools { tools: listed })?;
                } else {
                    let mut t = table(&["TOOL", "SERVER", "DESCRIPTION"]);
                    for tool in &tools {
                        t.add_row(vec![
                            safe(&tool.name),
                            tool.server.clone(),
                            short(tool.tool.description.as_deref().unwrap_or(""), 70),
                        ]);
                    }
                    out!("{t}");
                    warn_not_connected(&hub);
                }
                Ok(0)
            })
            .await
        }
        Command::Call { ref tool, ref json_args, ref args, timeout, json } => {
            call(ctx, tool, json_args.as_deref(), args, timeout, json, no_attach).await
        }
        Command::Resources { ref server, json } => {
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::resources(&remote, server.as_deref(), json).await;
            }
            let only = server.as_deref().map(|s| only(s, &ctx.loaded)).transpose()?;
            with_hub(ctx, only, |hub, _| async move {
                let catalog = hub.catalog();
                let resources = crate::listing::values(catalog.resources())?;
                let templates = crate::listing::values(catalog.resource_templates())?;
                crate::listing::resources(&resources, &templates, json)?;
                if !json {
                    warn_not_connected(&hub);
                }
                Ok(0)
            })
            .await
        }
        Command::Read { ref server, ref uri, json } => {
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::read(&remote, server, uri, json).await;
            }
            let only = only(server, &ctx.loaded)?;
            with_hub(ctx, Some(only), |hub, _| async move {
                let result = serde_json::to_value(hub.read_resource(server, uri).await?)?;
                crate::listing::read(&result, json)
            })
            .await
        }
        Command::Prompts { ref server, json } => {
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::prompts(&remote, server.as_deref(), json).await;
            }
            let only = server.as_deref().map(|s| only(s, &ctx.loaded)).transpose()?;
            with_hub(ctx, only, |hub, _| async move {
                crate::listing::prompts(&crate::listing::values(hub.catalog().prompts())?, json)?;
                if !json {
                    warn_not_connected(&hub);
                }
                Ok(0)
            })
            .await
        }
        Command::Prompt { ref server, ref name, ref args, json } => {
            let arguments = kv_args(args)?;
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::prompt(&remote, server, name, arguments, json).await;
            }
            let only = only(server, &ctx.loaded)?;
            with_hub(ctx, Some(only), |hub, _| async move {
                let result = serde_json::to_value(hub.get_prompt(server, name, Some(arguments)).await?)?;
                crate::listing::prompt(&result, json)
            })
            .await
        }
        Command::Complete { ref server, ref kind, ref name, ref argument, ref prefix, ref args, json } => {
            let only = only(server, &ctx.loaded)?;
            let context: std::collections::HashMap<String, String> = split_args(args)?.into_iter().collect();
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                let asked = crate::remote::Completion { server, kind, name, argument, prefix, context: &context };
                return crate::remote::complete(&remote, asked, json).await;
            }
            let completing = match kind.as_str() {
                "prompt" => switchboard::Completing::Prompt(name.clone()),
                _ => switchboard::Completing::Resource(name.clone()),
            };
            with_hub(ctx, Some(only), |hub, _| async move {
                let Some(found) = hub.complete_argument(server, completing, argument, prefix, context).await? else {
                    bail!("server `{server}` does not offer completion (it declares no `completions` capability)");
                };
                if json {
                    print_json(&found)?;
                    return Ok(0);
                }
                show_completion(&found.values, found.total, found.has_more == Some(true))
            })
            .await
        }
        Command::Add { ref name, ref scope, ref env, ref url, ref headers, ref command } => {
            crate::manage::add(ctx, name, scope, env, url.as_deref(), headers, command)
        }
        Command::Remove { ref name } => {
            crate::manage::edit(ctx, name, |path| config::remove_server(path, name), "Removed")
        }
        Command::Enable { ref name } => crate::manage::enable(ctx, name),
        Command::Disable { ref name } => crate::manage::disable(ctx, name),
        Command::Trust { ref server, all, yes } => crate::manage::trust(ctx, server.as_deref(), all, yes),
        Command::Auth { list: true, json, .. } => {
            crate::login::list(&ctx.loaded, &switchboard::auth::TokenStore::in_dir(&ctx.paths.data_dir), json)
        }
        Command::Auth { server: Some(ref server), no_browser, print_url, force, .. } => {
            let only = only(server, &ctx.loaded)?;
            let store = switchboard::auth::TokenStore::in_dir(&ctx.paths.data_dir);
            with_hub(ctx, Some(only), |hub, _| async move {
                let how = crate::login::How { no_browser, print_url, force };
                crate::login::login(&ctx.loaded, &hub, &store, server, how).await
            })
            .await
        }
        Command::Auth { server: None, .. } => bail!("name a server: `switchboard auth NAME` (or `--list`)"),
        Command::Dashboard { print_url } => crate::serve::dashboard(ctx, print_url).await,
        Command::Serve { port, bind, allow_remote, hosts, origins } => {
            crate::serve::serve(ctx, crate::serve::Listen { port, bind, allow_remote, hosts, origins }).await
        }
        Command::Gateway { http, allow_remote, no_auth, hosts, only, profile, names, model_results, require } => {
            let args = crate::gateway::Args {
                http,
                allow_remote,
                no_auth,
                hosts,
                only,
                profile,
                names,
                model_results,
                no_attach,
                require,
            };
            crate::gateway::gateway(ctx, args).await
        }
        Command::Daemon { ref action, json } => {
            let action = match action.as_str() {
                "start" => crate::daemon::Action::Start,
                "stop" => crate::daemon::Action::Stop,
                _ => crate::daemon::Action::Status,
            };
            crate::daemon::daemon(ctx, &ctx.options.extra_files, action, json).await
        }
        Command::Logout { ref server, forget_client } => {
            let store = switchboard::auth::TokenStore::in_dir(&ctx.paths.data_dir);
            crate::login::logout(&ctx.loaded, &store, server, forget_client).await
        }
        Command::Untrust { ref server } => {
            if TrustStore::update(&ctx.paths.data_dir, |store| store.untrust(&ctx.loaded.project_root, server))? {
                out!("Server `{server}` is no longer trusted in {}.", ctx.loaded.project_root.display());
                Ok(0)
            } else {
                bail!("server `{server}` was not trusted in {}", ctx.loaded.project_root.display())
            }
        }
        Command::Config { action: ConfigAction::Check { json } } => crate::configs::check(ctx, json),
        Command::Config { action: ConfigAction::Sources { json } } => crate::import::sources(ctx, json),
        Command::Import { ref from, ref scope, dry_run, json } => {
            let args = crate::import::ImportArgs { from: from.clone(), scope: scope.clone(), dry_run, json };
            crate::import::import(ctx, &args)
        }
        Command::Inputs { ref action, json } => {
            let args = match action {
                None => crate::import::InputsArgs::List { json },
                Some(InputsAction::Set { id, file }) => {
                    crate::import::InputsArgs::Set { id: id.clone(), file: file.clone() }
                }
                Some(InputsAction::Forget { id, file }) => {
                    crate::import::InputsArgs::Forget { id: id.clone(), file: file.clone() }
                }
            };
            crate::import::inputs(ctx, args)
        }
        Command::Config { action: ConfigAction::Paths { json } } => crate::configs::paths(ctx, json),
        Command::Completions { .. } => Ok(0),
        Command::Policy { ref tool, json } => {
            let only = tool.as_deref().and_then(|t| servers_for_tool(t, &ctx.loaded));
            with_hub(ctx, only, |hub, _| async move { crate::policy::show(ctx, &hub, tool.as_deref(), json) }).await
        }
        Command::Allow { ref glob } => crate::policy::edit(ctx, "allow", glob, "user"),
        Command::Ask { ref glob, ref scope } => crate::policy::edit(ctx, "ask", glob, scope),
        Command::Deny { ref glob, ref scope } => crate::policy::edit(ctx, "deny", glob, scope),
        Command::Approvals { ref revoke, all, json } => crate::policy::approvals(ctx, revoke.as_deref(), all, json),
        Command::Audit { ref since, ref server, json } => {
            crate::policy::audit(ctx, since.as_deref(), server.as_deref(), json)
        }
    }
}

fn warn_not_connected(hub: &Hub) {
    let down: Vec<String> = hub
        .servers()
        .into_iter()
        .filter(|s| {
            matches!(
                s.status,
                ServerStatus::Failed { .. } | ServerStatus::Untrusted | ServerStatus::Disconnected { .. }
            )
        })
        .map(|s| format!("{} ({})", s.name, s.status.state()))
        .collect();
    if !down.is_empty() {
        note!("note: not included: {} (see `switchboard list`)", down.join(", "));
    }
}

fn list(ctx: &Ctx, hub: &Hub, json: bool) -> Result<u8> {
    let servers = hub.servers();
    if json {
        print_json(
            &json!({"servers": servers.iter().map(render::server_json).collect::<Vec<_>>(), "diagnostics": ctx.loaded.diagnostics,
                "mcp_off": ctx.loaded.mcp_off}),
        )?;
        return Ok(u8::from(ctx.loaded.has_errors()));
    }
    if servers.is_empty() {
        out!("No MCP servers configured.");
        crate::import::hint(ctx)?;
    } else {
        let mut t = table(&["SERVER", "SCOPE", "STATUS", "TOOLS", "DETAIL"]);
        for s in &servers {
            let tools = match &s.status {
                ServerStatus::Connected { counts, .. } => counts.tools.to_string(),
                _ => "-".into(),
            };
            t.add_row(vec![
                s.name.clone(),
                s.scope.to_string(),
                status_word(&s.status),
                tools,
                short(&s.status.summary(), 90),
            ]);
        }
        out!("{t}");
    }
    if let Some(file) = &ctx.loaded.mcp_off {
        out!("\nMCP is turned off: `features.mcp: false` in {} (no server starts).", file.display());
    }
    if servers.iter().any(|s| matches!(s.status, ServerStatus::Untrusted)) {
        out!("\nProject servers wait for trust: `switchboard trust <server>` shows what would run.");
    }
    for s in &servers {
        if let ServerStatus::Failed { kind: FailureKind::NeedsAuth | FailureKind::NeedsClientRegistration, .. } =
            s.status
        {
            out!("\n`{}` needs a login: switchboard auth {}", s.name, s.name);
        }
    }
    if servers.iter().any(|s| matches!(s.status, ServerStatus::Failed { .. })) {
        out!("\n`switchboard get <server>` shows why a server failed.");
    }
    out!("\nAdd a server: switchboard add NAME -- COMMAND ARGS...   or   switchboard add NAME --url URL");
    // A config file with errors (printed above) is a failure, though every server is listed.
    Ok(u8::from(ctx.loaded.has_errors()))
}

/// The suggestions, one per line, and how many more there are.
pub(crate) fn show_completion(values: &[String], total: Option<u32>, has_more: bool) -> Result<u8> {
    for value in values {
        out!("{}", safe(value));
    }
    let more = total.map(|t| (t as usize).saturating_sub(values.len())).unwrap_or(0);
    if more > 0 {
        note!("({more} more: type more of it)");
    } else if has_more {
        note!("(more: type more of it)");
    }
    Ok(0)
}

/// `--timeout` in seconds, checked: a clear error, never a panic, for what is not a time.
fn timeout_arg(seconds: f64) -> Result<Duration> {
    let max = switchboard::config::MAX_TIMEOUT;
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if d >= Duration::from_millis(1) && d <= max => Ok(d),
        _ => bail!("--timeout must be between 0.001 and {} seconds (7 days), not {seconds}", max.as_secs()),
    }
}

/// Which servers a tool name may belong to, so `call` starts only those.
fn servers_for_tool(tool: &str, loaded: &LoadedConfig) -> Option<BTreeSet<String>> {
    if let Some((server, _)) = tool.split_once('/') {
        return Some(BTreeSet::from([server.to_string()]));
    }
    let found: BTreeSet<String> =
        loaded.servers.keys().filter(|s| tool.starts_with(&format!("mcp__{}__", sanitize(s)))).cloned().collect();
    (!found.is_empty()).then_some(found)
}

async fn call(
    ctx: &Ctx,
    tool: &str,
    json_args: Option<&str>,
    args: &[String],
    timeout: Option<f64>,
    json: bool,
    no_attach: bool,
) -> Result<u8> {
    let mut arguments = match json_args {
        Some(text) => match serde_json::from_str::<Value>(text).context("the arguments are not valid JSON")? {
            Value::Object(m) => m,
            other => bail!("the arguments must be a JSON object, not {other}"),
        },
        None => Map::new(),
    };
    let pairs = split_args(args)?;
    let timeout = timeout.map(timeout_arg).transpose()?;
    if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
        return crate::remote::call(&remote, tool, arguments, pairs, timeout, json).await;
    }
    let only = servers_for_tool(tool, &ctx.loaded);
    with_hub(ctx, only, |hub, cancel| async move {
        // `--arg k=v` takes its type from the tool's schema (`message=42` is the string "42"
        // when `message` is a string).
        let schema = hub.catalog().tool(tool).map(|t| t.input_schema.clone());
        for (k, v) in pairs {
            let value = match &schema {
                Some(s) => switchboard::policy::validate::typed_argument(s, &k, &v).map_err(|e| anyhow!("--arg {k}=…: {e}"))?,
                None => serde_json::from_str(&v).unwrap_or(Value::String(v)),
            };
            arguments.insert(k, value);
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<switchboard::Progress>();
        // A person's own request: it satisfies `ask` rules (not `deny`, not the managed file's
        // `ask`, which the terminal approver puts to them).
        let mut options =
            CallOptions::new().progress(tx).cancel(cancel).caller(switchboard::policy::Caller::cli());
        if let Some(t) = timeout {
            options = options.timeout(t);
        }
        let show = render::stderr_tty() && !json;
        let screen = ctx.screen.clone();
        let bar = tokio::spawn(async move {
            let mut pb: Option<indicatif::ProgressBar> = None;
            while let Some(p) = rx.recv().await {
                if !show {
                    continue;
                }
                let bar = pb.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new(p.total.map_or(0, |t| t as u64));
                    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
                        b.set_style(style);
                    }
                    screen.set(Some(b.clone()));
                    b
                });
                if let Some(total) = p.total {
                    bar.set_length(total as u64);
                }
                bar.set_position(p.progress as u64);
                bar.set_message(p.message.unwrap_or_default());
            }
            if let Some(b) = pb {
                b.finish_and_clear();
                screen.set(None);
            }
        });
        let result = hub.call_tool(tool, Some(arguments), options).await;
        let _ = bar.await;
        let output = result?.formatted().await?;
        if json {
            print_json(&json!({"name": output.name, "server": output.server, "tool": output.tool, "is_error": output.is_error(), "raw": output.raw, "model": output.model()}))?;
        } else {
            let text = output.model().text();
            if output.is_error() {
                note!("{}", switchboard::text::for_terminal_lines(&text));
            } else {
                out!("{}", render::safe_lines(&text));
            }
        }
        Ok(u8::from(output.is_error()))
    })
    .await
}

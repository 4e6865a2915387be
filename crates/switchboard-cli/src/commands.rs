//! What each subcommand does.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};
use switchboard::catalog::naming::may_belong;
use switchboard::config::{self, LoadedConfig};
use switchboard::status::ServerStatus;
use switchboard::trust::TrustStore;
use switchboard::{CallOptions, Hub};

use crate::ctx::{Ctx, load, only, print_json, with_hub};
use crate::render::{self, short, status_word, table};
use crate::{Cli, Command, ConfigAction, InputsAction};

/// Runs the command; returns the exit code.
/// Runs the command; its exit code. `json`: the command line asked for `--json`, so an error
/// is also written to stdout as `{"error": {"kind", "message"}}` (the same exit code).
pub async fn run(cli: Cli, secrets: crate::logs::Secrets, json: bool) -> u8 {
    match dispatch(cli, secrets).await {
        Ok(code) => code,
        // `switchboard tools | head -1`: the reader has what it wanted.
        Err(e) if crate::out::is_broken_pipe(&e) => 0,
        Err(e) => {
            // What a server said may be in the message: no escape sequence reaches the terminal.
            let message = render::error_text(&e);
            if json {
                let error = e.downcast_ref::<switchboard::Error>();
                let kind = error.map_or("error", switchboard::Error::kind);
                let mut body = serde_json::json!({"kind": kind, "message": message});
                if let Some(remedy) = error.and_then(switchboard::Error::remedy) {
                    body["remedy"] = serde_json::json!(remedy);
                }
                let _ = crate::ctx::print_json(&serde_json::json!({"error": body}));
            }
            note!(
                "{} {}",
                if render::stderr_tty() { console::style("error:").red().bold().to_string() } else { "error:".into() },
                switchboard::text::for_terminal_lines(&message)
            );
            2
        }
    }
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

async fn dispatch(cli: Cli, secrets: crate::logs::Secrets) -> Result<u8> {
    let ctx = load(&cli)?;
    let no_attach = cli.no_attach;
    secrets.add(&ctx.loaded.secrets);
    // The API token (serve, gateway --http, and the workspace daemon the commands and attached
    // gateways use): never in a log line, whatever the HTTP stack writes at trace level.
    if let Ok(Some(token)) = switchboard::read_private(&ctx.paths.data_dir.join("serve-token")) {
        secrets.add(&[String::from_utf8_lossy(&token).trim().to_string()]);
    }
    let ctx = &ctx;
    for d in ctx.loaded.diagnostics.iter().filter(|d| match d.severity {
        config::Severity::Error => !matches!(cli.command, Command::Config { .. }),
        // What a host that starts servers should say of them (a server of each person's
        // own that takes each person's value).
        config::Severity::Note => matches!(cli.command, Command::Serve { .. } | Command::Gateway { .. }),
        _ => false,
    }) {
        note!("{d}");
    }
    match cli.command {
        Command::List { json } => match crate::remote::Remote::of(ctx, no_attach) {
            Some(remote) => crate::remote::list(ctx, &remote, json).await,
            None => with_hub(ctx, None, |hub, _| async move { list(ctx, &hub, json) }).await,
        },
        Command::Get { ref server, check, json, tokens } => {
            let only = only(server, &ctx.loaded)?;
            if let Some(remote) = crate::remote::Remote::of(ctx, no_attach) {
                return crate::remote::get(ctx, &remote, server, check, json, tokens).await;
            }
            with_hub(ctx, Some(only), |hub, _| async move {
                let checked = if check {
                    let started = std::time::Instant::now();
                    let status = hub.revalidate(server).await?;
                    Some((status.state() == "connected", started.elapsed()))
                } else {
                    None
                };
                let mut shown = crate::get::Server::of_hub(&hub, server)?;
                if tokens {
                    shown.count_tokens()?;
                }
                shown.show(ctx, json, checked)
            })
            .await
        }
        Command::Tools { server, format, json, strict, defer, description_cap, search, limit, tokens } => {
            let asked =
                crate::tools::Asked { server, format, json, strict, defer, description_cap, search, limit, tokens };
            crate::tools::run(ctx, asked, no_attach).await
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
                    render::warn_not_connected(&hub);
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
                    render::warn_not_connected(&hub);
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
                render::show_completion(&found.values, found.total, found.has_more == Some(true))
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
            crate::login::list(&ctx.loaded, &ctx.token_store().await?, json).await
        }
        Command::Auth { server: Some(ref server), no_browser, print_url, force, .. } => {
            let only = only(server, &ctx.loaded)?;
            let store = ctx.token_store().await?;
            with_hub(ctx, Some(only), |hub, _| async move {
                let how = crate::login::How { no_browser, print_url, force };
                crate::login::login(&ctx.loaded, &hub, &store, server, how).await
            })
            .await
        }
        Command::Auth { server: None, .. } => bail!("name a server: `switchboard auth NAME` (or `--list`)"),
        Command::Store { ref action, ref id, json } => crate::keys::store(ctx, action, id.as_deref(), json).await,
        Command::Dashboard { print_url } => crate::serve::dashboard(ctx, print_url).await,
        Command::Keys { ref action, ref name, ref groups, json } => {
            crate::keys::keys(ctx, action, name.as_deref(), groups, json).await
        }
        Command::Serve { port, bind, allow_remote, hosts, origins, public_url, drain, advertise } => {
            let drain = std::time::Duration::from_secs(drain);
            let listen =
                crate::serve::Listen { port, bind, allow_remote, hosts, origins, public_url, drain, advertise };
            crate::serve::serve(ctx, listen).await
        }
        Command::Gateway {
            http,
            allow_remote,
            no_auth,
            hosts,
            drain,
            advertise,
            only,
            profile,
            names,
            name_limit,
            model_results,
            require,
            tool_search,
            keep_hidden,
        } => {
            let args = crate::gateway::Args {
                http,
                allow_remote,
                no_auth,
                hosts,
                drain: std::time::Duration::from_secs(drain),
                advertise,
                only,
                profile,
                names,
                name_limit,
                model_results,
                no_attach,
                require,
                tool_search,
                keep_hidden,
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
            let store = ctx.token_store().await?;
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
        Command::Sandbox { action: crate::SandboxAction::Check { ref server, json } } => {
            crate::sandbox::check(ctx, server.as_deref(), json)
        }
        Command::Completions { .. } => Ok(0),
        Command::Policy { ref tool, json } => {
            let only = tool.as_deref().and_then(|t| servers_for_tool(t, &ctx.loaded));
            with_hub(ctx, only, |hub, _| async move { crate::policy::show(ctx, &hub, tool.as_deref(), json) }).await
        }
        Command::Scan { ref server, json } => {
            if let Some(name) = server
                && !ctx.loaded.servers.contains_key(name)
            {
                return Err(crate::ctx::no_server(&ctx.loaded, name));
            }
            with_hub(ctx, None, |hub, _| async move { crate::scan::show(&hub, server.as_deref(), json).await }).await
        }
        Command::Allow { ref glob } => crate::policy::edit(ctx, "allow", glob, "user").await,
        Command::Ask { ref glob, ref scope } => crate::policy::edit(ctx, "ask", glob, scope).await,
        Command::Deny { ref glob, ref scope } => crate::policy::edit(ctx, "deny", glob, scope).await,
        Command::Approvals { ref revoke, all, json } => {
            crate::policy::approvals(ctx, revoke.as_deref(), all, json).await
        }
        Command::Audit { ref since, ref server, ref principal, limit, json } => {
            let filter = crate::policy::AuditArgs {
                since: since.as_deref(),
                server: server.as_deref(),
                principal: principal.as_deref(),
                limit,
            };
            crate::policy::audit(ctx, filter, json).await
        }
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
        out!("\nAdd a server: switchboard add NAME -- COMMAND ARGS...   or   switchboard add NAME --url URL");
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
    render::fixes(servers.iter().map(|s| (s.name.as_str(), &s.status)))?;
    render::findings(servers.iter().map(|s| (s.name.as_str(), s.findings.len())))?;
    render::sandboxes(
        servers.iter().filter_map(|s| Some((s.name.clone(), serde_json::to_value(s.sandbox.as_ref()?).ok()?))),
    )?;
    if servers.iter().any(|s| matches!(s.status, ServerStatus::Failed { .. })) {
        out!("\n`switchboard get <server>` shows why a server failed.");
    }
    // A config file with errors (printed above) is a failure, though every server is listed.
    Ok(u8::from(ctx.loaded.has_errors()))
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
    let found: BTreeSet<String> = loaded.servers.keys().filter(|s| may_belong(tool, s)).cloned().collect();
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

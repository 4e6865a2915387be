//! What every command runs with: the loaded config and paths ([`Ctx`]), the hub started for
//! one command ([`with_hub`]), and JSON on stdout ([`print_json`]). Commands import this; it
//! imports no command.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use switchboard::config::{self, LoadOptions, LoadedConfig};
use switchboard::status::ServerStatus;
use switchboard::store::db::Database;
use switchboard::{Hub, HubOptions, Paths};
use tokio_util::sync::CancellationToken;

use crate::terminal::{self, Screen, Terminal};
use crate::{Cli, Command, render};

/// The config and paths a command runs with.
pub(crate) struct Ctx {
    /// What is drawn on stderr now (so questions are not drawn over it).
    pub(crate) screen: Screen,
    pub(crate) paths: Paths,
    /// How the config was loaded (to load it again when its files change).
    pub(crate) options: LoadOptions,
    pub(crate) loaded: LoadedConfig,
    /// The team's store, once opened ([`Ctx::store`]).
    store: tokio::sync::OnceCell<Database>,
}

pub(crate) fn load(cli: &Cli) -> Result<Ctx> {
    let paths = Paths::from_env();
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let mut options = LoadOptions::from_env(cwd, &paths);
    options.extra_files = cli.configs.clone();
    let mut loaded = config::load(&options);
    if let Some(url) = &cli.store {
        if !switchboard::store::db::StoreConfig::is_store_url(url) {
            anyhow::bail!(
                "--store: `{}` is not `postgres://user@host:port/database`",
                switchboard::store::db::shown_url(url)
            );
        }
        let mut store = switchboard::store::db::StoreConfig::new(url);
        store.key_file = loaded.store.as_ref().and_then(|s| s.key_file.clone());
        loaded.store = Some(store);
    }
    // Inputs servers need (`${input:ID}`): asked once, at a terminal, then kept.
    let asks = !matches!(cli.command, Command::Config { .. } | Command::Inputs { .. } | Command::Import { .. });
    // Each person's own values (a team's per-person servers) are theirs to give, not the host's.
    let hosts: Vec<_> = loaded.inputs_missing.iter().filter(|m| !m.each_persons).cloned().collect();
    if asks && terminal::ask_missing(&paths, &hosts) {
        loaded = config::load(&options);
    }
    Ok(Ctx { screen: Screen::default(), paths, options, loaded, store: tokio::sync::OnceCell::new() })
}

impl Ctx {
    /// The team's store, opened on first need (`None`: the data folder). A store that is
    /// configured but cannot be opened is an error: logins are never kept in the data folder
    /// instead.
    pub(crate) async fn store(&self) -> Result<Option<Database>> {
        let Some(config) = &self.loaded.store else { return Ok(None) };
        let db = self
            .store
            .get_or_try_init(|| async {
                let keys = std::env::var(switchboard::store::seal::KEYS_ENV).ok();
                config.open(keys.as_deref()).await
            })
            .await
            .map_err(|e| anyhow::anyhow!("the team's store: {e}"))?;
        Ok(Some(db.clone()))
    }

    /// Where logins are kept: the team's store, or `<data>/auth.json`.
    pub(crate) async fn token_store(&self) -> Result<switchboard::auth::TokenStore> {
        Ok(match self.store().await? {
            Some(db) => switchboard::auth::TokenStore::in_database(db, ""),
            None => switchboard::auth::TokenStore::in_dir(&self.paths.data_dir),
        })
    }

    /// `options` with the team's store, when there is one.
    pub(crate) async fn with_store(&self, options: HubOptions) -> Result<HubOptions> {
        Ok(match self.store().await? {
            Some(db) => options.store(db),
            None => options,
        })
    }

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
pub(crate) async fn with_hub<F, Fut>(ctx: &Ctx, only: Option<BTreeSet<String>>, body: F) -> Result<u8>
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
        let terminal = Terminal::new(ctx.screen.clone());
        options = options.elicitor(Arc::new(terminal::TerminalElicitor::new(terminal.clone())));
        options = options.approver(terminal::TerminalApprover::new(terminal.clone()));
        options = options.sampler(Arc::new(terminal::TerminalSampler::new(terminal)));
    }
    let options = ctx.with_store(options).await?;
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

/// No server named `name` in `loaded`: the library's error, with the closest name there is.
pub(crate) fn no_server(loaded: &LoadedConfig, name: &str) -> anyhow::Error {
    switchboard::Error::unknown_server(name, loaded.servers.keys().map(String::as_str)).into()
}

pub(crate) fn only(name: &str, loaded: &LoadedConfig) -> Result<BTreeSet<String>> {
    if !loaded.servers.contains_key(name) {
        return Err(no_server(loaded, name));
    }
    Ok(BTreeSet::from([name.to_string()]))
}

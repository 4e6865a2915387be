//! `switchboard auth`, `auth --list` and `logout`: logging in to remote servers with OAuth.
//!
//! The login opens the browser when there is a display; either way the URL is printed, and the
//! address the browser ends on may be pasted back on the terminal, so a login works over SSH
//! (the browser on a laptop, switchboard on the server). `--print-url` prints only the URL on
//! stdout, for scripts.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::json;
use switchboard::auth::{Callback, LoginInfo, TokenStore, list_logins};
use switchboard::config::{LoadedConfig, ServerEntry, TransportConfig};
use switchboard::status::ServerStatus;
use switchboard::{Comeback, Hub};
use tokio::io::AsyncBufReadExt;

use crate::render::{self, table};

/// How long a login waits for the browser.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The configured remote server `name`'s URL.
fn remote(loaded: &LoadedConfig, name: &str) -> Result<String> {
    match loaded.servers.get(name) {
        Some(ServerEntry::Valid(config)) => match &config.transport {
            TransportConfig::Http(http) => Ok(http.url.clone()),
            _ => bail!("`{name}` is a local (stdio) server: it has no login"),
        },
        Some(_) => bail!("`{name}` is not a valid server entry (see `switchboard config check`)"),
        None => Err(crate::ctx::no_server(loaded, name)),
    }
}

/// How `switchboard auth` goes.
pub struct How {
    pub no_browser: bool,
    pub print_url: bool,
    /// Even when the stored tokens work.
    pub force: bool,
}

/// `switchboard auth <server>`.
pub async fn login(loaded: &LoadedConfig, hub: &Hub, store: &TokenStore, server: &str, how: How) -> Result<u8> {
    let url = remote(loaded, server)?;
    // Logged in already, and it works: nothing to do unless asked.
    let stored = store
        .entry(&url)
        .await
        .ok()
        .flatten()
        .is_some_and(|e| e.credentials.is_some_and(|c| c.token_response.is_some()));
    if let (false, Some(ServerStatus::Connected { counts, .. })) = (how.force, hub.status(server)) {
        if stored {
            out!(
                "`{server}` is logged in and its tokens work (connected, {} tools): nothing to do. \
                 `switchboard auth {server} --force` logs in again.",
                counts.tools
            );
        } else {
            out!(
                "`{server}` is connected and asks for no login ({} tools): nothing to do. \
                 `switchboard auth {server} --force` logs in anyway.",
                counts.tools
            );
        }
        return Ok(0);
    }
    let status = if hub.logs_in_without_browser(server)? {
        hub.login_without_browser(server).await?
    } else {
        match browser_login(hub, server, how.no_browser, how.print_url).await {
            // The registered client was refused and is forgotten: once more, with a new one.
            Err(e) if matches!(e.downcast_ref(), Some(switchboard::Error::ClientRefused { .. })) => {
                note!("{e}: logging in once more");
                browser_login(hub, server, how.no_browser, how.print_url).await?
            }
            other => other?,
        }
    };
    report(server, &status, how.print_url)
}

async fn browser_login(hub: &Hub, server: &str, no_browser: bool, print_url: bool) -> Result<ServerStatus> {
    // A registered redirect URI that is not a loopback address cannot be listened on here:
    // the person pastes the address the browser ended on.
    let (callback, redirect) = match hub.login_comeback(server)? {
        Comeback::Registered(uri) => (Callback::bind_redirect(&uri).await?, uri),
        Comeback::Loopback { port, .. } => {
            let callback = Callback::bind(port).await?;
            let redirect = callback.redirect_uri();
            (Some(callback), redirect)
        }
        _ => bail!("switchboard does not know where this login comes back"),
    };
    let login = hub.begin_login(server, &redirect).await?;
    let url = login.authorization_url().to_string();
    let can_paste = std::io::stdin().is_terminal() || no_browser || callback.is_none();
    if print_url {
        out!("{url}");
        std::io::stdout().flush()?;
    } else {
        note!("Log in to `{server}` in a browser:\n\n  {url}\n");
        if !no_browser && crate::terminal::has_display() && crate::terminal::open_browser(&url) {
            note!("(opened in your browser)");
        }
        note!("Waiting for the browser to come back to {redirect} (5 minutes; Ctrl-C cancels).");
        if can_paste {
            note!(
                "If the browser runs on another machine (SSH), paste here the address it ended on (it starts with \
                 {redirect}) and press Enter."
            );
        }
    }
    let pasted = async {
        if !can_paste {
            return std::future::pending::<String>().await;
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) if line.trim().starts_with("http") => return line.trim().to_string(),
                Ok(Some(line)) if !line.trim().is_empty() => {
                    note!("That is not the address the browser ended on (it starts with {redirect}); try again.")
                }
                Ok(Some(_)) => {}
                // End of input: the callback may still come.
                _ => return std::future::pending::<String>().await,
            }
        }
    };
    // Only this login's callback ends the wait (a stale tab's is refused with a page).
    let state = login.state();
    let waiting = async {
        match (&callback, &state) {
            (Some(callback), Some(state)) => callback.wait_for(state).await,
            (Some(callback), None) => callback.wait().await,
            (None, _) => std::future::pending().await,
        }
    };
    let (callback_url, responder) = tokio::select! {
        came = waiting => {
            let (url, responder) = came?;
            (url, Some(responder))
        }
        url = pasted => (url, None),
        () = tokio::time::sleep(LOGIN_TIMEOUT) => {
            bail!("the browser did not come back within 5 minutes; run `switchboard auth {server}` again")
        }
    };
    let outcome = hub.finish_login(login, &callback_url).await;
    if let Some(responder) = responder {
        let why = outcome.as_ref().err().map(ToString::to_string);
        responder
            .finish(match &why {
                None => Ok(server),
                Some(why) => Err(why.as_str()),
            })
            .await;
    }
    Ok(outcome?)
}

fn report(server: &str, status: &ServerStatus, quiet: bool) -> Result<u8> {
    match status {
        ServerStatus::Connected { counts, .. } => {
            if !quiet {
                out!("Logged in to `{server}`: connected, {} tools.", counts.tools);
            }
            Ok(0)
        }
        other => Err(anyhow!("logged in, but `{server}` did not connect: {}", other.summary())),
    }
}

/// The configured (name, URL) pairs of remote servers.
fn remotes(loaded: &LoadedConfig) -> Vec<(String, String)> {
    loaded
        .servers
        .iter()
        .filter_map(|(name, entry)| match entry {
            ServerEntry::Valid(c) => match &c.transport {
                TransportConfig::Http(h) => Some((name.clone(), h.url.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// `switchboard auth --list`.
pub async fn list(loaded: &LoadedConfig, store: &TokenStore, json: bool) -> Result<u8> {
    let logins = list_logins(store, &remotes(loaded)).await.with_context(|| "reading the token store".to_string())?;
    if json {
        crate::ctx::print_json(&json!({"logins": logins, "file": store.path(), "store": store.shown()}))?;
        return Ok(0);
    }
    if logins.is_empty() {
        out!("No stored logins ({}).", store.shown());
        return Ok(0);
    }
    let mut t = table(&["SERVER", "URL", "EXPIRES", "SCOPES", "REFRESH"]);
    for l in &logins {
        t.add_row(vec![
            l.servers.join(", "),
            crate::render::short(&l.url, 80),
            expiry(l),
            crate::render::short(&l.scopes.join(" "), 60),
            yes_no(l.refreshable),
        ]);
    }
    out!("{t}");
    out!("\nTokens are in {} (never shown).", store.shown());
    Ok(0)
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

fn expiry(l: &LoginInfo) -> String {
    if !l.logged_in {
        return "logged out".into();
    }
    let Some(at) = l.expires_at else { return "-".into() };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    match at.checked_sub(now) {
        Some(0) | None => render::dim("expired"),
        Some(s) if s < 120 => format!("in {s} s"),
        Some(s) if s < 7200 => format!("in {} min", s / 60),
        Some(s) => format!("in {} h", s / 3600),
    }
}

/// `switchboard logout <server> [--forget-client]`.
pub async fn logout(loaded: &LoadedConfig, store: &TokenStore, server: &str, forget_client: bool) -> Result<u8> {
    let url = remote(loaded, server)?;
    let had = switchboard::auth::logout(store, &url, server).await?;
    let forgot = forget_client && switchboard::auth::forget_client(store, &url, server).await?;
    match (had, forget_client, forgot) {
        (true, false, _) => {
            out!("Logged out of `{server}` (its tokens are deleted; the registered client is kept for the next login).")
        }
        (true, true, _) => out!("Logged out of `{server}`: its tokens and the registered client are deleted."),
        (false, true, true) => out!("No stored login for `{server}`; the registered client is deleted."),
        (false, _, _) => out!("No stored login for `{server}` ({}).", crate::render::safe(&url)),
    }
    Ok(0)
}

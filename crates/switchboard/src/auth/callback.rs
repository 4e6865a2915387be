//! The loopback callback of a browser login: `http://127.0.0.1:<port>/oauth/callback`. It
//! takes the one redirect it waits for, hands its URL to the login, and answers the browser
//! with a page that says how the login ended. Anything else that knocks (a favicon request)
//! gets a 404 and the wait goes on.
//!
//! The listener is a few lines over tokio rather than an HTTP framework: it reads one request
//! head (bounded), answers, and closes.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the authorisation server sends the browser back to.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// Why the callback could not be received.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// The port is taken (by another login, or another program).
    #[error(
        "port {port} on 127.0.0.1 is already in use, so the login's callback cannot be received there (another \
         login may be waiting, or another program holds it). Finish or stop that one, or set `oauth.callback_port` \
         for this server (0 picks any free port, if the authorization server accepts any loopback port)"
    )]
    PortInUse {
        /// The port.
        port: u16,
    },
    /// Another failure of the listener.
    #[error("the callback listener failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A bound callback listener.
#[derive(Debug)]
pub struct Callback {
    listener: TcpListener,
    /// `localhost` may reach the IPv6 loopback first: listened on too when it can be.
    v6: Option<TcpListener>,
    port: u16,
    /// The redirect URI as registered, when it is not the default one.
    uri: Option<String>,
    path: String,
}

/// The browser connection that brought the callback, waiting for its page.
#[derive(Debug)]
pub struct Responder {
    stream: TcpStream,
}

impl Callback {
    /// Binds `127.0.0.1:<port>` (`0`: any free port).
    pub async fn bind(port: u16) -> Result<Callback, CallbackError> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse { CallbackError::PortInUse { port } } else { e.into() }
        })?;
        let port = listener.local_addr()?.port();
        Ok(Callback { listener, v6: None, port, uri: None, path: CALLBACK_PATH.into() })
    }

    /// Binds the port of a pre-registered loopback redirect URI (`http://localhost:8080/cb`),
    /// to receive the browser on its path. `None` when the URI is not a loopback one (the
    /// browser then comes back elsewhere: to `serve`, or to a page whose address is pasted).
    pub async fn bind_redirect(uri: &str) -> Result<Option<Callback>, CallbackError> {
        let Some((host, port, path)) = loopback(uri) else { return Ok(None) };
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse { CallbackError::PortInUse { port } } else { e.into() }
        })?;
        let v6 = match host.as_str() {
            "localhost" | "[::1]" => {
                TcpListener::bind(SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port))).await.ok()
            }
            _ => None,
        };
        Ok(Some(Callback { listener, v6, port, uri: Some(uri.to_string()), path }))
    }

    /// The redirect URI to register and send in the authorization request.
    pub fn redirect_uri(&self) -> String {
        match &self.uri {
            Some(uri) => uri.clone(),
            None => format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port),
        }
    }

    /// The next connection, on either listener.
    async fn accept(&self) -> std::io::Result<TcpStream> {
        match &self.v6 {
            Some(v6) => tokio::select! {
                a = self.listener.accept() => a.map(|(s, _)| s),
                a = v6.accept() => a.map(|(s, _)| s),
            },
            None => self.listener.accept().await.map(|(s, _)| s),
        }
    }

    /// Waits for the browser to come back; returns the full callback URL and the connection
    /// to answer once the login is finished. Takes the first callback, whatever its `state`:
    /// a login that knows its state waits with [`Callback::wait_for`].
    pub async fn wait(&self) -> Result<(String, Responder), CallbackError> {
        self.wait_where(|_| true).await
    }

    /// Waits for the browser to come back with this login's `state` (as OpenCode does): a
    /// callback with another state (an old browser tab, a forged request) is refused with a
    /// page that says so, and the wait goes on.
    pub async fn wait_for(&self, state: &str) -> Result<(String, Responder), CallbackError> {
        self.wait_where(|target| query_value(target, "state").as_deref() == Some(state)).await
    }

    async fn wait_where(&self, ours: impl Fn(&str) -> bool) -> Result<(String, Responder), CallbackError> {
        loop {
            let mut stream = self.accept().await?;
            let Some(target) = read_target(&mut stream).await else {
                continue;
            };
            if target.split('?').next() != Some(self.path.as_str()) {
                let page = "<!doctype html><title>Not found</title><p>This is switchboard's login callback.</p>";
                let _ = respond(&mut stream, "404 Not Found", page).await;
                continue;
            }
            if ours(&target) {
                let query = target.split_once('?').map(|(_, q)| format!("?{q}")).unwrap_or_default();
                let base = self.redirect_uri();
                let base = base.split('?').next().unwrap_or_default();
                return Ok((format!("{base}{query}"), Responder { stream }));
            }
            tracing::warn!("a login callback with another `state` was refused (an old browser tab, or forged)");
            let (_, html) = page(Err(
                "this page is not from the login switchboard is waiting for: its state does not match (an old \
                 browser tab, or a request made elsewhere). Nothing was changed; the login goes on waiting for the \
                 tab switchboard opened",
            ));
            let _ = respond(&mut stream, "400 Bad Request", &html).await;
        }
    }
}

/// The host (as written), port and path of a loopback `http://` redirect URI.
fn loopback(uri: &str) -> Option<(String, u16, String)> {
    let url = reqwest::Url::parse(uri).ok()?;
    let host = url.host_str()?.to_string();
    let loopback = host == "localhost"
        || host.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback());
    (url.scheme() == "http" && loopback)
        .then(|| (host, url.port_or_known_default().unwrap_or(80), url.path().to_string()))
}

/// The decoded value of `name` in a request target's query.
fn query_value(target: &str, name: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

impl Responder {
    /// Answers the browser: the login worked, or why it did not.
    pub async fn finish(mut self, outcome: Result<&str, &str>) {
        let (status, html) = page(outcome);
        let _ = respond(&mut self.stream, status, &html).await;
    }
}

/// The page a browser is shown at the end of a login (`Ok(server)` or `Err(why)`): its HTTP
/// status line and HTML. Used by this listener and by `switchboard serve`'s callback route.
pub fn page(outcome: Result<&str, &str>) -> (&'static str, String) {
    let (status, title, body) = match outcome {
        Ok(server) => (
            "200 OK",
            "Logged in",
            format!("switchboard is now authorised for <b>{}</b>. You can close this tab.", escape(server)),
        ),
        Err(why) => ("400 Bad Request", "Login failed", format!("{}.", escape(why))),
    };
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title} · switchboard</title>\
         <style>body{{font:16px system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}}</style></head>\
         <body><h1>{title}</h1><p>{body}</p></body></html>"
    );
    (status, html)
}

/// Reads a request head and returns its target (`/path?query`), or `None` if it is not a
/// GET request line.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf)).await.ok()?.ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_string()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, page: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         Connection: close\r\n\r\n{page}",
        page.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
        stream.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.expect("write");
        let mut out = String::new();
        stream.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn the_callback_is_taken_and_other_requests_get_404() {
        let callback = Callback::bind(0).await.expect("bind");
        let port =
            callback.redirect_uri().split(':').nth(2).and_then(|p| p.split('/').next()?.parse().ok()).expect("port");
        let waiting = tokio::spawn(async move {
            let (url, responder) = callback.wait().await.expect("wait");
            responder.finish(Ok("demo <srv>")).await;
            url
        });
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let page = get(port, "/oauth/callback?code=abc&state=xyz").await;
        assert!(page.starts_with("HTTP/1.1 200") && page.contains("demo &lt;srv&gt;"), "{page}");
        assert_eq!(waiting.await.expect("join"), format!("http://127.0.0.1:{port}/oauth/callback?code=abc&state=xyz"));
    }

    /// A stale tab (or a forged request) with another `state` does not end the login: it is
    /// refused with a page that says so, and the right callback is still taken.
    #[tokio::test]
    async fn a_callback_with_another_state_is_refused_and_the_wait_goes_on() {
        let callback = Callback::bind(0).await.expect("bind");
        let port =
            callback.redirect_uri().split(':').nth(2).and_then(|p| p.split('/').next()?.parse().ok()).expect("port");
        let waiting = tokio::spawn(async move {
            let (url, responder) = callback.wait_for("st-ours+1").await.expect("wait");
            responder.finish(Ok("demo")).await;
            url
        });
        let refused = get(port, "/oauth/callback?code=stolen&state=st-old").await;
        assert!(refused.starts_with("HTTP/1.1 400") && refused.contains("does not match"), "{refused}");
        let refused = get(port, "/oauth/callback?code=stolen").await;
        assert!(refused.starts_with("HTTP/1.1 400"), "no state at all: {refused}");
        assert!(!waiting.is_finished(), "the login still waits");
        let page = get(port, "/oauth/callback?code=abc&state=st-ours%2B1").await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert_eq!(
            waiting.await.expect("join"),
            format!("http://127.0.0.1:{port}/oauth/callback?code=abc&state=st-ours%2B1")
        );
    }

    #[tokio::test]
    async fn a_busy_port_is_named_with_the_option_to_change_it() {
        let first = Callback::bind(0).await.expect("bind");
        let port = first.listener.local_addr().expect("addr").port();
        let err = Callback::bind(port).await.expect_err("busy");
        let text = err.to_string();
        assert!(text.contains(&port.to_string()) && text.contains("oauth.callback_port"), "{text}");
    }
}

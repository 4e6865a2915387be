//! `network.allowedDomains`: the server runs in a network namespace of its own, where the
//! only way out is an HTTP proxy on its loopback (`127.0.0.1:3128` in there, given to it as
//! `HTTP_PROXY`/`HTTPS_PROXY`). The listening socket is made by the server's process inside
//! its namespace before it execs, and handed to the host (`SCM_RIGHTS`), which serves it: a
//! `CONNECT host:port` (HTTPS) or an absolute-form request (`GET http://host/…`) to a name
//! in the list is connected from the host's network; any other name gets `403` and is told
//! to the person as a refusal with the line that allows it.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Refusals;

/// The proxy's port on the server's own loopback.
pub const PORT: u16 = 3128;

/// The largest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

/// The variables that point a server at the proxy (`NODE_USE_ENV_PROXY`: Node's `fetch`
/// honours them from Node 24 on; a client that ignores them cannot reach anything).
pub fn env() -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{PORT}");
    let mut vars: Vec<(String, String)> = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"]
        .iter()
        .map(|k| (k.to_string(), url.clone()))
        .collect();
    vars.push(("NO_PROXY".into(), String::new()));
    vars.push(("no_proxy".into(), String::new()));
    vars.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    vars
}

/// Whether `host` is one of `allowed` (`example.com` exactly, `*.example.com` its subdomains).
pub fn allows(allowed: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allowed.iter().any(|a| match a.strip_prefix("*.") {
        Some(suffix) => {
            host.len() > suffix.len() + 1
                && host.ends_with(suffix)
                && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
        }
        None => *a == host,
    })
}

/// Serves `listener` until it fails (the server's namespace is gone with it).
pub(crate) async fn serve(listener: TcpListener, allowed: Arc<Vec<String>>, refusals: Arc<Refusals>, server: String) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { return };
        let (allowed, refusals, server) = (allowed.clone(), refusals.clone(), server.clone());
        tokio::spawn(async move {
            if let Err(e) = one(stream, &allowed, &refusals).await {
                tracing::debug!(server = %server, "sandbox proxy: {e}");
            }
        });
    }
}

/// One client connection.
async fn one(mut client: TcpStream, allowed: &[String], refusals: &Refusals) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let end = loop {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(30), client.read(&mut buf))
            .await
            .map_err(|_| std::io::Error::other("no request in 30 s"))??;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return answer(&mut client, "431 Request Header Fields Too Large", "").await;
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let line = text.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (method, target, version) =
        (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (host, port, rewritten) = if method.eq_ignore_ascii_case("CONNECT") {
        let (h, p) = split_host_port(target, 443);
        (h, p, None)
    } else if let Some(rest) = target.strip_prefix("http://") {
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (h, p) = split_host_port(authority, 80);
        let path = if path.is_empty() { "/" } else { path };
        let mut out = format!("{method} {path} {version}\r\n").into_bytes();
        out.extend_from_slice(head[..end].splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default());
        out.extend_from_slice(&head[end..]);
        (h, p, Some(out))
    } else {
        return answer(&mut client, "400 Bad Request", "switchboard's sandbox proxy takes CONNECT and http:// URLs\n")
            .await;
    };
    if !allows(allowed, &host) {
        refusals.domain(&host);
        let why = format!("switchboard's sandbox: `{host}` is not in this server's network.allowedDomains\n");
        return answer(&mut client, "403 Forbidden", &why).await;
    }
    let mut upstream = match tokio::time::timeout(Duration::from_secs(30), TcpStream::connect((host.as_str(), port)))
        .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return answer(&mut client, "502 Bad Gateway", &format!("{host}:{port}: {e}\n")).await,
        Err(_) => {
            return answer(&mut client, "504 Gateway Timeout", &format!("{host}:{port}: no answer in 30 s\n")).await;
        }
    };
    match rewritten {
        None => {
            client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
            if end < head.len() {
                upstream.write_all(&head[end..]).await?;
            }
        }
        Some(request) => upstream.write_all(&request).await?,
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// `host:port` (or `[v6]:port`), `default` when no port is given.
fn split_host_port(s: &str, default: u16) -> (String, u16) {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, tail) = rest.split_once(']').unwrap_or((rest, ""));
        return (h.to_string(), tail.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
            (h.to_string(), p.parse().unwrap_or(default))
        }
        _ => (s.to_string(), default),
    }
}

async fn answer(client: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(msg.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_exactly_or_as_subdomains() {
        let allowed = vec!["api.github.com".to_string(), "*.npmjs.org".to_string()];
        assert!(allows(&allowed, "api.github.com"));
        assert!(allows(&allowed, "API.GitHub.com."));
        assert!(!allows(&allowed, "github.com"));
        assert!(!allows(&allowed, "evilapi.github.com"));
        assert!(allows(&allowed, "registry.npmjs.org"));
        assert!(!allows(&allowed, "npmjs.org"));
        assert!(!allows(&allowed, "evilnpmjs.org"));
    }

    #[test]
    fn targets_split_into_host_and_port() {
        assert_eq!(split_host_port("example.com:8443", 443), ("example.com".into(), 8443));
        assert_eq!(split_host_port("example.com", 80), ("example.com".into(), 80));
        assert_eq!(split_host_port("[::1]:9", 80), ("::1".into(), 9));
    }
}

//! Who may talk to the API. Every `/api` request carries `Authorization: Bearer <token>` (the
//! token is made on first start and kept in the data folder, mode 0600) or the session cookie
//! the dashboard got from a one-time login URL (so the token itself never travels in a URL).
//! Every request, `/api` or not, must name this server in its `Host` header (a page on another
//! site that resolves its own name to 127.0.0.1 is refused: DNS rebinding), and a request made
//! with the cookie from a page of another origin is refused (CSRF).
//!
//! A session is `<until>.<random>.<HMAC-SHA256 of both under the token>`: any process holding
//! the same token takes it (the replicas of a team's `serve` behind a load balancer share the
//! token file), until [`SESSION_LIFETIME`] has passed or the token changes.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use crate::error::ApiError;

/// The name of the dashboard's session cookie.
pub const COOKIE: &str = "switchboard_session";

/// A random value, URL-safe, with `bytes` bytes of entropy.
pub fn random(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| std::io::Error::other(format!("no randomness: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf))
}

/// Reads the API token from `<data>/serve-token`, making one (mode 0600, written whole) the
/// first time.
pub fn load_or_make_token(data_dir: &Path) -> std::io::Result<String> {
    let path = data_dir.join("serve-token");
    switchboard::private_dir(data_dir)?;
    // A token someone else wrote (or could have) is refused, not used.
    if let Some(bytes) = switchboard::read_private(&path)? {
        let token = String::from_utf8_lossy(&bytes).trim().to_string();
        if token.len() >= 32 {
            return Ok(token);
        }
    }
    let token = random(32)?;
    switchboard::write_private(&path, format!("{token}\n").as_bytes())?;
    Ok(token)
}

/// How long a login link asked for while serving stays good.
pub const LINK_LIFETIME: Duration = Duration::from_secs(600);

/// What the guard checks against.
#[derive(Debug)]
pub struct Access {
    token: String,
    port: u16,
    /// `Host` header values that name this server.
    hosts: HashSet<String>,
    /// Bound to every address (`0.0.0.0`, `::`): a `Host` that is an IP address with our port
    /// is accepted too. DNS rebinding needs a name the attacker controls, so an address
    /// literal is safe to accept; names still have to be listed (`--host`).
    any_address: bool,
    /// One-time login codes not used yet, with when they were made.
    codes: Mutex<HashMap<String, Instant>>,
}

/// How long a dashboard session lasts at most (the cookie also ends with the browser).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(7 * 86_400);

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn now_secs() -> u64 {
    now_ms() / 1000
}

/// The `Host` values that name a server bound on `port` and told its names `extra` (`--host`)
/// and its public URLs `public` (`--public-url`, `identity.resource`), as clients send them:
///
/// - `--host NAME`: `NAME` (what a client sends to a balancer or TLS proxy on its scheme's
///   default port), `NAME:<the port bound>` (reached directly), `NAME:80` and `NAME:443` (the
///   default ports, written out);
/// - `--host NAME:PORT`: that pair, and `NAME` alone when `PORT` is a default port (80, 443);
/// - a public URL `scheme://NAME[:PORT]/…`: its host as its clients send it, `NAME:PORT`, and
///   `NAME` alone (with the default port written out too) when the port is the scheme's
///   default or not given.
///
/// Any other name stays refused (DNS rebinding: a page of another site resolving its own name
/// to this address sends that name).
pub(crate) fn host_names(port: u16, extra: &[String], public: &[&str]) -> HashSet<String> {
    let mut names = HashSet::new();
    for given in extra {
        let (name, explicit) = split_host(given.trim());
        if name.is_empty() {
            continue;
        }
        match explicit {
            Some(p) => {
                names.insert(format!("{name}:{p}"));
                if p == 80 || p == 443 {
                    names.insert(name.clone());
                }
            }
            None => {
                names.insert(name.clone());
                for p in [port, 80, 443] {
                    names.insert(format!("{name}:{p}"));
                }
            }
        }
    }
    for url in public {
        let Ok(url) = reqwest::Url::parse(url) else { continue };
        // An IPv6 address comes bracketed, as in `Host`.
        let Some(name) = url.host_str().map(str::to_string) else { continue };
        let default = url.port().is_none();
        if let Some(p) = url.port_or_known_default() {
            names.insert(format!("{name}:{p}"));
        }
        if default {
            names.insert(name);
        }
    }
    names.into_iter().map(|h| h.to_ascii_lowercase()).collect()
}

/// A `--host` value's name (an IPv6 address bracketed) and its port, if it names one.
fn split_host(given: &str) -> (String, Option<u16>) {
    if given.matches(':').count() > 1 && !given.starts_with('[') {
        return (format!("[{given}]"), None);
    }
    match given.rsplit_once(':') {
        Some((name, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
            match tail.parse::<u16>() {
                Ok(p) => (name.to_string(), Some(p)),
                Err(_) => (given.to_string(), None),
            }
        }
        _ => (given.to_string(), None),
    }
}

impl Access {
    /// Access for a server bound to `addr`, with the API `token`, that also answers to the
    /// `extra` host names (`name` or `name:port`) and the hosts of its `public` URLs (see
    /// [`host_names`]).
    pub fn new(token: String, addr: SocketAddr, extra: &[String], public: &[&str]) -> Access {
        let port = addr.port();
        let mut names = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        if !addr.ip().is_unspecified() {
            names.push(match addr {
                SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
                SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
            });
        }
        names.extend(host_names(port, extra, public));
        Access {
            token,
            port,
            hosts: names.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            any_address: addr.ip().is_unspecified(),
            codes: Mutex::default(),
        }
    }

    /// A new one-time login code. The one printed at start lasts as long as the server; the
    /// ones asked for later ([`Access::login_code_for_later`]) expire.
    pub fn login_code(&self) -> std::io::Result<String> {
        self.code_until(None)
    }

    /// A one-time login code that expires after [`LINK_LIFETIME`].
    pub fn login_code_for_later(&self) -> std::io::Result<String> {
        self.code_until(Instant::now().checked_add(LINK_LIFETIME))
    }

    fn code_until(&self, expires: Option<Instant>) -> std::io::Result<String> {
        let code = random(24)?;
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        codes.retain(|_, until| *until > Instant::now());
        // A far future for the start-up code (Instant has no MAX).
        let until = expires.or_else(|| Instant::now().checked_add(Duration::from_secs(100 * 365 * 86400)));
        codes.insert(code.clone(), until.unwrap_or_else(Instant::now));
        Ok(code)
    }

    /// Spends a login code; returns the new session's cookie value.
    #[cfg(test)]
    pub fn redeem(&self, code: &str) -> Option<String> {
        if !self.redeem_code(code) {
            return None;
        }
        self.new_session()
    }

    /// Spends a login code of this process: whether it was one, not expired.
    pub fn redeem_code(&self, code: &str) -> bool {
        let until = self.codes.lock().unwrap_or_else(PoisonError::into_inner).remove(code);
        until.is_some_and(|until| until > Instant::now())
    }

    /// A new dashboard session's cookie value (for a login code spent).
    pub fn new_session(&self) -> Option<String> {
        let until = now_secs().saturating_add(SESSION_LIFETIME.as_secs());
        let body = format!("{until}.{}", random(32).ok()?);
        let mac = self.mac(&body);
        Some(format!("{body}.{mac}"))
    }

    /// The session MAC of `body` under the token.
    fn mac(&self, body: &str) -> String {
        use hmac::Mac;
        let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(self.token.as_bytes()) {
            Ok(m) => m,
            // HMAC takes a key of any length.
            Err(_) => return String::new(),
        };
        mac.update(b"switchboard dashboard session\0");
        mac.update(body.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `value` is a session this token made, not past its end.
    fn session_valid(&self, value: &str) -> bool {
        let Some((body, mac)) = value.rsplit_once('.') else { return false };
        let Some(until) = body.split_once('.').and_then(|(u, _)| u.parse::<u64>().ok()) else { return false };
        !mac.is_empty() && constant_time_eq(self.mac(body).as_bytes(), mac.as_bytes()) && until > now_secs()
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
        let host = host.to_ascii_lowercase();
        if self.hosts.contains(&host) {
            return true;
        }
        self.any_address && host.parse::<SocketAddr>().is_ok_and(|a| a.port() == self.port)
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(bearer_credentials)
            .is_some_and(|t| constant_time_eq(t.as_bytes(), self.token.as_bytes()))
    }

    fn session_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(COOKIE).and_then(|r| r.strip_prefix('=')))
            .any(|value| self.session_valid(value))
    }

    /// A cookie-carrying request must come from a page of this same server: its `Origin`,
    /// when sent, is the `Host` it was sent to (which `host_ok` checked), over http or, behind
    /// a TLS proxy, https.
    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            Some(origin) => {
                ["http", "https"].iter().any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")))
            }
            None => true,
        }
    }
}

/// `name` with `:port` unless it names a port already (a bare IPv6 address is bracketed).
/// The hex SHA-256 of `value`: what a team's store knows a cookie or a code by.
pub(crate) fn digest(value: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(value.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The address a browser reaches this server by: `--public-url` when given, else the scheme
/// and host a TLS-terminating proxy says it forwarded (`Forwarded: proto=https;host=...`, or
/// `X-Forwarded-Proto` / `X-Forwarded-Host`), else `http://` and the `Host` (which the Host
/// guard checked).
pub(crate) fn public_base(headers: &HeaderMap, public_url: Option<&str>) -> String {
    if let Some(url) = public_url {
        return url.trim_end_matches('/').to_string();
    }
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // The first hop's (the proxy nearest the browser) of RFC 7239's list.
    let forwarded = get("forwarded").and_then(|f| f.split(',').next()).unwrap_or_default();
    let pair = |key: &str| {
        forwarded.split(';').find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            k.eq_ignore_ascii_case(key).then(|| v.trim_matches('"').to_string())
        })
    };
    let first = |name: &str| get(name).and_then(|v| v.split(',').next()).map(|v| v.trim().to_string());
    let proto = pair("proto").or_else(|| first("x-forwarded-proto")).filter(|p| p == "https" || p == "http");
    let host = pair("host").or_else(|| first("x-forwarded-host")).or_else(|| get("host").map(str::to_string));
    format!("{}://{}", proto.as_deref().unwrap_or("http"), host.unwrap_or_default())
}

pub(crate) fn with_port(name: &str, port: u16) -> String {
    if name.matches(':').count() > 1 && !name.starts_with('[') {
        return format!("[{name}]:{port}");
    }
    match name.rsplit_once(':') {
        Some((_, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => format!("{name}:{port}"),
    }
}

/// The credentials of an `Authorization: Bearer <token>` value: the scheme is matched without
/// regard to case (RFC 7235 §2.1: `bearer`, `BEARER` are the same scheme), with one or more
/// spaces after it.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim()).filter(|t| !t.is_empty())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a request whose `Host` does not name this server.
pub async fn check_host(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if !access.host_ok(request.headers()) {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "bad_host",
            "the Host header does not name this server (start it with `--host NAME` to accept another name)",
        )
        .into_response();
    }
    next.run(request).await
}

impl Access {
    /// Whether an `/api` request carries the token, or a session from a page of this origin.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        self.bearer_ok(headers) || (self.session_ok(headers) && self.origin_ok(headers))
    }

    /// Whether a cookie-carrying request comes from a page of this server.
    pub fn same_origin(&self, headers: &HeaderMap) -> bool {
        self.origin_ok(headers)
    }

    /// The 401 of an `/api` request without them.
    pub fn refusal(&self) -> Response {
        let mut response = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send `Authorization: Bearer <token>` (the token is in the data folder's serve-token file)",
        )
        .into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        response
    }
}

/// The 403 for an MCP request a web page of another origin sent, if it is one.
fn foreign_origin(access: &Access, headers: &HeaderMap) -> Option<Response> {
    (!access.origin_ok(headers)).then(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "bad_origin",
            "a page of another origin may not use this server's MCP endpoint",
        )
        .into_response()
    })
}

/// Refuses a request a web page of another origin sent (`--no-auth` MCP: no token, but still
/// no page elsewhere).
pub async fn check_origin(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if let Some(refused) = foreign_origin(&access, request.headers()) {
        return refused;
    }
    crate::listen::mark(&request);
    next.run(request).await
}

/// Refuses an MCP request without the bearer token (no cookies: MCP clients are programs), or
/// one a web page of another origin sent (the spec asks servers to check `Origin`).
pub async fn check_bearer(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if let Some(refused) = foreign_origin(&access, request.headers()) {
        return refused;
    }
    if !access.bearer_ok(request.headers()) {
        let mut response = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send `Authorization: Bearer <token>` (the token is the serve-token file in switchboard's data folder; \
             `switchboard gateway --http` and `switchboard serve` print where it is)",
        )
        .into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        return response;
    }
    crate::listen::mark(&request);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            if let Ok(v) = v.parse() {
                h.append(*k, v);
            }
        }
        h
    }

    #[test]
    fn hosts_tokens_codes_and_sessions() {
        let addr: SocketAddr = "127.0.0.1:7341".parse().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 7341)));
        let access = Access::new("t0ken-t0ken-t0ken-t0ken-t0ken-t0ken".into(), addr, &[], &[]);
        assert!(access.host_ok(&headers(&[("host", "127.0.0.1:7341")])));
        assert!(access.host_ok(&headers(&[("host", "localhost:7341")])));
        assert!(!access.host_ok(&headers(&[("host", "evil.example:7341")])));
        assert!(!access.host_ok(&headers(&[])));
        assert!(access.bearer_ok(&headers(&[("authorization", "Bearer t0ken-t0ken-t0ken-t0ken-t0ken-t0ken")])));
        assert!(!access.bearer_ok(&headers(&[("authorization", "Bearer nope")])));
        // The scheme is case-insensitive (RFC 7235); the token is not.
        for scheme in ["bearer", "BEARER", "BeArEr"] {
            let value = format!("{scheme} t0ken-t0ken-t0ken-t0ken-t0ken-t0ken");
            assert!(access.bearer_ok(&headers(&[("authorization", value.as_str())])), "{scheme}");
        }
        assert!(access.bearer_ok(&headers(&[("authorization", "Bearer   t0ken-t0ken-t0ken-t0ken-t0ken-t0ken")])));
        assert!(!access.bearer_ok(&headers(&[("authorization", "Bearer T0KEN-T0KEN-T0KEN-T0KEN-T0KEN-T0KEN")])));
        assert!(!access.bearer_ok(&headers(&[("authorization", "Basic t0ken-t0ken-t0ken-t0ken-t0ken-t0ken")])));
        assert!(!access.bearer_ok(&headers(&[("authorization", "Bearert0ken-t0ken-t0ken-t0ken-t0ken-t0ken")])));
        assert!(!access.bearer_ok(&headers(&[("authorization", "Bearer ")])));
        let code = access.login_code().unwrap_or_default();
        let session = access.redeem(&code).unwrap_or_default();
        assert!(!session.is_empty());
        assert!(access.redeem(&code).is_none(), "a login code works once");
        let cookie = format!("a=b; {COOKIE}={session}");
        assert!(access.session_ok(&headers(&[("cookie", &cookie)])));
        let here = [("host", "localhost:7341"), ("origin", "http://localhost:7341")];
        assert!(access.origin_ok(&headers(&here)));
        assert!(!access.origin_ok(&headers(&[("host", "localhost:7341"), ("origin", "http://evil.example")])));
        assert!(!access.origin_ok(&headers(&[("host", "localhost:7341"), ("origin", "http://127.0.0.1:7341")])));
        assert!(!access.host_ok(&headers(&[("host", "192.168.1.20:7341")])), "loopback bind: loopback names only");
    }

    #[test]
    fn a_session_is_taken_by_every_process_with_the_token_and_no_other() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let (one, other) = (Access::new("t".repeat(40), addr, &[], &[]), Access::new("t".repeat(40), addr, &[], &[]));
        let session = one.redeem(&one.login_code().unwrap_or_default()).unwrap_or_default();
        let cookie = |value: &str| headers(&[("cookie", &format!("{COOKIE}={value}"))]).clone();
        assert!(other.session_ok(&cookie(&session)), "a replica with the same token");
        let stranger = Access::new("u".repeat(40), addr, &[], &[]);
        assert!(!stranger.session_ok(&cookie(&session)), "another token");
        // Nothing of it may be changed: the end pushed further, the random part, the MAC.
        let (body, mac) = session.rsplit_once('.').unwrap_or_default();
        let (until, rest) = body.split_once('.').unwrap_or_default();
        let later = format!("{}.{rest}.{mac}", until.parse::<u64>().unwrap_or(0) + 86_400);
        assert!(!one.session_ok(&cookie(&later)));
        assert!(!one.session_ok(&cookie(&format!("{until}.x{rest}.{mac}"))));
        assert!(!one.session_ok(&cookie(&format!("{body}.{}", "A".repeat(mac.len())))));
        assert!(!one.session_ok(&cookie(&format!("{body}."))));
        assert!(!one.session_ok(&cookie("")));
        // Past its end, even with a good MAC.
        let ended = format!("{}.{rest}", now_secs() - 1);
        assert!(!one.session_ok(&cookie(&format!("{ended}.{}", one.mac(&ended)))));
        let fresh = format!("{}.{rest}", now_secs() + 60);
        assert!(one.session_ok(&cookie(&format!("{fresh}.{}", one.mac(&fresh)))));
    }

    #[test]
    fn an_expired_login_code_is_refused() {
        let access = Access::new("t".repeat(40), SocketAddr::from(([127, 0, 0, 1], 1)), &[], &[]);
        let expired = access.code_until(Some(Instant::now())).unwrap_or_default();
        assert!(access.redeem(&expired).is_none());
        let later = access.login_code_for_later().unwrap_or_default();
        assert!(access.redeem(&later).is_some());
    }

    #[test]
    fn every_address_accepts_address_literals_and_listed_names() {
        let addr = SocketAddr::from(([0, 0, 0, 0], 7341));
        let extra = ["box.lan".to_string(), "Other.Example:8080".to_string(), "[fd00::1]".to_string()];
        let access = Access::new("t".repeat(40), addr, &extra, &[]);
        for ok in [
            "192.168.1.20:7341",
            "[fe80::1]:7341",
            "box.lan:7341",
            "BOX.lan:7341",
            "other.example:8080",
            "[fd00::1]:7341",
            "[fd00::1]",
            "localhost:7341",
            "box.lan",
            "box.lan:443",
        ] {
            assert!(access.host_ok(&headers(&[("host", ok)])), "{ok}");
        }
        for bad in ["192.168.1.20:80", "192.168.1.20", "evil.example:7341", "box.lan:8080", "other.example"] {
            assert!(!access.host_ok(&headers(&[("host", bad)])), "{bad}");
        }
        assert_eq!(with_port("[fd00::1]:9", 1), "[fd00::1]:9");
        assert_eq!(split_host("[fd00::1]:9"), ("[fd00::1]".to_string(), Some(9)));
        assert_eq!(split_host("fd00::1"), ("[fd00::1]".to_string(), None));
        assert_eq!(with_port("fd00::1", 1), "[fd00::1]:1");
        assert_eq!(with_port("[fd00::1]", 1), "[fd00::1]:1");
    }

    /// What a balancer or a TLS proxy sends: the name alone (its scheme's default port), for
    /// `--host NAME`, `--host NAME:443` and a public URL, on any port the process bound.
    #[test]
    fn a_balancers_host_is_the_name_alone() {
        let addr = SocketAddr::from(([0, 0, 0, 0], 7342));
        let host = |access: &Access, h: &str| access.host_ok(&headers(&[("host", h)]));
        // The Kubernetes manifest: `--host mcp.example.com`, bound on 7342, behind a Service on
        // 80 and an Ingress on 443.
        let manifest = Access::new("t".repeat(40), addr, &["mcp.example.com".into()], &[]);
        for ok in
            ["mcp.example.com", "MCP.example.com", "mcp.example.com:7342", "mcp.example.com:443", "mcp.example.com:80"]
        {
            assert!(host(&manifest, ok), "{ok}");
        }
        for bad in ["mcp.example.com:8443", "evil.example", "evil.example:443", "mcp.example.com.evil.example"] {
            assert!(!host(&manifest, bad), "{bad}");
        }
        // `--host NAME:443`: that pair, and the name alone (the port a client leaves out).
        let https = Access::new("t".repeat(40), addr, &["lb.example:443".into()], &[]);
        for ok in ["lb.example", "lb.example:443"] {
            assert!(host(&https, ok), "{ok}");
        }
        for bad in ["lb.example:7342", "lb.example:80"] {
            assert!(!host(&https, bad), "{bad}");
        }
        let odd = Access::new("t".repeat(40), addr, &["lb.example:8443".into()], &[]);
        assert!(host(&odd, "lb.example:8443") && !host(&odd, "lb.example"));
        // A public URL implies its host, as its clients send it.
        let loopback = SocketAddr::from(([127, 0, 0, 1], 7341));
        let public =
            Access::new("t".repeat(40), loopback, &[], &["https://sb.example", "https://mcp.example.com:8443/mcp"]);
        for ok in ["sb.example", "sb.example:443", "mcp.example.com:8443", "127.0.0.1:7341"] {
            assert!(host(&public, ok), "{ok}");
        }
        for bad in ["sb.example:7341", "mcp.example.com", "mcp.example.com:443", "evil.example"] {
            assert!(!host(&public, bad), "{bad}");
        }
        let six = Access::new("t".repeat(40), loopback, &[], &["http://[fd00::2]/mcp"]);
        assert!(host(&six, "[fd00::2]") && host(&six, "[fd00::2]:80") && !host(&six, "[fd00::3]"));
        // A page served through a TLS proxy sends an https Origin: the same site.
        let tls = [("host", "sb.example"), ("origin", "https://sb.example")];
        assert!(public.origin_ok(&headers(&tls)));
        assert!(!public.origin_ok(&headers(&[("host", "sb.example"), ("origin", "https://evil.example")])));
    }

    #[test]
    fn the_public_address_follows_a_tls_proxy_or_the_configured_url() {
        let plain = headers(&[("host", "127.0.0.1:7341")]);
        assert_eq!(public_base(&plain, None), "http://127.0.0.1:7341");
        let proxied = headers(&[
            ("host", "sb.internal:7341"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "sb.example"),
        ]);
        assert_eq!(public_base(&proxied, None), "https://sb.example");
        let rfc = headers(&[
            ("host", "sb.internal"),
            ("forwarded", "for=1.2.3.4;proto=https;host=\"sb.example:8443\", proto=http"),
        ]);
        assert_eq!(public_base(&rfc, None), "https://sb.example:8443");
        let odd = headers(&[("host", "h"), ("x-forwarded-proto", "gopher")]);
        assert_eq!(public_base(&odd, None), "http://h", "only http and https");
        assert_eq!(public_base(&proxied, Some("https://mcp.example/sb/")), "https://mcp.example/sb");
    }
}

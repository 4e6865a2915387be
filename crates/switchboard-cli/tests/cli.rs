//! The `switchboard` binary end to end, with the demo config and the fixture server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};

use switchboard_testkit::fixture;

/// A command with a private user file and data folder, run in `cwd`.
fn sb(home: &Path, cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("switchboard").unwrap();
    c.env("SWITCHBOARD_CONFIG", home.join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home))
        .env_remove("RUST_LOG")
        .current_dir(cwd);
    c
}

fn demo_config(dir: &Path) -> PathBuf {
    let path = dir.join("demo.json");
    let cfg = serde_json::json!({"servers": {"demo": {"command": fixture().display().to_string(), "args": ["--name", "demo"]}}});
    std::fs::write(&path, cfg.to_string()).unwrap();
    path
}

fn json_out(c: &mut Command) -> (Value, i32) {
    let out = c.output().unwrap();
    let v =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (v, out.status.code().unwrap_or(-1))
}

#[test]
fn list_get_tools_and_call_with_the_demo_config() {
    let home = tempfile::tempdir().unwrap();
    let cfg = demo_config(home.path());
    let (v, code) = json_out(sb(home.path(), home.path()).args(["--config", cfg.to_str().unwrap(), "list", "--json"]));
    assert_eq!(code, 0);
    assert_eq!(v["servers"][0]["name"], "demo");
    assert_eq!(v["servers"][0]["status"]["state"], "connected");
    assert_eq!(v["servers"][0]["status"]["counts"]["tools"], 14);
    // The table, without the hint for adding a first server (that is for an empty list).
    let out = sb(home.path(), home.path()).args(["--config", cfg.to_str().unwrap(), "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("demo") && !text.contains("Add a server"), "{text}");

    let (v, _) = json_out(sb(home.path(), home.path()).args([
        "--config",
        cfg.to_str().unwrap(),
        "tools",
        "--format",
        "anthropic",
    ]));
    assert!(
        v.as_array().unwrap().iter().any(|t| t["name"] == "mcp__demo__echo" && t["input_schema"]["type"] == "object")
    );

    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "call", "mcp__demo__echo", "--arg", "text=hello"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
    assert!(out.status.success());
    // Text, then the structured content, said as such.
    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "call", "mcp__demo__add", "--arg", "a=2", "--arg", "b=3"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5\nStructured content: {\"sum\":5.0}");
    let out =
        sb(home.path(), home.path()).args(["--config", cfg.to_str().unwrap(), "call", "demo/fail"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a tool error exits non-zero");
    assert!(String::from_utf8_lossy(&out.stderr).contains("MCP tool returned an error:"));
    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "call", "mcp__demo__nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no tool named `mcp__demo__nope`"));
}

#[test]
fn mistyped_names_get_the_one_meant_and_json_errors_are_json() {
    let home = tempfile::tempdir().unwrap();
    let cfg = demo_config(home.path());
    let run = |args: &[&str]| {
        let mut all = vec!["--config", cfg.to_str().unwrap()];
        all.extend_from_slice(args);
        sb(home.path(), home.path()).args(all).output().unwrap()
    };
    // The gateway's spelling of a tool is taken; a mistyped one is named with the one meant.
    let out = run(&["call", "demo__echo", "--arg", "text=hi"]);
    assert_eq!((String::from_utf8_lossy(&out.stdout).trim(), out.status.code()), ("hi", Some(0)));
    let out = run(&["call", "mcp__demo__ecoh"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no tool named `mcp__demo__ecoh`; did you mean `mcp__demo__echo`?"), "{err}");
    assert!(out.stdout.is_empty(), "no --json, nothing on stdout");
    // Under --json the error is an object on stdout, with the same exit code.
    for (args, kind, message) in [
        (&["call", "demo__ech", "--json"][..], "unknown_tool", "did you mean `mcp__demo__echo`?"),
        (&["get", "dmeo", "--json"][..], "unknown_server", "no server named `dmeo`; did you mean `demo`?"),
        (&["policy", "mcp__demo__nope", "--json"][..], "unknown_tool", "no tool named `mcp__demo__nope`"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(v["error"]["kind"], kind, "{args:?}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(message), "{args:?}: {v}");
    }
    // A mistyped config key names the one meant.
    let typo = home.path().join("typo.json");
    std::fs::write(&typo, r#"{"servers": {"x": {"comand": "srv"}}}"#).unwrap();
    let out =
        sb(home.path(), home.path()).args(["--config", typo.to_str().unwrap(), "config", "check"]).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("unknown field `comand` ignored; did you mean `command`?"), "{said}");
}

#[test]
fn add_remove_disable_and_config_check() {
    let home = tempfile::tempdir().unwrap();
    let ok = sb(home.path(), home.path())
        .args(["add", "tmp", "--env", "SECRET=hunter2", "--", "my-server", "--flag"])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let (v, code) = json_out(sb(home.path(), home.path()).args(["config", "check", "--json"]));
    assert_eq!(code, 0);
    let text = v.to_string();
    assert!(!text.contains("hunter2"), "secrets are redacted: {text}");
    assert!(text.contains("SECRET") && text.contains("<redacted>"));
    assert!(sb(home.path(), home.path()).args(["disable", "tmp"]).status().unwrap().success());
    let (v, _) = json_out(sb(home.path(), home.path()).args(["list", "--json"]));
    assert_eq!(v["servers"][0]["status"]["state"], "disabled");
    assert!(sb(home.path(), home.path()).args(["remove", "tmp"]).status().unwrap().success());
    let (v, _) = json_out(sb(home.path(), home.path()).args(["list", "--json"]));
    assert_eq!(v["servers"].as_array().unwrap().len(), 0);

    std::fs::write(home.path().join("switchboard.json"), "{\"servers\": {\"x\": {\"command\": 5}}}").unwrap();
    let out = sb(home.path(), home.path()).args(["config", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("server `x`: field `command`: must be a string"));
    let out = sb(home.path(), home.path()).args(["config", "paths"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(".mcp.json"));
}

#[test]
fn trust_shows_what_runs_and_unlocks_the_server() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("repo");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let fx = fixture().display().to_string();
    let write =
        |servers: Value| std::fs::write(project.join(".mcp.json"), json!({"mcpServers": servers}).to_string()).unwrap();
    write(json!({"proj": {"command": fx, "env": {"API_KEY": "xyz"}}}));
    let (v, _) = json_out(sb(home.path(), &project).args(["list", "--json"]));
    assert_eq!(v["servers"][0]["status"]["state"], "untrusted");
    let out = sb(home.path(), &project).args(["trust", "proj"]).output().unwrap();
    assert!(!out.status.success(), "no terminal and no --yes: refuses");
    let out = sb(home.path(), &project).args(["trust", "proj", "--yes"]).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("switchboard-fixture") && shown.contains("API_KEY") && !shown.contains("xyz"), "{shown}");
    let (v, _) = json_out(sb(home.path(), &project).args(["list", "--json"]));
    assert_eq!(v["servers"][0]["status"]["state"], "connected");
    assert!(sb(home.path(), &project).args(["untrust", "proj"]).status().unwrap().success());
    let (v, _) = json_out(sb(home.path(), &project).args(["list", "--json"]));
    assert_eq!(v["servers"][0]["status"]["state"], "untrusted");

    // `--all` trusts every untrusted project server at once; a change to one launch line
    // (here an extra argument) needs trust again, the other stays trusted.
    write(
        json!({"one": {"command": fx, "args": ["--name", "one"]}, "two": {"command": fx, "args": ["--name", "two"]}}),
    );
    let out = sb(home.path(), &project).args(["trust", "--all", "--yes"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Trusted 2 servers"));
    let (v, _) = json_out(sb(home.path(), &project).args(["list", "--json"]));
    let states: Vec<&str> =
        v["servers"].as_array().unwrap().iter().map(|s| s["status"]["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["connected", "connected"]);
    write(
        json!({"one": {"command": fx, "args": ["--name", "one", "--tools", "3"]}, "two": {"command": fx, "args": ["--name", "two"]}}),
    );
    let (v, _) = json_out(sb(home.path(), &project).args(["list", "--json"]));
    let states: Vec<&str> =
        v["servers"].as_array().unwrap().iter().map(|s| s["status"]["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["untrusted", "connected"]);
    let out = sb(home.path(), &project).args(["trust", "--all", "--yes"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Trusted 1 server."));
    let out = sb(home.path(), &project).args(["trust", "--all", "--yes"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("already trusted"));

    // A user-file server needs no trust.
    std::fs::write(home.path().join("user.json"), json!({"servers": {"mine": {"command": fx}}}).to_string()).unwrap();
    let (v, _) = json_out(sb(home.path(), &project).args(["get", "mine", "--json"]));
    assert_eq!(v["server"]["status"]["state"], "connected", "{v}");
}

#[test]
fn secrets_from_variables_never_show() {
    let home = tempfile::tempdir().unwrap();
    let fx = fixture().display().to_string();
    let cfg = home.path().join("s.json");
    // The "secret" is a path the server writes its pid to: it reaches the server, and nothing
    // the server says back contains it.
    let secret = home.path().join("tok-7f3a9c");
    let servers = json!({"servers": {"s": {"command": fx, "args": ["--pid-file", "${SB_TEST_TOKEN}"],
                                           "env": {"KEY": "${SB_TEST_TOKEN}"}}}});
    std::fs::write(&cfg, servers.to_string()).unwrap();
    let run = |args: &[&str]| {
        let out = sb(home.path(), home.path())
            .env("SB_TEST_TOKEN", &secret)
            .args(["--config", cfg.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    for args in
        [&["list", "--json"][..], &["list"], &["get", "s", "--json"], &["get", "s"], &["config", "check", "--json"]]
    {
        let shown = run(args);
        assert!(!shown.contains("tok-7f3a9c"), "{args:?} leaked the secret: {shown}");
    }
    assert!(run(&["list", "--json"]).contains("${SB_TEST_TOKEN}"), "the reference is shown instead");
    assert!(secret.exists(), "the server got the expanded value");
}

#[test]
fn ctrl_c_during_a_call_leaves_no_server_process() {
    let home = tempfile::tempdir().unwrap();
    let pids = home.path().join("pids");
    let cfg = home.path().join("c.json");
    let entry = serde_json::json!({"servers": {"g": {"command": fixture().display().to_string(), "args": ["--grandchild", "--pid-file", pids.to_str().unwrap()]}}});
    std::fs::write(&cfg, entry.to_string()).unwrap();
    let mut child = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "call", "mcp__g__slow", "--arg", "ms=30000", "--arg", "steps=1"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pids.exists() || std::fs::read_to_string(&pids).unwrap().lines().count() < 2 {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(Duration::from_millis(200));
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
        assert!(state.is_none() || state.as_deref() == Some("Z"), "process {pid} left behind ({state:?})");
    }
}

/// Runs `switchboard <args>` on a pseudo-terminal (util-linux `script`), returning all it drew.
fn on_terminal(home: &Path, args: &[&str], sized: bool) -> String {
    on_terminal_typing(home, args, sized, "")
}

/// As [`on_terminal`], with `typed` sent as the person's keystrokes (after a pause for start-up).
fn on_terminal_typing(home: &Path, args: &[&str], sized: bool, typed: &str) -> String {
    let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
    let envs =
        [("SWITCHBOARD_CONFIG", home.join("user.json")), ("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home))];
    switchboard_testkit::on_terminal(std::path::Path::new(&exe), args, &envs, home, sized, typed)
}

#[test]
fn a_terminal_gets_a_spinner_a_progress_bar_and_colour_and_a_pipe_gets_none() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("slow.json");
    let slow =
        json!({"servers": {"s": {"command": fixture().display().to_string(), "args": ["--init-delay-ms", "700"]}}});
    std::fs::write(&cfg, slow.to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();

    let drawn = on_terminal(
        home.path(),
        &["--config", cfg, "call", "mcp__s__slow", "--arg", "ms=250", "--arg", "steps=3"],
        true,
    );
    assert!(drawn.contains("connecting to 1 server"), "a spinner while the server starts: {drawn:?}");
    assert!(
        drawn.contains("1/3") && drawn.contains("3/3") && drawn.contains("step 2 of 3"),
        "a progress bar: {drawn:?}"
    );
    assert!(drawn.contains("slept 3 x 250 ms"));
    for sized in [true, false] {
        let drawn = on_terminal(home.path(), &["--config", cfg, "list"], sized);
        assert!(drawn.contains("\u{1b}[32mconnected"), "status in colour: {drawn:?}");
        assert!(drawn.contains("fixture 0.1.0 (protocol 2025-11-25)"), "the table is not squeezed: {drawn:?}");
    }

    let out = sb(home.path(), home.path())
        .args(["--config", cfg, "call", "mcp__s__slow", "--arg", "ms=100", "--arg", "steps=2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "slept 2 x 100 ms");
    assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}') && !stderr.contains("connecting"), "{stderr:?}");
    let out = sb(home.path(), home.path()).args(["--config", cfg, "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
}

#[test]
fn a_server_asking_for_input_gets_the_person_on_a_terminal_and_a_decline_elsewhere() {
    let home = tempfile::tempdir().unwrap();
    let cfg = demo_config(home.path());
    let cfg = cfg.to_str().unwrap();
    // Fields in the server's order: name ("Ada"), age (Enter keeps 30); then Enter sends.
    let drawn = on_terminal_typing(home.path(), &["--config", cfg, "call", "demo/ask"], true, "Ada\n\n\n");
    assert!(drawn.contains("asks: Who is calling?") && drawn.contains("Age") && drawn.contains("[30]"), "{drawn:?}");
    assert!(drawn.contains(r#"accept: {"name":"Ada","age":30}"#), "{drawn:?}");
    assert!(drawn.find("Name:") < drawn.find("Age"), "asked in the server's order: {drawn:?}");
    // No terminal: the capability is not declared and the server gets no answer from a person.
    let out = sb(home.path(), home.path()).args(["--config", cfg, "call", "demo/ask"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("accept"), "{said}");
}

/// URL mode on a terminal: server-everything asks the person to open a page; the whole URL
/// is shown, nothing opens without a yes, and with no desktop the URL is printed to open.
#[test]
fn a_server_asking_to_open_a_page_gets_the_url_and_a_question_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("everything.json");
    let everything = json!({"command": "node", "args": [switchboard_testkit::node_peer("server-everything"), "stdio"]});
    std::fs::write(&cfg, json!({"servers": {"everything": everything}}).to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let call = |typed: &str| {
        let args = [
            "--config",
            cfg,
            "call",
            "everything/trigger-url-elicitation",
            "--arg",
            "url=https://example.com/approve?id=7",
        ];
        on_terminal_typing(home.path(), &args, true, typed)
    };
    let drawn = call("y\n");
    assert!(
        drawn.contains("asks you to open a page") && drawn.contains("https://example.com/approve?id=7"),
        "{drawn:?}"
    );
    assert!(drawn.contains("open it in a browser: https://example.com/approve?id=7"), "{drawn:?}");
    assert!(drawn.contains("completed the URL elicitation"), "{drawn:?}");
    let drawn = call("\n");
    assert!(drawn.contains("declined to open the URL"), "no unless yes: {drawn:?}");
}

/// Sampling on a terminal: server-everything asks for a completion during `call`; the person
/// reads it and writes the reply, which the tool returns. Off a terminal no sampler is
/// declared, so server-everything does not even offer the tool.
#[test]
fn a_servers_request_for_a_completion_is_answered_at_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("everything.json");
    let everything = json!({"command": "node", "args": [switchboard_testkit::node_peer("server-everything"), "stdio"]});
    std::fs::write(&cfg, json!({"servers": {"everything": everything}}).to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let args = ["--config", cfg, "call", "everything/trigger-sampling-request", "--arg", "prompt=Name a colour"];
    let drawn = on_terminal_typing(home.path(), &args, true, "w\nBlue, mostly.\n.\n");
    assert!(drawn.contains("server `everything` asks for a completion"), "{drawn:?}");
    assert!(drawn.contains("Name a colour"), "the request is shown: {drawn:?}");
    // The tool's result carries the reply as the model's (what was typed is echoed too).
    let result = drawn.split("LLM sampling result:").nth(1).unwrap_or_default();
    assert!(
        result.contains("\"model\": \"human\"") && result.contains("\"text\": \"Blue, mostly.\""),
        "the reply came back in the result: {drawn:?}"
    );
    let drawn = on_terminal_typing(home.path(), &args, true, "\n");
    assert!(drawn.contains("declined"), "{drawn:?}");
    let out = sb(home.path(), home.path()).args(["--config", cfg, "tools"]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(!listed.contains("trigger-sampling-request"), "not offered without someone to answer: {listed}");
    assert!(listed.contains("mcp__everything__echo"), "{listed}");
}

/// `switchboard complete`: server-everything's suggestions for a prompt's argument, given the
/// one chosen before, and for a template's variable; a server without completion says so.
#[test]
fn complete_prints_the_servers_suggestions() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("everything.json");
    let everything = json!({"command": "node", "args": [switchboard_testkit::node_peer("server-everything"), "stdio"]});
    let demo = json!({"command": switchboard_testkit::fixture()});
    std::fs::write(&cfg, json!({"servers": {"everything": everything, "demo": demo}}).to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = sb(home.path(), home.path()).args(["--config", cfg, "complete"]).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["everything", "prompt", "completable-prompt", "department", "Eng"]);
    assert_eq!((code, out.as_str()), (Some(0), "Engineering\n"), "{err}");
    let (code, out, err) =
        run(&["everything", "prompt", "completable-prompt", "name", "", "--arg", "department=Marketing"]);
    assert_eq!((code, out.as_str()), (Some(0), "Grace\nHenry\nIris\n"), "{err}");
    let (code, out, _) =
        run(&["everything", "resource", "demo://resource/dynamic/text/{resourceId}", "resourceId", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, Some(0));
    assert!(v["values"].as_array().unwrap().iter().any(|x| x == "1"), "{v}");
    let (code, _, err) = run(&["demo", "prompt", "greet", "who", "A"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("server `demo` does not offer completion"), "{err}");
}

/// `switchboard serve`: answers on loopback with the token from the data folder, refuses
/// without it, and on SIGTERM closes every server (no process left behind).
#[test]
fn serve_answers_with_the_token_and_sigterm_ends_every_server() {
    use std::io::{Read, Write};
    let home = tempfile::tempdir().unwrap();
    let cfg = demo_config(home.path());
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut guard = KillOnDrop(
        sb(home.path(), home.path())
            .args(["--config", cfg.to_str().unwrap(), "serve", "--port", "0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut guard.0;
    let addr = switchboard_testkit::serve_address(child);
    let token = std::fs::read_to_string(switchboard_testkit::data_dir(home.path()).join("serve-token"))
        .unwrap()
        .trim()
        .to_string();
    let get = |auth: Option<&str>| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        write!(stream, "GET /api/servers HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    // The API answers at once; the server connects in the background.
    let started = std::time::Instant::now();
    let response = loop {
        let response = get(Some(&token));
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        if response.contains("\"state\":\"connected\"") || started.elapsed() > Duration::from_secs(20) {
            break response;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(response.contains("\"demo\"") && response.contains("\"state\":\"connected\""), "{response}");
    assert!(get(None).starts_with("HTTP/1.1 401"));
    // `switchboard dashboard` asks the running server for a fresh login link, which works once.
    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "dashboard", "--print-url"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let link = text.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{text}"));
    let path = link.split_once(&addr).map(|(_, p)| p.to_string()).unwrap_or_else(|| panic!("{link} is not {addr}"));
    let login = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let first = login(&path);
    assert!(first.starts_with("HTTP/1.1 303") && first.contains("switchboard_session="), "{first}");
    assert!(login(&path).starts_with("HTTP/1.1 401"), "a link works once");
    // The fixture server is a child of serve (of whichever of its threads spawned it).
    let servers: Vec<i32> = std::fs::read_dir(format!("/proc/{}/task", child.id()))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("children")).ok())
        .flat_map(|c| c.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>())
        .collect();
    assert!(!servers.is_empty(), "no server process under serve");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "as README says of every command: {status:?}");
    for pid in servers {
        let gone = (0..50).any(|_| {
            let dead = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
                || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
            if !dead {
                std::thread::sleep(Duration::from_millis(100));
            }
            dead
        });
        assert!(gone, "server process {pid} left behind");
    }
    // Nothing serves now: `dashboard` says so.
    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "dashboard", "--print-url"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not running"), "{err}");
}

#[test]
fn a_login_to_a_host_that_does_not_resolve_says_so() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("remote.json");
    // `.invalid` never resolves (RFC 2606).
    std::fs::write(&cfg, r#"{"servers": {"linear": {"url": "https://mcp.linear.invalid/mcp"}}}"#).unwrap();
    let out = sb(home.path(), home.path())
        .args(["--config", cfg.to_str().unwrap(), "auth", "linear", "--no-browser"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("its host name `mcp.linear.invalid` does not resolve"), "{err}");
}

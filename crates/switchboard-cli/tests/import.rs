//! Meeting people's existing setups: a home folder with servers in every other tool's files,
//! found (`config sources`), pointed at from an empty `list`, imported (dry run first, then
//! for real, then again to no effect), and started; VS Code inputs asked once on a terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use switchboard_testkit::fixture;

/// A command with `home` as `HOME`, a private user file and data folder, run in `cwd`.
fn sb(home: &Path, cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("switchboard").unwrap();
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env("SWITCHBOARD_CONFIG", home.join("sb/user.json"))
        .env("SWITCHBOARD_DATA_DIR", home.join("sb/data"))
        .env("SWITCHBOARD_MANAGED_CONFIG", home.join("none.json"))
        .env_remove("RUST_LOG")
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    c
}

fn run(c: &mut Command) -> (String, String, i32) {
    let out = c.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json_of(c: &mut Command) -> Value {
    let (out, err, code) = run(c);
    assert_eq!(code, 0, "{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A fixture server entry named `name`, in the common shape.
fn fx(name: &str) -> Value {
    json!({"command": fixture(), "args": ["--name", name]})
}

/// Every tool's user file, each with a server (and a key or two of the tool's own).
fn every_tool(home: &Path, project: &Path) {
    let f = fixture().display().to_string();
    let j = |v: Value| serde_json::to_string_pretty(&v).unwrap();
    write(
        &home.join(".config/Claude/claude_desktop_config.json"),
        &j(json!({"mcpServers": {"desktop": fx("desktop"), "shared": fx("shared-a")}, "globalShortcut": "Alt+Space"})),
    );
    write(
        &home.join(".claude.json"),
        &j(json!({"numStartups": 3, "mcpServers": {"claude-user": fx("cu")},
            "projects": {project.display().to_string(): {"mcpServers": {"claude-local": fx("cl")}, "allowedTools": []}}})),
    );
    write(
        &home.join(".cursor/mcp.json"),
        &j(json!({"mcpServers": {"cursor": fx("cursor"), "shared": fx("shared-b")}})),
    );
    write(
        &home.join(".config/Code/User/mcp.json"),
        &j(json!({"servers": {"vscode": {"type": "stdio", "command": f, "args": ["--name", "vscode"], "dev": {}}}})),
    );
    write(
        &home.join(".config/Code/User/settings.json"),
        "{\n  // VS Code's own settings\n  \"editor.fontSize\": 13,\n  \"mcp\": {\"servers\": {\"vscode-settings\": {\"command\": \"FX\", \"args\": [\"--name\", \"vs\"]}}}\n}\n"
            .replace("FX", &f)
            .as_str(),
    );
    write(
        &home.join(".codeium/windsurf/mcp_config.json"),
        &j(json!({"mcpServers": {"windsurf": {"command": f, "args": ["--name", "ws"], "disabledTools": ["nothing"]}}})),
    );
    write(
        &home.join(".codex/config.toml"),
        &format!(
            "model = \"o3\"\n\n[mcp_servers.codex]\ncommand = {f:?}\nargs = [\"--name\", \"codex\"]\ntool_timeout_sec = 90\n"
        ),
    );
    write(
        &home.join(".gemini/settings.json"),
        &j(
            json!({"theme": "GitHub", "mcpServers": {"gemini": {"command": f, "args": ["--name", "gem"], "trust": true}}}),
        ),
    );
    write(
        &home.join(".config/opencode/opencode.json"),
        &j(json!({"$schema": "https://opencode.ai/config.json", "model": "x/y",
            "mcp": {"opencode": {"type": "local", "command": [f, "--name", "oc"], "enabled": true}}})),
    );
    write(
        &home.join(".config/zed/settings.json"),
        &j(
            json!({"theme": "One Dark", "context_servers": {"zed": {"source": "custom", "command": f, "args": ["--name", "zed"]},
            "zed-ext": {"source": "extension", "settings": {}}}}),
        ),
    );
}

#[test]
fn every_tools_servers_are_found_imported_once_and_started() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    every_tool(&home, &project);

    // A new user's first command points at what the other tools have.
    let (out, err, code) = run(sb(&home, &project).arg("list"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("No MCP servers configured") && out.contains("switchboard import"), "{out}");
    assert!(out.contains("Add a server: switchboard add NAME"), "{out}");
    assert!(out.contains("Cursor") && out.contains("Codex"), "{out}");

    let sources = json_of(sb(&home, &project).args(["config", "sources", "--json"]));
    let tools: Vec<&str> = sources["sources"].as_array().unwrap().iter().map(|s| s["tool"].as_str().unwrap()).collect();
    for tool in ["claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "codex", "gemini", "opencode", "zed"]
    {
        assert!(tools.contains(&tool), "{tool} not found: {sources:#}");
    }

    // A dry run writes nothing.
    let dry = json_of(sb(&home, &project).args(["import", "--dry-run", "--json"]));
    assert_eq!(dry["written"], 0);
    assert!(!home.join("sb/user.json").exists());

    let (out, err, code) = run(sb(&home, &project).arg("import"));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("shared as shared-cursor"), "a name taken by another server gets a suffix: {out}");
    assert!(out.contains("skipped zed-ext"), "{out}");
    assert!(out.contains("note: `trust`"), "what cannot be carried is said: {out}");
    let expected = [
        "desktop",
        "shared",
        "shared-cursor",
        "claude-user",
        "claude-local",
        "cursor",
        "vscode",
        "vscode-settings",
        "windsurf",
        "codex",
        "gemini",
        "opencode",
        "zed",
    ];
    assert!(out.contains(&format!("Imported {} servers", expected.len())), "{out}");

    // Every imported server starts.
    let list = json_of(sb(&home, &project).args(["list", "--json"]));
    assert!(list["diagnostics"].as_array().unwrap().is_empty(), "{list:#}");
    let servers = list["servers"].as_array().unwrap();
    for name in expected {
        let s = servers.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{name}: {list:#}"));
        assert_eq!(s["status"]["state"], "connected", "{name}: {s:#}");
    }
    assert_eq!(servers.len(), expected.len());
    let codex = json_of(sb(&home, &project).args(["get", "codex", "--json"]));
    assert_eq!(codex["config"]["tool_timeout_ms"], 90_000, "{codex:#}");

    // Again: everything is there already.
    let (out, _, _) = run(sb(&home, &project).arg("import"));
    assert!(out.contains("Nothing to import") && out.contains("is there already"), "{out}");
}

#[test]
fn an_input_is_asked_once_on_a_terminal_and_kept_at_0600() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let sbdir = home.join("sb");
    let user = sbdir.join("user.json");
    write(
        &user,
        &serde_json::to_string_pretty(&json!({
            "inputs": [{"type": "promptString", "id": "token", "description": "The fixture's token", "password": true}],
            "servers": {"fx": {"command": fixture(), "args": ["--name", "fx"], "env": {"FX_TOKEN": "${input:token}"}}}
        }))
        .unwrap(),
    );
    // Off a terminal: the server waits for the input, and says how to give it.
    let (out, err, _) = run(sb(&home, &home).args(["list"]));
    assert!(err.contains("needs the input `token`") && err.contains("switchboard inputs set token"), "{out}\n{err}");

    let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
    let envs = [
        ("HOME", home.clone()),
        ("SWITCHBOARD_CONFIG", user.clone()),
        ("SWITCHBOARD_DATA_DIR", sbdir.join("data")),
        ("SWITCHBOARD_MANAGED_CONFIG", home.join("none.json")),
    ];
    let drawn = switchboard_testkit::on_terminal(Path::new(&exe), &["list"], &envs, &home, true, "tok-3141592653");
    assert!(drawn.contains("needs `token`: The fixture's token"), "{drawn}");
    assert!(!drawn.contains("tok-3141592653"), "a password input is not echoed: {drawn}");
    assert!(drawn.contains("connected"), "{drawn}");

    let kept: PathBuf = sbdir.join("data/inputs.json");
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&kept).unwrap().contains("tok-3141592653"));
    assert!(!std::fs::read_to_string(&user).unwrap().contains("tok-3141592653"), "never in the config");
    // Not asked again; the listing says it is given.
    let v = json_of(sb(&home, &home).args(["inputs", "--json"]));
    assert_eq!(v["given"][0]["id"], "token", "{v:#}");
    assert!(v["missing"].as_array().unwrap().is_empty());
    let list = json_of(sb(&home, &home).args(["list", "--json"]));
    assert_eq!(list["servers"][0]["status"]["state"], "connected", "{list:#}");
    let (_, _, code) = run(sb(&home, &home).args(["inputs", "forget", "token"]));
    assert_eq!(code, 0);
    let v = json_of(sb(&home, &home).args(["inputs", "--json"]));
    assert_eq!(v["missing"][0]["input"]["id"], "token", "{v:#}");
}

/// README's `claude mcp add switchboard -- switchboard gateway` followed, and a Codex entry
/// and the HTTP gateway's address beside it: `import` leaves switchboard itself out, saying how
/// it knows, and takes the rest.
#[test]
fn import_leaves_switchboard_itself_out() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    write(
        &home.join(".claude.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "switchboard": {"type": "stdio", "command": "switchboard", "args": ["gateway"]},
            "switchboard-http": {"type": "http", "url": "http://localhost:7342/mcp"},
            "sb-env": {"command": "env", "args": ["RUST_LOG=info", "switchboard", "gateway"]},
            "sb-npx": {"command": "npx", "args": ["-y", "switchboard", "gateway"]},
            "sb-uvx": {"command": "uvx", "args": ["switchboard", "gateway"]},
            "sb-sh": {"command": "/bin/sh", "args": ["-c", "cd ~/work && exec /usr/local/bin/switchboard gateway 2>>/tmp/sb.log"]},
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
            "docs": fx("docs"),
        }}))
        .unwrap(),
    );
    write(
        &home.join(".codex/config.toml"),
        "[mcp_servers.switchboard-codex]\ncommand = \"/opt/bin/switchboard\"\nargs = [\"gateway\"]\n",
    );
    // The running serve's address is known from its record too.
    write(
        &home.join("sb/data/serve.json"),
        &json!({"url": "http://127.0.0.1:41234", "port": 41234, "pid": 1}).to_string(),
    );
    write(
        &home.join(".cursor/mcp.json"),
        &json!({"mcpServers": {"sb-serve": {"url": "http://127.0.0.1:41234/mcp?profile=reader"}}}).to_string(),
    );
    let plan = json_of(sb(&home, &home).args(["import", "--dry-run", "--json"]));
    let of = |name: &str| {
        plan["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {plan:#}"))
    };
    for (name, how) in [
        ("switchboard", "`switchboard gateway`: its command"),
        ("switchboard-codex", "`/opt/bin/switchboard gateway`: its command"),
        ("sb-env", "run through `env`"),
        ("sb-npx", "run through `npx`"),
        ("sb-uvx", "run through `uvx`"),
        ("sb-sh", "run through `sh -c`"),
        ("switchboard-http", "switchboard gateway --http 7342"),
        ("sb-serve", "the running `switchboard serve`"),
    ] {
        let s = of(name);
        assert_eq!(s["action"], "skip", "{name}: {s:#}");
        let reason = s["reason"].as_str().unwrap();
        assert!(reason.contains("switchboard itself") && reason.contains(how), "{name}: {reason}");
    }
    assert_eq!(of("docs")["action"], "add");
    assert_eq!(of("memory")["action"], "add", "a package runner of another package is no switchboard");
    let (out, _, _) = run(sb(&home, &home).args(["import", "--dry-run"]));
    assert!(out.contains("skipped switchboard: this is switchboard itself"), "{out}");
}

/// A team's config (`identity`) with a server of each person's own that takes a value only
/// each person has (`${input:who_token}`, `sharing: per_principal`): the host is never told to
/// give it (`inputs set` would make one person's value the host's). `audit` and `store status`
/// say nothing of it; `config` and `inputs` say it is each person's; the gateway says so when
/// it starts; a terminal is not asked for it. Without `identity` the same server is the host's,
/// and says how to give it.
#[test]
fn a_persons_own_input_is_announced_as_theirs_never_as_the_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let user = home.join("sb/user.json");
    let config = |identity: bool| {
        let mut c = json!({
            "inputs": [{"type": "promptString", "id": "who_token", "description": "Your token", "password": true}],
            "servers": {"gh": {"command": fixture(), "args": ["--name", "gh"], "env": {"T": "${input:who_token}"},
                               "sharing": "per_principal"}}
        });
        if identity {
            c["identity"] = json!({"issuers": ["https://issuer.example"], "scopes": ["mcp"]});
        }
        write(&user, &serde_json::to_string_pretty(&c).unwrap());
    };
    config(true);
    for args in [&["audit"][..], &["store", "status"], &["list"]] {
        let (out, err, _) = run(sb(&home, &home).args(args));
        assert!(!err.contains("inputs set") && !err.contains("needs the input"), "{args:?}: {out}\n{err}");
    }
    let (out, err, _) = run(sb(&home, &home).args(["config", "check"]));
    assert!(out.contains("note:") || err.contains("note:"), "{out}\n{err}");
    assert!(format!("{out}{err}").contains("takes `who_token` from each person who signs in"), "{out}\n{err}");
    assert!(!format!("{out}{err}").contains("inputs set"), "{out}\n{err}");
    let (out, _, _) = run(sb(&home, &home).args(["inputs"]));
    assert!(out.contains("who_token  each person's"), "{out}");
    let v = json_of(sb(&home, &home).args(["inputs", "--json"]));
    assert_eq!(v["missing"][0]["each_persons"], true, "{v:#}");

    // The gateway says it when it starts.
    let mut gateway = sb(&home, &home);
    gateway
        .args(["gateway", "--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = gateway.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok).take(50) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("who_token") {
                break;
            }
        }
        seen
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !said.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let said = said.join().unwrap();
    assert!(said.contains("note:") && said.contains("takes `who_token` from each person"), "{said}");
    assert!(!said.contains("inputs set"), "{said}");

    // A terminal is not asked for it.
    let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
    let envs = [
        ("HOME", home.clone()),
        ("SWITCHBOARD_CONFIG", user.clone()),
        ("SWITCHBOARD_DATA_DIR", home.join("sb/data")),
        ("SWITCHBOARD_MANAGED_CONFIG", home.join("none.json")),
    ];
    let drawn = switchboard_testkit::on_terminal(Path::new(&exe), &["list"], &envs, &home, true, "host-value");
    assert!(!drawn.contains("Your token"), "{drawn}");
    assert!(!home.join("sb/data/inputs.json").exists(), "the host kept a value");

    // Without `identity` (one person), it is the host's: asked for as before.
    config(false);
    let (out, err, _) = run(sb(&home, &home).args(["list"]));
    assert!(
        err.contains("needs the input `who_token`") && err.contains("switchboard inputs set who_token"),
        "{out}\n{err}"
    );
}

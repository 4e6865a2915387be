//! Other tools' config files used as they are: VS Code's inputs, variables and env file with
//! server-everything (the values reach the server), Codex's TOML, a file another tool keeps
//! included and followed live, and an import into switchboard's own file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{TestEnv, args, fixture, node_peer, text};
use serde_json::{Value, json};
use switchboard::config::{self, Action, InputStore, KnownFile, LoadOptions, RenameReason, ServerEntry, Tool};
use switchboard::events::Event;
use switchboard::status::ServerStatus;
use switchboard::{CallOptions, Hub, HubOptions};

/// A project (with `.git`) and a home folder, and load options reading the user file
/// `home/user.json` with `HOME` set to `home`.
struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    env: TestEnv,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Setup { _dir: dir, home, project, env: TestEnv::new() }
    }

    fn options(&self) -> LoadOptions {
        let mut o = LoadOptions::from_env(self.project.clone(), &self.env.paths);
        o.user_file = Some(self.home.join("user.json"));
        o.env.insert("HOME".into(), self.home.display().to_string());
        o.managed_file = None;
        o
    }

    fn write(&self, path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    }
}

fn everything(extra: Value) -> Value {
    let mut entry = json!({"type": "stdio", "command": "node", "args": [node_peer("server-everything"), "stdio"]});
    entry.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    entry
}

async fn env_of(hub: &Hub, server: &str) -> String {
    let out = hub.call_tool(&format!("mcp__{server}__get-env"), args(json!({})), CallOptions::new()).await.unwrap();
    text(&out)
}

#[tokio::test(flavor = "multi_thread")]
async fn vscode_inputs_variables_and_env_file_reach_the_server() {
    let s = Setup::new();
    let vscode = s.project.join(".vscode/mcp.json");
    s.write(
        &vscode,
        &json!({
            "inputs": [{"type": "promptString", "id": "api-key", "description": "The service's API key", "password": true}],
            "servers": {"everything": everything(json!({
                "env": {"SB_KEY": "${input:api-key}", "SB_HOME": "${userHome}", "SB_ROOT": "${workspaceFolderBasename}", "SB_WIN": "explicit"},
                "envFile": "${workspaceFolder}/.env",
                "dev": {"watch": "src/**/*.ts"}
            }))}
        }),
    );
    std::fs::write(s.project.join(".env"), "# the service\nexport SB_DOTENV=\"from the env file\"\nSB_WIN=dotenv\n")
        .unwrap();
    // VS Code's settings file: every key that is not MCP's is its own, and left alone.
    s.write(&s.project.join(".vscode/settings.json"), &json!({"editor.fontSize": 13, "files.exclude": {}}));
    // `secrets: off`: the test reads the server's environment back through a tool, which the
    // default redaction would (rightly) hide from a model (tests/scan of switchboard-cli).
    s.write(
        &s.home.join("user.json"),
        &json!({"include": ["${workspaceFolder}/.vscode/mcp.json", "${workspaceFolder}/.vscode/settings.json"],
                "policy": {"secrets": "off"}}),
    );

    // No value for the input yet: the server waits for it, and the load says what to ask.
    let loaded = config::load(&s.options());
    assert!(loaded.diagnostics.iter().all(|d| d.server.as_deref() == Some("everything")), "{:?}", loaded.diagnostics);
    let Some(ServerEntry::Invalid(bad)) = loaded.servers.get("everything") else { panic!("{:?}", loaded.servers) };
    assert!(bad.message.contains("input `api-key`"), "{}", bad.message);
    assert_eq!(loaded.inputs_missing.len(), 1);
    let missing = &loaded.inputs_missing[0];
    assert_eq!((missing.file.as_path(), missing.input.id.as_str()), (vscode.as_path(), "api-key"));
    assert_eq!(missing.input.description.as_deref(), Some("The service's API key"));
    assert!(missing.input.password);
    let included: Vec<_> = loaded.files.iter().filter(|f| f.included_by.is_some()).collect();
    assert_eq!(included.len(), 2, "{:?}", loaded.files);
    assert!(included.iter().all(|f| f.tool == Some(Tool::Vscode) && f.found));

    // Given once, kept at 0600 in the data folder, never in the config.
    InputStore::new(&s.env.paths.data_dir).set(&vscode, "api-key", "s3cret-input-value").unwrap();
    let loaded = config::load(&s.options());
    assert!(loaded.inputs_missing.is_empty());
    assert!(loaded.secrets.iter().any(|v| v == "s3cret-input-value"), "the value is kept out of logs");
    let root = s.project.display().to_string();
    assert!(!loaded.secrets.contains(&root), "the project folder is no secret: {:?}", loaded.secrets);
    assert!(!std::fs::read_to_string(&vscode).unwrap().contains("s3cret"));
    let hub = Hub::start(&loaded, HubOptions::new(s.env.paths.clone()));
    tokio::time::timeout(Duration::from_secs(60), hub.ready()).await.unwrap();
    let env = env_of(&hub, "everything").await;
    assert!(env.contains("s3cret-input-value"), "{env}");
    assert!(env.contains("from the env file"), "{env}");
    assert!(env.contains(&s.home.display().to_string()), "{env}");
    assert!(env.contains("\"SB_ROOT\": \"proj\"") || env.contains("SB_ROOT\":\"proj"), "{env}");
    assert!(env.contains("explicit") && !env.contains("dotenv\""), "`env` wins over the env file: {env}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_toml_and_claude_desktop_files_as_config() {
    let s = Setup::new();
    let codex = s.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(
        &codex,
        format!(
            "model = \"o4-mini\"\napproval_policy = \"on-request\"\n\n[mcp_servers.everything]\ncommand = \"node\"\n\
             args = [{:?}, \"stdio\"]\nenv_vars = [\"SB_CODEX_PASSED\"]\nstartup_timeout_sec = 45\n\n[profiles.x]\nmodel = \"y\"\n",
            node_peer("server-everything")
        ),
    )
    .unwrap();
    let desktop = s.home.join(".config/Claude/claude_desktop_config.json");
    s.write(
        &desktop,
        &json!({"globalShortcut": "Alt+Space", "mcpServers": {"fixture": {"command": fixture(), "args": ["--name", "fx"]}}}),
    );
    let mut options = s.options();
    options.extra_files = vec![codex.clone(), desktop.clone()];
    options.env.insert("SB_CODEX_PASSED".into(), "passed-through".into());
    let loaded = config::load(&options);
    assert!(loaded.diagnostics.is_empty(), "no word about other keys: {:?}", loaded.diagnostics);
    let Some(ServerEntry::Valid(c)) = loaded.servers.get("everything") else { panic!("{:?}", loaded.servers) };
    assert_eq!(c.startup_timeout, Duration::from_secs(45));
    assert!(matches!(loaded.servers.get("fixture"), Some(ServerEntry::Valid(_))));
    // The process environment is the test's own; the config's environment is `options.env`.
    let hub = Hub::start(&loaded, HubOptions::new(s.env.paths.clone()));
    tokio::time::timeout(Duration::from_secs(60), hub.ready()).await.unwrap();
    assert!(matches!(hub.status("fixture"), Some(ServerStatus::Connected { .. })));
    assert!(matches!(hub.status("everything"), Some(ServerStatus::Connected { .. })), "{:?}", hub.status("everything"));
    hub.shutdown().await;

    // A broken TOML file: the line is named.
    std::fs::write(&codex, "[mcp_servers.x]\ncommand = \"a\"\nargs = [\n").unwrap();
    let loaded = config::load(&options);
    let d = loaded.diagnostics.iter().find(|d| d.file == codex).expect("a diagnostic for the TOML file");
    assert!(d.message.starts_with("not valid TOML") && d.line.is_some(), "{d}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_included_file_of_another_tool_is_followed_live() {
    let s = Setup::new();
    let cursor = s.home.join(".cursor/mcp.json");
    s.write(&s.home.join("user.json"), &json!({"include": ["~/.cursor/mcp.json"], "servers": {}}));
    let options = s.options();
    let loaded = config::load(&options);
    assert!(
        loaded.diagnostics.iter().any(|d| d.message.contains("not found (yet)")),
        "a missing include is said, softly: {:?}",
        loaded.diagnostics
    );
    let hub = Hub::start(&loaded, HubOptions::new(s.env.paths.clone()));
    hub.ready().await;
    let mut events = hub.subscribe();
    let follow = hub.watch_config(options.clone(), &loaded).unwrap();
    assert!(follow.files().contains(&cursor), "{follow:?}");

    s.write(&cursor, &json!({"mcpServers": {"cur": {"command": fixture(), "args": ["--name", "cur"]}}}));
    let report = next_reload(&mut events).await;
    assert_eq!(report.added, ["cur"], "{report:?}");
    assert!(matches!(hub.status("cur"), Some(ServerStatus::Connected { .. })));

    // An include added while it runs is followed from then on.
    let windsurf = s.home.join(".codeium/windsurf/mcp_config.json");
    s.write(&windsurf, &json!({"mcpServers": {}}));
    s.write(
        &s.home.join("user.json"),
        &json!({"include": ["~/.cursor/mcp.json", "~/.codeium/windsurf/mcp_config.json"]}),
    );
    let report = next_reload(&mut events).await;
    assert!(report.added.is_empty() && report.removed.is_empty(), "{report:?}");
    assert!(follow.files().contains(&windsurf), "{follow:?}");
    s.write(&windsurf, &json!({"mcpServers": {"wind": {"command": fixture(), "args": ["--name", "wind"]}}}));
    let report = next_reload(&mut events).await;
    assert_eq!(report.added, ["wind"], "{report:?}");

    s.write(&cursor, &json!({"mcpServers": {}}));
    let report = next_reload(&mut events).await;
    assert_eq!(report.removed, ["cur"], "{report:?}");
    drop(follow);
    hub.shutdown().await;
}

async fn next_reload(events: &mut tokio::sync::broadcast::Receiver<Event>) -> switchboard::ReloadReport {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(Event::ConfigReloaded { report, .. })) => return *report,
            Ok(Ok(Event::ConfigRejected { diagnostics })) => panic!("rejected: {diagnostics:?}"),
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("no reload: {other:?}"),
        }
    }
}

#[test]
fn import_renames_collisions_skips_what_is_there_and_keeps_comments_and_inputs() {
    let s = Setup::new();
    let target = s.home.join("user.json");
    std::fs::write(
        &target,
        "{\n  // my own servers\n  \"servers\": {\n    \"github\": {\"url\": \"https://mine.example/mcp\"},\n    \
         \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]}\n  }\n}\n",
    )
    .unwrap();
    let cursor = s.home.join(".cursor/mcp.json");
    s.write(
        &cursor,
        &json!({"mcpServers": {
            "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}},
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
            "my tool": {"command": "uvx", "args": ["my-tool"]}
        }}),
    );
    let desktop = s.home.join(".config/Claude/claude_desktop_config.json");
    s.write(
        &desktop,
        &json!({"mcpServers": {
            "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
            "ws": {"type": "ws", "url": "wss://x"},
            // Names switchboard cannot use as they are, and seed 000's spelling of a remote one.
            "Jira Cloud (work)": {"command": "uvx", "args": ["jira-mcp"]},
            "ünï/code": {"command": "uvx", "args": ["code-mcp"]},
            "a-very-long-name-that-someone-typed-into-their-claude-desktop-config-by-hand": {"command": "uvx", "args": ["long"]},
            "docs": {"type": "url", "url": "https://docs.example/mcp"}
        }}),
    );
    let vscode = s.home.join(".config/Code/User/mcp.json");
    s.write(
        &vscode,
        &json!({"inputs": [{"type": "promptString", "id": "pg", "description": "Postgres URL", "password": true}],
                "servers": {"postgres": {"command": "npx", "args": ["-y", "pg-mcp", "${input:pg}"]}}}),
    );
    let store = InputStore::new(&s.env.paths.data_dir);
    store.set(&vscode, "pg", "postgres://secret@db/app").unwrap();

    let files: Vec<KnownFile> = config::known_files(&s.home, &s.project, &Default::default())
        .into_iter()
        .filter(|f| f.scope == config::SourceScope::User)
        .collect();
    let found = config::scan(&files, &s.project, &Default::default());
    let tools: Vec<Tool> = found.iter().map(|f| f.source.tool).collect();
    assert_eq!(tools, [Tool::ClaudeDesktop, Tool::Cursor, Tool::Vscode], "{found:?}");
    let plan = config::plan_import(&found, &target, &[]);
    let what = |tool: Tool, name: &str| {
        plan.iter()
            .find(|p| {
                p.tool == tool && (p.name == name || matches!(&p.action, Action::Rename { from, .. } if from == name))
            })
            .unwrap_or_else(|| panic!("{tool:?} {name}: {plan:#?}"))
    };
    // The name is taken by another server: a suffix; the same server from another tool: once.
    assert_eq!(what(Tool::ClaudeDesktop, "github").name, "github-claude-desktop");
    assert!(matches!(what(Tool::Cursor, "github").action, Action::Duplicate { .. }), "{plan:#?}");
    assert!(matches!(&what(Tool::Cursor, "fs").action, Action::AlreadyThere { name } if name == "fs"));
    assert_eq!(what(Tool::Cursor, "my tool").name, "my-tool");
    assert!(matches!(&what(Tool::ClaudeDesktop, "ws").action, Action::Skip { reason } if reason.contains("ws")));
    assert_eq!(what(Tool::Vscode, "postgres").action, Action::Add);
    // Renamed, not dropped, each saying why.
    let renamed = |from: &str, to: &str, why: RenameReason| {
        let p = what(Tool::ClaudeDesktop, from);
        assert_eq!((p.name.as_str(), &p.action), (to, &Action::Rename { from: from.into(), why }), "{plan:#?}");
    };
    renamed("Jira Cloud (work)", "Jira-Cloud-work", RenameReason::Characters);
    renamed("ünï/code", "n-code", RenameReason::Characters);
    renamed(
        "a-very-long-name-that-someone-typed-into-their-claude-desktop-config-by-hand",
        "a-very-long-name-that-someone-typed-into-their-claude-de",
        RenameReason::TooLong,
    );
    assert_eq!(what(Tool::ClaudeDesktop, "docs").action, Action::Add, "`type: url` is a remote server");

    assert_eq!(config::apply_import(&plan, &target, Some(&store)).unwrap(), 7);
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(written.contains("// my own servers"), "comments kept: {written}");
    assert!(written.contains("Bearer ${GITHUB_TOKEN}"), "the reference stays one: {written}");
    assert!(!written.contains("postgres://secret"), "an input's value is never written: {written}");
    assert!(written.contains("\"id\": \"pg\""), "its declaration comes along: {written}");
    // The input's value was given already: nobody is asked again.
    let mut options = s.options();
    options.env.insert("GITHUB_TOKEN".into(), "t".into());
    let loaded = config::load(&options);
    assert!(loaded.inputs_missing.is_empty(), "{:?}", loaded.inputs_missing);
    for name in ["github", "github-claude-desktop", "fs", "my-tool", "postgres", "Jira-Cloud-work", "n-code", "docs"] {
        assert!(
            matches!(loaded.servers.get(name), Some(ServerEntry::Valid(_))),
            "{name}: {:?}",
            loaded.servers.get(name)
        );
    }
    // Importing again adds nothing.
    let again = config::plan_import(&config::scan(&files, &s.project, &Default::default()), &target, &[]);
    assert!(again.iter().all(|p| !p.writes()), "{again:#?}");
}

/// A relative `cwd` in the person's own file is taken from the workspace the host runs in (as
/// ZCode does), so one entry serves each project; in a project's file, from that file's folder.
#[test]
fn a_relative_cwd_in_the_user_file_is_the_workspace_s() {
    let s = Setup::new();
    s.write(
        &s.home.join("user.json"),
        &json!({"servers": {"mine": {"command": "node", "args": ["x.js"], "cwd": "tools"}}}),
    );
    s.write(&s.project.join(".mcp.json"), &json!({"mcpServers": {"theirs": {"command": "node", "cwd": "tools"}}}));
    let loaded = config::load(&s.options());
    let cwd = |name: &str| match loaded.servers.get(name) {
        Some(ServerEntry::Valid(c)) => match &c.transport {
            switchboard::config::TransportConfig::Stdio(stdio) => stdio.cwd.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(cwd("mine"), Some(s.project.join("tools")));
    assert_eq!(cwd("theirs"), Some(s.project.join("tools")));
    // Elsewhere, the same user entry follows that workspace.
    let other = s.project.parent().unwrap().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    let mut options = s.options();
    options.cwd = other.clone();
    let loaded = config::load(&options);
    match loaded.servers.get("mine") {
        Some(ServerEntry::Valid(c)) => match &c.transport {
            switchboard::config::TransportConfig::Stdio(stdio) => assert_eq!(stdio.cwd, Some(other.join("tools"))),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

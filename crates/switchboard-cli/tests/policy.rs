//! The policy at the command line: `policy`, `allow`/`deny`, `approvals`, `audit`, `--arg`
//! typed by the schema, and the terminal approver on a pseudo-terminal (util-linux `script`),
//! asked when the managed file asks (a person's own `call` satisfies every other `ask`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use switchboard_testkit::fixture;

struct Home {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Home {
    fn new(policy: Value, managed: Option<Value>) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("demo.json");
        let file = json!({"servers": {"demo": {"command": fixture().display().to_string()}}, "policy": policy});
        std::fs::write(&config, file.to_string()).unwrap();
        if let Some(m) = managed {
            std::fs::write(dir.path().join("managed.json"), m.to_string()).unwrap();
        }
        Home { dir, config }
    }

    fn envs(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("SWITCHBOARD_CONFIG", self.dir.path().join("user.json")),
            ("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(self.dir.path())),
            ("SWITCHBOARD_MANAGED_CONFIG", self.dir.path().join("managed.json")),
        ]
    }

    fn sb(&self, args: &[&str]) -> (String, String, i32) {
        let mut c = Command::cargo_bin("switchboard").unwrap();
        c.envs(self.envs()).env_remove("RUST_LOG").current_dir(self.dir.path()).arg("--config").arg(&self.config);
        let out = c.args(args).output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
    }

    fn json(&self, args: &[&str]) -> Value {
        let (out, err, _) = self.sb(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
    }

    fn on_terminal(&self, args: &[&str], typed: &str) -> String {
        let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
        let mut all = vec!["--config", self.config.to_str().unwrap()];
        all.extend_from_slice(args);
        let envs: Vec<(&str, PathBuf)> = self.envs();
        switchboard_testkit::on_terminal(Path::new(&exe), &all, &envs, self.dir.path(), true, typed)
    }
}

#[test]
fn the_terminal_asks_when_the_managed_file_asks_and_always_is_remembered() {
    let home = Home::new(json!({"allow": ["mcp__demo__*"]}), Some(json!({"policy": {"ask": ["mcp__demo__echo"]}})));
    let drawn = home.on_terminal(&["call", "mcp__demo__echo", "--arg", "text=from the terminal"], "a\n");
    for shown in [
        "allow this tool call?",
        "mcp__demo__echo (demo/echo)",
        "\"text\": \"from the terminal\"",
        "asked by: rule `ask: mcp__demo__echo` of",
        "managed.json (managed file)",
        "[y]es once / [s]ession / [a]lways / [N]o",
        "from the terminal",
    ] {
        assert!(drawn.contains(shown), "{shown:?} not in {drawn:?}");
    }
    // Remembered: no terminal now, no one to ask, and yet the call goes through.
    let (out, err, code) = home.sb(&["call", "mcp__demo__echo", "--arg", "text=again"]);
    assert_eq!((out.trim(), code), ("again", 0), "{err}");
    let listed = home.json(&["approvals", "--json"]);
    assert_eq!(listed["approvals"][0]["name"], "mcp__demo__echo", "{listed}");
    let (out, _, code) = home.sb(&["approvals", "--revoke", "mcp__demo__*"]);
    assert_eq!(code, 0);
    assert!(out.contains("revoked: mcp__demo__echo"), "{out}");
    // Revoked: asked again, and with no terminal that is a denial saying how to allow it.
    let (_, err, code) = home.sb(&["call", "mcp__demo__echo", "--arg", "text=no"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs approval") && err.contains("switchboard allow mcp__demo__echo"), "{err}");
    // Said no on the terminal.
    let drawn = home.on_terminal(&["call", "mcp__demo__echo", "--arg", "text=x"], "n\n");
    assert!(drawn.contains("was not approved"), "{drawn:?}");
    let calls = home.json(&["audit", "--json"]);
    let outcomes: Vec<(&str, &str)> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["approval"].as_str().unwrap_or("-"), c["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(outcomes, [("allow_always", "ok"), ("allow_always", "ok"), ("-", "denied"), ("deny", "denied")]);
    assert!(calls["calls"].as_array().unwrap().iter().all(|c| c["caller"]["kind"] == "person"), "{calls}");
}

#[test]
fn policy_shows_the_rule_of_each_tool_and_edits_keep_the_file() {
    let home = Home::new(json!({"deny": ["mcp__*__crash"], "default": "ask"}), None);
    let v = home.json(&["policy", "--json"]);
    let of =
        |v: &Value, name: &str| v["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(of(&v, "mcp__demo__crash")["decision"], "deny");
    assert_eq!(of(&v, "mcp__demo__crash")["rule"]["pattern"], "mcp__*__crash");
    assert_eq!(of(&v, "mcp__demo__echo")["decision"], "ask");
    assert_eq!(of(&v, "mcp__demo__echo")["rule"]["kind"], "default");
    // A person's own call satisfies `ask`; `deny` holds.
    let (out, _, code) = home.sb(&["call", "mcp__demo__echo", "--arg", "text=42"]);
    assert_eq!((out.trim(), code), ("42", 0), "--arg takes the schema's type: the string 42");
    let (_, err, code) = home.sb(&["call", "mcp__demo__crash"]);
    assert_eq!(code, 2);
    assert!(err.contains("is denied by rule `deny: mcp__*__crash`"), "{err}");
    let (_, err, code) = home.sb(&["call", "mcp__demo__add", "--arg", "a=one", "--arg", "b=2"]);
    assert_eq!(code, 2);
    assert!(err.contains("`a` takes number"), "{err}");
    // `allow` writes the user file and the decision follows.
    std::fs::write(home.dir.path().join("user.json"), "{\n  // mine\n  \"servers\": {}\n}\n").unwrap();
    let (out, _, code) = home.sb(&["allow", "mcp__demo__echo"]);
    assert_eq!(code, 0, "{out}");
    let user = std::fs::read_to_string(home.dir.path().join("user.json")).unwrap();
    assert!(user.contains("// mine") && user.contains("mcp__demo__echo"), "{user}");
    let v = home.json(&["policy", "mcp__demo__echo", "--json"]);
    assert_eq!(v["tools"][0]["decision"], "allow", "{v}");
    let (_, err, code) = home.sb(&["allow", "mcp__x", "--scope", "project"]);
    assert_ne!(code, 0, "{err}");
    let (out, _, code) = home.sb(&["deny", "mcp__demo__echo"]);
    assert_eq!(code, 0);
    assert!(out.contains("deny: `mcp__demo__echo` added"), "{out}");
    let v = home.json(&["policy", "mcp__demo__echo", "--json"]);
    assert_eq!(v["tools"][0]["decision"], "deny", "{v}");
}

/// `file://` URL of a path (what `import` takes for an absolute path).
fn url_of(path: &str) -> String {
    format!("file://{path}")
}

#[test]
fn rules_that_match_no_tool_are_said_with_the_pattern_meant() {
    // server-memory (real) and the fixture; a rule over a server not there is judged too.
    let home = Home::new(json!({"deny": ["mcp__*__crash"], "ask": ["mcp__memroy__*"]}), None);
    // A copy of its entry script under this test's folder: its path tells this test's processes
    // from any other's.
    let memory = home.dir.path().join("memory-server.mjs");
    std::fs::write(&memory, format!("import {:?};\n", url_of(&switchboard_testkit::node_peer("server-memory"))))
        .unwrap();
    let memory = memory.display().to_string();
    let file = json!({
        "servers": {
            "demo": {"command": fixture().display().to_string()},
            "memory": {"command": "node", "args": [memory], "env": {"MEMORY_FILE_PATH": home.dir.path().join("m.jsonl")}},
            "gone": {"command": "/nonexistent/server"},
        },
        "policy": {"deny": ["mcp__*__crash"], "ask": ["mcp__memroy__*", "gone/*", "mcp__gone__x"]},
    });
    std::fs::write(&home.config, file.to_string()).unwrap();
    std::fs::write(home.dir.path().join("user.json"), "{}").unwrap();

    // A tool's own name alone matches nothing: added, with a warning and the pattern meant.
    let (out, err, code) = home.sb(&["deny", "create_relations"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("deny: `create_relations` added"), "{out}");
    assert!(
        err.contains("warning: `deny: create_relations` matches no tool of the 2 connected servers; did you mean `mcp__*__create_relations`?"),
        "{err}"
    );
    let (_, err, _) = home.sb(&["deny", "mcp__memroy__*"]);
    assert!(err.contains("did you mean `mcp__memory__*`?"), "{err}");
    // The servers started to check the rule end with the command (/proc).
    let left = switchboard_testkit::wait_gone(&memory, std::time::Duration::from_secs(10));
    assert!(left.is_empty(), "server-memory still running after `deny`: {left:?}");
    // The gateway's spelling is a spelling: no warning.
    let (out, err, code) = home.sb(&["deny", "memory__delete_*"]);
    assert_eq!(code, 0);
    assert!(out.contains("added") && !err.contains("warning"), "{out}\n{err}");
    // Nothing close: the warning alone.
    let (_, err, _) = home.sb(&["ask", "mcp__github__*"]);
    assert!(err.contains("matches no tool of the 2 connected servers (`switchboard tools` lists them)"), "{err}");

    // `policy` says each rule that matches nothing, and the tool no rule matches.
    let v = home.json(&["policy", "--json"]);
    let unmatched: Vec<(String, String, Option<String>)> = v["unmatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["list"].as_str().unwrap().into(),
                u["pattern"].as_str().unwrap().into(),
                u["meant"].as_str().map(Into::into),
            )
        })
        .collect();
    for want in [
        ("ask".to_string(), "mcp__memroy__*".to_string(), Some("mcp__memory__*".to_string())),
        ("deny".into(), "create_relations".into(), Some("mcp__*__create_relations".into())),
        ("ask".into(), "mcp__github__*".into(), None),
    ] {
        assert!(unmatched.contains(&want), "{want:?} not in {unmatched:?}");
    }
    // Rules over the server that did not start are not judged; those that match are not listed.
    assert!(unmatched.iter().all(|(_, p, _)| !p.contains("gone") && p != "mcp__*__crash" && p != "memory__delete_*"));
    let of = |name: &str| v["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(of("mcp__memory__delete_entities")["decision"], "deny");
    assert_eq!(of("mcp__memory__read_graph")["rule"]["kind"], "no_match");
    let (out, err, _) = home.sb(&["policy"]);
    assert!(out.contains("no rule matches this tool"), "{out}");
    assert!(!out.contains("no policy"), "{out}");
    assert!(err.contains("warning: `ask: mcp__memroy__*` matches no tool"), "{err}");
}

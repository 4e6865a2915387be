//! The tool-call policy end to end on the fixture: rules, approvers, remembered approvals and
//! the "rug pull", argument checks before anything leaves, the managed file, the audit log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{TestEnv, args, fixture_server, text, wait_event};
use serde_json::{Value, json};
use switchboard::events::Event;
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture, Caller};
use switchboard::status::{FailureKind, ServerStatus};
use switchboard::{CallOptions, Error};

/// Answers from a list and keeps every request it saw.
struct Scripted {
    answers: Mutex<Vec<Approval>>,
    seen: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn new(answers: &[Approval]) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().rev().copied().collect()),
            seen: Mutex::new(Vec::new()),
        })
    }
    fn seen(&self) -> Vec<ApprovalRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Approver for Scripted {
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.seen.lock().unwrap().push(request);
        let answer = self.answers.lock().unwrap().pop().unwrap_or(Approval::Deny);
        Box::pin(async move { answer })
    }
}

fn calls(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn deny_ask_and_allow_rules_hold_before_anything_is_sent() {
    let env = TestEnv::new();
    let log = env.dir.path().join("calls.log");
    let config = json!({
        "servers": {"f": fixture_server(&["--call-log", log.to_str().unwrap()])},
        "policy": {"allow": ["mcp__f__echo"], "ask": ["f/add"], "deny": ["mcp__*__crash"], "default": "deny"},
    });
    let hub = env.hub(&config).await;
    let echo = hub.call_tool("mcp__f__echo", args(json!({"text": "hi"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&echo), "hi");

    let err = hub.call_tool("mcp__f__crash", None, CallOptions::new()).await.unwrap_err();
    let Error::Denied { rule, file, message, .. } = &err else { panic!("{err:?}") };
    assert_eq!(
        rule,
        &format!("rule `deny: mcp__*__crash` of {} (cli file)", env.dir.path().join("config.json").display())
    );
    assert!(file.as_ref().is_some_and(|f| f.ends_with("config.json")));
    assert!(message.contains("`mcp__f__crash` is denied by rule `deny: mcp__*__crash`"), "{message}");
    assert_eq!(err.remedy(), None, "a deny rule is the person's choice, not something to fix");

    // `ask` without an approver: denied, saying why, with allowing the tool as the fix (which
    // each front says in its own words: `switchboard allow mcp__f__add` on a terminal).
    let err = hub.call_tool("mcp__f__add", args(json!({"a": 1, "b": 2})), CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("no one to ask"), "{err}");
    assert_eq!(err.remedy(), Some(switchboard::Remedy::Allow { tool: "mcp__f__add".into() }), "{err}");
    // The default denies the rest.
    let err = hub.call_tool("mcp__f__fail", None, CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("`default: deny`"), "{err}");
    // A person's own call satisfies the `ask` (not the `deny`).
    let out =
        hub.call_tool("mcp__f__add", args(json!({"a": 1, "b": 2})), CallOptions::new().caller(Caller::cli())).await;
    assert!(out.is_ok(), "{out:?}");
    let err = hub.call_tool("mcp__f__crash", None, CallOptions::new().caller(Caller::cli())).await.unwrap_err();
    assert!(matches!(err, Error::Denied { .. }));
    assert_eq!(calls(&log), ["echo", "add"], "refused calls never reached the server");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_answer_of_an_approver_and_always_is_asked_again_after_a_rug_pull() {
    rug_pull(None).await;
}

/// The same with a team's store on PostgreSQL: "always" is kept there (nothing in the data
/// folder) and a hub started afterwards (another gateway on the store) takes it.
#[tokio::test(flavor = "multi_thread")]
async fn always_is_kept_in_the_team_store_on_postgres() {
    let pg = tokio::task::spawn_blocking(switchboard_testkit::postgres::Postgres::start).await.unwrap();
    let url = pg.database("sb");
    let keys = switchboard::store::seal::KeyRing::new_key_line("k1").unwrap();
    let db = switchboard::store::db::Database::open(&url, switchboard::store::seal::KeyRing::parse(&keys).unwrap())
        .await
        .unwrap();
    rug_pull(Some(db)).await;
    let kept = pg.sql("sb", "SELECT body::text FROM switchboard_documents WHERE name = 'approvals'");
    assert!(kept.contains("\"tool\": \"echo\"") || kept.contains("\"tool\":\"echo\""), "{kept}");
}

async fn rug_pull(store: Option<switchboard::store::db::Database>) {
    let env = TestEnv::new();
    let options = || match &store {
        Some(db) => env.options().store(db.clone()),
        None => env.options(),
    };
    let log = env.dir.path().join("calls.log");
    let config = json!({
        "servers": {"f": fixture_server(&["--call-log", log.to_str().unwrap()])},
        "policy": {"ask": ["mcp__f__echo", "mcp__f__add"]},
    });
    let approver = Scripted::new(&[Approval::Deny, Approval::AllowOnce, Approval::AllowSession, Approval::AllowAlways]);
    let hub = env.hub_with(&config, options().approver(approver.clone())).await;
    let echo = |t: &str| args(json!({"text": t}));
    let err = hub.call_tool("mcp__f__echo", echo("1"), CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("was not approved"), "{err}");
    assert_eq!(text(&hub.call_tool("mcp__f__echo", echo("2"), CallOptions::new()).await.unwrap()), "2");
    // Allow for the session: asked once, then not again for the same caller.
    hub.call_tool("mcp__f__echo", echo("3"), CallOptions::new()).await.unwrap();
    hub.call_tool("mcp__f__echo", echo("4"), CallOptions::new()).await.unwrap();
    assert_eq!(approver.seen().len(), 3);
    let seen = approver.seen();
    assert_eq!(seen[0].arguments, echo("1"));
    assert_eq!((seen[0].server.as_str(), seen[0].tool.as_str(), seen[0].name.as_str()), ("f", "echo", "mcp__f__echo"));
    assert!(seen[0].rule.to_string().starts_with("rule `ask: mcp__f__echo`"));
    // Another caller's session is asked again: "always" this time.
    let other = CallOptions::new().caller(Caller::Api { session: "s2".into() });
    hub.call_tool("mcp__f__echo", echo("5"), other.clone()).await.unwrap();
    assert_eq!(approver.seen().len(), 4);
    hub.shutdown().await;

    // "Always" is remembered across hubs: a new hub does not ask.
    let approver = Scripted::new(&[Approval::AllowOnce]);
    let hub = env.hub_with(&config, options().approver(approver.clone())).await;
    hub.call_tool("mcp__f__echo", echo("6"), CallOptions::new()).await.unwrap();
    assert!(approver.seen().is_empty(), "remembered: {:?}", approver.seen());
    assert_eq!(hub.remembered_approvals().await.unwrap().len(), 1);
    let file = switchboard::policy::approvals::ApprovalStore::path(&env.paths.data_dir);
    assert_eq!(file.exists(), store.is_none(), "{}: in the data folder without a store only", file.display());
    // The server changes the tool's description: asked again, and told it changed.
    let mut events = hub.subscribe();
    hub.call_tool("mcp__f__mutate", args(json!({"what": "echo"})), CallOptions::new().caller(Caller::cli()))
        .await
        .unwrap();
    // The first connection's own CatalogChanged may come after `ready` (status first, then
    // the catalog event): wait for the event that carries the new definition.
    let described = || hub.catalog().tool("mcp__f__echo").and_then(|t| t.tool.description.clone()).unwrap_or_default();
    wait_event(&mut events, |e| {
        matches!(e, Event::CatalogChanged { .. }) && described().contains("sends it to a server")
    })
    .await;
    hub.call_tool("mcp__f__echo", echo("7"), CallOptions::new()).await.unwrap();
    let seen = approver.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].changed, "the approver is told the tool changed");
    // `scan` says so, with what changed.
    let found = hub.scan(Some("f")).await;
    let changed = found
        .iter()
        .find(|f| f.rule == switchboard::screen::Rule::DefinitionChanged)
        .unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(changed.target, switchboard::screen::Target::Tool("echo".into()));
    let said = changed.evidence.clone().unwrap_or_default();
    assert!(
        said.starts_with(
            "description: \"Echoes the text back.\" → \"Echoes the text back, and sends it to a server of ours"
        ),
        "{said}"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_are_checked_against_the_schema_and_nothing_is_sent() {
    let env = TestEnv::new();
    let log = env.dir.path().join("calls.log");
    let mut unchecked = fixture_server(&["--call-log", log.to_str().unwrap()]);
    unchecked["validate_arguments"] = json!(false);
    let config = json!({"servers": {"f": fixture_server(&["--call-log", log.to_str().unwrap()]), "u": unchecked}});
    let hub = env.hub(&config).await;
    let err = hub.call_tool("mcp__f__add", args(json!({"a": "one"})), CallOptions::new()).await.unwrap_err();
    let Error::InvalidArguments { errors, .. } = &err else { panic!("{err:?}") };
    assert!(errors.iter().any(|e| e.starts_with("/a: ") && e.contains("number")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("/: ") && e.contains("\"b\"")), "{errors:?}");
    assert!(err.to_string().starts_with("arguments do not match the input schema of `mcp__f__add`: "), "{err}");
    assert!(calls(&log).is_empty(), "nothing was sent: {:?}", calls(&log));
    // Turned off per server: the server gets the call (and says what it thinks).
    let out = hub.call_tool("mcp__u__add", args(json!({"a": "one"})), CallOptions::new()).await;
    assert!(out.is_ok() || matches!(out, Err(Error::Rejected { .. })), "{out:?}");
    assert_eq!(calls(&log), ["add"]);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_managed_file_refuses_servers_and_cannot_be_loosened() {
    let env = TestEnv::new();
    std::fs::write(
        env.dir.path().join("managed.json"),
        serde_json::to_string(&json!({
            "policy": {"ask": ["mcp__*__echo"], "deny": ["*/fail"]},
            "servers": {"deny": [{"name": "blocked"}], "allow": [{"command": "*switchboard-fixture*"}]},
        }))
        .unwrap(),
    )
    .unwrap();
    let config = json!({
        "servers": {"f": fixture_server(&[]), "blocked": fixture_server(&[]), "other": {"command": "cat"}},
        "policy": {"allow": ["mcp__*"]},
    });
    let loaded = env.load(&config);
    let hub = env.start(&loaded).await;
    for (name, why) in [
        ("blocked", "`servers.deny` entry {\"name\": \"blocked\"} matches it"),
        ("other", "no entry of `servers.allow`"),
    ] {
        match hub.status(name) {
            Some(ServerStatus::Failed { kind: FailureKind::PolicyDenied, message, .. }) => {
                assert!(message.contains("managed.json") && message.contains(why), "{message}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // The user's `allow mcp__*` does not lift the managed `deny` or `ask`, not even for a
    // person's own call.
    let err = hub.call_tool("mcp__f__fail", None, CallOptions::new().caller(Caller::cli())).await.unwrap_err();
    assert!(err.to_string().contains("managed.json (managed file)"), "{err}");
    let err = hub.call_tool("mcp__f__echo", args(json!({"text": "x"})), CallOptions::new().caller(Caller::cli())).await;
    assert!(matches!(err, Err(Error::Denied { .. })), "{err:?}");
    assert!(hub.call_tool("mcp__f__add", args(json!({"a": 1, "b": 2})), CallOptions::new()).await.is_ok());
    hub.shutdown().await;

    // A broken managed file refuses everything (it must never loosen).
    std::fs::write(env.dir.path().join("managed.json"), "{\"policy\": {\"deny\": [\"x\"],}").unwrap();
    let loaded = env.load(&json!({"servers": {"f": fixture_server(&[])}}));
    assert!(loaded.diagnostics.iter().any(|d| d.message.contains("no server starts")), "{:?}", loaded.diagnostics);
    let hub = env.start(&loaded).await;
    assert!(matches!(hub.status("f"), Some(ServerStatus::Failed { kind: FailureKind::PolicyDenied, .. })));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn project_files_may_only_tighten() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.dir.path().join(".git")).unwrap();
    std::fs::write(
        env.dir.path().join("switchboard.json"),
        r#"{"policy": {"allow": ["mcp__*"], "deny": ["mcp__f__fail"], "default": "allow"}}"#,
    )
    .unwrap();
    let loaded = env.load(&json!({"servers": {"f": fixture_server(&[])}, "policy": {"default": "ask"}}));
    let refused: Vec<_> = loaded.diagnostics.iter().filter(|d| d.file.ends_with("switchboard.json")).collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].message.contains("cannot allow its own tools") && refused[0].line == Some(1), "{refused:?}");
    let hub = env.start(&loaded).await;
    let err = hub.call_tool("mcp__f__fail", None, CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("switchboard.json (project file)"), "{err}");
    // The project's `allow` did not lift the user's `default: ask` (no approver here).
    let err = hub.call_tool("mcp__f__echo", args(json!({"text": "x"})), CallOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("`default: ask`"), "{err}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_outcome_is_one_audit_line_with_secrets_redacted() {
    let env = TestEnv::new();
    let config = json!({
        "servers": {"f": fixture_server(&[])},
        "policy": {"deny": ["mcp__f__crash"]},
        "audit": {"arguments": true},
    });
    let hub = env.hub(&config).await;
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let outcomes = [
        hub.call_tool("mcp__f__echo", args(json!({"text": "hi", "api_key": "sk-secret-1234"})), CallOptions::new())
            .await
            .is_ok(),
        hub.call_tool("mcp__f__fail", None, CallOptions::new()).await.is_ok(),
        hub.call_tool("mcp__f__crash", None, CallOptions::new()).await.is_err(),
        hub.call_tool("mcp__f__add", args(json!({"a": "x"})), CallOptions::new()).await.is_err(),
        hub.call_tool(
            "mcp__f__slow",
            args(json!({"ms": 2000, "steps": 1})),
            CallOptions::new().timeout(std::time::Duration::from_millis(200)),
        )
        .await
        .is_err(),
        hub.call_tool("mcp__f__slow", args(json!({"ms": 2000, "steps": 1})), CallOptions::new().cancel(cancel))
            .await
            .is_err(),
    ];
    assert!(outcomes.iter().all(|o| *o), "{outcomes:?}");
    hub.shutdown().await;
    let lines = switchboard::policy::audit::read(&env.paths.data_dir, &switchboard::policy::audit::AuditFilter::new())
        .unwrap()
        .records;
    let got: Vec<(&str, &str)> =
        lines.iter().map(|l| (l["tool"].as_str().unwrap_or(""), l["outcome"].as_str().unwrap_or(""))).collect();
    assert_eq!(
        got,
        [
            ("echo", "ok"),
            ("fail", "tool_error"),
            ("crash", "denied"),
            ("add", "invalid_arguments"),
            ("slow", "timeout"),
            ("slow", "cancelled")
        ]
    );
    let first = &lines[0];
    assert_eq!(first["arguments"]["api_key"], "<redacted>");
    assert_eq!(first["arguments"]["text"], "hi");
    assert_eq!(first["arguments_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(first["caller"]["kind"], "model");
    assert_eq!(first["result_bytes"], 2);
    assert!(lines[2]["rule"].as_str().unwrap_or("").contains("deny: mcp__f__crash"));
    let mut files = env.paths.data_dir.join("audit").read_dir().unwrap().flatten().map(|f| f.path());
    let day = files.find(|p| p.extension().is_some_and(|e| e == "jsonl")).unwrap();
    let file = std::fs::read_to_string(day).unwrap();
    assert!(!file.contains("sk-secret-1234"));
    let _: Value = serde_json::from_str(file.lines().next().unwrap()).unwrap();
}

/// The real schemas of server-everything (npm) and of a Python server on the `mcp` package:
/// refused arguments are listed by pointer and never reach the server. What the host sent is
/// read off the wire (`tee` in front of each server's stdin).
#[tokio::test(flavor = "multi_thread")]
async fn arguments_are_checked_against_real_servers_schemas() {
    let env = TestEnv::new();
    let wire = |name: &str| env.dir.path().join(format!("{name}.wire"));
    let teed = |log: &std::path::Path, command: String| json!({"command": "sh", "args": ["-c", format!("tee -a '{}' | exec {command}", log.display())]});
    let everything = format!("node '{}' stdio", common::node_peer("server-everything"));
    let py = format!(
        "'{}' '{}'",
        common::python().display(),
        common::workspace().join("tests/peers/py_server.py").display()
    );
    let config = json!({"servers": {"everything": teed(&wire("everything"), everything), "py": teed(&wire("py"), py)}});
    let hub = env.hub(&config).await;
    let refused = |name: &'static str, arguments: Value| {
        let hub = hub.clone();
        async move {
            match hub.call_tool(name, args(arguments), CallOptions::new()).await {
                Err(Error::InvalidArguments { errors, .. }) => errors,
                other => panic!("{name}: {other:?}"),
            }
        }
    };
    let errors = refused("mcp__everything__get-sum", json!({"a": "two", "b": 40})).await;
    assert!(errors.iter().any(|e| e.starts_with("/a: ") && e.contains("number")), "{errors:?}");
    let errors = refused("mcp__everything__echo", json!({})).await;
    assert!(errors.iter().any(|e| e.starts_with("/: ") && e.contains("\"message\"")), "{errors:?}");
    let errors = refused("mcp__py__multiply", json!({"a": "x", "b": 2})).await;
    assert!(errors.iter().any(|e| e.starts_with("/a: ")), "{errors:?}");
    let errors = refused("mcp__py__shout", json!({"text": 42})).await;
    assert!(errors.iter().any(|e| e.starts_with("/text: ") && e.contains("string")), "{errors:?}");
    // Good arguments go through, and are all the servers ever got.
    let out =
        hub.call_tool("mcp__everything__get-sum", args(json!({"a": 2, "b": 40})), CallOptions::new()).await.unwrap();
    assert!(text(&out).contains("42"), "{}", text(&out));
    let out = hub.call_tool("mcp__py__shout", args(json!({"text": "hi"})), CallOptions::new()).await.unwrap();
    assert!(text(&out).starts_with("HI"), "{}", text(&out));
    hub.shutdown().await;
    for (server, sent) in [("everything", "\"get-sum\""), ("py", "\"shout\"")] {
        let log = std::fs::read_to_string(wire(server)).unwrap();
        let called: Vec<&str> = log.lines().filter(|l| l.contains("\"tools/call\"")).collect();
        assert_eq!(called.len(), 1, "{server}: {called:?}");
        assert!(called[0].contains(sent), "{server}: {called:?}");
    }
}

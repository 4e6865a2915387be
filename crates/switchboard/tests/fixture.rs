//! End-to-end behaviour against the fixture server: the misbehaviours real servers lack.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{TestEnv, alive, args, fixture_server, settled, text, wait_event};
use serde_json::json;
use switchboard::status::{FailureKind, ServerStatus};
use switchboard::{CallOptions, Error, events::Event};

fn failure(status: Option<ServerStatus>) -> (FailureKind, String) {
    match status {
        Some(ServerStatus::Failed { kind, message, .. }) => (kind, message),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_slow_servers_start_in_parallel() {
    let env = TestEnv::new();
    let servers: serde_json::Map<_, _> =
        (0..10).map(|i| (format!("s{i}"), fixture_server(&["--init-delay-ms", "500"]))).collect();
    let started = Instant::now();
    let hub = env.hub(&json!({ "servers": servers })).await;
    let elapsed = started.elapsed();
    assert!(hub.servers().iter().all(|s| s.status.state() == "connected"), "{:?}", hub.servers());
    // Sequential start would take at least 10 x 500 ms.
    assert!(elapsed < Duration::from_millis(4000), "took {elapsed:?}");
    assert_eq!(hub.catalog().tools().len(), 10 * 14);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_mid_call_fails_clearly_then_reconnects() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"c": fixture_server(&[])}})).await;
    let mut events = hub.subscribe();
    let err = hub.call_tool("mcp__c__crash", None, CallOptions::new()).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ServerExited { .. }), "{err:?}");
    assert!(msg.contains("exit code 3") && msg.contains("crashing in the middle"), "{msg}");
    // The status as published: the hub reconnects at once, so by now it may be `connecting`.
    let gone = wait_event(&mut events, |e| {
        matches!(e, Event::StatusChanged { status: ServerStatus::Disconnected { .. }, .. })
    })
    .await;
    match gone {
        Event::StatusChanged { status: ServerStatus::Disconnected { exit_code, stderr_tail, .. }, .. } => {
            assert_eq!(exit_code, Some(3));
            assert!(stderr_tail.iter().any(|l| l.contains("crashing")));
        }
        other => panic!("{other:?}"),
    }
    // The next call reconnects once, then runs.
    let out = hub.call_tool("mcp__c__echo", args(json!({"text": "back"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "back");
    assert_eq!(hub.status("c").map(|s| s.state()), Some("connected"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_leaves_no_process_even_setsid_grandchildren_and_sigterm_ignorers() {
    let env = TestEnv::new();
    let pid_file = env.dir.path().join("pids");
    let pid_file2 = env.dir.path().join("pids2");
    let hub = env
        .hub(&json!({"servers": {
            "g": fixture_server(&["--grandchild", "--pid-file", pid_file.to_str().unwrap()]),
            "stubborn": fixture_server(&["--ignore-sigterm", "--grandchild", "--pid-file", pid_file2.to_str().unwrap()]),
        }}))
        .await;
    let mut pids: Vec<i32> = Vec::new();
    for f in [&pid_file, &pid_file2] {
        let text = std::fs::read_to_string(f).unwrap();
        pids.extend(text.lines().map(|l| l.parse::<i32>().unwrap()));
    }
    assert_eq!(pids.len(), 4);
    assert!(pids.iter().all(|p| alive(*p)), "all running before shutdown");
    let started = Instant::now();
    hub.shutdown().await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2500), "shutdown took {took:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stderr_floods_and_stdout_garbage_do_not_break_a_server() {
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            "flood": fixture_server(&["--stderr-flood", "200000"]),
            "garbage": fixture_server(&["--garbage-stdout"]),
        }}))
        .await;
    assert_eq!(hub.status("flood").map(|s| s.state()), Some("connected"), "{:?}", hub.status("flood"));
    assert_eq!(hub.status("garbage").map(|s| s.state()), Some("connected"), "{:?}", hub.status("garbage"));
    let out = hub.call_tool("mcp__flood__stderr", args(json!({"lines": 100000})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "wrote 100000 lines");
    // stderr is drained concurrently with stdout: wait for the reader to catch up.
    let deadline = Instant::now() + Duration::from_secs(20);
    let tail = loop {
        let tail = hub.stderr_tail("flood");
        if tail.last().is_some_and(|l| l.contains("stderr line 99999")) || Instant::now() > deadline {
            break tail;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(tail.len(), 50);
    assert!(tail.last().unwrap().contains("stderr line 99999"), "{:?}", tail.last());
    let out = hub.call_tool("mcp__garbage__echo", args(json!({"text": "clean"})), CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "clean");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ten_megabyte_result_is_cut_to_budget_with_the_whole_in_a_file() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"big": fixture_server(&[])}})).await;
    let results = env.paths.data_dir.join("results");
    let kept = || std::fs::read_dir(&results).map(|d| d.count()).unwrap_or(0);
    // A result whose model form nobody asks for is not formatted, and nothing is written.
    let unread = hub.call_tool("mcp__big__big", args(json!({"bytes": 10_000_000})), CallOptions::new()).await.unwrap();
    assert!(!unread.is_formatted());
    drop(unread);
    assert_eq!(kept(), 0, "a spill file was written for a result nobody read");
    let out = hub.call_tool("mcp__big__big", args(json!({"bytes": 10_000_000})), CallOptions::new()).await.unwrap();
    let out = out.formatted().await.unwrap();
    assert_eq!(kept(), 1);
    assert!(out.model().truncated);
    // Asked again, it is the same form (and the same one file).
    assert_eq!(out.model().spilled, out.clone().model().spilled);
    assert_eq!(kept(), 1);
    let shown = text(&out);
    assert!(shown.len() < 51_000, "{}", shown.len());
    let file = &out.model().spilled[0];
    assert!(file.starts_with(&env.paths.data_dir), "{}", file.display());
    assert!(shown.contains(&file.display().to_string()));
    assert_eq!(std::fs::metadata(file).unwrap().len(), 10_000_000);
    // The raw result stays whole for library callers.
    let raw = serde_json::to_value(&out.raw).unwrap();
    assert_eq!(raw["content"][0]["text"].as_str().map(str::len), Some(10_000_000));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_refreshes_the_catalog() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"m": fixture_server(&[])}})).await;
    let mut events = hub.subscribe();
    assert!(hub.catalog().tool("mcp__m__added_0").is_none());
    hub.call_tool("mcp__m__mutate", None, CallOptions::new()).await.unwrap();
    wait_event(&mut events, |e| matches!(e, Event::CatalogChanged { server, tools: 15, .. } if server == "m")).await;
    assert!(hub.catalog().tool("mcp__m__added_0").is_some());
    let out = hub.call_tool("mcp__m__added_0", None, CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), "called added_0");
    match hub.status("m") {
        Some(ServerStatus::Connected { counts, .. }) => assert_eq!(counts.tools, 15),
        other => panic!("{other:?}"),
    }

    // Resources and prompts follow their own notifications.
    hub.call_tool("mcp__m__mutate", args(json!({"what": "resources"})), CallOptions::new()).await.unwrap();
    wait_event(&mut events, |e| matches!(e, Event::CatalogChanged { resources: 3, .. })).await;
    assert!(hub.catalog().resources().iter().any(|r| r.resource.uri == "fixture://added/0"));
    hub.call_tool("mcp__m__mutate", args(json!({"what": "prompts"})), CallOptions::new()).await.unwrap();
    wait_event(&mut events, |e| matches!(e, Event::CatalogChanged { prompts: 2, .. })).await;
    assert!(hub.catalog().prompts().iter().any(|p| p.prompt.name == "added_0"));

    // A refresh that fails keeps the last good list (now 15 tools, though the server has 16).
    hub.call_tool("mcp__m__mutate", args(json!({"fail_next_lists": 1})), CallOptions::new()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hub.catalog().tools_of("m").count(), 15);
    assert!(hub.catalog().tool("mcp__m__added_0").is_some());
    assert_eq!(hub.status("m").map(|s| s.state()), Some("connected"));

    // A burst of changes: whatever order the refreshes finish in, the newest list wins.
    for _ in 0..5 {
        hub.call_tool("mcp__m__mutate", None, CallOptions::new()).await.unwrap();
    }
    wait_event(&mut events, |e| matches!(e, Event::CatalogChanged { tools: 21, .. })).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hub.catalog().tools_of("m").count(), 21);
    assert!(hub.catalog().tool("mcp__m__added_5").is_some());
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn names_are_unique_capped_and_route_to_the_right_server() {
    let env = TestEnv::new();
    let long = "a_tool_name_that_is_much_too_long_to_fit_in_sixty_four_characters_at_all";
    let hub = env
        .hub(&json!({"servers": {
            "a.b": fixture_server(&["--name", "dotted", "--extra-tool", long]),
            "a_b": fixture_server(&["--name", "underscored"]),
        }}))
        .await;
    let catalog = hub.catalog();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    let unique: std::collections::HashSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    assert!(
        names.iter().all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    );
    // "a.b" sorts before "a_b": it keeps the plain name, "a_b" gets the hash.
    assert_eq!(catalog.tool("mcp__a_b__echo").map(|t| t.server.as_str()), Some("a.b"));
    let hashed = catalog.tools_of("a_b").find(|t| t.tool.name == "echo").unwrap().name.clone();
    assert!(hashed.starts_with("mcp__a_b__echo_") && hashed.len() == "mcp__a_b__echo_".len() + 12, "{hashed}");
    let long_entry = catalog.tools().iter().find(|t| t.tool.name == long).unwrap();
    assert_eq!(long_entry.name.len(), 64);
    let out = hub.call_tool(&hashed, args(json!({"text": "x"})), CallOptions::new()).await.unwrap();
    assert_eq!(out.server, "a_b");
    let out = hub.call_tool(&long_entry.name, None, CallOptions::new()).await.unwrap();
    assert_eq!(text(&out), format!("called {long}"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn start_failures_are_classified_and_do_not_hold_up_others() {
    let env = TestEnv::new();
    let started = Instant::now();
    let loaded = env.load(&json!({"servers": {
            "good": fixture_server(&[]),
            "hangs": {"command": common::fixture().display().to_string(), "args": ["--init-delay-ms", "60000"], "startup_timeout_ms": 700},
            "dies": fixture_server(&["--exit-at-start", "7"]),
            "missing": {"command": "definitely-not-a-command-xyz"},
            "badcwd": {"command": "true", "cwd": "/nonexistent/dir"},
            "off": {"command": "true", "enabled": false},
            "oldproto": fixture_server(&["--protocol-version", "1999-01-01"]),
            "refuses": fixture_server(&["--initialize-error", "unsupported protocol version: we only speak 2030-01-01"]),
            "nolist": fixture_server(&["--fail-list-tools"]),
            "unset": {"command": "${SWITCHBOARD_TEST_SURELY_UNSET_VAR}"},
        }}));
    assert_eq!(loaded.diagnostics.len(), 1, "only `unset` is invalid: {:?}", loaded.diagnostics);
    let hub = env.start(&loaded).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(hub.status("good").map(|s| s.state()), Some("connected"));
    let (kind, msg) = failure(settled(&hub, "hangs").await);
    assert_eq!(kind, FailureKind::StartupTimeout);
    assert!(msg.contains("700 ms"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "dies").await);
    assert_eq!(kind, FailureKind::ProcessExited);
    assert!(msg.contains("exit code 7") && msg.contains("refusing to start"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "missing").await);
    assert_eq!(kind, FailureKind::ProcessStartFailed);
    assert!(msg.contains("not found") && msg.contains("PATH searched"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "badcwd").await);
    assert_eq!(kind, FailureKind::ProcessStartFailed);
    assert!(msg.contains("/nonexistent/dir"), "{msg}");
    assert_eq!(hub.status("off"), Some(ServerStatus::Disabled));
    let (kind, msg) = failure(settled(&hub, "oldproto").await);
    assert_eq!(kind, FailureKind::ProtocolNegotiationFailed);
    assert!(msg.contains("1999-01-01") && msg.contains("2025-11-25"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "refuses").await);
    assert_eq!(kind, FailureKind::ProtocolNegotiationFailed);
    assert!(msg.contains("we only speak 2030-01-01"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "nolist").await);
    assert_eq!(kind, FailureKind::ToolListFailed);
    assert!(msg.contains("tools/list") && msg.contains("the tool registry is corrupt"), "{msg}");
    let (kind, msg) = failure(settled(&hub, "unset").await);
    assert_eq!(kind, FailureKind::ConfigInvalid);
    assert!(msg.contains("SWITCHBOARD_TEST_SURELY_UNSET_VAR"), "{msg}");
    // A tool of a server that failed: the error says why the server is not there.
    let err = hub.call_tool("mcp__dies__echo", None, CallOptions::new()).await.unwrap_err();
    assert!(
        matches!(&err, Error::NotConnected { server, reason, .. } if server == "dies" && reason.contains("exit")),
        "{err:?}"
    );
    let err = hub.call_tool("mcp__nobody__echo", None, CallOptions::new()).await.unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err:?}");
    hub.shutdown().await;
}

/// Over stdio, progress is taken in the order the server wrote it: every step sent before the
/// result is in the caller's hands when the call returns (rmcp alone hands each notification
/// to a task of its own, which may run after the result is delivered).
#[tokio::test(flavor = "multi_thread")]
async fn progress_sent_before_the_result_is_delivered_before_it() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"p": fixture_server(&[])}})).await;
    for _ in 0..20 {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = CallOptions::new().progress(tx);
        hub.call_tool("mcp__p__slow", args(json!({"ms": 0, "steps": 20})), opts).await.unwrap();
        let mut seen = Vec::new();
        while let Ok(p) = rx.try_recv() {
            seen.push(p.progress);
        }
        assert_eq!(seen, (1..=20).map(f64::from).collect::<Vec<_>>(), "all 20 steps, in order, at once");
    }
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_resets_the_timeout_and_silence_times_out_with_cancellation() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"p": fixture_server(&[])}})).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // 5 x 300 ms = 1.5 s in all, longer than the 800 ms timeout: progress keeps it alive.
    let opts = CallOptions::new().timeout(Duration::from_millis(800)).progress(tx);
    let out = hub.call_tool("mcp__p__slow", args(json!({"ms": 300, "steps": 5})), opts).await.unwrap();
    assert_eq!(text(&out), "slept 5 x 300 ms");
    let mut seen = Vec::new();
    while let Some(p) = rx.recv().await {
        seen.push(p.progress);
    }
    assert_eq!(seen, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    // Progress resets the timeout also when the caller does not listen to it.
    let opts = CallOptions::new().timeout(Duration::from_millis(800));
    let out = hub.call_tool("mcp__p__slow", args(json!({"ms": 300, "steps": 5})), opts).await.unwrap();
    assert_eq!(text(&out), "slept 5 x 300 ms");
    // One silent step longer than the timeout: cancelled.
    let opts = CallOptions::new().timeout(Duration::from_millis(300));
    let err = hub.call_tool("mcp__p__slow", args(json!({"ms": 3000, "steps": 1})), opts).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The hard maximum holds even with progress.
    let opts = CallOptions::new().timeout(Duration::from_millis(800)).max_total(Duration::from_millis(900));
    let err = hub.call_tool("mcp__p__slow", args(json!({"ms": 300, "steps": 10})), opts).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { after, .. } if after == Duration::from_millis(900)), "{err:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = hub.stderr_tail("p").iter().filter(|l| l.contains("slow call cancelled")).count();
    assert_eq!(cancelled, 2, "the server saw notifications/cancelled: {:?}", hub.stderr_tail("p"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_can_cancel_a_call() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"p": fixture_server(&[])}})).await;
    let token = tokio_util::sync::CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        t2.cancel();
    });
    let opts = CallOptions::new().cancel(token);
    let err = hub.call_tool("mcp__p__slow", args(json!({"ms": 5000, "steps": 1})), opts).await.unwrap_err();
    assert_eq!(err, Error::Cancelled);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.stderr_tail("p").iter().any(|l| l.contains("slow call cancelled")));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_are_followed_and_filters_apply() {
    let env = TestEnv::new();
    let hub = env
        .hub(&json!({"servers": {
            "paged": fixture_server(&["--tools", "30", "--page-size", "7"]),
            "filtered": {"command": common::fixture().display().to_string(), "tools": {"allow": ["tool_*", "echo"], "deny": ["tool_1*"]}, "args": ["--tools", "20"]},
        }}))
        .await;
    let catalog = hub.catalog();
    assert_eq!(catalog.tools_of("paged").count(), 44);
    assert_eq!(catalog.resources().iter().filter(|r| r.server == "paged").count(), 2);
    assert_eq!(catalog.prompts().iter().filter(|p| p.server == "paged").count(), 1);
    let filtered: Vec<&str> = catalog.tools_of("filtered").map(|t| t.tool.name.as_ref()).collect();
    // tool_0..tool_19 minus tool_1 and tool_10..tool_19, plus echo.
    assert_eq!(filtered.len(), 20 - 11 + 1, "{filtered:?}");
    assert!(!filtered.contains(&"add") && !filtered.contains(&"tool_12"));
    let loose = catalog.tool("mcp__paged__loose").unwrap();
    assert_eq!(loose.input_schema.get("type"), Some(&json!("object")));
    let res = hub.read_resource("paged", "fixture://item/42").await.unwrap();
    assert!(serde_json::to_string(&res).unwrap().contains("item 42"));
    let prompt = hub.get_prompt("paged", "greet", args(json!({"who": "Ada"}))).await.unwrap();
    assert!(serde_json::to_string(&prompt).unwrap().contains("Hello, Ada!"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_made_ready_for_a_model() {
    let env = TestEnv::new();
    let hub = env.hub(&json!({"servers": {"r": fixture_server(&[])}})).await;
    let out = hub.call_tool("mcp__r__mixed", None, CallOptions::new()).await.unwrap();
    let blocks = serde_json::to_value(&out.model().blocks).unwrap();
    assert_eq!(blocks[0], json!({"type": "text", "text": "first"}));
    assert!(blocks[1]["data_url"].as_str().unwrap().starts_with("data:image/png;base64,iVBOR"));
    assert_eq!(blocks[2]["text"], "[Audio content (audio/wav) omitted]");
    assert!(blocks[3]["text"].as_str().unwrap().contains("hello resource"));
    assert_eq!(blocks[4]["text"], "Structured content: {\"ok\":true,\"count\":4}", "labelled, in the server's order");
    let out = hub.call_tool("mcp__r__fail", None, CallOptions::new()).await.unwrap();
    assert!(out.is_error());
    assert_eq!(text(&out), "MCP tool returned an error: the fixture failed on purpose");
    let out = hub.call_tool("mcp__r__image", args(json!({"bytes": 300_000})), CallOptions::new()).await.unwrap();
    assert!(out.model().truncated && text(&out).contains("too large to inline"));
    assert!(out.model().spilled[0].exists());
    hub.shutdown().await;
}

/// A call made while the hub is still starting the tool's server waits for it (up to the
/// server's start-up timeout) instead of failing at once: a script or a daemon's API called
/// just after start sees the tool. What the wait cannot change still fails at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_a_server_still_starting_waits_for_it() {
    let env = TestEnv::new();
    let loaded = env.load(&json!({"servers": {
        "slow": fixture_server(&["--init-delay-ms", "1500"]),
        "never": {"command": common::fixture().display().to_string(), "args": ["--init-delay-ms", "60000"], "startup_timeout_ms": 800},
    }}));
    let hub = switchboard::Hub::start(&loaded, env.options());
    assert_eq!(hub.status("slow").map(|s| s.state()), Some("connecting"));
    let started = Instant::now();
    let timed = |call| async move {
        let out = call.await;
        (out, started.elapsed())
    };
    let ((slow, slow_took), (never, never_took)) = tokio::join!(
        timed(hub.call_tool("mcp__slow__echo", args(json!({"text": "hi"})), CallOptions::new())),
        timed(hub.call_tool("mcp__never__echo", None, CallOptions::new())),
    );
    assert_eq!(text(&slow.unwrap()), "hi");
    assert!(slow_took >= Duration::from_millis(1000), "the server cannot have been up: {slow_took:?}");
    // A server that never comes up: the wait ends with its start-up timeout, and says why.
    let err = never.unwrap_err();
    assert!(matches!(err, Error::NotConnected { .. }) && err.to_string().contains("800 ms"), "{err:?}");
    assert!(never_took >= Duration::from_millis(700), "it did not wait: {never_took:?}");
    // Connected now: a tool it does not have is unknown at once, with no wait.
    let started = Instant::now();
    let err = hub.call_tool("mcp__slow__nope", None, CallOptions::new()).await.unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    // Failed: no wait either.
    let started = Instant::now();
    assert!(hub.call_tool("mcp__never__echo", None, CallOptions::new()).await.is_err());
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    // The caller's cancellation ends a wait.
    let h = hub.clone();
    tokio::spawn(async move { h.reconnect("never").await });
    while hub.status("never").map(|s| s.state()) != Some("connecting") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancel = tokio_util::sync::CancellationToken::new();
    let (c, started) = (cancel.clone(), Instant::now());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let waited = hub.call_tool("mcp__never__echo", None, CallOptions::new().cancel(cancel)).await;
    assert!(waited.is_err() && started.elapsed() < Duration::from_millis(600), "{:?}", started.elapsed());
    hub.shutdown().await;
}

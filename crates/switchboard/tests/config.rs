//! Config files: every accepted shape and alias, precedence, `${VAR}`, diagnostics, trust.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use switchboard::config::{self, HttpTransport, LoadOptions, Scope, ServerEntry, Severity, TransportConfig};
use switchboard::status::ServerStatus;
use switchboard::{Hub, HubOptions, Paths};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn options(cwd: &Path, user: &Path, extra: Vec<std::path::PathBuf>) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.cwd = cwd.to_path_buf();
    o.user_file = Some(user.to_path_buf());
    o.extra_files = extra;
    o.env = HashMap::from([("HOME".to_string(), "/home/me".to_string()), ("TOKEN".to_string(), "s3cret".to_string())]);
    o
}

fn valid(entry: Option<&ServerEntry>) -> &config::ServerConfig {
    match entry {
        Some(ServerEntry::Valid(c)) => c,
        other => panic!("expected a valid entry, got {other:?}"),
    }
}

#[test]
fn every_shape_and_alias_is_understood() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all.json");
    write(
        &file,
        r#"{
  // Claude Desktop / Cursor / .mcp.json
  "mcpServers": {
    "claude": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "${HOME}/x"}, "disabled": true},
    "claude-remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
  },
  /* VS Code */
  "servers": {
    "vscode": {"type": "stdio", "command": "node", "args": ["s.js"], "enable": false, "timeoutMs": 1234},
    "vscode-sse": {"type": "sse", "url": "https://example.com/sse", "http_headers": {"X": "1"}},
  },
  // OpenCode
  "mcp": {
    "oc-local": {"type": "local", "command": ["bun", "x", "srv"], "environment": {"A": "b"}, "enabled": true, "timeout": 5000},
    "oc-remote": {"type": "remote", "url": "http://localhost:9/mcp"},
  },
}"#,
    );
    let zfile = dir.path().join("zcode.json");
    write(
        &zfile,
        r#"{"mcp": {"servers": {"z": {"command": "z-server", "tool_timeout_ms": 99, "env_passthrough": ["GITHUB_TOKEN"], "inherit_env": false}}}}"#,
    );
    let loaded = config::load(&options(dir.path(), &dir.path().join("none.json"), vec![file.clone(), zfile]));
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.servers.len(), 7);

    let c = valid(loaded.servers.get("claude"));
    assert!(!c.enabled);
    let TransportConfig::Stdio(s) = &c.transport else { panic!() };
    assert_eq!((s.command.as_str(), s.args.clone()), ("npx", vec!["-y".to_string(), "pkg".to_string()]));
    assert_eq!(s.env.get("K").map(String::as_str), Some("/home/me/x"));
    assert_eq!(c.scope, Scope::Cli);
    assert_eq!(c.source, file);

    let TransportConfig::Http(h) = &valid(loaded.servers.get("claude-remote")).transport else { panic!() };
    assert_eq!(h.headers.get("Authorization").map(String::as_str), Some("Bearer s3cret"));
    assert_eq!(h.transport, HttpTransport::Auto);

    let v = valid(loaded.servers.get("vscode"));
    assert!(!v.enabled);
    assert_eq!(v.startup_timeout.as_millis(), 1234);
    let TransportConfig::Http(h) = &valid(loaded.servers.get("vscode-sse")).transport else { panic!() };
    assert_eq!((h.transport, h.headers.len()), (HttpTransport::Sse, 1));

    let o = valid(loaded.servers.get("oc-local"));
    let TransportConfig::Stdio(s) = &o.transport else { panic!() };
    assert_eq!(s.command, "bun");
    assert_eq!(s.args, vec!["x", "srv"]);
    assert_eq!(s.env.get("A").map(String::as_str), Some("b"));
    assert_eq!(o.startup_timeout.as_millis(), 5000);
    assert!(matches!(valid(loaded.servers.get("oc-remote")).transport, TransportConfig::Http(_)));

    let z = valid(loaded.servers.get("z"));
    assert_eq!(z.tool_timeout.as_millis(), 99);
    let TransportConfig::Stdio(s) = &z.transport else { panic!() };
    assert_eq!(s.env_passthrough, vec!["GITHUB_TOKEN"]);
    assert_eq!(z.startup_timeout, config::DEFAULT_STARTUP_TIMEOUT);
}

#[test]
fn precedence_project_then_user_then_cli() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let sub = root.join("a/b");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    let entry =
        |tag: &str| format!(r#"{{"servers": {{"s": {{"command": "{tag}"}}, "only-{tag}": {{"command": "x"}}}}}}"#);
    write(&root.join(".mcp.json"), &entry("root-mcp"));
    write(&root.join("switchboard.json"), &entry("root-sb"));
    write(&sub.join(".switchboard/config.json"), &entry("near"));
    // A file above the .git folder is not part of the project.
    write(&dir.path().join("switchboard.json"), &entry("outside"));
    let user = dir.path().join("user.json");
    let cli = dir.path().join("cli.json");

    let command = |loaded: &config::LoadedConfig| match &valid(loaded.servers.get("s")).transport {
        TransportConfig::Stdio(s) => s.command.clone(),
        _ => panic!(),
    };
    let loaded = config::load(&options(&sub, &user, vec![]));
    assert_eq!(loaded.project_root, root);
    assert_eq!(command(&loaded), "near");
    assert!(loaded.servers.contains_key("only-root-mcp") && loaded.servers.contains_key("only-root-sb"));
    assert!(!loaded.servers.contains_key("only-outside"));
    // Within a folder, switchboard.json wins over .mcp.json.
    let loaded = config::load(&options(&root, &user, vec![]));
    assert_eq!(command(&loaded), "root-sb");
    // The user file wins over project files.
    write(&user, &entry("user"));
    let loaded = config::load(&options(&sub, &user, vec![]));
    assert_eq!(command(&loaded), "user");
    assert_eq!(valid(loaded.servers.get("s")).scope, Scope::User);
    // --config wins over all.
    write(&cli, &entry("cli"));
    let loaded = config::load(&options(&sub, &user, vec![cli.clone()]));
    assert_eq!(command(&loaded), "cli");
    let looked: Vec<_> = loaded.files.iter().map(|f| (f.path.clone(), f.found)).collect();
    assert!(looked.contains(&(root.join(".mcp.json"), true)));
    assert!(looked.contains(&(sub.join(".mcp.json"), false)));
}

#[test]
fn bad_files_and_entries_give_diagnostics_and_lose_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    write(&broken, "{\n  \"servers\": {\n    \"x\": {\"command\": \"a\",, }\n  }\n}\n");
    let mixed = dir.path().join("mixed.json");
    write(
        &mixed,
        r#"{
  "servers": {
    "good": {"command": "ok", "colour": "blue"},
    "no-var": {"command": "srv", "env": {"KEY": "${NOT_SET_ANYWHERE}"}},
    "bad-args": {"command": "srv", "args": "--flag"},
    "both": {"command": "srv", "url": "http://x"},
    "bad name!": {"command": "x"},
    "neither": {},
    "typo": {"comand": "srv", "url": "http://x"}
  },
  "extra": 1
}"#,
    );
    let loaded = config::load(&options(dir.path(), &dir.path().join("u.json"), vec![broken.clone(), mixed.clone()]));
    let parse = loaded.diagnostics.iter().find(|d| d.file == broken).unwrap();
    assert_eq!((parse.severity, parse.line), (Severity::Error, Some(3)));
    assert!(parse.column.is_some());
    assert!(parse.to_string().starts_with(&format!("error: {}:3:", broken.display())), "{parse}");

    assert!(matches!(loaded.servers.get("good"), Some(ServerEntry::Valid(_))));
    let warn = loaded.diagnostics.iter().find(|d| d.field.as_deref() == Some("colour")).unwrap();
    assert_eq!((warn.severity, warn.line, warn.server.as_deref()), (Severity::Warning, Some(3), Some("good")));
    assert!(loaded.diagnostics.iter().any(|d| d.severity == Severity::Warning && d.field.as_deref() == Some("extra")));
    // A mistyped field: the one meant, and nothing close for what is not one.
    let typo = loaded.diagnostics.iter().find(|d| d.field.as_deref() == Some("comand")).unwrap();
    assert!(typo.message.ends_with("unknown field `comand` ignored; did you mean `command`?"), "{typo}");
    assert!(!warn.message.contains("did you mean"), "{warn}");

    let invalid = |name: &str| match loaded.servers.get(name) {
        Some(ServerEntry::Invalid(i)) => i.message.clone(),
        other => panic!("{name}: {other:?}"),
    };
    assert!(invalid("no-var").contains("NOT_SET_ANYWHERE"));
    assert!(invalid("bad-args").contains("field `args`") && invalid("bad-args").contains("array of strings"));
    assert!(invalid("both").contains("both `command` and `url`"));
    assert!(invalid("bad name!").contains("use letters"));
    assert!(invalid("neither").contains("needs `command`"));
    let d = loaded.diagnostics.iter().find(|d| d.server.as_deref() == Some("bad-args")).unwrap();
    assert_eq!((d.field.as_deref(), d.line), (Some("args"), Some(5)));
    assert!(d.to_string().contains(&format!("{}:5: server `bad-args`: field `args`", mixed.display())), "{d}");
    assert!(loaded.has_errors());
}

#[tokio::test(flavor = "multi_thread")]
async fn project_servers_wait_for_trust_and_any_change_needs_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let fixture = common::fixture().display().to_string();
    let project =
        |arg: &str| format!(r#"{{"servers": {{"p": {{"command": "{fixture}", "args": ["--name", "{arg}"]}}}}}}"#);
    write(&root.join("switchboard.json"), &project("one"));
    let paths = Paths::new(dir.path().join("user.json"), switchboard_testkit::data_dir(dir.path()));
    let load = || {
        let mut o = LoadOptions::from_env(root.clone(), &paths);
        o.user_file = None;
        config::load(&o)
    };
    let start = |loaded: &config::LoadedConfig| Hub::start(loaded, HubOptions::new(paths.clone()));

    let hub = start(&load());
    hub.ready().await;
    assert_eq!(hub.status("p"), Some(ServerStatus::Untrusted));
    assert!(hub.catalog().tools().is_empty());

    let loaded = load();
    let mut store = switchboard::trust::TrustStore::open(&paths.data_dir).unwrap();
    store.trust(&loaded.project_root, valid(loaded.servers.get("p")));
    store.save().unwrap();
    let hub = start(&load());
    hub.ready().await;
    assert_eq!(hub.status("p").map(|s| s.state()), Some("connected"));
    hub.shutdown().await;

    write(&root.join("switchboard.json"), &project("two"));
    let hub = start(&load());
    hub.ready().await;
    assert_eq!(hub.status("p"), Some(ServerStatus::Untrusted), "a changed launch needs trust again");
    let _ = json!(null);
}

#[test]
fn debug_and_serialize_never_show_values_from_variables() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    write(
        &file,
        r#"{"servers": {
            "local": {"command": "srv", "args": ["--token", "${TOKEN}"], "env": {"T": "${TOKEN}", "P": "plain-secret"}},
            "remote": {"url": "https://example.com/mcp?key=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#,
    );
    let loaded = config::load(&options(dir.path(), &dir.path().join("none.json"), vec![file]));
    for name in ["local", "remote"] {
        let c = valid(loaded.servers.get(name));
        for shown in [format!("{c:?}"), format!("{c:#?}"), serde_json::to_string(c).unwrap(), c.target()] {
            assert!(!shown.contains("s3cret") && !shown.contains("plain-secret"), "{name}: {shown}");
        }
    }
    let local = valid(loaded.servers.get("local"));
    assert_eq!(local.target(), "srv --token ${TOKEN}");
    match &local.transport {
        TransportConfig::Stdio(s) => assert_eq!(s.args, ["--token", "s3cret"], "what runs is expanded"),
        other => panic!("{other:?}"),
    }
    let remote = valid(loaded.servers.get("remote"));
    assert_eq!(remote.target(), "https://example.com/mcp?key=${TOKEN}");
    let json = serde_json::to_value(remote).unwrap();
    assert_eq!(json["transport"]["headers"]["Authorization"], "<redacted>");
}

#[test]
fn the_oauth_block_is_checked_field_by_field_and_its_secrets_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    write(
        &file,
        r#"{"servers": {
            "ok": {"url": "https://a.example/mcp", "oauth": {"client_id": "cid", "client_secret": "${TOKEN}",
                   "scopes": "files:read files:write", "callback_port": 0}},
            "ent": {"url": "https://b.example/mcp", "oauth": {"grant": "enterprise", "client_id": "c", "client_secret": "plain-secret",
                    "enterprise": {"idp_issuer": "https://idp", "idp_token_endpoint": "https://idp/token",
                                   "idp_client_id": "i", "id_token": "${TOKEN}"}}},
            "unknown": {"url": "https://c.example/mcp", "oauth": {"client_idd": "x"}},
            "orphan_secret": {"url": "https://c.example/mcp", "oauth": {"client_secret": "x"}},
            "bad_grant": {"url": "https://c.example/mcp", "oauth": {"grant": "password"}},
            "cc_without_secret": {"url": "https://c.example/mcp", "oauth": {"grant": "client_credentials", "client_id": "x"}},
            "bad_cimd": {"url": "https://c.example/mcp", "oauth": {"client_metadata_url": "http://c.example/meta.json"}},
            "bad_port": {"url": "https://c.example/mcp", "oauth": {"callback_port": 70000}},
            "both": {"url": "https://c.example/mcp", "bearer_token_env_var": "TOKEN", "oauth": {"client_id": "x"}},
            "stdio": {"command": "srv", "oauth": {}},
            "wif": {"url": "https://d.example/mcp", "oauth": {"grant": "jwt_bearer", "client_id": "w", "assertion": "${TOKEN}"}},
            "wif_file": {"url": "https://d.example/mcp", "oauth": {"grant": "jwt_bearer", "assertion_file": "~/token"}},
            "wif_without": {"url": "https://d.example/mcp", "oauth": {"grant": "jwt_bearer"}},
            "assertion_elsewhere": {"url": "https://d.example/mcp", "oauth": {"assertion": "x"}},
            "opencode": {"url": "https://e.example/mcp", "oauth": {"clientId": "oc", "clientSecret": "${TOKEN}", "scope": "a b"}},
            "opencode_twice": {"url": "https://e.example/mcp", "oauth": {"clientId": "oc", "client_id": "oc"}},
            "no_dpop": {"url": "https://e.example/mcp", "oauth": {"dpop": false}},
            "bad_dpop": {"url": "https://e.example/mcp", "oauth": {"dpop": "sometimes"}},
            "exchange": {"url": "https://f.example/mcp", "oauth": {"grant": "token_exchange", "client_id": "gw", "client_secret": "${TOKEN}"}},
            "exchange_anonymous": {"url": "https://f.example/mcp", "oauth": {"grant": "token_exchange"}}
        }}"#,
    );
    let loaded = config::load(&options(dir.path(), &dir.path().join("none.json"), vec![file]));
    let ok = valid(loaded.servers.get("ok"));
    let TransportConfig::Http(http) = &ok.transport else { panic!() };
    assert_eq!(http.oauth.scopes, ["files:read", "files:write"]);
    assert_eq!(http.oauth.callback_port, 0);
    assert_eq!(http.oauth.client_secret.as_deref(), Some("s3cret"));
    let wif = valid(loaded.servers.get("wif"));
    let TransportConfig::Http(http) = &wif.transport else { panic!() };
    assert_eq!(http.oauth.grant, switchboard::config::OAuthGrant::JwtBearer);
    assert_eq!(http.oauth.assertion, Some(switchboard::config::AssertionSource::Value("s3cret".into())));
    let TransportConfig::Http(http) = &valid(loaded.servers.get("wif_file")).transport else { panic!() };
    assert!(
        matches!(&http.oauth.assertion, Some(switchboard::config::AssertionSource::File(p)) if p.ends_with("token") && !p.starts_with("~")),
        "{:?}",
        http.oauth.assertion
    );
    let TransportConfig::Http(http) = &valid(loaded.servers.get("no_dpop")).transport else { panic!() };
    assert_eq!(http.oauth.dpop, switchboard::config::DpopMode::Never);
    let TransportConfig::Http(http) = &valid(loaded.servers.get("exchange")).transport else { panic!() };
    assert_eq!(http.oauth.grant, switchboard::config::OAuthGrant::TokenExchange);
    assert_eq!(
        match &valid(loaded.servers.get("ok")).transport {
            TransportConfig::Http(h) => h.oauth.dpop,
            _ => panic!(),
        },
        switchboard::config::DpopMode::Auto
    );
    // OpenCode's spelling: the same fields.
    let TransportConfig::Http(http) = &valid(loaded.servers.get("opencode")).transport else { panic!() };
    assert_eq!(http.oauth.client_id.as_deref(), Some("oc"));
    assert_eq!(http.oauth.client_secret.as_deref(), Some("s3cret"));
    assert_eq!(http.oauth.scopes, ["a", "b"]);
    for name in ["ok", "ent", "wif", "opencode", "exchange"] {
        let c = valid(loaded.servers.get(name));
        for shown in [format!("{c:?}"), serde_json::to_string(c).unwrap()] {
            assert!(!shown.contains("s3cret") && !shown.contains("plain-secret"), "{name}: {shown}");
        }
    }
    for (name, field, words) in [
        ("unknown", "oauth.client_idd", "unknown field"),
        ("orphan_secret", "oauth.client_secret", "needs `client_id`"),
        ("bad_grant", "oauth.grant", "password"),
        ("cc_without_secret", "oauth.grant", "client_secret"),
        ("bad_cimd", "oauth.client_metadata_url", "https"),
        ("bad_port", "oauth.callback_port", "70000"),
        ("both", "oauth", "bearer_token_env_var"),
        ("stdio", "oauth", "stdio"),
        ("wif_without", "oauth.grant", "assertion_file"),
        ("assertion_elsewhere", "oauth.assertion", "jwt_bearer"),
        ("opencode_twice", "oauth.clientId", "written again"),
        ("bad_dpop", "oauth.dpop", "sometimes"),
        ("exchange_anonymous", "oauth.grant", "token_exchange needs `client_id`"),
    ] {
        let d = loaded
            .diagnostics
            .iter()
            .find(|d| d.server.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no diagnostic for {name}"));
        assert_eq!(d.field.as_deref(), Some(field), "{name}: {d:?}");
        assert!(d.message.contains(words), "{name}: {}", d.message);
        assert!(matches!(loaded.servers.get(name), Some(ServerEntry::Invalid(_))), "{name}");
    }
}

/// ZCode's file as written: servers under `mcp.servers`, `protocolVersion` pinned, and
/// `features.mcp: false` turning MCP off as a whole (the file of highest precedence that says
/// decides), nothing warned about or dropped.
#[test]
fn zcode_files_lose_nothing_and_features_mcp_turns_mcp_off() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    write(
        &user,
        r#"{"features": {"mcp": false, "subagents": true},
            "mcp": {"servers": {"z": {"type": "stdio", "command": "srv", "timeoutMs": 30000, "protocolVersion": "2025-06-18"}}}}"#,
    );
    let loaded = config::load(&options(dir.path(), &user, vec![]));
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.mcp_off.as_deref(), Some(user.as_path()));
    let z = valid(loaded.servers.get("z"));
    assert!(!z.enabled, "listed, not started");
    assert_eq!(z.protocol_version.as_deref(), Some("2025-06-18"));

    // A file of higher precedence turns it on again.
    let on = dir.path().join("on.json");
    write(&on, r#"{"features": {"mcp": true}}"#);
    let loaded = config::load(&options(dir.path(), &user, vec![on]));
    assert_eq!(loaded.mcp_off, None);
    assert!(valid(loaded.servers.get("z")).enabled);

    let bad = dir.path().join("bad.json");
    write(&bad, r#"{"features": {"mcp": "no"}}"#);
    let loaded = config::load(&options(dir.path(), &user, vec![bad]));
    let d = loaded.diagnostics.iter().find(|d| d.field.as_deref() == Some("features.mcp")).expect("a diagnostic");
    assert!(d.message.contains("true or false"), "{d:?}");
}

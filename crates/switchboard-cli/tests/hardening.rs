//! The CLI against hostile input and careless environments: secrets shown as written
//! everywhere (and never in logs at any verbosity), the data folder private whatever the umask,
//! planted token files refused, concurrent writers losing nothing, escape sequences from
//! servers never reaching the terminal, closed pipes, and out-of-range numbers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::json;
use switchboard_testkit::fixture;

fn sb(home: &Path) -> Command {
    switchboard_testkit::switchboard(home)
}

fn output(c: &mut Command) -> (String, i32) {
    let out = c.output().unwrap();
    (
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        out.status.code().unwrap_or(-1),
    )
}

fn write(path: &Path, v: serde_json::Value) -> PathBuf {
    std::fs::write(path, v.to_string()).unwrap();
    path.to_path_buf()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn values_from_variables_show_as_written_in_every_output_and_log() {
    let home = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-value-91f";
    let cfg = write(
        &home.path().join("s.json"),
        json!({"servers": {
            "cmd": {"command": format!("/nonexistent/{}/bin", "${SB_SECRET}")},
            "dir": {"command": fixture().display().to_string(), "cwd": "/x-${SB_SECRET}"},
            "url": {"url": "${SB_URL}"},
            "query": {"url": "http://127.0.0.1:9/mcp?key=${SB_SECRET}"},
        }}),
    );
    let run = |args: &[&str]| {
        let (shown, _) = output(
            sb(home.path())
                .env("SB_SECRET", secret)
                .env("SB_URL", format!("ftp://{secret}"))
                .args(["--config", cfg.to_str().unwrap()])
                .args(args),
        );
        assert!(!shown.contains(secret), "{args:?} showed the value: {shown}");
        shown
    };
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["get", "cmd"],
        &["get", "dir", "--json"],
        &["config", "check"],
        &["config", "check", "--json"],
        &["-vv", "list"],
        &["-vvv", "get", "query"],
    ] {
        run(args);
    }
    let listed = run(&["list", "--json"]);
    assert!(listed.contains("${SB_SECRET}") && listed.contains("${SB_URL}"), "the references are shown: {listed}");
    // The failures still say what is wrong.
    assert!(listed.contains("does not exist") && listed.contains("not found"), "{listed}");
}

#[test]
fn the_data_folder_is_private_whatever_the_umask_and_a_looser_one_is_tightened() {
    let home = tempfile::tempdir().unwrap();
    let cfg =
        write(&home.path().join("c.json"), json!({"servers": {"f": {"command": fixture().display().to_string()}}}));
    let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
    let script = format!(
        "umask 000; exec '{}' --config '{}' call mcp__f__big --arg bytes=300000",
        Path::new(&exe).display(),
        cfg.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
        .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let data = switchboard_testkit::data_dir(home.path());
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("results")), 0o700);
    let spilled: Vec<PathBuf> = std::fs::read_dir(data.join("results")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!spilled.is_empty() && spilled.iter().all(|p| mode(p) == 0o600), "{spilled:?}");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (shown, code) = output(sb(home.path()).args(["--config", cfg.to_str().unwrap(), "list"]));
    assert_eq!(code, 0, "{shown}");
    assert_eq!(mode(&data), 0o700, "tightened");
    assert!(shown.contains("made 0700"), "said: {shown}");
}

/// Every file switchboard writes is 0600 and every folder it makes 0700, whatever the umask
/// (022, the usual one, and 000): the person's config as `allow` writes it, spilled results,
/// trust, and the workspace daemon's record and log (which holds a live dashboard login code).
#[test]
fn every_file_written_is_0600_under_umask_022_and_000() {
    for umask in ["022", "000"] {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".git")).unwrap();
        let fx = json!({"command": fixture().display().to_string()});
        write(&home.path().join(".mcp.json"), json!({"mcpServers": {"p": fx}}));
        let run = |args: &str| {
            let script = format!("umask {umask}; exec '{}' {args}", switchboard_testkit::cli().display());
            let mut sh = Command::new("sh");
            sh.args(["-c", &script])
                .env("SWITCHBOARD_CONFIG", home.path().join("user.json"))
                .env("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path()))
                .env_remove("RUST_LOG")
                .current_dir(home.path())
                .stdin(Stdio::null());
            let (said, code) = output(&mut sh);
            assert_eq!(code, 0, "umask {umask}: `{args}`: {said}");
        };
        for args in
            ["allow 'mcp__p__*'", "trust p --yes", "call mcp__p__big --arg bytes=300000", "daemon start", "daemon stop"]
        {
            run(args);
        }
        let mut seen = Vec::new();
        let mut open = Vec::new();
        let mut walk = vec![switchboard_testkit::data_dir(home.path())];
        while let Some(dir) = walk.pop() {
            if mode(&dir) != 0o700 {
                open.push(format!("{} {:03o}", dir.display(), mode(&dir)));
            }
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk.push(path);
                } else {
                    seen.push(path.clone());
                    if mode(&path) != 0o600 {
                        open.push(format!("{} {:03o}", path.display(), mode(&path)));
                    }
                }
            }
        }
        let user = home.path().join("user.json");
        if mode(&user) != 0o600 {
            open.push(format!("{} {:03o}", user.display(), mode(&user)));
        }
        let names: Vec<String> =
            seen.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        for wanted in ["trust.json", ".log"] {
            assert!(names.iter().any(|n| n.ends_with(wanted)), "umask {umask}: no {wanted} written: {names:?}");
        }
        assert!(open.is_empty(), "umask {umask}: open to others: {open:?}");
    }
}

#[test]
fn a_planted_token_file_is_refused_with_a_message() {
    let home = tempfile::tempdir().unwrap();
    let data = switchboard_testkit::data_dir(home.path());
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let token = data.join("serve-token");
    std::fs::write(&token, "planted-token-planted-token-planted-token\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (shown, code) = output(sb(home.path()).args(["serve", "--port", "0"]));
    assert_ne!(code, 0, "{shown}");
    assert!(shown.contains("refusing") && shown.contains("serve-token") && shown.contains("666"), "{shown}");
}

#[test]
fn eight_processes_adding_or_trusting_at_once_lose_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let fx = fixture().display().to_string();
    let servers: serde_json::Map<String, serde_json::Value> =
        (0..80).map(|i| (format!("p{i}"), json!({"command": fx, "args": ["--name", format!("p{i}")]}))).collect();
    write(&project.join("switchboard.json"), json!({ "servers": servers }));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (home, project) = (home.path().to_path_buf(), project.clone());
            std::thread::spawn(move || {
                for i in 0..10 {
                    let n = t * 10 + i;
                    let (shown, code) = output(sb(&home).args(["add", &format!("u{n}"), "--", "x"]));
                    assert_eq!(code, 0, "{shown}");
                    let mut trust = sb(&home);
                    trust.current_dir(&project).args(["trust", &format!("p{n}"), "--yes"]);
                    let (shown, code) = output(&mut trust);
                    assert_eq!(code, 0, "{shown}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let user: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("user.json")).unwrap()).unwrap();
    assert_eq!(user["servers"].as_object().unwrap().len(), 80, "every added server is in the file");
    let trust: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(switchboard_testkit::data_dir(home.path()).join("trust.json")).unwrap(),
    )
    .unwrap();
    let records: usize = trust["projects"].as_object().unwrap().values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(records, 80, "every trust is recorded");
}

#[test]
fn escape_sequences_from_a_server_never_reach_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let hostile = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";
    let cfg = write(
        &home.path().join("h.json"),
        json!({"servers": {"h": {"command": fixture().display().to_string(),
            "args": ["--name", hostile, "--instructions", format!("read me {hostile}")]}}}),
    );
    let exe = Command::cargo_bin("switchboard").unwrap().get_program().to_owned();
    let envs = [
        ("SWITCHBOARD_CONFIG", home.path().join("user.json")),
        ("SWITCHBOARD_DATA_DIR", switchboard_testkit::data_dir(home.path())),
    ];
    for args in [&["get", "h"][..], &["list"], &["-v", "get", "h"]] {
        let mut all = vec!["--config", cfg.to_str().unwrap()];
        all.extend_from_slice(args);
        let drawn = switchboard_testkit::on_terminal(Path::new(&exe), &all, &envs, home.path(), true, "");
        assert!(
            !drawn.contains("\u{1b}]0;") && !drawn.contains("\u{1b}[2J") && !drawn.contains('\u{9b}'),
            "{args:?}: {drawn:?}"
        );
        if args.contains(&"get") {
            assert!(drawn.contains("evil\\x1b]0;pwned\\x07"), "{args:?}: shown escaped: {drawn:?}");
        }
    }
    // A pipe and a log file get no colour at all.
    let out = sb(home.path()).args(["--config", cfg.to_str().unwrap(), "-v", "get", "h"]).output().unwrap();
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b), "{:?}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_reading_command_ends_quietly_on_a_closed_pipe() {
    let home = tempfile::tempdir().unwrap();
    let cfg = write(
        &home.path().join("many.json"),
        json!({"servers": {"m": {"command": fixture().display().to_string(), "args": ["--tools", "3000"]}}}),
    );
    let c = cfg.to_str().unwrap();
    for args in [
        &["--config", c, "list"][..],
        &["--config", c, "list", "--json"],
        &["--config", c, "tools"],
        &["--config", c, "tools", "--json"],
        &["--config", c, "tools", "--format", "openai"],
        &["--config", c, "get", "m"],
        &["--config", c, "get", "m", "--json"],
        &["--config", c, "resources"],
        &["--config", c, "prompts"],
        &["--config", c, "read", "m", "fixture://hello"],
        &["--config", c, "prompt", "m", "greet", "--arg", "who=Ada"],
        &["--config", c, "call", "mcp__m__big", "--arg", "bytes=2000000"],
        &["--config", c, "config", "check"],
        &["--config", c, "config", "paths"],
        &["auth", "--list"],
        &["completions", "bash"],
    ] {
        let mut child = sb(home.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        // `| head -1`: the reader is gone.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {:?} {err}", out.status);
    }
}

#[test]
fn numbers_out_of_range_are_clear_errors() {
    let home = tempfile::tempdir().unwrap();
    let cfg =
        write(&home.path().join("c.json"), json!({"servers": {"f": {"command": fixture().display().to_string()}}}));
    for t in ["1e20", "1e19", "-1", "0", "NaN", "inf"] {
        let flag = format!("--timeout={t}");
        let (shown, code) = output(sb(home.path()).args(["--config", cfg.to_str().unwrap(), "call", "f/echo", &flag]));
        assert_eq!(code, 2, "--timeout {t}: {shown}");
        assert!(shown.contains("--timeout must be between"), "{shown}");
    }
    let bad = write(
        &home.path().join("bad.json"),
        json!({"servers": {
            "a": {"command": "x", "tool_timeout_ms": 1e20},
            "b": {"command": "x", "startup_timeout_ms": 18_446_744_073_709_551_615u64},
            "c": {"command": "x", "shutdown_grace_ms": 600_000},
            "d": {"command": "x", "max_message_bytes": 10},
        }}),
    );
    let (shown, code) = output(sb(home.path()).args(["--config", bad.to_str().unwrap(), "list"]));
    assert_eq!(code, 1, "a config with errors: {shown}");
    for field in ["tool_timeout_ms", "startup_timeout_ms", "shutdown_grace_ms", "max_message_bytes"] {
        assert!(shown.contains(field), "{field}: {shown}");
    }
}

#[test]
fn disable_of_a_project_server_overrides_it_for_you_and_enable_takes_that_away() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let repo_file = write(&project.join("switchboard.json"), json!({"servers": {"fs": {"command": "x"}}}));
    let before = std::fs::read_to_string(&repo_file).unwrap();
    let run = |args: &[&str]| {
        let mut c = sb(home.path());
        c.current_dir(&project).args(args);
        output(&mut c)
    };
    let (shown, code) = run(&["disable", "fs"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(std::fs::read_to_string(&repo_file).unwrap(), before, "the repository's file is unchanged");
    let user: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("user.json")).unwrap()).unwrap();
    assert_eq!(user["servers"]["fs"], json!({"enabled": false}));
    let (shown, _) = run(&["list", "--json"]);
    assert!(shown.contains("\"disabled\""), "{shown}");
    let (shown, code) = run(&["enable", "fs"]);
    assert_eq!(code, 0, "{shown}");
    let user: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("user.json")).unwrap()).unwrap();
    assert_eq!(user["servers"], json!({}), "the override is gone, no `enabled: true` written");
    // A user server disabled in its own file: enable takes away `enabled: false`.
    write(&home.path().join("user.json"), json!({"servers": {"mine": {"command": "x", "enabled": false}}}));
    let (shown, code) = run(&["enable", "mine"]);
    assert_eq!(code, 0, "{shown}");
    let user: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("user.json")).unwrap()).unwrap();
    assert_eq!(user["servers"]["mine"], json!({"command": "x"}));
}

#[test]
fn a_big_catalog_is_written_without_a_second_copy() {
    let home = tempfile::tempdir().unwrap();
    let cfg = write(
        &home.path().join("big.json"),
        json!({"servers": {"m": {"command": fixture().display().to_string(), "args": ["--tools", "8000"]}}}),
    );
    let run = |args: &[&str]| {
        let mut c = sb(home.path());
        c.args(["--config", cfg.to_str().unwrap()]).args(args);
        let (code, kb) = switchboard_testkit::peak_rss_kb(&mut c);
        assert_eq!(code, Some(0), "{args:?}");
        kb
    };
    let held = run(&["list"]);
    for args in [&["get", "m", "--json"][..], &["tools", "--json"], &["tools", "--format", "anthropic"]] {
        let kb = run(args);
        // Holding the catalog is the cost; writing it out adds little (it was a whole copy).
        assert!(kb < held + held / 3, "{args:?}: {kb} kB, against {held} kB to hold the catalog");
    }
}

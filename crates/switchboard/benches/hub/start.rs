//! In-process start to ready, the way a program that embeds switchboard meets it: from nothing
//! to a client that has listed the server's tools, on a current-thread runtime, interleaved
//! runs. A bare rmcp client (spawn, `initialize`, `tools/list`) twice (the A/A row), and
//! `Hub::start` + `Hub::ready` with exactly `HubOptions::new` defaults: the server in the
//! default sandbox, then out of it (`"sandbox": false`: what the sandbox costs a start is the
//! difference). The hub's data folder is made once and kept, as a person's is, and lies under
//! the build's `target/` folder rather than `/tmp`: the default sandbox grants the folders
//! beside a hidden path (the data folder is one) entry by entry, so a data folder inside a
//! crowded `/tmp` costs a rule per entry there, which a person's (under their home folder)
//! does not.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rmcp::ServiceExt;
use serde_json::json;
use switchboard::config::{self, LoadOptions};
use switchboard::{Hub, HubOptions, Paths};

/// Start to ready of a bare rmcp client, ms.
fn bare(echo: &Path) -> f64 {
    let rt = super::current_thread();
    let t = Instant::now();
    rt.block_on(async {
        let (program, argv) = super::echo_command(echo);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(argv);
        let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        assert_eq!(client.list_all_tools().await.unwrap().len(), 2);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let _ = client.cancel().await;
        ms
    })
}

/// Start to ready of a hub with `HubOptions::new` defaults, ms (its config in `dir`).
fn hub(dir: &Path) -> f64 {
    let rt = super::current_thread();
    let t = Instant::now();
    rt.block_on(async {
        let paths = Paths::new(dir.join("user.json"), dir.join("data"));
        let mut o = LoadOptions::from_env(dir.to_path_buf(), &paths);
        o.extra_files = vec![dir.join("hub.json")];
        let loaded = config::load(&o);
        let hub = Hub::start(&loaded, HubOptions::new(paths));
        hub.ready().await;
        assert_eq!(hub.catalog().tools().len(), 2);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        hub.shutdown().await;
        ms
    })
}

fn place(root: &Path, name: &str, echo: &Path, sandbox: bool) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let (program, argv) = super::echo_command(echo);
    let mut server = json!({"command": program, "args": argv});
    if !sandbox {
        server["sandbox"] = json!(false);
    }
    std::fs::write(dir.join("hub.json"), json!({"servers": {"echo": server}}).to_string()).unwrap();
    dir
}

/// The rows: `runs` interleaved runs of each, medians and spreads.
pub fn start_rows(echo: &Path, runs: usize) {
    let root = super::root().join("target/bench-start");
    let _ = std::fs::remove_dir_all(&root);
    let with = place(&root, "sandboxed", echo, true);
    let without = place(&root, "unsandboxed", echo, false);
    // Each hub's data folder made once before the runs (as a person's exists).
    hub(&with);
    hub(&without);
    let mut rows: Vec<(&str, Vec<f64>)> =
        ["bare rmcp (A)", "bare rmcp (A/A)", "Hub, HubOptions::new defaults", "Hub, sandbox off"]
            .into_iter()
            .map(|n| (n, Vec::new()))
            .collect();
    for _ in 0..runs {
        rows[0].1.push(bare(echo));
        rows[1].1.push(bare(echo));
        rows[2].1.push(hub(&with));
        rows[3].1.push(hub(&without));
    }
    let base = super::median(&rows[0].1);
    println!(
        "\n| start to ready, in process ({runs} interleaved runs) | median ms | spread | over bare rmcp (A), ms |"
    );
    println!("|---|--:|--:|--:|");
    for (name, v) in &rows {
        let m = super::median(v);
        println!("| {name} | {m:.2} | {} | {:+.2} |", super::spread1(v), m - base);
    }
    let _ = std::fs::remove_dir_all(&root);
}

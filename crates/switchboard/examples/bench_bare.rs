//! The bare side of `cargo bench -p switchboard --bench hub`'s whole-process rows: a bare rmcp
//! 3.11 client on a current-thread runtime, nothing else linked in. Starts the server given
//! after `--`, initializes, lists its tools, makes `CALLS` calls (every 1,000th a 1 MiB result;
//! `BIG_EVERY` changes that, `0` for none), prints `/proc/self/status` after a tenth of them and
//! at the end (separated by `---`), and exits.
//!
//! ```sh
//! CALLS=1000 cargo run --release -p switchboard --example bench_bare -- taskset -c 1 target/release/examples/echo stdio
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;

#[path = "bench/common.rs"]
mod common;
use common::{call, env, status};

fn main() {
    let (calls, every) = (env("CALLS", 0), env("BIG_EVERY", 1000));
    let argv: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        assert!(!client.list_all_tools().await.unwrap().is_empty());
        for i in 0..calls {
            if i == calls / 10 {
                status();
            }
            let (tool, a) = call(i, every);
            client.call_tool(CallToolRequestParams::new(tool).with_arguments(a)).await.unwrap();
        }
        client.cancel().await.unwrap();
    });
    status();
}

//! A client for counting the work of one call: starts the program given as its arguments as
//! an MCP server on stdio (rmcp's client, current-thread runtime), waits until it lists an
//! `echo` tool, then makes N `tools/call`s of it, 64 in flight, and ends. With the middle
//! program run under `valgrind --tool=callgrind`, two runs with different N give the
//! instructions that program spends per call (`scripts/instructions-per-call`).
//!
//! `drive_calls N PROGRAM [ARGS…]`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

const IN_FLIGHT: usize = 64;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    assert!(args.len() >= 2, "usage: drive_calls N PROGRAM [ARGS…]");
    let n: usize = args.remove(0).parse().expect("N, a number of calls");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(&args[0]);
        cmd.args(&args[1..]);
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        // A program under valgrind connects its upstream slowly: ask until the tool is there.
        let mut tool = None;
        for _ in 0..200 {
            let tools = client.list_all_tools().await.unwrap();
            tool = tools.iter().map(|t| t.name.to_string()).find(|n| n.ends_with("echo"));
            if tool.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let tool = tool.expect("an echo tool within a minute");
        let call = |i: usize| {
            let args = serde_json::json!({"text": format!("hello {i}")}).as_object().cloned().unwrap();
            client.call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(args))
        };
        let mut done = 0;
        while done < n {
            let batch: Vec<_> = (done..(done + IN_FLIGHT).min(n)).map(call).collect();
            for r in futures::future::join_all(batch).await {
                r.unwrap();
            }
            done += IN_FLIGHT;
        }
        let _ = client.cancel().await;
    });
}

//! The fastest gateway rmcp 3.11 makes possible, for the benchmark's floor: an rmcp server on
//! stdin/stdout (on the event loop, as `switchboard gateway` reads them) whose `tools/list` and
//! `tools/call` are forwarded as they are to one rmcp client of the upstream given as its
//! arguments, on a current-thread runtime. No naming, no status, no timeouts, no progress, no
//! cancellation, no bounds: what a gateway costs before it does any of its job.
//!
//! `bare_proxy PROGRAM [ARGS…]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::fd::AsFd;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use rmcp::transport::TokioChildProcess;

#[derive(Clone)]
struct Proxy {
    upstream: Peer<RoleClient>,
}

fn failed(e: rmcp::service::ServiceError) -> rmcp::ErrorData {
    rmcp::ErrorData::internal_error(e.to_string(), None)
}

impl rmcp::ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        self.upstream.list_tools(request).await.map_err(failed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        self.upstream.call_tool_once(request).await.map_err(failed)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(&args[0]);
        cmd.args(&args[1..]);
        let upstream = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let proxy = Proxy { upstream: upstream.peer().clone() };
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().unwrap());
        let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().unwrap());
        let input = tokio::net::unix::pipe::Receiver::from_file(stdin).unwrap();
        let output = tokio::net::unix::pipe::Sender::from_file(stdout).unwrap();
        let running = proxy.serve((input, output)).await.unwrap();
        let _ = running.waiting().await;
    });
}

//! The fastest gateway rmcp 3.11 makes possible, for the benchmark's floor: an rmcp server on
//! stdin/stdout (on the event loop: rmcp's `stdio_pipes()`) whose `tools/list` and
//! `tools/call` are forwarded as they are to one rmcp client of the upstream given as its
//! arguments, on a current-thread runtime. No naming, no status, no timeouts, no progress, no
//! cancellation, no bounds: what a gateway costs before it does any of its job.
//!
//! `bare_proxy PROGRAM [ARGS…]` serves stdio; `bare_proxy --http PORT PROGRAM [ARGS…]` serves
//! Streamable HTTP at `http://127.0.0.1:PORT/mcp` (rmcp's server transport in axum, as
//! `switchboard gateway --http` mounts it; one session per client, all on the one upstream).
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let http: Option<u16> = (args.first().map(String::as_str) == Some("--http")).then(|| {
        let port = args[1].parse().unwrap();
        args.drain(..2);
        port
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(&args[0]);
        cmd.args(&args[1..]);
        let upstream = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let proxy = Proxy { upstream: upstream.peer().clone() };
        match http {
            Some(port) => {
                use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
                let service = rmcp::transport::StreamableHttpService::new(
                    move || Ok(proxy.clone()),
                    std::sync::Arc::new(LocalSessionManager::default()),
                    rmcp::transport::StreamableHttpServerConfig::default(),
                );
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
                let app = axum::Router::new().route_service("/mcp", service);
                axum::serve(listener, app).await.unwrap();
            }
            None => {
                let running = proxy.serve(rmcp::transport::io::stdio_pipes()).await.unwrap();
                let _ = running.waiting().await;
            }
        }
    });
}

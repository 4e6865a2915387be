//! A minimal MCP echo server for the benchmarks (the gateway's and the hub's): `echo` returns its
//! `text`, `big` returns `bytes` bytes of text (for MB/s), nothing else (no logging, no state),
//! so a measurement shows the cost of what is in front of it. `echo stdio` serves stdin/stdout
//! on the event loop (rmcp's `stdio_pipes()`: no thread hand-off per message); `echo http PORT`
//! serves Streamable HTTP at `http://127.0.0.1:PORT/mcp` (for the direct HTTP baseline).
//! Current-thread runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl rmcp::ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let args = request.arguments.as_ref();
        if request.name == "big" {
            let bytes = args.and_then(|a| a.get("bytes")).and_then(|b| b.as_u64()).unwrap_or(0);
            let text = "x".repeat(usize::try_from(bytes).unwrap_or(0));
            return Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])));
        }
        let text = args.and_then(|a| a.get("text")).and_then(|t| t.as_str()).unwrap_or("");
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
    }
}

fn main() {
    let schema = serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let tool = Tool::new("echo", "Returns its text.", Arc::new(schema.as_object().cloned().unwrap()));
    let schema = serde_json::json!({"type": "object", "properties": {"bytes": {"type": "integer"}}});
    let big = Tool::new("big", "Returns `bytes` bytes of text.", Arc::new(schema.as_object().cloned().unwrap()));
    let echo = Echo { tools: Arc::new(vec![tool, big]) };
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        match args.get(1).map(String::as_str) {
            Some("http") => {
                let port: u16 = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(0);
                let config = rmcp::transport::StreamableHttpServerConfig::default();
                let service = rmcp::transport::StreamableHttpService::new(
                    move || Ok(echo.clone()),
                    Arc::new(rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default()),
                    config,
                );
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
                println!("{}", listener.local_addr().unwrap().port());
                let app = axum::Router::new().route_service("/mcp", service);
                axum::serve(listener, app).await.unwrap();
            }
            _ => {
                let running = echo.serve(rmcp::transport::io::stdio_pipes()).await.unwrap();
                let _ = running.waiting().await;
            }
        }
    });
}

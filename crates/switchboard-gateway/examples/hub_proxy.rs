//! The benchmark's middle row on the stdio front: `bare_proxy` with switchboard's hub in place
//! of the rmcp client. An rmcp server on stdin/stdout (rmcp's `stdio_pipes()`) whose
//! `tools/call` is `Hub::call_tool` as an agent embedding the library makes it (default
//! options, results passed on raw as the gateway does), on a current-thread runtime. Between
//! the floor (rmcp's server straight into rmcp's client) and `switchboard gateway`, it says
//! which part of the gateway's cost per call is the hub's (names, the policy gate, the audit
//! line, deadlines, progress routes, reconnection) and which is the gateway's own (sessions,
//! the relay of questions, era translation, cancellation from the client).
//!
//! `hub_proxy CONFIG` serves the servers of the config file given (with `SWITCHBOARD_CONFIG`
//! and `SWITCHBOARD_DATA_DIR` from the environment), tools under their catalog names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use switchboard::config::{self, LoadOptions};
use switchboard::{CallOptions, Hub, HubOptions, Paths};

#[derive(Clone)]
struct Proxy {
    hub: Arc<Hub>,
}

impl rmcp::ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let tools = (self.hub.catalog().tools().iter())
            .map(|t| {
                let mut tool = t.tool.clone();
                tool.name = t.name.clone().into();
                tool
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        match self.hub.call_tool(&request.name, request.arguments, CallOptions::new().raw_only()).await {
            Ok(out) => Ok(CallToolResponse::Complete(out.raw)),
            Err(e) => Err(rmcp::ErrorData::internal_error(e.to_string(), None)),
        }
    }
}

fn main() {
    let file = std::env::args().nth(1).expect("a config file");
    let paths = Paths::from_env();
    let mut options = LoadOptions::from_env(std::env::current_dir().unwrap(), &paths);
    options.extra_files = vec![file.into()];
    let loaded = config::load(&options);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let hub = Arc::new(Hub::start(&loaded, HubOptions::new(paths)));
        hub.ready().await;
        let running = Proxy { hub: hub.clone() }.serve(rmcp::transport::io::stdio_pipes()).await.unwrap();
        let _ = running.waiting().await;
        hub.shutdown().await;
    });
}

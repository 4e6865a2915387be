//! `switchboard serve`: the hub with every configured server, over HTTP, until SIGINT or
//! SIGTERM, which close every server (and their process trees) before the process ends.

use std::net::IpAddr;

use anyhow::Result;
use switchboard::{Hub, HubOptions};
use switchboard_server::ServeOptions;

use crate::commands::Ctx;

/// Where and to whom to answer.
pub struct Listen {
    pub port: u16,
    pub bind: IpAddr,
    pub allow_remote: bool,
    pub hosts: Vec<String>,
}

pub async fn serve(ctx: &Ctx, listen: Listen) -> Result<u8> {
    let hub = Hub::start(&ctx.loaded, HubOptions::new(ctx.paths.clone()));
    let mut options = ServeOptions::new(ctx.paths.data_dir.clone());
    options.bind = listen.bind;
    options.port = listen.port;
    options.allow_remote = listen.allow_remote;
    options.hosts = listen.hosts;
    if !listen.bind.is_loopback() {
        eprintln!(
            "warning: answering the network over plain HTTP: the token and session cookie cross it unencrypted \
             (put a TLS proxy in front, or use an SSH tunnel to the loopback default)"
        );
    }
    let bound = match switchboard_server::bind(&hub, &options).await {
        Ok(b) => b,
        Err(e) => {
            hub.shutdown().await;
            return Err(e.into());
        }
    };
    println!("switchboard is serving on http://{}", bound.addr);
    println!("  dashboard login (works once): {}", bound.login_url);
    println!("  API: Authorization: Bearer <the token in {}>", ctx.paths.data_dir.join("serve-token").display());
    println!("  OpenAPI: http://{}/api/openapi.json", bound.addr);
    let stop = async {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    let served = bound.serve(stop).await;
    eprintln!("stopping: closing every server");
    hub.shutdown().await;
    served?;
    Ok(0)
}

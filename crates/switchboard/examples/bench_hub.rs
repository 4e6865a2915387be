//! The hub side of `cargo bench -p switchboard --bench hub`'s whole-process rows: a program
//! that embeds switchboard on a current-thread runtime. Loads the config file given (with
//! `SWITCHBOARD_CONFIG` and `SWITCHBOARD_DATA_DIR` from the environment), starts the hub, waits
//! until it is ready, makes `CALLS` calls over its servers in turn (every 1,000th a 1 MiB
//! result, `BIG_EVERY` as for `bench_bare`; each result's model form made, so a 1 MiB one is cut
//! and spilled), prints `/proc/self/status` after a tenth of them and at the end (separated by
//! `---`), and shuts down.
//!
//! ```sh
//! CALLS=1000 cargo run --release -p switchboard --example bench_hub -- servers.json
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchboard::config::{self, LoadOptions};
use switchboard::{CallOptions, Hub, HubOptions, Paths};

#[path = "bench/common.rs"]
mod common;
use common::{call, env, status};

fn main() {
    let (calls, every) = (env("CALLS", 0), env("BIG_EVERY", 1000));
    let file = std::env::args().nth(1).expect("a config file");
    let paths = Paths::from_env();
    let mut options = LoadOptions::from_env(std::env::current_dir().unwrap(), &paths);
    options.extra_files = vec![file.into()];
    let loaded = config::load(&options);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let hub = Hub::start(&loaded, HubOptions::new(paths));
        hub.ready().await;
        let servers: Vec<String> = hub.servers().into_iter().map(|s| s.name).collect();
        assert_eq!(hub.catalog().tools().len(), 2 * servers.len());
        for i in 0..calls {
            if i == calls / 10 {
                status();
            }
            let server = &servers[i as usize % servers.len()];
            let (tool, a) = call(i, every);
            let name = format!("mcp__{server}__{tool}");
            let out = hub.call_tool(&name, Some(a), CallOptions::new()).await.unwrap();
            let out = out.formatted().await.unwrap();
            assert!(!out.model().blocks.is_empty());
        }
        hub.shutdown().await;
    });
    status();
}

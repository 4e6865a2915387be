//! Embedding switchboard in an application: load the config, start the hub, list the catalog,
//! call a tool, shut down.
//!
//! ```sh
//! cargo run -p switchboard --example embed -- --config examples/demo.json --call mcp__demo__echo '{"text":"hi"}'
//! ```
//!
//! The process tests also use it as a library host that ends in the ways an application can:
//! `--then wait` (until killed), `--then panic`, `--then exit` (`std::process::exit`, no
//! shutdown; these two after a line on stdin, so the test sees the servers first), and
//! `--spawn-thread` (the hub started on a thread that then ends).

use std::time::Duration;

use switchboard::{CallOptions, Hub, HubOptions, Paths, config};

struct Args {
    configs: Vec<std::path::PathBuf>,
    call: Option<(String, String)>,
    then: String,
    spawn_thread: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { configs: Vec::new(), call: None, then: "shutdown".into(), spawn_thread: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" => args.configs.push(it.next().ok_or("--config needs a file")?.into()),
            "--call" => {
                let tool = it.next().ok_or("--call needs a tool")?;
                args.call = Some((tool, it.next().unwrap_or_else(|| "{}".into())));
            }
            "--then" => args.then = it.next().ok_or("--then needs shutdown, wait, panic or exit")?,
            "--spawn-thread" => args.spawn_thread = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

async fn start(configs: Vec<std::path::PathBuf>) -> Result<Hub, String> {
    let paths = Paths::from_env();
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut options = config::LoadOptions::from_env(cwd, &paths);
    options.extra_files = configs;
    let loaded = config::load(&options);
    for d in &loaded.diagnostics {
        eprintln!("{d}");
    }
    let hub = Hub::start(&loaded, HubOptions::new(paths));
    hub.ready().await;
    Ok(hub)
}

async fn work(hub: &Hub, args: &Args) -> Result<(), String> {
    for server in hub.servers() {
        println!("{}: {}", server.name, server.status.summary());
    }
    println!("{} tools", hub.catalog().tools().len());
    if let Some((tool, json)) = &args.call {
        let arguments = serde_json::from_str(json).map_err(|e| format!("arguments: {e}"))?;
        let out = hub.call_tool(tool, Some(arguments), CallOptions::new()).await.map_err(|e| e.to_string())?;
        println!("{}", out.model().text());
    }
    println!("ready");
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("embed: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let (runtime, hub) = if args.spawn_thread {
        // The hub's servers are started from a thread that ends right after: they must live on
        // (a supervisor tied to the spawning thread would die with it).
        let configs = args.configs.clone();
        let spawned = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
            let hub = rt.block_on(start(configs))?;
            Ok::<_, String>((rt, hub))
        });
        match spawned.join() {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                eprintln!("embed: {e}");
                return std::process::ExitCode::FAILURE;
            }
            Err(_) => return std::process::ExitCode::FAILURE,
        }
    } else {
        let rt = match tokio::runtime::Runtime::new() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("embed: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        match rt.block_on(start(args.configs.clone())) {
            Ok(hub) => (rt, hub),
            Err(e) => {
                eprintln!("embed: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    };
    if args.spawn_thread {
        std::thread::sleep(Duration::from_millis(500));
    }
    if let Err(e) = runtime.block_on(work(&hub, &args)) {
        eprintln!("embed: {e}");
        return std::process::ExitCode::FAILURE;
    }
    if matches!(args.then.as_str(), "panic" | "exit") {
        let mut go = String::new();
        let _ = std::io::stdin().read_line(&mut go);
    }
    match args.then.as_str() {
        "wait" => runtime.block_on(std::future::pending::<()>()),
        "panic" => panic!("embed: panicking on purpose, with servers running"),
        "exit" => std::process::exit(0),
        _ => runtime.block_on(hub.shutdown()),
    }
    std::process::ExitCode::SUCCESS
}

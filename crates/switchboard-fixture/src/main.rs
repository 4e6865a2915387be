//! `switchboard-fixture`: an MCP server over stdio that misbehaves on purpose.
//!
//! Real servers (`server-everything`, the Python SDK) cover the protocol's happy paths; this
//! binary covers what they cannot be asked to do: start slowly, crash mid-call, leave a
//! grandchild in a new session, flood stderr, print garbage on stdout, return huge results,
//! change its tool list at run time, answer a prompt, a resource read or a completion slowly
//! (`--slow-requests`), ignore SIGTERM, start process trees that try to escape
//! (`--forks plain|hostile --marker M`, see `forks.rs`), list a poisoned tool (`--poisoned`),
//! try what a sandbox must stop (`--hostile`, see `hostile.rs`). Every behaviour is chosen with a flag so
//! that tests stay readable: `switchboard-fixture --init-delay-ms 500 --tools 100`.
//!
//! It serves through `rmcp::transport::stdio_pipes()`, the non-blocking pipe transport, so that
//! the benchmark measures the host and not this server.

mod forks;
mod hostile;
mod misbehave;
mod offers;
mod tools;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Behaviour chosen on the command line.
#[derive(Debug, Default, Clone)]
struct Options {
    name: String,
    init_delay_ms: u64,
    tools: usize,
    page_size: usize,
    extra_tools: Vec<String>,
    stderr_flood_lines: usize,
    garbage_stdout: bool,
    grandchild: bool,
    pid_file: Option<String>,
    ignore_sigterm: bool,
    exit_at_start: Option<i32>,
    instructions: Option<String>,
    protocol_version: Option<String>,
    initialize_error: Option<String>,
    fail_list_tools: bool,
    forks: Option<forks::Forks>,
    marker: String,
    /// Exit at start (code 4) while the count in `count_file` is below this.
    fail_starts: u32,
    count_file: Option<String>,
    /// Append each tool call's name to this file.
    call_log: Option<String>,
    /// Print this many MiB on stderr with no newline, at start.
    stderr_line_mb: usize,
    /// Send log notifications as fast as it can, once connected.
    notify_flood: bool,
    /// Keep running after stdin closes (until killed).
    linger: bool,
    /// List `ask_later`: a question asked outside any call.
    ask_later: bool,
    /// List `weather`, a poisoned tool: instructions hidden in Unicode tag characters in its
    /// description, zero-width and bidi characters in its schema.
    poisoned: bool,
    /// List `attempt`: reads, writes and connections a sandbox must stop.
    hostile: bool,
    /// List the tools of a definitions file too (`{"definitions": [{"tool": {...}}]}`, the
    /// scanner's poisoned corpus); calling one answers `called <name>`.
    definitions: Vec<Value>,
    /// Offer a prompt (`slow`), a resource (`fixture://slow`) and completions that take
    /// ten seconds unless cancelled (a cancellation is written to the call log).
    slow_requests: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut opts = Options { name: "fixture".into(), ..Options::default() };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--name" => opts.name = value("--name")?,
            "--init-delay-ms" => opts.init_delay_ms = num(&value("--init-delay-ms")?)?,
            "--tools" => opts.tools = num(&value("--tools")?)?,
            "--page-size" => opts.page_size = num(&value("--page-size")?)?,
            "--extra-tool" => opts.extra_tools.push(value("--extra-tool")?),
            "--stderr-flood" => opts.stderr_flood_lines = num(&value("--stderr-flood")?)?,
            "--garbage-stdout" => opts.garbage_stdout = true,
            "--grandchild" => opts.grandchild = true,
            "--pid-file" => opts.pid_file = Some(value("--pid-file")?),
            "--ignore-sigterm" => opts.ignore_sigterm = true,
            "--exit-at-start" => opts.exit_at_start = Some(num(&value("--exit-at-start")?)?),
            "--instructions" => opts.instructions = Some(value("--instructions")?),
            "--protocol-version" => opts.protocol_version = Some(value("--protocol-version")?),
            "--initialize-error" => opts.initialize_error = Some(value("--initialize-error")?),
            "--fail-list-tools" => opts.fail_list_tools = true,
            "--forks" => opts.forks = Some(value("--forks")?.parse()?),
            "--marker" => opts.marker = value("--marker")?,
            "--fail-starts" => opts.fail_starts = num(&value("--fail-starts")?)?,
            "--count-file" => opts.count_file = Some(value("--count-file")?),
            "--call-log" => opts.call_log = Some(value("--call-log")?),
            "--stderr-line-mb" => opts.stderr_line_mb = num(&value("--stderr-line-mb")?)?,
            "--notify-flood" => opts.notify_flood = true,
            "--linger" => opts.linger = true,
            "--ask-later" => opts.ask_later = true,
            "--poisoned" => opts.poisoned = true,
            "--hostile" => opts.hostile = true,
            "--definitions" => {
                let file = value("--definitions")?;
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
                let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
                let items = doc["definitions"].as_array().cloned().unwrap_or_default();
                opts.definitions.extend(items.into_iter().filter_map(|d| d.get("tool").cloned()));
            }
            "--slow-requests" => opts.slow_requests = true,
            "--sleep-forever" => sleep_forever(),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(opts)
}

fn num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[derive(Clone)]
struct Fixture {
    opts: Arc<Options>,
    /// Tools added at run time by the `mutate` tool.
    added: Arc<AtomicUsize>,
    /// Resources and prompts added at run time by `mutate`.
    added_resources: Arc<AtomicUsize>,
    added_prompts: Arc<AtomicUsize>,
    /// Times `mutate {what: "echo"}` changed the echo tool's definition (a "rug pull").
    redefined: Arc<AtomicUsize>,
    /// How many of the next `tools/list` requests fail (set by `mutate`).
    failing_lists: Arc<AtomicUsize>,
}

fn page<T: serde::de::DeserializeOwned>(
    key: &str,
    items: Vec<Value>,
    size: usize,
    request: Option<PaginatedRequestParams>,
) -> Result<T, ErrorData> {
    let start: usize = match request.and_then(|r| r.cursor) {
        Some(c) => c.parse().map_err(|_| ErrorData::invalid_params("bad cursor", None))?,
        None => 0,
    };
    let size = if size == 0 { items.len().max(1) } else { size };
    let end = (start + size).min(items.len());
    let mut body = json!({ key: items.get(start..end).unwrap_or_default() });
    if end < items.len() {
        body["nextCursor"] = json!(end.to_string());
    }
    from(body)
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let mut body = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {"listChanged": true},
                "resources": {"listChanged": true},
                "prompts": {"listChanged": true},
            },
            "serverInfo": {"name": self.opts.name, "version": env!("CARGO_PKG_VERSION")},
        });
        if let Some(text) = &self.opts.instructions {
            body["instructions"] = json!(text);
        }
        if self.opts.slow_requests {
            body["capabilities"]["completions"] = json!({});
        }
        serde_json::from_value(body).unwrap_or_else(|_| ServerConfig::default())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        match &self.opts.protocol_version {
            // Only the version given on the command line, so rmcp's negotiation answers with it
            // whatever the client asked for.
            Some(v) => serde_json::from_value(json!([v])).map(std::borrow::Cow::Owned).unwrap_or_default(),
            None => std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.opts.init_delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.opts.init_delay_ms)).await;
        }
        if let Some(message) = &self.opts.initialize_error {
            return Err(ErrorData::invalid_params(message.clone(), None));
        }
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        match &self.opts.protocol_version {
            // Answer with a version the client did not ask for (and may not know).
            Some(version) => {
                let mut body =
                    serde_json::to_value(&result).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                body["protocolVersion"] = json!(version);
                serde_json::from_value(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))
            }
            None => Ok(result),
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let failing = self.failing_lists.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if self.opts.fail_list_tools || failing {
            return Err(ErrorData::internal_error("the tool registry is corrupt", None));
        }
        page("tools", self.all_tools(), self.opts.page_size, request)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tools::call(self, request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        offers::list_resources(self, request)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let items = vec![json!({"uriTemplate": "fixture://item/{id}", "name": "item"})];
        page("resourceTemplates", items, self.opts.page_size, request)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        offers::read_resource(self, request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        offers::list_prompts(self, request)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        offers::get_prompt(self, request, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        offers::complete(self, request, context).await
    }
}

fn spawn_grandchild(pid_file: Option<&str>) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else { return };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--sleep-forever")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => {
            if let Some(path) = pid_file {
                let _ = std::fs::write(path, format!("{}\n{}\n", std::process::id(), child.id()));
            }
        }
        Err(e) => eprintln!("fixture: could not spawn grandchild: {e}"),
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).is_some_and(|a| a == "--sleeper") {
        forks::sleeper_main(&argv[2..]);
    }
    if argv.get(1).is_some_and(|a| a == "--attempt") {
        let arg = |i: usize| argv.get(i).map(String::as_str).unwrap_or("");
        println!("{}", hostile::attempt(arg(2), arg(3)));
        std::process::exit(0);
    }
    if argv.get(1).is_some_and(|a| a == "--garbage-answers") {
        misbehave::garbage_server(argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(1));
    }
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("switchboard-fixture: {e}");
            std::process::exit(2);
        }
    };
    if let Some(file) = &opts.count_file {
        // Every start is counted; the first `--fail-starts` ones fail.
        let starts: u32 = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        let _ = std::fs::write(file, (starts + 1).to_string());
        if starts < opts.fail_starts {
            eprintln!("fixture: failing start {} of {}", starts + 1, opts.fail_starts);
            std::process::exit(4);
        }
    }
    if let Some(code) = opts.exit_at_start {
        eprintln!("fixture: refusing to start (exit code {code})");
        std::process::exit(code);
    }
    if opts.ignore_sigterm {
        // SAFETY: installing SIG_IGN has no preconditions.
        unsafe {
            let _ = nix::sys::signal::signal(nix::sys::signal::Signal::SIGTERM, nix::sys::signal::SigHandler::SigIgn);
            let _ = nix::sys::signal::signal(nix::sys::signal::Signal::SIGINT, nix::sys::signal::SigHandler::SigIgn);
        }
    }
    if let Some(kind) = opts.forks {
        forks::start(kind, &opts.marker);
    }
    if opts.grandchild {
        spawn_grandchild(opts.pid_file.as_deref());
    } else if let Some(path) = &opts.pid_file {
        let _ = std::fs::write(path, format!("{}\n", std::process::id()));
    }
    if opts.stderr_line_mb > 0 {
        misbehave::long_stderr_line(opts.stderr_line_mb);
    }
    if opts.stderr_flood_lines > 0 {
        let mut err = std::io::stderr().lock();
        for i in 0..opts.stderr_flood_lines {
            let _ = writeln!(err, "fixture: flood line {i} ..........................................................");
        }
    }
    if opts.garbage_stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "this is not JSON-RPC");
        let _ = writeln!(out, "{{\"half\": ");
        let _ = writeln!(out, "Starting server on stdio...");
        let _ = out.flush();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fixture: no runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async move {
        let server = Fixture {
            opts: Arc::new(opts),
            added: Arc::default(),
            added_resources: Arc::default(),
            added_prompts: Arc::default(),
            redefined: Arc::default(),
            failing_lists: Arc::default(),
        };
        let flood = server.opts.notify_flood;
        let linger = server.opts.linger;
        match server.serve(rmcp::transport::stdio_pipes()).await {
            Ok(running) => {
                if flood {
                    misbehave::flood(running.peer().clone());
                }
                let _ = running.waiting().await;
                if linger {
                    sleep_forever();
                }
                0
            }
            Err(e) => {
                eprintln!("fixture: initialisation failed: {e}");
                1
            }
        }
    });
    std::process::exit(code);
}

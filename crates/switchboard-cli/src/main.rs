//! `switchboard`: the command line over the switchboard library.
//!
//! Reading commands start only the servers they need, show a spinner while they connect, and
//! have `--json` (stable shapes documented in README.md; no secret is ever printed). SIGINT,
//! SIGTERM, SIGHUP or SIGQUIT on any command shut the hub down, which ends every server's
//! process tree, before exiting with 128 + the signal; whatever else ends this process (SIGKILL,
//! a panic), each server's supervisor ends its tree. A closed stdout ends a command quietly.

#[macro_use]
mod out;
mod commands;
mod configs;
mod ctx;
mod daemon;
mod gateway;
mod get;
mod import;
mod keys;
mod listing;
mod login;
mod logs;
mod manage;
mod policy;
mod remote;
mod render;
mod sandbox;
mod scan;
mod serve;
mod signals;
mod telemetry;
mod terminal;
mod tools;

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Connect to MCP servers, list their tools, resources and prompts, and call them.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, propagate_version = true)]
pub struct Cli {
    /// Extra config file(s); they win over every other file.
    #[arg(long = "config", global = true, value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Start servers for this command even when the workspace's `serve` (or `daemon start`)
    /// runs with the same config (`list`, `tools`, `call` and a stdio `gateway` otherwise use
    /// its servers).
    #[arg(long, global = true)]
    pub no_attach: bool,
    /// A team's store (`postgres://user@host:port/database`): logins and people's records are
    /// kept there, sealed with the key ring of `store.key_file` or `SWITCHBOARD_STORE_KEYS`,
    /// instead of in the data folder. Wins over the config's `store.url`.
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// More logs on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` also works.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every configured server with its status.
    List {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// One server in detail: config, status, tools, resources, prompts.
    Get {
        /// The server.
        server: String,
        /// Also check the session is alive (a ping), reconnecting it if it is gone.
        #[arg(long)]
        check: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// What each tool's definition costs in a model's context (tokens, o200k_base estimate).
        #[arg(long)]
        tokens: bool,
    },
    /// Tools in the catalog (all servers, or one).
    Tools {
        /// Only this server.
        server: Option<String>,
        /// Export format for model providers: mcp, openai, anthropic or gemini (implies JSON;
        /// a tool the provider cannot take is left out, with the reason on stderr).
        #[arg(long)]
        format: Option<String>,
        /// Machine-readable output (with `--format`: `{"tools", "skipped", "changed"}`).
        #[arg(long)]
        json: bool,
        /// OpenAI's strict mode (`--format openai`): every property required, optional ones
        /// nullable, `additionalProperties: false`, unsupported keywords said in descriptions.
        #[arg(long, requires = "format")]
        strict: bool,
        /// Anthropic's server-side tool search (`--format anthropic`): `defer_loading: true`
        /// on each tool but those that always load, and the BM25 tool-search tool declared.
        #[arg(long, requires = "format")]
        defer: bool,
        /// Descriptions longer than this many characters are cut in provider formats, with a
        /// note (default 2048; OpenAI takes at most 1024).
        #[arg(long, value_name = "CHARS", requires = "format")]
        description_cap: Option<usize>,
        /// Only the tools that answer this, best first: words ("create an issue", ranked over
        /// names, titles, descriptions and parameters), `select:NAME[,NAME]` or `/REGEX/`.
        #[arg(long, value_name = "QUERY")]
        search: Option<String>,
        /// Most tools a search shows (default 10).
        #[arg(long, value_name = "N", requires = "search")]
        limit: Option<usize>,
        /// What each definition costs in a model's context (tokens, estimated with o200k_base),
        /// with a total per server.
        #[arg(long)]
        tokens: bool,
    },
    /// Call a tool: `switchboard call mcp__srv__echo '{"text":"hi"}'` or `--arg text=hi`.
    Call {
        /// Model-visible name (`mcp__server__tool`) or `server/tool`.
        tool: String,
        /// Arguments as a JSON object.
        json_args: Option<String>,
        /// One argument, `key=value` (value parsed as JSON when it is JSON, else a string).
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// Seconds without response or progress before the call is cancelled.
        #[arg(long)]
        timeout: Option<f64>,
        /// Print the raw result and the model-ready result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resources and resource templates (all servers, or one).
    Resources {
        /// Only this server.
        server: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Read a resource.
    Read {
        /// The server.
        server: String,
        /// The resource URI.
        uri: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Prompts (all servers, or one).
    Prompts {
        /// Only this server.
        server: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Get a prompt.
    Prompt {
        /// The server.
        server: String,
        /// The prompt.
        name: String,
        /// One argument, `key=value`.
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Suggestions for an argument of a prompt or a variable of a resource template, from the
    /// server (`completion/complete`): `complete everything prompt completable-prompt
    /// department Eng`; one per line.
    Complete {
        /// The server.
        server: String,
        /// What the argument belongs to.
        #[arg(value_parser = ["prompt", "resource"])]
        kind: String,
        /// The prompt's name, or the resource template (`demo://resource/dynamic/text/{resourceId}`).
        name: String,
        /// The argument (or template variable) to complete.
        argument: String,
        /// What is typed so far.
        #[arg(default_value = "")]
        prefix: String,
        /// An argument already chosen, `key=value` (suggestions may depend on it).
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `add NAME -- command args...` or `add NAME --url URL`.
    Add {
        /// Its name.
        name: String,
        /// Which file: the user's, or the project's `switchboard.json`.
        #[arg(long, default_value = "user", value_parser = ["user", "project"])]
        scope: String,
        /// A variable for the server, `K=V`.
        #[arg(long = "env", value_name = "K=V")]
        env: Vec<String>,
        /// A remote server's URL.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// A header for a remote server, `K:V`.
        #[arg(long = "header", value_name = "K:V", requires = "url")]
        headers: Vec<String>,
        /// The command and its arguments (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Remove a server from the file that defines it.
    Remove {
        /// The server.
        name: String,
    },
    /// Enable a server.
    Enable {
        /// The server.
        name: String,
    },
    /// Disable a server (it stays configured).
    Disable {
        /// The server.
        name: String,
    },
    /// Trust a project server (or all), after showing exactly what would run.
    Trust {
        /// The server.
        server: Option<String>,
        /// Every untrusted server of this project.
        #[arg(long, conflicts_with = "server")]
        all: bool,
        /// Do not ask; trust what is shown.
        #[arg(long, short)]
        yes: bool,
    },
    /// Forget trust in a project server.
    Untrust {
        /// The server.
        server: String,
    },
    /// Log in to a remote server (OAuth): `auth NAME`; `auth --list` shows the stored logins.
    Auth {
        /// The server.
        #[arg(required_unless_present = "list")]
        server: Option<String>,
        /// List the stored logins (server, URL, expiry, scopes; never a token).
        #[arg(long, conflicts_with_all = ["server", "no_browser", "print_url"])]
        list: bool,
        /// Do not open a browser: print the URL, and take the address the browser ends on
        /// pasted on the terminal (over SSH).
        #[arg(long)]
        no_browser: bool,
        /// Print only the authorization URL on stdout (for scripts), then wait for the callback.
        #[arg(long)]
        print_url: bool,
        /// Machine-readable output (with `--list`).
        #[arg(long, requires = "list")]
        json: bool,
        /// Log in again even when the stored tokens work.
        #[arg(long, conflicts_with = "list")]
        force: bool,
    },
    /// Serve the hub over HTTP on loopback: a JSON API with live events and its OpenAPI
    /// description (`/api/openapi.json`).
    Serve {
        /// The port (0: any free one; the chosen one is printed and written to the data folder).
        #[arg(long, default_value_t = switchboard_server::DEFAULT_PORT)]
        port: u16,
        /// The address to bind.
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// Allow a non-loopback `--bind` (the API then answers the network; the token still guards it).
        #[arg(long)]
        allow_remote: bool,
        /// Another name this server answers to, as browsers will send it in `Host` (`box.lan`,
        /// or `name:port` behind a proxy); repeatable. With `--bind 0.0.0.0`, IP addresses are
        /// accepted without it.
        #[arg(long = "host", value_name = "NAME")]
        hosts: Vec<String>,
        /// A web origin whose pages may call the API with the token (CORS), e.g.
        /// `https://app.example`; repeatable. None by default.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        origins: Vec<String>,
        /// The address browsers reach this server by, when a proxy in front does not say it in
        /// `Forwarded` or `X-Forwarded-*` (OAuth logins from the dashboard come back to
        /// `URL/oauth/callback`), e.g. `https://sb.example`.
        #[arg(long, value_name = "URL")]
        public_url: Option<String>,
        /// On SIGTERM, serve calls in flight for up to this many seconds (`/readyz` says 503 at
        /// once) before cancelling what is left; 0, the default: stop at once.
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        drain: u64,
        /// How the other replicas on the team's store reach this one directly (e.g.
        /// `http://10.0.0.5:7342`; Kubernetes: `http://$(POD_IP):7342`). By default the
        /// address bound, unless that is every address.
        #[arg(long, value_name = "URL")]
        advertise: Option<String>,
    },
    /// Every configured server as one MCP server: on stdio (for an agent's config:
    /// `{"command": "switchboard", "args": ["gateway"]}`), or on Streamable HTTP with `--http`.
    Gateway {
        /// Serve Streamable HTTP at `/mcp` on `[ADDR:]PORT` instead of stdio (ADDR defaults to
        /// 127.0.0.1; port 0 picks a free one and prints it).
        #[arg(long, value_name = "[ADDR:]PORT")]
        http: Option<String>,
        /// Allow a non-loopback address (the token still guards it).
        #[arg(long, requires = "http")]
        allow_remote: bool,
        /// No token (loopback only; any local program can then use every server).
        #[arg(long, requires = "http")]
        no_auth: bool,
        /// Another name accepted in `Host` (behind a proxy); repeatable.
        #[arg(long = "host", value_name = "NAME", requires = "http")]
        hosts: Vec<String>,
        /// With `--http`, on SIGTERM (a service manager, Kubernetes): `/readyz` says 503 at
        /// once, and calls in flight (and calls waiting for their client's answers) get up to
        /// this many seconds to finish before what is left is cancelled. Other signals, and a
        /// second SIGTERM, stop at once.
        #[arg(long, value_name = "SECONDS", default_value_t = 25, requires = "http")]
        drain: u64,
        /// With `--http`: how the other replicas on the team's store reach this one directly
        /// (e.g. `http://10.0.0.5:7342`; Kubernetes: `http://$(POD_IP):7342`). By default the
        /// address bound, unless that is every address.
        #[arg(long, value_name = "URL", requires = "http")]
        advertise: Option<String>,
        /// Only this server (repeatable).
        #[arg(long = "only", value_name = "SERVER")]
        only: Vec<String>,
        /// A profile from the config's `profiles` (servers and tool filters).
        #[arg(long)]
        profile: Option<String>,
        /// Tool and prompt names: `short` (server__tool within --name-limit bytes, for agents
        /// that put their own prefix before every name), `prefixed` (the catalog's
        /// mcp__server__tool) or `bare` (the upstream's own; with one upstream the gateway is
        /// transparent).
        #[arg(long, default_value = "short", value_parser = ["short", "prefixed", "bare"])]
        names: String,
        /// The longest `short` name, in bytes: 45 fits an agent entry named `switchboard` in
        /// every agent (README, "Names"); take one off for each character more in yours.
        #[arg(long, default_value_t = 45, value_parser = clap::value_parser!(u16).range(24..=64))]
        name_limit: u16,
        /// Apply switchboard's result budgets and spill files instead of passing results raw.
        #[arg(long)]
        model_results: bool,
        /// Fail at once, with the server's status, unless this server is connected (repeatable).
        #[arg(long = "require", value_name = "SERVER")]
        require: Vec<String>,
        /// Defer tool definitions behind `search_tools`, `describe_tools` and `call_tool`: `on`,
        /// `off`, `auto` (on when the definitions pass 20,000 tokens) or `auto:TOKENS`. Servers
        /// with `"always_load": true` are listed in full anyway.
        #[arg(long, value_name = "MODE", default_value = "off")]
        tool_search: String,
        /// With `--names bare`: pass what servers say on as they sent it, hidden characters
        /// included (they are still found and shown to you: `switchboard scan`, the log, the
        /// audit records; `policy.findings` still applies). Runs servers of its own.
        #[arg(long)]
        keep_hidden: bool,
    },
    /// The workspace's background hub (`switchboard serve` on a free loopback port): the gateways
    /// and commands of this project, with the same config, share its servers.
    Daemon {
        /// start, stop or status.
        #[arg(value_parser = ["start", "stop", "status"])]
        action: String,
        /// Machine-readable output (status).
        #[arg(long)]
        json: bool,
    },
    /// API keys for service accounts of a gateway whose callers sign in (`identity` in the
    /// config): `create NAME` prints a key once (only its hash is kept), `list`, `revoke NAME`.
    Keys {
        /// create, list or revoke.
        #[arg(value_parser = ["create", "list", "revoke"])]
        action: String,
        /// The key's name (create, revoke).
        name: Option<String>,
        /// A group the key's caller is in (create; repeatable).
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// A team's store (`store` in the config, or `--store`): `key ID` prints a new key line for
    /// the key ring, `status` says what it holds (schema, secrets by key, people), `reseal`
    /// seals again with the ring's first key every secret another key sealed (a rotation's
    /// third step, once every replica seals with the new key).
    Store {
        /// key, status or reseal.
        #[arg(value_parser = ["key", "status", "reseal"])]
        action: String,
        /// The new key's id (key).
        id: Option<String>,
        /// Machine-readable output (status, reseal).
        #[arg(long)]
        json: bool,
    },
    /// Open the dashboard of the running `switchboard serve`: asks it for a new one-time login
    /// link (it lasts 10 minutes) and opens it in the browser, or prints it.
    Dashboard {
        /// Print the link; do not open a browser.
        #[arg(long)]
        print_url: bool,
    },
    /// Checks every server's definitions (or one's), locally and offline: instructions aimed at
    /// the model, reads of secrets, exfiltration, shadowing other servers' tools, hidden
    /// characters. Exits 1 when something is found at `medium` or above.
    Scan {
        /// Only this server's findings (every server is started: shadowing needs them all).
        server: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The tool-call policy's decision for every tool (or one), and the rule of which file made it.
    Policy {
        /// One tool (model-visible name or `server/tool`).
        tool: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Allow tools matching a glob (over `mcp__server__tool`, `server__tool` and `server/tool`), in
    /// the user file.
    Allow {
        /// The glob, e.g. `mcp__github__get_*`.
        glob: String,
    },
    /// Ask before calls of tools matching a glob.
    Ask {
        /// The glob.
        glob: String,
        /// Which file: the user's, or the project's `switchboard.json`.
        #[arg(long, default_value = "user", value_parser = ["user", "project"])]
        scope: String,
    },
    /// Deny calls of tools matching a glob.
    Deny {
        /// The glob.
        glob: String,
        /// Which file: the user's, or the project's `switchboard.json`.
        #[arg(long, default_value = "user", value_parser = ["user", "project"])]
        scope: String,
    },
    /// Remembered "always" approvals; `--revoke GLOB` or `--all` forgets them.
    Approvals {
        /// Forget the approvals of tools matching this glob.
        #[arg(long, value_name = "GLOB", conflicts_with = "all")]
        revoke: Option<String>,
        /// Forget every approval.
        #[arg(long)]
        all: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The audit log: every tool call through switchboard.
    Audit {
        /// Only calls since this long ago: `30m`, `1h`, `7d`.
        #[arg(long)]
        since: Option<String>,
        /// Only this server's calls.
        #[arg(long)]
        server: Option<String>,
        /// Only the calls of this signed-in person (their subject at the identity provider;
        /// `key:NAME` for a service account).
        #[arg(long)]
        principal: Option<String>,
        /// Only the newest this many calls.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Forget a remote server's tokens.
    Logout {
        /// The server.
        server: String,
        /// Forget the client switchboard registered with its authorization server too (the
        /// next login registers a new one).
        #[arg(long)]
        forget_client: bool,
    },
    /// Bring in the servers other tools have (Claude Desktop and Code, Cursor, VS Code,
    /// Windsurf, Codex, Gemini CLI, OpenCode, Zed): their own files into your user file, or
    /// with `--scope project` this project's files into its `switchboard.json`.
    Import {
        /// Which tools' (comma-separated): claude-desktop, claude-code, cursor, vscode, windsurf,
        /// codex, gemini, opencode, zed, or all.
        #[arg(long, default_value = "all", value_name = "TOOL")]
        from: String,
        /// `user`: the tools' own files, into your user file; `project`: this project's files,
        /// into its `switchboard.json`.
        #[arg(long, default_value = "user", value_parser = ["user", "project"])]
        scope: String,
        /// Show what would be imported; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Values given for config inputs (`${input:ID}`, as VS Code has them), kept in the data
    /// folder: list them (and those still needed), set one, or forget one.
    Inputs {
        #[command(subcommand)]
        action: Option<InputsAction>,
        /// Machine-readable output (the list).
        #[arg(long)]
        json: bool,
    },
    /// Config files: check them, or list the paths looked at.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// The sandbox of stdio servers.
    Sandbox {
        #[command(subcommand)]
        action: SandboxAction,
    },
    /// Shell completions: `switchboard completions bash > /etc/bash_completion.d/switchboard`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `switchboard inputs ...`.
#[derive(Debug, Subcommand)]
pub enum InputsAction {
    /// Give an input's value (typed hidden on a terminal, else one line on stdin).
    Set {
        /// The input's id.
        id: String,
        /// The config file that uses it (when several do).
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Forget an input's value (of every file, or of `--file`).
    Forget {
        /// The input's id.
        id: String,
        /// Only the value for this config file.
        #[arg(long)]
        file: Option<PathBuf>,
    },
}

/// `switchboard sandbox ...`.
#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// What this kernel can enforce, and each stdio server's effective rules (or one's).
    Check {
        /// Only this server.
        server: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

/// `switchboard config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Other tools' MCP config files found here (Claude, Cursor, VS Code, Codex...), with their
    /// servers and whether switchboard reads them; nothing is imported.
    Sources {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print every diagnostic; exit non-zero on errors.
    Check {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the files looked at, found or not.
    Paths {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

/// Whether the command line asks for `--json` (of whichever subcommand has it): its errors are
/// then a JSON object on stdout too.
fn wants_json(matches: &clap::ArgMatches) -> bool {
    let mut m = matches;
    loop {
        if matches!(m.try_get_one::<bool>("json"), Ok(Some(true))) {
            return true;
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

fn main() -> std::process::ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let json = wants_json(&matches);
    let (secrets, _traces) = logs::init(cli.verbose);
    if let Command::Completions { shell } = &cli.command {
        // clap_complete panics on a closed pipe: write to a buffer first.
        let mut script = Vec::new();
        clap_complete::generate(*shell, &mut Cli::command(), "switchboard", &mut script);
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &script);
        return std::process::ExitCode::SUCCESS;
    }
    // A stdio gateway serves one client: one thread does its calls with no hand-over between
    // threads (measured in the gateway bench: about 15 % less CPU per call at 64 in flight than
    // on worker threads, the gap that remained to the bare rmcp proxy). What it gives up: a large
    // result being parsed holds the other calls for that long. Everything that serves several
    // clients (`serve`, `daemon`, `gateway --http`) keeps a worker per core.
    let one_client = matches!(cli.command, Command::Gateway { http: None, .. });
    let mut builder = if one_client {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            note!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The command runs as a task of the runtime, on its worker threads where it has them: left
    // on this thread (the future `block_on` drives), every connection `serve` or `gateway
    // --http` accepted here was handed to a worker, a thread switch per connection (a futex and
    // a context switch per call of an HTTP client that opens a connection per request, as
    // rmcp's does).
    let code = runtime.block_on(async move {
        match tokio::spawn(commands::run(cli, secrets, json)).await {
            Ok(code) => code,
            Err(e) => {
                note!("error: {e}");
                1
            }
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    std::process::ExitCode::from(code)
}

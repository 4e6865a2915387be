//! `list`, `tools` and `call` answered by the workspace's running `serve` (see `daemon.rs`)
//! instead of starting servers for one command: its API, with the data folder's token. A
//! person's `call` stays a person's request for the policy (`X-Switchboard-Caller: cli`).
//! Anything the API cannot answer as the command would (`tools --format`) runs its own hub.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value, json};
use switchboard::status::ServerStatus;
use switchboard::workspace::WorkspaceRecord;

use crate::ctx::{Ctx, print_json};
use crate::render::{self, safe, short, table};

/// The workspace's running `serve`, for one command.
pub(crate) struct Remote {
    record: WorkspaceRecord,
    token: String,
    client: reqwest::Client,
}

impl Remote {
    /// The running `serve` of this workspace with this config, unless `--no-attach`.
    pub(crate) fn of(ctx: &Ctx, no_attach: bool) -> Option<Remote> {
        if no_attach {
            return None;
        }
        let record = crate::daemon::attachable(ctx).filter(|r| r.kind == "serve")?;
        let token = switchboard::read_private(&ctx.paths.data_dir.join("serve-token")).ok().flatten()?;
        let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).build().ok()?;
        Some(Remote { record, token: String::from_utf8_lossy(&token).trim().to_string(), client })
    }

    /// Says (on stderr) whose servers answer.
    pub(crate) fn said(&self) {
        tracing::info!("answered by the workspace's serve (pid {}) at {}", self.record.pid, self.record.url);
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value> {
        let response = request.bearer_auth(&self.token).send().await.map_err(|e| {
            anyhow!(
                "the workspace's serve (pid {}) at {}: {e} (`--no-attach` runs servers here)",
                self.record.pid,
                self.record.url
            )
        })?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        let message = body["error"]["message"].as_str().map(str::to_string).unwrap_or_else(|| format!("HTTP {status}"));
        bail!("{message}")
    }

    pub(crate) async fn get(&self, path: &str) -> Result<Value> {
        self.send(self.client.get(format!("{}{path}", self.record.url))).await
    }
}

/// `switchboard list`.
pub(crate) async fn list(ctx: &Ctx, remote: &Remote, json: bool) -> Result<u8> {
    remote.said();
    let body = remote.get("/api/servers").await?;
    let servers = body["servers"].as_array().cloned().unwrap_or_default();
    if json {
        print_json(&json!({"servers": servers, "diagnostics": ctx.loaded.diagnostics, "mcp_off": ctx.loaded.mcp_off,
            "served_by": remote.record}))?;
        return Ok(u8::from(ctx.loaded.has_errors()));
    }
    let mut t = table(&["SERVER", "SCOPE", "STATUS", "TOOLS", "DETAIL"]);
    let mut statuses = Vec::new();
    for s in &servers {
        let Ok(status) = serde_json::from_value::<ServerStatus>(s["status"].clone()) else { continue };
        let tools = match &status {
            ServerStatus::Connected { counts, .. } => counts.tools.to_string(),
            _ => "-".into(),
        };
        let name = s["name"].as_str().unwrap_or_default();
        let scope = s["scope"].as_str().unwrap_or_default();
        t.add_row(vec![
            safe(name),
            scope.to_string(),
            render::status_word(&status),
            tools,
            short(&status.summary(), 90),
        ]);
        statuses.push((name, status));
    }
    out!("{t}");
    render::fixes(statuses.iter().map(|(name, status)| (*name, status)))?;
    render::findings(
        servers.iter().map(|s| (s["name"].as_str().unwrap_or_default(), s["findings"].as_array().map_or(0, Vec::len))),
    )?;
    render::sandboxes(
        servers
            .iter()
            .filter_map(|s| Some((s["name"].as_str().unwrap_or_default().to_string(), s.get("sandbox")?.clone()))),
    )?;
    out!(
        "\nServers of the workspace's {} (pid {}) at {}; `--no-attach` starts them here instead.",
        remote.record.kind,
        remote.record.pid,
        remote.record.url
    );
    Ok(u8::from(ctx.loaded.has_errors()))
}

/// `switchboard call`: `arguments` from the JSON argument, `pairs` from `--arg` (typed by the
/// tool's schema, as the hub's own `call` does).
pub(crate) async fn call(
    remote: &Remote,
    tool: &str,
    mut arguments: Map<String, Value>,
    pairs: Vec<(String, String)>,
    timeout: Option<Duration>,
    json: bool,
) -> Result<u8> {
    remote.said();
    if !pairs.is_empty() {
        let body = remote.get("/api/tools").await?;
        let schema = body["tools"]
            .as_array()
            .and_then(|all| {
                all.iter().find(|t| {
                    t["name"] == tool
                        || format!(
                            "{}/{}",
                            t["server"].as_str().unwrap_or_default(),
                            t["tool"].as_str().unwrap_or_default()
                        ) == tool
                })
            })
            .and_then(|t| t["input_schema"].as_object().cloned());
        for (k, v) in pairs {
            let value = match &schema {
                Some(s) => {
                    switchboard::policy::validate::typed_argument(s, &k, &v).map_err(|e| anyhow!("--arg {k}=…: {e}"))?
                }
                None => serde_json::from_str(&v).unwrap_or(Value::String(v)),
            };
            arguments.insert(k, value);
        }
    }
    let mut request = json!({"arguments": arguments});
    if let Some(t) = timeout {
        request["timeout_ms"] = json!(u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
    }
    let path = format!("/api/tools/{}/call", urlencode(tool));
    let post = remote
        .client
        .post(format!("{}{path}", remote.record.url))
        .header("X-Switchboard-Caller", format!("cli (pid {})", std::process::id()))
        .json(&request);
    let out = remote.send(post).await?;
    if json {
        print_json(&out)?;
        return Ok(u8::from(out["is_error"] == true));
    }
    let model: switchboard::output::ModelResult = serde_json::from_value(out["model"].clone())?;
    let text = model.text();
    if out["is_error"] == true {
        note!("{}", switchboard::text::for_terminal_lines(&text));
    } else {
        out!("{}", render::safe_lines(&text));
    }
    Ok(u8::from(out["is_error"] == true))
}

/// A tool name as one path segment (`server/tool` keeps its meaning).
pub(crate) fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `switchboard resources [SERVER]`.
pub(crate) async fn resources(remote: &Remote, server: Option<&str>, json: bool) -> Result<u8> {
    remote.said();
    let query = server.map(|s| format!("?server={}", urlencode(s))).unwrap_or_default();
    let body = remote.get(&format!("/api/resources{query}")).await?;
    let list = |k: &str| body[k].as_array().cloned().unwrap_or_default();
    crate::listing::resources(&list("resources"), &list("resource_templates"), json)?;
    Ok(0)
}

/// `switchboard read SERVER URI`.
pub(crate) async fn read(remote: &Remote, server: &str, uri: &str, json: bool) -> Result<u8> {
    remote.said();
    let result =
        remote.get(&format!("/api/resources/read?server={}&uri={}", urlencode(server), urlencode(uri))).await?;
    crate::listing::read(&result, json)
}

/// `switchboard prompts [SERVER]`.
pub(crate) async fn prompts(remote: &Remote, server: Option<&str>, json: bool) -> Result<u8> {
    remote.said();
    let query = server.map(|s| format!("?server={}", urlencode(s))).unwrap_or_default();
    let body = remote.get(&format!("/api/prompts{query}")).await?;
    crate::listing::prompts(&body["prompts"].as_array().cloned().unwrap_or_default(), json)?;
    Ok(0)
}

/// `switchboard prompt SERVER NAME`.
pub(crate) async fn prompt(
    remote: &Remote,
    server: &str,
    name: &str,
    arguments: Map<String, Value>,
    json: bool,
) -> Result<u8> {
    remote.said();
    let url = format!("{}/api/prompts/{}/{}", remote.record.url, urlencode(server), urlencode(name));
    let result = remote.send(remote.client.post(url).json(&json!({"arguments": arguments}))).await?;
    crate::listing::prompt(&result, json)
}

/// `switchboard get SERVER [--check]`.
pub(crate) async fn get(ctx: &Ctx, remote: &Remote, server: &str, check: bool, json: bool, tokens: bool) -> Result<u8> {
    remote.said();
    let name = urlencode(server);
    let checked = if check {
        let started = std::time::Instant::now();
        let url = format!("{}/api/servers/{name}/revalidate", remote.record.url);
        let after = remote.send(remote.client.post(url).json(&json!({}))).await?;
        Some((after["server"]["status"]["state"] == "connected", started.elapsed()))
    } else {
        None
    };
    let mut info = remote.get(&format!("/api/servers/{name}")).await?;
    if let Some(obj) = info.as_object_mut() {
        obj.remove("tools");
        obj.remove("stderr_tail");
    }
    let status: ServerStatus = serde_json::from_value(info["status"].clone())?;
    let tools = remote.get(&format!("/api/tools?server={name}&format=mcp")).await?;
    let resources = remote.get(&format!("/api/resources?server={name}")).await?;
    let prompts = remote.get(&format!("/api/prompts?server={name}")).await?;
    let inner = |v: &Value, list: &str, key: &str| -> Vec<Value> {
        v[list].as_array().into_iter().flatten().map(|e| e[key].clone()).collect()
    };
    let tokens = if tokens {
        let counted = remote.get(&format!("/api/tools?server={name}&tokens=true")).await?;
        let tools = counted["tools"].as_array().cloned().unwrap_or_default();
        Some(tools.iter().map(|t| t["tokens"].as_u64().unwrap_or_default() as usize).collect())
    } else {
        None
    };
    let shown = crate::get::Server {
        info,
        status,
        tools: crate::get::Tools::Json(tools["tools"].as_array().cloned().unwrap_or_default()),
        resources: inner(&resources, "resources", "resource"),
        prompts: inner(&prompts, "prompts", "prompt"),
        tokens,
    };
    shown.show(ctx, json, checked)
}

/// What `switchboard complete` asks.
pub(crate) struct Completion<'a> {
    pub(crate) server: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) argument: &'a str,
    pub(crate) prefix: &'a str,
    pub(crate) context: &'a std::collections::HashMap<String, String>,
}

/// `switchboard complete SERVER prompt|resource NAME ARG PREFIX`.
pub(crate) async fn complete(remote: &Remote, asked: Completion<'_>, json: bool) -> Result<u8> {
    remote.said();
    let which = if asked.kind == "prompt" { "prompt" } else { "resource_template" };
    let body = json!({"server": asked.server, which: asked.name, "argument": asked.argument, "value": asked.prefix,
        "context": asked.context});
    let url = format!("{}/api/complete", remote.record.url);
    let found = remote.send(remote.client.post(url).json(&body)).await?;
    if found["supported"] == false {
        bail!("server `{}` does not offer completion (it declares no `completions` capability)", asked.server);
    }
    let values: Vec<String> = serde_json::from_value(found["values"].clone()).unwrap_or_default();
    let total = found["total"].as_u64().and_then(|t| u32::try_from(t).ok());
    let has_more = found["has_more"] == true;
    if json {
        let mut out = json!({"values": values});
        if let Some(t) = total {
            out["total"] = json!(t);
        }
        if has_more {
            out["hasMore"] = json!(true);
        }
        print_json(&out)?;
        return Ok(0);
    }
    render::show_completion(&values, total, has_more)
}

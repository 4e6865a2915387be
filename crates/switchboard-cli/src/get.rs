//! `switchboard get SERVER`: one server in detail, from this process's hub or from the
//! workspace's running `serve` (the same JSON either way).

use std::sync::Arc;

use anyhow::Result;
use serde_json::{Value, json};
use switchboard::Hub;
use switchboard::catalog::Catalog;
use switchboard::catalog::export::{ToolFormat, ToolsJson};
use switchboard::config::ServerEntry;
use switchboard::status::ServerStatus;

use crate::ctx::{Ctx, print_json};
use crate::render::{self, safe, short, status_word};

/// A server's tools: in this process's catalog (written out one at a time: a server of
/// thousands of tools is not copied into JSON first), or as a running hub gave them.
pub(crate) enum Tools {
    Catalog(Arc<Catalog>, String),
    Json(Vec<Value>),
}

impl serde::Serialize for Tools {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tools::Catalog(catalog, server) => ToolsJson::new(catalog.tools_of(server), ToolFormat::Mcp).serialize(s),
            Tools::Json(tools) => tools.serialize(s),
        }
    }
}

impl Tools {
    /// Each tool's model-visible name and description.
    fn lines(&self) -> Vec<(String, String)> {
        match self {
            Tools::Catalog(catalog, server) => catalog
                .tools_of(server)
                .map(|t| (t.name.clone(), t.tool.description.as_deref().unwrap_or_default().to_string()))
                .collect(),
            Tools::Json(tools) => tools
                .iter()
                .map(|t| {
                    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    (s("name"), s("description"))
                })
                .collect(),
        }
    }
}

/// What `get` shows of a server.
pub(crate) struct Server {
    /// `{"name", "scope", "source", "transport", "target", "status"}`.
    pub(crate) info: Value,
    pub(crate) status: ServerStatus,
    /// Its tools as MCP definitions with model-visible names (`tools --format mcp`).
    pub(crate) tools: Tools,
    /// Its resources and prompts, as the server lists them.
    pub(crate) resources: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
    /// What each tool's definition costs in tokens, in the order of `tools` (`--tokens`).
    pub(crate) tokens: Option<Vec<usize>>,
}

impl Server {
    /// From this process's hub.
    pub(crate) fn of_hub(hub: &Hub, server: &str) -> Result<Server> {
        let info = hub.servers().into_iter().find(|s| s.name == server).ok_or_else(|| {
            let servers = hub.servers();
            switchboard::Error::unknown_server(server, servers.iter().map(|s| s.name.as_str()))
        })?;
        let catalog = hub.catalog();
        let tools = Tools::Catalog(catalog.clone(), server.to_string());
        let resources = catalog.resources().iter().filter(|r| r.server == server).map(|r| json!(r.resource)).collect();
        let prompts = catalog.prompts().iter().filter(|p| p.server == server).map(|p| json!(p.prompt)).collect();
        Ok(Server { info: render::server_json(&info), status: info.status, tools, resources, prompts, tokens: None })
    }

    /// Counts its tools' tokens (the token table is loaded now).
    pub(crate) fn count_tokens(&mut self) -> Result<()> {
        let counter = switchboard::catalog::tokens::TokenCounter::o200k()?;
        if let Tools::Catalog(catalog, server) = &self.tools {
            self.tokens = Some(catalog.tools_of(server).map(|t| counter.tool(t)).collect());
        }
        Ok(())
    }

    /// Shows it (`checked`: whether a ping was answered, and how long the check took).
    pub(crate) fn show(&self, ctx: &Ctx, json: bool, checked: Option<(bool, std::time::Duration)>) -> Result<u8> {
        let name = self.info["name"].as_str().unwrap_or_default();
        let entry = ctx.loaded.servers.get(name).ok_or_else(|| crate::ctx::no_server(&ctx.loaded, name))?;
        let failed_check = checked.is_some_and(|(ok, _)| !ok);
        if json {
            #[derive(serde::Serialize)]
            struct Get<'a> {
                server: &'a Value,
                config: Value,
                tools: &'a Tools,
                resources: &'a [Value],
                prompts: &'a [Value],
                check: Option<Value>,
                #[serde(skip_serializing_if = "Option::is_none")]
                tokens: Option<Value>,
            }
            print_json(&Get {
                server: &self.info,
                config: render::redacted_entry(entry),
                tools: &self.tools,
                resources: &self.resources,
                prompts: &self.prompts,
                check: checked
                    .map(|(ok, took)| json!({"ok": ok, "ms": u64::try_from(took.as_millis()).unwrap_or(u64::MAX)})),
                tokens: self.tokens.as_ref().map(|per| {
                    let tools: serde_json::Map<String, Value> =
                        self.tools.lines().into_iter().zip(per).map(|((name, _), n)| (name, json!(n))).collect();
                    json!({"total": per.iter().sum::<usize>(), "tools": tools})
                }),
            })?;
            return Ok(u8::from(failed_check));
        }
        out!("{}  {}", console::style(name).bold(), status_word(&self.status));
        out!(
            "  source   {} ({})",
            self.info["source"].as_str().unwrap_or_default(),
            self.info["scope"].as_str().unwrap_or_default()
        );
        if let ServerEntry::Valid(c) = entry {
            for line in render::launch_lines(c).iter().skip(1) {
                out!("  {line}");
            }
        }
        match &self.status {
            ServerStatus::Connected {
                protocol_version,
                server_name,
                server_version,
                instructions,
                diagnostics,
                ..
            } => {
                out!("  server   {} {}", safe(server_name), safe(server_version));
                out!("  protocol {}", safe(protocol_version));
                if let Some(i) = instructions {
                    out!("  instructions: {}", short(i, 100));
                }
                for d in diagnostics {
                    out!("  {} {}", console::style("problem").yellow(), safe(d));
                }
            }
            ServerStatus::Failed { kind, message, .. } => {
                out!("  failure  {}", serde_json::to_value(kind)?.as_str().unwrap_or("?"));
                for line in message.lines() {
                    out!("    {}", safe(line));
                }
            }
            other => out!("  {}", safe(&other.summary())),
        }
        if let Some(remedy) = self.status.remedy(name) {
            out!("  fix      {}", safe(&crate::render::fix(&remedy)));
        }
        // What screening its definitions found (hidden characters removed, with what they said).
        for f in self.info.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let target = &f["target"];
            let what = match (target["kind"].as_str(), target["name"].as_str()) {
                (Some(kind), Some(name)) => format!("{kind} {name}"),
                (Some(kind), None) => kind.to_string(),
                _ => String::new(),
            };
            out!(
                "  {} {} {}, {}: {}",
                console::style("finding").yellow(),
                str_of_value(f, "severity"),
                safe(&what),
                safe(&str_of_value(f, "field")),
                safe(&str_of_value(f, "why"))
            );
            if let Some(evidence) = f.get("evidence").and_then(Value::as_str) {
                out!("      \"{}\"", safe(&short(evidence, 160)));
            }
        }
        if let Some(sandbox) = self.info.get("sandbox") {
            out!("  sandbox  {}", render::sandbox_word(sandbox));
            for r in sandbox.get("refused").and_then(Value::as_array).into_iter().flatten() {
                out!(
                    "  {} {} {} ({}×): to allow it, add {} to its entry",
                    console::style("refused").yellow(),
                    str_of_value(r, "kind"),
                    safe(&str_of_value(r, "target")),
                    r.get("count").and_then(Value::as_u64).unwrap_or(1),
                    safe(&str_of_value(r, "allow"))
                );
            }
        }
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let tools = self.tools.lines();
        if !tools.is_empty() {
            match &self.tokens {
                Some(per) => {
                    let total: usize = per.iter().sum();
                    out!("\n  tools ({}, {total} tokens of definitions, estimated with o200k_base):", tools.len());
                    for ((name, description), n) in tools.iter().zip(per) {
                        out!("    {:>6}  {}  {}", n, safe(name), console::style(short(description, 60)).dim());
                    }
                }
                None => {
                    out!("\n  tools ({}):", tools.len());
                    for (name, description) in &tools {
                        out!("    {}  {}", safe(name), console::style(short(description, 70)).dim());
                    }
                }
            }
        }
        if !self.resources.is_empty() {
            out!("\n  resources ({}):", self.resources.len());
            for r in &self.resources {
                out!("    {}", safe(&str_of(r, "uri")));
            }
        }
        if !self.prompts.is_empty() {
            out!("\n  prompts ({}):", self.prompts.len());
            for p in &self.prompts {
                out!("    {}", safe(&str_of(p, "name")));
            }
        }
        match checked {
            Some((true, took)) => out!("\n  check    alive (answered a ping; {} ms in all)", took.as_millis()),
            Some((false, _)) => out!("\n  check    not alive: {}", safe(&self.status.summary())),
            None => {}
        }
        Ok(u8::from(failed_check))
    }
}

fn str_of_value(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

//! `switchboard tools`: the catalog's tools, all, one server's, or those a search finds, as a
//! table, as JSON, or in the shape a model provider takes; from this process's hub or from the
//! workspace's running `serve` (the same output either way).

use anyhow::{Result, anyhow, bail};
use serde::Serialize;
use serde_json::{Map, Value, json};
use switchboard::catalog::ToolEntry;
use switchboard::catalog::export::{Changed, ExportOptions, Skipped, ToolFormat, ToolsJson};

use crate::ctx::{Ctx, only, print_json, with_hub};
use crate::remote::{Remote, urlencode};
use crate::render::{safe, short, table};

/// Most tools a search shows when `--limit` is not given.
const SEARCH_LIMIT: usize = 10;

/// What `switchboard tools` was asked.
pub(crate) struct Asked {
    pub(crate) server: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) json: bool,
    pub(crate) strict: bool,
    pub(crate) defer: bool,
    pub(crate) description_cap: Option<usize>,
    pub(crate) search: Option<String>,
    pub(crate) limit: Option<usize>,
    pub(crate) tokens: bool,
}

/// One tool as listed (`--json` without `--format`).
#[derive(Serialize)]
struct Listed<'a> {
    name: &'a str,
    server: &'a str,
    tool: &'a str,
    description: Option<&'a str>,
    input_schema: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<usize>,
}

#[derive(Serialize)]
struct ListedTools<'a> {
    tools: Vec<Listed<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<Totals>,
    /// No tool answered the search by a word or a near meaning: these are the closest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    nearest_only: bool,
}

/// What the listed definitions cost, per server (most first) and in all (`--tokens`).
#[derive(Serialize)]
struct Totals {
    total: usize,
    servers: Vec<ServerTokens>,
}

#[derive(Serialize)]
struct ServerTokens {
    server: String,
    tools: usize,
    tokens: usize,
}

impl Totals {
    fn of<'a>(rows: impl IntoIterator<Item = (&'a str, usize)>) -> Totals {
        let mut per: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
        for (server, tokens) in rows {
            let e = per.entry(server).or_default();
            e.0 += 1;
            e.1 += tokens;
        }
        let mut servers: Vec<ServerTokens> =
            per.into_iter().map(|(s, (tools, tokens))| ServerTokens { server: s.to_string(), tools, tokens }).collect();
        servers.sort_by(|a, b| b.tokens.cmp(&a.tokens).then_with(|| a.server.cmp(&b.server)));
        Totals { total: servers.iter().map(|s| s.tokens).sum(), servers }
    }

    fn show(&self) -> Result<()> {
        let mut t = table(&["SERVER", "TOOLS", "TOKENS"]);
        for s in &self.servers {
            t.add_row(vec![safe(&s.server), s.tools.to_string(), s.tokens.to_string()]);
        }
        t.add_row(vec![
            "all".to_string(),
            self.servers.iter().map(|s| s.tools).sum::<usize>().to_string(),
            self.total.to_string(),
        ]);
        out!("\n{t}");
        note!(
            "tokens: an estimate with o200k_base of each definition (name, title, description, input schema) as JSON"
        );
        Ok(())
    }
}

pub(crate) async fn run(ctx: &Ctx, asked: Asked, no_attach: bool) -> Result<u8> {
    let format: Option<ToolFormat> =
        asked.format.as_deref().map(str::parse).transpose().map_err(|e: String| anyhow!(e))?;
    if asked.limit == Some(0) {
        bail!("`--limit` must be at least 1");
    }
    if asked.tokens && format.is_some() {
        bail!("`--tokens` goes with the table or `--json`, not `--format`");
    }
    if asked.strict && format != Some(ToolFormat::OpenAi) {
        bail!("`--strict` is OpenAI's strict mode: use it with `--format openai`");
    }
    if asked.defer && format != Some(ToolFormat::Anthropic) {
        bail!("`--defer` is Anthropic's server-side tool search: use it with `--format anthropic`");
    }
    if asked.description_cap == Some(0) {
        bail!("`--description-cap` must be at least 1");
    }
    let filter = asked.server.as_deref().map(|s| only(s, &ctx.loaded)).transpose()?;
    if let Some(remote) = Remote::of(ctx, no_attach) {
        return remote_tools(&remote, &asked).await;
    }
    with_hub(ctx, filter, |hub, _| async move {
        let catalog = hub.catalog();
        let keep = |t: &ToolEntry| asked.server.as_ref().is_none_or(|s| &t.server == s);
        let mut nearest_only = false;
        let found: Vec<(&ToolEntry, Option<f64>)> = match asked.search.as_deref() {
            Some(q) => {
                let hits = catalog.search_in(q, asked.limit.unwrap_or(SEARCH_LIMIT), keep)?;
                nearest_only = !hits.is_empty() && hits.iter().all(|h| !h.close);
                hits.into_iter().map(|hit| (hit.tool, Some(hit.shown_score()))).collect()
            }
            None => catalog.tools().iter().filter(|t| keep(t)).map(|t| (t, None)).collect(),
        };
        // The table of tokens is parsed only now, when asked for.
        let counter = asked.tokens.then(switchboard::catalog::tokens::TokenCounter::o200k).transpose()?;
        let tokens: Vec<Option<usize>> = found.iter().map(|(t, _)| counter.as_ref().map(|c| c.tool(t))).collect();
        let totals = counter.is_some().then(|| {
            Totals::of(found.iter().zip(&tokens).map(|((t, _), n)| (t.server.as_str(), n.unwrap_or_default())))
        });
        if let Some(format) = format {
            let always: std::collections::BTreeSet<String> =
                hub.servers().into_iter().filter(|s| s.always_load).map(|s| s.name).collect();
            let mut options = ExportOptions::new().strict(asked.strict).defer(asked.defer, always);
            if let Some(cap) = asked.description_cap {
                options = options.description_cap(cap);
            }
            // A denied tool is not given to a model: left out, and said why.
            let denied = found
                .iter()
                .filter_map(|(t, _)| hub.denied_by(t).map(|rule| (t.name.clone(), format!("denied by {rule}"))))
                .collect();
            let export = ToolsJson::with_options(found.iter().map(|(t, _)| *t), format, options).leave_out(denied);
            if asked.json {
                print_json(&export.report())?;
            } else {
                print_json(&export)?;
                say_export(format, &export.skipped(), &export.changed());
            }
        } else if asked.json {
            // Borrowed, written as it goes (no copy of every schema first).
            let tools = found
                .iter()
                .zip(&tokens)
                .map(|((t, score), tokens)| Listed {
                    name: &t.name,
                    server: &t.server,
                    tool: &t.tool.name,
                    description: t.tool.description.as_deref(),
                    input_schema: &t.input_schema,
                    score: *score,
                    tokens: *tokens,
                })
                .collect();
            print_json(&ListedTools { tools, tokens: totals, nearest_only })?;
        } else {
            let rows = found.iter().zip(&tokens).map(|((t, score), tokens)| Row {
                name: &t.name,
                server: &t.server,
                description: t.tool.description.as_deref().unwrap_or(""),
                score: *score,
                tokens: *tokens,
            });
            show(rows, asked.search.is_some(), asked.tokens, nearest_only)?;
            if let Some(totals) = &totals {
                totals.show()?;
            }
            crate::render::warn_not_connected(&hub);
        }
        Ok(0)
    })
    .await
}

/// What an export left out, each with why, and how many tools it changed (on stderr).
fn say_export(format: ToolFormat, skipped: &[Skipped], changed: &[Changed]) {
    for s in skipped {
        note!("left out of the {} export: {}: {}", format.name(), safe(&s.name), safe(&s.reason));
    }
    if !changed.is_empty() {
        let n = changed.len();
        note!(
            "{n} tool{} changed to fit {}'s rules (descriptions cut, keywords said in words: `--json` lists each)",
            if n == 1 { "" } else { "s" },
            format.name()
        );
    }
}

/// A line of the table.
struct Row<'a> {
    name: &'a str,
    server: &'a str,
    description: &'a str,
    score: Option<f64>,
    tokens: Option<usize>,
}

fn show<'a>(rows: impl Iterator<Item = Row<'a>>, searched: bool, tokens: bool, nearest_only: bool) -> Result<()> {
    let mut head = vec!["TOOL", "SERVER"];
    if searched {
        head.push("SCORE");
    }
    if tokens {
        head.push("TOKENS");
    }
    head.push("DESCRIPTION");
    let mut t = table(&head);
    let mut any = false;
    for row in rows {
        any = true;
        let mut cells = vec![safe(row.name), safe(row.server)];
        if searched {
            cells.push(row.score.map(|s| format!("{s:.2}")).unwrap_or_default());
        }
        if tokens {
            cells.push(row.tokens.map(|n| n.to_string()).unwrap_or_default());
        }
        cells.push(short(row.description, 70));
        t.add_row(cells);
    }
    if searched && !any {
        note!("no tool matches the search");
    } else {
        if nearest_only {
            note!("no tool matches the search by its words or a near meaning; the closest:");
        }
        out!("{t}");
    }
    Ok(())
}

/// The same, answered by the workspace's `serve`.
async fn remote_tools(remote: &Remote, asked: &Asked) -> Result<u8> {
    remote.said();
    let mut query = Vec::new();
    if let Some(s) = &asked.server {
        query.push(format!("server={}", urlencode(s)));
    }
    if let Some(f) = &asked.format {
        query.push(format!("format={}", urlencode(f)));
    }
    if let Some(q) = &asked.search {
        query.push(format!("search={}", urlencode(q)));
        query.push(format!("limit={}", asked.limit.unwrap_or(SEARCH_LIMIT)));
    }
    if asked.tokens {
        query.push("tokens=true".to_string());
    }
    if asked.strict {
        query.push("strict=true".to_string());
    }
    if asked.defer {
        query.push("defer=true".to_string());
    }
    if let Some(cap) = asked.description_cap {
        query.push(format!("description_cap={cap}"));
    }
    let body = remote.get(&format!("/api/tools?{}", query.join("&"))).await?;
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    if let Some(format) = asked.format.as_deref() {
        let skipped: Vec<Skipped> = serde_json::from_value(body["skipped"].clone()).unwrap_or_default();
        let changed: Vec<Changed> = serde_json::from_value(body["changed"].clone()).unwrap_or_default();
        if asked.json {
            print_json(&json!({"tools": tools, "skipped": skipped, "changed": changed}))?;
        } else {
            print_json(&tools)?;
            say_export(format.parse().map_err(|e: String| anyhow!(e))?, &skipped, &changed);
        }
    } else if asked.json {
        let listed: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut v = json!({"name": t["name"], "server": t["server"], "tool": t["tool"],
                    "description": t["description"], "input_schema": t["input_schema"]});
                for key in ["score", "tokens"] {
                    if t.get(key).is_some() {
                        v[key] = t[key].clone();
                    }
                }
                v
            })
            .collect();
        let mut out = json!({"tools": listed});
        if body["nearest_only"] == json!(true) {
            out["nearest_only"] = json!(true);
        }
        if asked.tokens {
            out["tokens"] = serde_json::to_value(totals_of(&tools))?;
        }
        print_json(&out)?;
    } else {
        let rows = tools.iter().map(|t| Row {
            name: t["name"].as_str().unwrap_or_default(),
            server: t["server"].as_str().unwrap_or_default(),
            description: t["description"].as_str().unwrap_or_default(),
            score: t["score"].as_f64(),
            tokens: t["tokens"].as_u64().map(|n| n as usize),
        });
        show(rows, asked.search.is_some(), asked.tokens, body["nearest_only"] == json!(true))?;
        if asked.tokens {
            totals_of(&tools).show()?;
        }
    }
    Ok(0)
}

fn totals_of(tools: &[Value]) -> Totals {
    Totals::of(
        tools
            .iter()
            .map(|t| (t["server"].as_str().unwrap_or_default(), t["tokens"].as_u64().unwrap_or_default() as usize)),
    )
}

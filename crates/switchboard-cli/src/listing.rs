//! How resources, prompts and what servers return for them are shown, from their JSON (the
//! catalog's own, or a running hub's API's, which is the same): one rendering for a command
//! that ran its own servers and one answered by the workspace's `serve`.

use anyhow::Result;
use serde_json::{Value, json};

use crate::ctx::print_json;
use crate::render::{self, safe, short, table};

/// Catalog entries as JSON values.
pub(crate) fn values<T: serde::Serialize>(items: &[T]) -> Result<Vec<Value>> {
    Ok(serde_json::to_value(items)?.as_array().cloned().unwrap_or_default())
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `switchboard resources`: `{"server", "resource"}` and `{"server", "template"}` entries.
pub(crate) fn resources(resources: &[Value], templates: &[Value], json: bool) -> Result<()> {
    if json {
        return print_json(&json!({"resources": resources, "resource_templates": templates}));
    }
    let mut t = table(&["URI", "SERVER", "NAME", "MIME TYPE"]);
    for r in resources {
        let res = &r["resource"];
        t.add_row(vec![
            short(str_of(res, "uri"), 80),
            safe(str_of(r, "server")),
            short(str_of(res, "name"), 40),
            short(str_of(res, "mimeType"), 30),
        ]);
    }
    for r in templates {
        let tpl = &r["template"];
        t.add_row(vec![
            short(str_of(tpl, "uriTemplate"), 80),
            safe(str_of(r, "server")),
            format!("{} (template)", short(str_of(tpl, "name"), 40)),
            short(str_of(tpl, "mimeType"), 30),
        ]);
    }
    out!("{t}");
    Ok(())
}

/// `switchboard read`: a `resources/read` result.
pub(crate) fn read(result: &Value, json: bool) -> Result<u8> {
    if json {
        print_json(result)?;
        return Ok(0);
    }
    for c in result["contents"].as_array().into_iter().flatten() {
        match (c.get("text").and_then(Value::as_str), c.get("blob").and_then(Value::as_str)) {
            (Some(text), _) => out!("{}", render::safe_lines(text)),
            (None, Some(blob)) => out!(
                "[binary {}, {} bytes of base64; use --json]",
                safe(c.get("mimeType").and_then(Value::as_str).unwrap_or("?")),
                blob.len()
            ),
            _ => out!("{c}"),
        }
    }
    Ok(0)
}

/// `switchboard prompts`: `{"server", "prompt"}` entries.
pub(crate) fn prompts(prompts: &[Value], json: bool) -> Result<()> {
    if json {
        return print_json(&json!({"prompts": prompts}));
    }
    let mut t = table(&["PROMPT", "SERVER", "ARGUMENTS", "DESCRIPTION"]);
    for p in prompts {
        let prompt = &p["prompt"];
        let args: Vec<String> = prompt["arguments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                let name = a.get("name").and_then(Value::as_str).unwrap_or("?");
                if a.get("required").and_then(Value::as_bool) == Some(true) {
                    name.to_string()
                } else {
                    format!("[{name}]")
                }
            })
            .collect();
        t.add_row(vec![
            short(str_of(prompt, "name"), 60),
            safe(str_of(p, "server")),
            short(&args.join(" "), 60),
            short(str_of(prompt, "description"), 60),
        ]);
    }
    out!("{t}");
    Ok(())
}

/// `switchboard prompt`: a `prompts/get` result.
pub(crate) fn prompt(result: &Value, json: bool) -> Result<u8> {
    if json {
        print_json(result)?;
        return Ok(0);
    }
    for m in result["messages"].as_array().into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = m.get("content").cloned().unwrap_or_default();
        let text =
            content.get("text").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| content.to_string());
        out!("[{}] {}", safe(role), render::safe_lines(&text));
    }
    Ok(0)
}

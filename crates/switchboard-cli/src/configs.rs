//! `switchboard config check` and `config paths`: the files in use and what is wrong in them.

use anyhow::Result;
use serde_json::json;

use crate::ctx::{Ctx, print_json};
use crate::render::{self, table};

/// `switchboard config check`: every diagnostic; non-zero on errors.
pub(crate) fn check(ctx: &Ctx, json: bool) -> Result<u8> {
    if json {
        print_json(
            &json!({"diagnostics": ctx.loaded.diagnostics, "servers": ctx.loaded.servers.values().map(render::redacted_entry).collect::<Vec<_>>()}),
        )?;
    } else if ctx.loaded.diagnostics.is_empty() {
        let found = ctx.loaded.files.iter().filter(|f| f.found).count();
        out!(
            "No problems in {found} config file{} ({} servers).",
            if found == 1 { "" } else { "s" },
            ctx.loaded.servers.len()
        );
    } else {
        for d in &ctx.loaded.diagnostics {
            out!("{d}");
        }
    }
    Ok(u8::from(ctx.loaded.has_errors()))
}

/// `switchboard config paths`: the files looked at, found or not, and how each is read.
pub(crate) fn paths(ctx: &Ctx, json: bool) -> Result<u8> {
    if json {
        print_json(
            &json!({"project_root": ctx.loaded.project_root, "data_dir": ctx.paths.data_dir, "files": ctx.loaded.files}),
        )?;
    } else {
        out!("project root: {}", ctx.loaded.project_root.display());
        out!("data folder:  {}", ctx.paths.data_dir.display());
        let mut t = table(&["FILE", "SCOPE", "FOUND", "READ AS"]);
        for f in &ctx.loaded.files {
            let read_as = match (f.tool, &f.included_by) {
                (Some(tool), Some(_)) => format!("{} (included)", tool.title()),
                (Some(tool), None) => tool.title().to_string(),
                (None, Some(_)) => "switchboard (included)".into(),
                (None, None) => "switchboard".into(),
            };
            t.add_row(vec![
                f.path.display().to_string(),
                f.scope.to_string(),
                if f.found { "yes".into() } else { "no".into() },
                read_as,
            ]);
        }
        out!("{t}");
    }
    Ok(0)
}

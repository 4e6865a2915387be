//! Where each tool keeps its MCP servers, on Linux and macOS.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Tool;

/// Whether a file is the person's own (every project) or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceScope {
    /// The person's own file, for every project.
    User,
    /// A file in the project (or, for Claude Code's local servers, kept for it).
    Project,
}

impl std::fmt::Display for SourceScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SourceScope::User => "user",
            SourceScope::Project => "project",
        })
    }
}

/// One place a tool keeps servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KnownFile {
    /// The tool.
    pub tool: Tool,
    /// Whose file it is.
    pub scope: SourceScope,
    /// Where it is.
    pub path: PathBuf,
}

/// Every place the tools keep servers, for the person with home `home` in project
/// `project_root`, whether or not the files exist. `env` gives `XDG_CONFIG_HOME` and
/// `CODEX_HOME` when set.
pub fn known_files(home: &Path, project_root: &Path, env: &HashMap<String, String>) -> Vec<KnownFile> {
    known_files_on(home, project_root, env, cfg!(target_os = "macos"))
}

fn known_files_on(home: &Path, project_root: &Path, env: &HashMap<String, String>, macos: bool) -> Vec<KnownFile> {
    let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let xdg = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
    // Electron apps keep their files here.
    let app_support = if macos { home.join("Library/Application Support") } else { xdg.clone() };
    let codex_home = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
    let mut out = Vec::new();
    let mut user = |tool, path: PathBuf| out.push(KnownFile { tool, scope: SourceScope::User, path });
    user(Tool::ClaudeDesktop, app_support.join("Claude/claude_desktop_config.json"));
    user(Tool::ClaudeCode, home.join(".claude.json"));
    user(Tool::Cursor, home.join(".cursor/mcp.json"));
    for code in ["Code", "Code - Insiders", "VSCodium"] {
        user(Tool::Vscode, app_support.join(code).join("User/mcp.json"));
        user(Tool::Vscode, app_support.join(code).join("User/settings.json"));
    }
    user(Tool::Windsurf, home.join(".codeium/windsurf/mcp_config.json"));
    user(Tool::Codex, codex_home.join("config.toml"));
    user(Tool::Gemini, home.join(".gemini/settings.json"));
    for name in ["opencode.json", "opencode.jsonc"] {
        user(Tool::Opencode, xdg.join("opencode").join(name));
    }
    // Zed keeps `~/.config/zed` on macOS too.
    user(Tool::Zed, xdg.join("zed/settings.json"));
    let mut project = |tool, rel: &str| {
        out.push(KnownFile { tool, scope: SourceScope::Project, path: project_root.join(rel) });
    };
    project(Tool::ClaudeCode, ".mcp.json");
    project(Tool::Cursor, ".cursor/mcp.json");
    project(Tool::Vscode, ".vscode/mcp.json");
    project(Tool::Vscode, ".vscode/settings.json");
    project(Tool::Codex, ".codex/config.toml");
    project(Tool::Gemini, ".gemini/settings.json");
    for rel in ["opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"] {
        project(Tool::Opencode, rel);
    }
    project(Tool::Zed, ".zed/settings.json");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::foreign::{Dialect, detect};

    #[test]
    fn every_known_file_is_read_as_its_tools() {
        for macos in [false, true] {
            for f in known_files_on(Path::new("/home/u"), Path::new("/p"), &HashMap::new(), macos) {
                let dialect = detect(&f.path);
                assert_eq!(dialect.tool(), Some(f.tool), "{} on macos={macos}: {dialect:?}", f.path.display());
            }
        }
        let env = HashMap::from([("CODEX_HOME".to_string(), "/opt/codex".to_string())]);
        let files = known_files_on(Path::new("/home/u"), Path::new("/p"), &env, false);
        assert!(files.iter().any(|f| f.path == Path::new("/opt/codex/config.toml")));
        assert_eq!(detect(Path::new("/p/switchboard.json")), Dialect::Own);
        assert_eq!(detect(Path::new("/home/u/.config/switchboard/config.json")), Dialect::Own);
    }
}

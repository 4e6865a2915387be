//! Other tools' config files, read as they are: which tool a file belongs to (from where it
//! is), and its servers in switchboard's shape.
//!
//! A file of another tool holds much that is not ours (a theme, a model, key bindings): only
//! its servers (and VS Code's `inputs`) are read, and the rest is left alone without a word.
//! Each tool's own names for a server's fields become ours (`entries.rs`); what cannot be
//! carried over (Codex's approval modes, Claude Code's `headersHelper`, Gemini's `trust`) is
//! said in a warning that names the field. Where the files are is in [`sources`].

mod entries;
pub mod sources;

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

pub use sources::{KnownFile, SourceScope, known_files};

/// A tool whose MCP servers switchboard can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Tool {
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, `.mcp.json`).
    ClaudeCode,
    /// Cursor (`~/.cursor/mcp.json`, `.cursor/mcp.json`).
    Cursor,
    /// VS Code (`mcp.json`, `settings.json`'s `mcp`).
    Vscode,
    /// Windsurf (`~/.codeium/windsurf/mcp_config.json`).
    Windsurf,
    /// Codex (`~/.codex/config.toml`, TOML).
    Codex,
    /// Gemini CLI (`~/.gemini/settings.json`).
    Gemini,
    /// OpenCode (`opencode.json`).
    Opencode,
    /// Zed (`settings.json`'s `context_servers`).
    Zed,
}

impl Tool {
    /// Every tool, in the order they are shown.
    pub const ALL: [Tool; 9] = [
        Tool::ClaudeDesktop,
        Tool::ClaudeCode,
        Tool::Cursor,
        Tool::Vscode,
        Tool::Windsurf,
        Tool::Codex,
        Tool::Gemini,
        Tool::Opencode,
        Tool::Zed,
    ];

    /// The name used on the command line (`--from cursor`).
    pub fn id(self) -> &'static str {
        match self {
            Tool::ClaudeDesktop => "claude-desktop",
            Tool::ClaudeCode => "claude-code",
            Tool::Cursor => "cursor",
            Tool::Vscode => "vscode",
            Tool::Windsurf => "windsurf",
            Tool::Codex => "codex",
            Tool::Gemini => "gemini",
            Tool::Opencode => "opencode",
            Tool::Zed => "zed",
        }
    }

    /// The name people know it by.
    pub fn title(self) -> &'static str {
        match self {
            Tool::ClaudeDesktop => "Claude Desktop",
            Tool::ClaudeCode => "Claude Code",
            Tool::Cursor => "Cursor",
            Tool::Vscode => "VS Code",
            Tool::Windsurf => "Windsurf",
            Tool::Codex => "Codex",
            Tool::Gemini => "Gemini CLI",
            Tool::Opencode => "OpenCode",
            Tool::Zed => "Zed",
        }
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tool::ALL.into_iter().find(|t| t.id() == s).ok_or_else(|| {
            let ids: Vec<&str> = Tool::ALL.iter().map(|t| t.id()).collect();
            format!("unknown tool `{s}`: use {} or all", ids.join(", "))
        })
    }
}

/// How a file is read: as ours, or as one tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Switchboard's own shapes (and ZCode's, and an `mcp` section as OpenCode writes it).
    Own,
    /// Claude Desktop's file.
    ClaudeDesktop,
    /// Claude Code's `~/.claude.json`: user servers and, per project, local ones.
    ClaudeCodeUser,
    /// A `.mcp.json` (Claude Code's project file, and the common shape).
    McpJson,
    /// Cursor's `mcp.json`.
    Cursor,
    /// VS Code's `mcp.json`.
    VscodeMcp,
    /// VS Code's `settings.json` (servers under `mcp`).
    VscodeSettings,
    /// Windsurf's `mcp_config.json`.
    Windsurf,
    /// Codex's TOML.
    Codex,
    /// Gemini CLI's `settings.json`.
    Gemini,
    /// OpenCode's `opencode.json`.
    Opencode,
    /// Zed's `settings.json`.
    Zed,
}

impl Dialect {
    /// The tool the file belongs to (`None`: ours).
    pub(crate) fn tool(self) -> Option<Tool> {
        Some(match self {
            Dialect::Own => return None,
            Dialect::ClaudeDesktop => Tool::ClaudeDesktop,
            Dialect::ClaudeCodeUser | Dialect::McpJson => Tool::ClaudeCode,
            Dialect::Cursor => Tool::Cursor,
            Dialect::VscodeMcp | Dialect::VscodeSettings => Tool::Vscode,
            Dialect::Windsurf => Tool::Windsurf,
            Dialect::Codex => Tool::Codex,
            Dialect::Gemini => Tool::Gemini,
            Dialect::Opencode => Tool::Opencode,
            Dialect::Zed => Tool::Zed,
        })
    }

    /// Whether the file is TOML.
    pub(crate) fn is_toml(self) -> bool {
        self == Dialect::Codex
    }
}

/// Which tool's file `path` is, from its name and its folder's; switchboard's own otherwise.
pub(crate) fn detect(path: &Path) -> Dialect {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let parent = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or_default();
    let grand = path.parent().and_then(Path::parent).and_then(|p| p.file_name()).and_then(|n| n.to_str());
    match (name, parent) {
        ("claude_desktop_config.json", _) => Dialect::ClaudeDesktop,
        (".claude.json", _) => Dialect::ClaudeCodeUser,
        (".mcp.json", _) => Dialect::McpJson,
        ("mcp.json", ".cursor") => Dialect::Cursor,
        ("mcp.json", ".vscode") => Dialect::VscodeMcp,
        ("mcp.json", "User") if grand.is_some_and(is_vscode_folder) => Dialect::VscodeMcp,
        ("settings.json", ".vscode") => Dialect::VscodeSettings,
        ("settings.json", "User") if grand.is_some_and(is_vscode_folder) => Dialect::VscodeSettings,
        ("mcp_config.json", "windsurf") => Dialect::Windsurf,
        ("settings.json", ".gemini") => Dialect::Gemini,
        ("settings.json", "zed" | ".zed") => Dialect::Zed,
        ("opencode.json" | "opencode.jsonc", _) => Dialect::Opencode,
        (n, _) if n.ends_with(".toml") => Dialect::Codex,
        _ => Dialect::Own,
    }
}

/// VS Code's own folder and its kin's (`Code`, `Code - Insiders`, `VSCodium`, `Cursor`'s is
/// not: it keeps servers in `~/.cursor`).
fn is_vscode_folder(name: &str) -> bool {
    matches!(name, "Code" | "Code - Insiders" | "VSCodium" | "Code - OSS")
}

/// Something about a file or a server that could not be carried over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Note {
    /// The server, if the note is about one.
    pub server: Option<String>,
    /// The field, as the tool names it.
    pub field: Option<String>,
    /// What happened to it.
    pub message: String,
}

impl Note {
    pub(crate) fn new(server: Option<&str>, field: Option<&str>, message: impl Into<String>) -> Note {
        Note { server: server.map(str::to_string), field: field.map(str::to_string), message: message.into() }
    }
}

/// A file of another tool in switchboard's shape: `{"servers": {...}, "inputs": [...]}`, what
/// was left out said in `notes`.
pub(crate) struct Canonical {
    pub root: Value,
    pub notes: Vec<Note>,
}

/// Reads `text` (the file at `path`, of `dialect`) into a value: TOML for Codex, JSON with
/// comments otherwise. Errors carry the line and column when known.
pub(crate) fn parse_text(dialect: Dialect, text: &str) -> Result<Value, (Option<(usize, usize)>, String)> {
    if dialect.is_toml() {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| line_col(text, s.start));
            (at, format!("not valid TOML: {}", e.message()))
        })?;
        return serde_json::to_value(table).map_err(|e| (None, format!("not valid TOML: {e}")));
    }
    serde_json::from_str(&super::jsonc::strip(text))
        .map_err(|e| (Some((e.line(), e.column())), format!("not valid JSON: {e}")))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The servers of a file of another tool, in switchboard's shape. `project_root` picks
/// Claude Code's local servers for this project out of `~/.claude.json`.
pub(crate) fn canonical(dialect: Dialect, root: &Value, project_root: &Path) -> Canonical {
    let mut notes = Vec::new();
    let obj = root.as_object().cloned().unwrap_or_default();
    let mut servers;
    let mut inputs = None;
    let take_map = |value: Option<&Value>, what: &str, notes: &mut Vec<Note>| -> Map<String, Value> {
        match value {
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                notes.push(Note::new(None, Some(what), format!("`{what}` is not an object of servers: not read")));
                Map::new()
            }
            None => Map::new(),
        }
    };
    match dialect {
        Dialect::Own => return Canonical { root: root.clone(), notes },
        Dialect::ClaudeDesktop | Dialect::Cursor | Dialect::Windsurf | Dialect::Gemini => {
            servers = take_map(obj.get("mcpServers"), "mcpServers", &mut notes);
        }
        // The common project file: written by many tools, some with `servers`.
        Dialect::McpJson => {
            servers = take_map(obj.get("servers"), "servers", &mut notes);
            servers.extend(take_map(obj.get("mcpServers"), "mcpServers", &mut notes));
            inputs = obj.get("inputs").cloned();
        }
        Dialect::ClaudeCodeUser => {
            servers = take_map(obj.get("mcpServers"), "mcpServers", &mut notes);
            // Claude Code's "local" servers: this project's, private to the person; they win
            // over the user's of the same name.
            if let Some(project) = claude_project(&obj, project_root) {
                let local = take_map(project.get("mcpServers"), "projects.mcpServers", &mut notes);
                servers.extend(local);
                let disabled = project.get("disabledMcpServers").and_then(Value::as_array);
                for name in disabled.into_iter().flatten().filter_map(Value::as_str) {
                    if let Some(Value::Object(entry)) = servers.get_mut(name) {
                        entry.insert("enabled".into(), Value::Bool(false));
                    }
                }
            }
        }
        Dialect::VscodeMcp => {
            servers = take_map(obj.get("servers"), "servers", &mut notes);
            inputs = obj.get("inputs").cloned();
        }
        Dialect::VscodeSettings => {
            let mcp = obj.get("mcp").and_then(Value::as_object);
            servers = take_map(mcp.and_then(|m| m.get("servers")), "mcp.servers", &mut notes);
            inputs = mcp.and_then(|m| m.get("inputs")).cloned();
        }
        Dialect::Codex => servers = take_map(obj.get("mcp_servers"), "mcp_servers", &mut notes),
        Dialect::Opencode => servers = take_map(obj.get("mcp"), "mcp", &mut notes),
        Dialect::Zed => servers = take_map(obj.get("context_servers"), "context_servers", &mut notes),
    }
    let mut out = Map::new();
    for (name, entry) in servers {
        if let Some(entry) = entries::normalize(dialect, &name, entry, &mut notes) {
            out.insert(name, entry);
        }
    }
    let mut root = Map::new();
    root.insert("servers".into(), Value::Object(out));
    if let Some(inputs) = inputs {
        root.insert("inputs".into(), inputs);
    }
    Canonical { root: Value::Object(root), notes }
}

/// `~/.claude.json`'s record of `project_root` (its keys are absolute paths).
fn claude_project<'a>(obj: &'a Map<String, Value>, project_root: &Path) -> Option<&'a Map<String, Value>> {
    let projects = obj.get("projects")?.as_object()?;
    let canonical = std::fs::canonicalize(project_root).ok();
    projects
        .iter()
        .find(|(k, _)| {
            let k = Path::new(k.as_str());
            k == project_root || canonical.as_deref() == Some(k)
        })
        .and_then(|(_, v)| v.as_object())
}

#[cfg(test)]
mod tests;

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::json;

use super::*;

fn servers(dialect: Dialect, root: serde_json::Value) -> (serde_json::Value, Vec<Note>) {
    let c = canonical(dialect, &root, Path::new("/work/proj"));
    (c.root["servers"].clone(), c.notes)
}

#[test]
fn files_are_told_apart_by_where_they_are() {
    for (path, dialect) in [
        ("/h/.config/Claude/claude_desktop_config.json", Dialect::ClaudeDesktop),
        ("/h/Library/Application Support/Claude/claude_desktop_config.json", Dialect::ClaudeDesktop),
        ("/h/.claude.json", Dialect::ClaudeCodeUser),
        ("/p/.mcp.json", Dialect::McpJson),
        ("/h/.cursor/mcp.json", Dialect::Cursor),
        ("/p/.vscode/mcp.json", Dialect::VscodeMcp),
        ("/h/.config/Code/User/mcp.json", Dialect::VscodeMcp),
        ("/h/.config/Code - Insiders/User/settings.json", Dialect::VscodeSettings),
        ("/p/.vscode/settings.json", Dialect::VscodeSettings),
        ("/h/.codeium/windsurf/mcp_config.json", Dialect::Windsurf),
        ("/h/.codex/config.toml", Dialect::Codex),
        ("/h/.gemini/settings.json", Dialect::Gemini),
        ("/h/.config/zed/settings.json", Dialect::Zed),
        ("/p/.zed/settings.json", Dialect::Zed),
        ("/h/.config/opencode/opencode.jsonc", Dialect::Opencode),
        ("/p/switchboard.json", Dialect::Own),
        ("/p/.switchboard/config.json", Dialect::Own),
        ("/h/somewhere/mcp.json", Dialect::Own),
        ("/h/somewhere/settings.json", Dialect::Own),
    ] {
        assert_eq!(detect(Path::new(path)), dialect, "{path}");
    }
}

#[test]
fn other_keys_of_their_files_are_left_alone() {
    let (s, notes) = servers(
        Dialect::VscodeSettings,
        json!({"editor.fontSize": 14, "workbench.colorTheme": "Dark", "mcp": {
            "servers": {"gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}},
            "inputs": [{"type": "promptString", "id": "token", "password": true}]
        }}),
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s["gh"]["url"], "https://api.example.com/mcp");
    let c = canonical(
        Dialect::VscodeSettings,
        &json!({"mcp": {"servers": {}, "inputs": [{"id": "token"}]}}),
        Path::new("/p"),
    );
    assert_eq!(c.root["inputs"][0]["id"], "token", "inputs come along");
    let (s, notes) = servers(
        Dialect::ClaudeDesktop,
        json!({"globalShortcut": "Ctrl+Space", "mcpServers": {"fs": {"command": "npx"}}}),
    );
    assert!(notes.is_empty() && s["fs"]["command"] == "npx");
}

#[test]
fn claude_code_local_servers_win_and_disabled_ones_stay_off() {
    let root = json!({
        "numStartups": 12,
        "mcpServers": {"gh": {"type": "http", "url": "https://user.example/mcp"}, "fs": {"command": "npx", "args": ["fs"]}},
        "projects": {
            "/work/proj": {
                "mcpServers": {"gh": {"type": "http", "url": "https://local.example/mcp", "headersHelper": "./h.sh"}},
                "disabledMcpServers": ["fs"],
                "allowedTools": []
            },
            "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}
        }
    });
    let (s, notes) = servers(Dialect::ClaudeCodeUser, root);
    assert_eq!(s["gh"]["url"], "https://local.example/mcp");
    assert_eq!(s["fs"]["enabled"], false);
    assert!(s.get("other").is_none(), "another project's servers are not this one's");
    assert!(notes.iter().any(|n| n.field.as_deref() == Some("headersHelper") && n.server.as_deref() == Some("gh")));
}

#[test]
fn cursor_windsurf_and_gemini_fields_become_ours() {
    let (s, _) = servers(
        Dialect::Cursor,
        json!({"mcpServers": {"api": {"url": "https://x/mcp", "auth": {"CLIENT_ID": "id", "CLIENT_SECRET": "${env:SECRET}", "scopes": ["read"]}}}}),
    );
    assert_eq!(s["api"]["oauth"], json!({"client_id": "id", "client_secret": "${SECRET}", "scopes": ["read"]}));
    let (s, _) = servers(
        Dialect::Windsurf,
        json!({"mcpServers": {"w": {"serverUrl": "https://w/mcp", "disabledTools": ["drop"], "disabled": true}}}),
    );
    assert_eq!(s["w"], json!({"url": "https://w/mcp", "tools": {"deny": ["drop"]}, "disabled": true}));
    let (s, notes) = servers(
        Dialect::Gemini,
        json!({"mcpServers": {
            "h": {"httpUrl": "https://h/mcp", "timeout": 30000, "trust": true, "includeTools": ["a"]},
            "s": {"url": "https://s/sse", "headers": {"Authorization": "Bearer $TOKEN"}}
        }}),
    );
    assert_eq!(
        s["h"],
        json!({"url": "https://h/mcp", "type": "http", "tool_timeout_ms": 30000, "tools": {"allow": ["a"]}})
    );
    assert_eq!(s["s"]["type"], "sse");
    assert_eq!(s["s"]["headers"]["Authorization"], "Bearer ${TOKEN}");
    assert!(notes.iter().any(|n| n.field.as_deref() == Some("trust")));
}

#[test]
fn codex_toml_is_read() {
    let text = r#"
model = "o4"
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
env = { API = "x" }
env_vars = ["HOME_TOKEN"]
startup_timeout_sec = 20
tool_timeout_sec = 1.5
enabled_tools = ["search"]
default_tools_approval_mode = "prompt"

[mcp_servers.remote]
url = "https://r/mcp"
bearer_token_env_var = "R_TOKEN"
http_headers = { "X-Team" = "blue" }
env_http_headers = { "X-Key" = "R_KEY" }
"#;
    let root = parse_text(Dialect::Codex, text).unwrap();
    let (s, notes) = servers(Dialect::Codex, root);
    assert_eq!(
        s["docs"],
        json!({"command": "npx", "args": ["-y", "docs-mcp"], "env": {"API": "x"}, "env_passthrough": ["HOME_TOKEN"],
               "startup_timeout_ms": 20000, "tool_timeout_ms": 1500, "tools": {"allow": ["search"]}})
    );
    assert_eq!(s["remote"]["headers"], json!({"X-Team": "blue", "X-Key": "${R_KEY}"}));
    assert_eq!(s["remote"]["bearer_token_env_var"], "R_TOKEN");
    assert!(notes.iter().any(|n| n.field.as_deref() == Some("default_tools_approval_mode")));
    let err = parse_text(Dialect::Codex, "[mcp_servers.x]\ncommand = \n").err().unwrap();
    assert_eq!(err.0.map(|a| a.0), Some(2), "{err:?}");
    assert!(err.1.starts_with("not valid TOML"), "{err:?}");
}

#[test]
fn opencode_and_zed_shapes() {
    let (s, notes) = servers(
        Dialect::Opencode,
        json!({"theme": "x", "mcp": {
            "local": {"type": "local", "command": ["npx", "-y", "srv"], "environment": {"K": "{env:K}"}, "enabled": true},
            "remote": {"type": "remote", "url": "https://o/mcp", "headers": {"A": "{file:~/.secret}"}, "oauth": false}
        }}),
    );
    assert_eq!(s["local"], json!({"command": "npx", "args": ["-y", "srv"], "env": {"K": "${K}"}, "enabled": true}));
    assert_eq!(s["remote"], json!({"url": "https://o/mcp", "headers": {"A": "{file:~/.secret}"}}));
    assert!(notes.iter().any(|n| n.server.as_deref() == Some("remote") && n.message.contains("{file:")));
    let (s, notes) = servers(
        Dialect::Zed,
        json!({"theme": "One", "context_servers": {
            "new": {"source": "custom", "command": "node", "args": ["s.js"], "env": {}},
            "old": {"command": {"path": "uvx", "args": ["srv"], "env": {"A": "b"}}, "settings": {}},
            "ext": {"source": "extension", "settings": {"key": "v"}},
            "web": {"url": "https://z/mcp"}
        }}),
    );
    assert_eq!(s["new"], json!({"command": "node", "args": ["s.js"], "env": {}}));
    assert_eq!(s["old"], json!({"command": "uvx", "args": ["srv"], "env": {"A": "b"}}));
    assert!(s.get("ext").is_none());
    assert_eq!(s["web"]["url"], "https://z/mcp");
    assert!(notes.iter().any(|n| n.server.as_deref() == Some("ext")));
}

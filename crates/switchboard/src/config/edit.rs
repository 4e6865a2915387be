//! Changing config files: add, remove, enable and disable a server.
//!
//! Edits keep the file's own shape (a `mcpServers` file stays one) and are written atomically
//! (temporary file in the same folder, then rename). Comments cannot survive a JSON rewrite;
//! [`FileShape::had_comments`] tells the caller so it can say so.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::jsonc;

/// Why an edit failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid JSON; it is left untouched.
    #[error("{path}:{line}:{column}: not valid JSON, not changed: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// No server of that name in the file.
    #[error("{path}: no server named `{name}`")]
    NotFound {
        /// The file.
        path: PathBuf,
        /// The server.
        name: String,
    },
    /// A server of that name already exists in the file.
    #[error("{path}: a server named `{name}` already exists (remove it first)")]
    Exists {
        /// The file.
        path: PathBuf,
        /// The server.
        name: String,
    },
    /// The server name is not allowed.
    #[error("{0}")]
    BadName(String),
}

/// A server to add, in the native shape.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewServer {
    /// Its name.
    pub name: String,
    /// Its entry (`{"command": .., "args": ..}` or `{"url": .., "headers": ..}`).
    pub entry: Value,
}

impl NewServer {
    /// A server to add.
    pub fn new(name: impl Into<String>, entry: Value) -> Self {
        NewServer { name: name.into(), entry }
    }
}

/// What an edit found about the file it changed.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct FileShape {
    /// The file had comments or trailing commas, which the rewrite dropped.
    pub had_comments: bool,
}

fn read(path: &Path) -> Result<(Value, FileShape), EditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Value::Object(Map::new()), FileShape::default()));
        }
        Err(source) => return Err(EditError::Io { path: path.into(), source }),
    };
    let stripped = jsonc::strip(&text);
    let had_comments = stripped != text;
    let value = serde_json::from_str(&stripped).map_err(|e| EditError::Parse {
        path: path.into(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    Ok((value, FileShape { had_comments }))
}

fn write(path: &Path, value: &Value) -> Result<(), EditError> {
    let io = |source| EditError::Io { path: path.into(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut text = serde_json::to_string_pretty(value).map_err(|e| io(std::io::Error::other(e)))?;
    text.push('\n');
    crate::fsutil::write_atomic(path, text.as_bytes(), None).map_err(io)
}

/// Every map of servers in the file, mutable, in the order the loader reads them.
fn server_maps(root: &mut Value) -> Vec<&mut Map<String, Value>> {
    let Some(obj) = root.as_object_mut() else { return Vec::new() };
    let mut maps = Vec::new();
    for (key, value) in obj.iter_mut() {
        match (key.as_str(), value) {
            ("servers" | "mcpServers", Value::Object(m)) => maps.push(m),
            ("mcp", Value::Object(m)) => {
                if super::entry::is_zcode(m) {
                    if let Some(Value::Object(inner)) = m.get_mut("servers") {
                        maps.push(inner);
                    }
                } else {
                    maps.push(m);
                }
            }
            _ => {}
        }
    }
    maps
}

/// Adds a server to `path` (created if missing).
pub fn write_server(path: &Path, server: &NewServer) -> Result<FileShape, EditError> {
    super::entry::validate_name(&server.name).map_err(EditError::BadName)?;
    let (mut root, shape) = read(path)?;
    if !root.is_object() {
        root = Value::Object(Map::new());
    }
    if server_maps(&mut root).iter().any(|m| m.contains_key(&server.name)) {
        return Err(EditError::Exists { path: path.into(), name: server.name.clone() });
    }
    let key = if root.get("mcpServers").is_some_and(Value::is_object) { "mcpServers" } else { "servers" };
    if let Some(obj) = root.as_object_mut() {
        let map = obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if let Some(m) = map.as_object_mut() {
            m.insert(server.name.clone(), server.entry.clone());
        }
    }
    write(path, &root)?;
    Ok(shape)
}

/// Removes a server from `path`.
pub fn remove_server(path: &Path, name: &str) -> Result<FileShape, EditError> {
    let (mut root, shape) = read(path)?;
    let mut removed = false;
    for map in server_maps(&mut root) {
        removed |= map.remove(name).is_some();
    }
    if !removed {
        return Err(EditError::NotFound { path: path.into(), name: name.into() });
    }
    write(path, &root)?;
    Ok(shape)
}

/// Sets `enabled` on a server in `path` (dropping the `enable`/`disabled` aliases).
pub fn set_enabled(path: &Path, name: &str, enabled: bool) -> Result<FileShape, EditError> {
    let (mut root, shape) = read(path)?;
    let mut found = false;
    for map in server_maps(&mut root) {
        if let Some(Value::Object(entry)) = map.get_mut(name) {
            entry.remove("enable");
            entry.remove("disabled");
            entry.insert("enabled".into(), Value::Bool(enabled));
            found = true;
        }
    }
    if !found {
        return Err(EditError::NotFound { path: path.into(), name: name.into() });
    }
    write(path, &root)?;
    Ok(shape)
}

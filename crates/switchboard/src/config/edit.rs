//! Changing config files: add, remove, enable and disable a server.
//!
//! Edits go through a concrete syntax tree (`jsonc-parser`'s CST), so everything the author
//! wrote that the edit does not touch stays as it was: comments, trailing commas, key order,
//! indentation. Edits keep the file's own shape (a `mcpServers` file stays one) and are written
//! atomically (temporary file in the same folder, then rename), each one under a lock on the
//! file held from its read to its write, so edits by processes at once all land. A file that
//! is not valid JSON (with comments) is never changed.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

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
    /// The change does not fit the entry as it is.
    #[error("{path}: server `{name}`: {why}")]
    Unfit {
        /// The file.
        path: PathBuf,
        /// The server.
        name: String,
        /// Why.
        why: String,
    },
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

/// The file as a syntax tree, checked first with the loader's own parser so errors carry the
/// same line and column as `config check` gives.
fn read(path: &Path) -> Result<(CstRootNode, Value), EditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}\n".to_string(),
        Err(source) => return Err(EditError::Io { path: path.into(), source }),
    };
    let parse_error = |line, column, message| EditError::Parse { path: path.into(), line, column, message };
    let text = if text.trim().is_empty() { "{}\n".to_string() } else { text };
    let value = serde_json::from_str::<Value>(&jsonc::strip(&text))
        .map_err(|e| parse_error(e.line(), e.column(), e.to_string()))?;
    let root = CstRootNode::parse(&text, &ParseOptions::default()).map_err(|e| parse_error(1, 1, e.to_string()))?;
    Ok((root, value))
}

/// Holds the file still from the edit's read to its write (creating it, empty, if `create`).
fn lock(path: &Path, create: bool) -> Result<Option<nix::fcntl::Flock<std::fs::File>>, EditError> {
    let io = |source| EditError::Io { path: path.into(), source };
    if create {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    crate::fsutil::lock_in_place(path, create, crate::fsutil::LOCK_WAIT).map_err(io)
}

fn write(path: &Path, root: &CstRootNode) -> Result<(), EditError> {
    let io = |source| EditError::Io { path: path.into(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut text = root.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    crate::fsutil::write_atomic(path, text.as_bytes(), None).map_err(io)
}

fn prop_name(prop: &jsonc_parser::cst::CstObjectProp) -> Option<String> {
    prop.name()?.decoded_value().ok()
}

/// Every map of servers in the file, in the order the loader reads them. `value` is the same
/// file parsed, to tell ZCode's `mcp` from OpenCode's exactly as the loader does.
fn server_maps(root: &CstRootNode, value: &Value) -> Vec<CstObject> {
    let zcode = value.get("mcp").and_then(Value::as_object).is_some_and(super::entry::is_zcode);
    let Some(obj) = root.object_value() else { return Vec::new() };
    let mut maps = Vec::new();
    for prop in obj.properties() {
        let Some(map) = prop.object_value() else { continue };
        match prop_name(&prop).as_deref() {
            Some("servers" | "mcpServers") => maps.push(map),
            Some("mcp") => {
                if zcode {
                    maps.extend(map.object_value("servers"));
                } else {
                    maps.push(map);
                }
            }
            _ => {}
        }
    }
    maps
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(m) => CstInputValue::Object(m.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// Adds a server to `path` (created if missing).
pub fn write_server(path: &Path, server: &NewServer) -> Result<(), EditError> {
    super::entry::validate_name(&server.name).map_err(EditError::BadName)?;
    let _held = lock(path, true)?;
    let (root, value) = read(path)?;
    if server_maps(&root, &value).iter().any(|m| m.get(&server.name).is_some()) {
        return Err(EditError::Exists { path: path.into(), name: server.name.clone() });
    }
    let obj = root.object_value_or_set();
    let key = if obj.object_value("mcpServers").is_some() { "mcpServers" } else { "servers" };
    obj.object_value_or_set(key).append(&server.name, input(&server.entry));
    write(path, &root)
}

/// Adds several servers to `path` (created if missing) at once, with the VS Code `inputs`
/// declarations they use (`{"id": ...}` objects; one whose id the file declares already is
/// left out): one write, so either all are added or none.
pub fn write_servers(path: &Path, servers: &[NewServer], inputs: &[Value]) -> Result<(), EditError> {
    for server in servers {
        super::entry::validate_name(&server.name).map_err(EditError::BadName)?;
    }
    let _held = lock(path, true)?;
    let (root, value) = read(path)?;
    let maps = server_maps(&root, &value);
    if let Some(server) = servers.iter().find(|s| maps.iter().any(|m| m.get(&s.name).is_some())) {
        return Err(EditError::Exists { path: path.into(), name: server.name.clone() });
    }
    let obj = root.object_value_or_set();
    let key = if obj.object_value("mcpServers").is_some() { "mcpServers" } else { "servers" };
    let map = obj.object_value_or_set(key);
    for server in servers {
        map.append(&server.name, input(&server.entry));
    }
    let declared: Vec<String> = super::inputs::declared(&value).into_iter().map(|d| d.id).collect();
    let new: Vec<&Value> = inputs
        .iter()
        .filter(|i| i.get("id").and_then(Value::as_str).is_some_and(|id| !declared.iter().any(|d| d == id)))
        .collect();
    if !new.is_empty() {
        let array = obj.array_value_or_set("inputs");
        for i in new {
            array.append(input(i));
        }
    }
    write(path, &root)
}

/// Removes a server from `path`.
pub fn remove_server(path: &Path, name: &str) -> Result<(), EditError> {
    let _held = lock(path, false)?;
    let (root, value) = read(path)?;
    let mut removed = false;
    for map in server_maps(&root, &value) {
        if let Some(prop) = map.get(name) {
            prop.remove();
            removed = true;
        }
    }
    if !removed {
        return Err(EditError::NotFound { path: path.into(), name: name.into() });
    }
    write(path, &root)
}

/// Disables a server in `path`: `"enabled": false` on its entry (the `enable`/`disabled`
/// aliases dropped). Without an entry there, `override_if_missing` adds one holding only that,
/// which disables the server of that name a file of lower precedence defines (the user file
/// over a repository's); otherwise that is [`EditError::NotFound`].
pub fn disable_server(path: &Path, name: &str, override_if_missing: bool) -> Result<(), EditError> {
    super::entry::validate_name(name).map_err(EditError::BadName)?;
    let _held = lock(path, override_if_missing)?;
    let (root, value) = read(path)?;
    let mut found = false;
    for map in server_maps(&root, &value) {
        let Some(entry) = map.get(name).and_then(|p| p.object_value()) else { continue };
        for alias in ["enable", "disabled"] {
            if let Some(prop) = entry.get(alias) {
                prop.remove();
            }
        }
        match entry.get("enabled") {
            Some(prop) => prop.set_value(CstInputValue::Bool(false)),
            None => {
                entry.append("enabled", CstInputValue::Bool(false));
            }
        }
        found = true;
    }
    if !found {
        if !override_if_missing {
            return Err(EditError::NotFound { path: path.into(), name: name.into() });
        }
        let obj = root.object_value_or_set();
        let key = if obj.object_value("mcpServers").is_some() { "mcpServers" } else { "servers" };
        obj.object_value_or_set(key)
            .append(name, CstInputValue::Object(vec![("enabled".into(), CstInputValue::Bool(false))]));
    }
    write(path, &root)
}

/// Adds `target` to the `sandbox` block of `name`'s entry in `path`, where `kind` says
/// (`filesystem.allowRead`, `filesystem.allowWrite`, `network.allowedDomains`): the line a
/// refusal names. Comments and the rest of the file are kept; a target already there is not
/// added twice.
pub fn allow_in_sandbox(
    path: &Path,
    name: &str,
    kind: crate::sandbox::RefusedKind,
    target: &str,
) -> Result<(), EditError> {
    use crate::sandbox::RefusedKind;
    super::entry::validate_name(name).map_err(EditError::BadName)?;
    let not_found = || EditError::NotFound { path: path.into(), name: name.into() };
    let unfit = |why: &str| EditError::Unfit { path: path.into(), name: name.into(), why: why.into() };
    let _held = lock(path, false)?.ok_or_else(not_found)?;
    let (root, value) = read(path)?;
    let entry = server_maps(&root, &value)
        .into_iter()
        .find_map(|m| m.get(name).and_then(|p| p.object_value()))
        .ok_or_else(not_found)?;
    let said = |ptr: &str| {
        ["servers", "mcpServers", "mcp", "mcp/servers"]
            .iter()
            .find_map(|m| value.pointer(&format!("/{m}/{}{ptr}", name.replace('~', "~0").replace('/', "~1"))))
            .cloned()
    };
    if said("/sandbox") == Some(Value::Bool(false)) {
        return Err(unfit("its sandbox is off (`\"sandbox\": false`): nothing to allow"));
    }
    let (section, key) = match kind {
        RefusedKind::Read => ("filesystem", "allowRead"),
        RefusedKind::Write => ("filesystem", "allowWrite"),
        RefusedKind::Domain => ("network", "allowedDomains"),
    };
    if kind == RefusedKind::Domain && !said("/sandbox/network").is_some_and(|n| n.is_object()) {
        return Err(unfit("its network is not limited to `allowedDomains`: nothing to allow"));
    }
    let list = entry.object_value_or_set("sandbox").object_value_or_set(section).array_value_or_set(key);
    let present = said(&format!("/sandbox/{section}/{key}"))
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|items| items.iter().any(|i| i.as_str() == Some(target)));
    if !present {
        list.append(CstInputValue::String(target.to_string()));
    }
    write(path, &root)
}

/// Enables a server in `path` by taking away what disables it there (`"enabled": false`,
/// `"enable": false`, `"disabled": true`); an entry left with nothing (an override) goes.
/// Returns whether the file disabled it (and was changed); a file that has no entry for it is
/// left alone.
pub fn enable_server(path: &Path, name: &str) -> Result<bool, EditError> {
    let Some(_held) = lock(path, false)? else { return Ok(false) };
    let (root, value) = read(path)?;
    let mut changed = false;
    for map in server_maps(&root, &value) {
        let Some(prop) = map.get(name) else { continue };
        let Some(entry) = prop.object_value() else { continue };
        for (key, disabling) in [("enabled", false), ("enable", false), ("disabled", true)] {
            if let Some(p) = entry.get(key)
                && p.value().and_then(|v| v.as_boolean_lit()).map(|b| b.value()) == Some(disabling)
            {
                p.remove();
                changed = true;
            }
        }
        if changed && entry.properties().is_empty() {
            prop.remove();
        }
    }
    if changed {
        write(path, &root)?;
    }
    Ok(changed)
}

/// What [`add_policy_rule`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyEdit {
    /// The glob was added (false: the list had it already).
    pub added: bool,
    /// The other lists of the same file it was taken out of (`allow X` takes `X` out of that
    /// file's `deny` and `ask`, where it would win).
    pub moved_from: Vec<&'static str>,
}

/// Adds `glob` to the `policy.<list>` of `path` (`allow`, `ask` or `deny`; the file is created
/// if missing), taking the same glob out of the file's other two lists.
pub fn add_policy_rule(path: &Path, list: &'static str, glob: &str) -> Result<PolicyEdit, EditError> {
    if !matches!(list, "allow" | "ask" | "deny") {
        return Err(EditError::BadName(format!("`{list}` is not a policy list (allow, ask, deny)")));
    }
    crate::glob::check(glob).map_err(EditError::BadName)?;
    let _held = lock(path, true)?;
    let (root, _) = read(path)?;
    let policy = root.object_value_or_set().object_value_or_set("policy");
    let has = |array: &jsonc_parser::cst::CstArray| {
        array
            .elements()
            .into_iter()
            .find(|e| e.as_string_lit().and_then(|s| s.decoded_value().ok()).as_deref() == Some(glob))
    };
    let mut moved_from = Vec::new();
    for other in ["allow", "ask", "deny"].into_iter().filter(|o| *o != list) {
        if let Some(array) = policy.array_value(other)
            && let Some(element) = has(&array)
        {
            element.remove();
            moved_from.push(other);
        }
    }
    let array = policy.array_value_or_set(list);
    let added = has(&array).is_none();
    if added {
        array.append(CstInputValue::String(glob.to_string()));
    }
    if added || !moved_from.is_empty() {
        write(path, &root)?;
    }
    Ok(PolicyEdit { added, moved_from })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_rules_are_added_with_comments_kept_and_moved_between_lists() {
        let text = "{\n  // mine\n  \"servers\": {},\n  \"policy\": {\"deny\": [\"mcp__a__*\"]}\n}\n";
        let out =
            edit_text(text, |p| add_policy_rule(p, "allow", "mcp__a__*").map(|e| assert_eq!(e.moved_from, ["deny"])));
        assert!(out.contains("// mine"), "{out}");
        let v: Value = serde_json::from_str(&jsonc::strip(&out)).unwrap_or_default();
        assert_eq!(v["policy"]["allow"], serde_json::json!(["mcp__a__*"]));
        assert_eq!(v["policy"]["deny"], serde_json::json!([]));
        let again = edit_text(&out, |p| add_policy_rule(p, "allow", "mcp__a__*").map(|e| assert!(!e.added)));
        assert_eq!(again, out);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bad = add_policy_rule(&dir.path().join("c.json"), "ask", "[bad");
        assert!(matches!(bad, Err(EditError::BadName(m)) if m.contains("bad glob")));
        assert!(!dir.path().join("c.json").exists(), "nothing written for a bad glob");
    }

    #[test]
    fn a_refusal_is_allowed_in_the_servers_own_entry_once_comments_kept() {
        use crate::sandbox::RefusedKind;
        let text = "{\n  // mine\n  \"servers\": {\"h\": {\"command\": \"x\"}}\n}\n";
        let out = edit_text(text, |p| allow_in_sandbox(p, "h", RefusedKind::Read, "~/.kube"));
        let again = edit_text(&out, |p| allow_in_sandbox(p, "h", RefusedKind::Read, "~/.kube"));
        assert_eq!(again, out, "not added twice");
        let out = edit_text(&out, |p| allow_in_sandbox(p, "h", RefusedKind::Write, "/srv/out"));
        assert!(out.contains("// mine"), "{out}");
        let v: Value = serde_json::from_str(&jsonc::strip(&out)).unwrap_or_default();
        assert_eq!(
            v["servers"]["h"]["sandbox"]["filesystem"],
            serde_json::json!({"allowRead": ["~/.kube"], "allowWrite": ["/srv/out"]})
        );
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.json");
        std::fs::write(&path, r#"{"servers": {"off": {"command": "x", "sandbox": false}, "open": {"command": "x"}}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let e =
            allow_in_sandbox(&path, "off", RefusedKind::Read, "/x").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("its sandbox is off"), "{e}");
        let e = allow_in_sandbox(&path, "open", RefusedKind::Domain, "a.com")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not limited to `allowedDomains`"), "{e}");
        let e =
            allow_in_sandbox(&path, "nope", RefusedKind::Read, "/x").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("no server named `nope`"), "{e}");
    }

    fn edit_text(text: &str, f: impl FnOnce(&Path) -> Result<(), EditError>) -> String {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.json");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        f(&path).unwrap_or_else(|e| panic!("{e}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    const COMMENTED: &str = r#"{
  // my servers
  "mcpServers": {
    /* the one I use */
    "a": {"command": "x", "disabled": true}, // keep me
    "b": {"command": "y"},
  },
}
"#;

    #[test]
    fn comments_survive_every_edit() {
        let added =
            edit_text(COMMENTED, |p| write_server(p, &NewServer::new("c", serde_json::json!({"command": "z"}))));
        assert!(
            added.contains("// my servers") && added.contains("/* the one I use */") && added.contains("// keep me")
        );
        assert!(added.contains(r#""c": {"#) && added.contains(r#""command": "z""#), "{added}");
        let removed = edit_text(COMMENTED, |p| remove_server(p, "b"));
        assert!(removed.contains("// keep me") && !removed.contains(r#""b""#), "{removed}");
        let enabled = edit_text(COMMENTED, |p| enable_server(p, "a").map(drop));
        assert!(enabled.contains("// keep me") && !enabled.contains("enabled"), "{enabled}");
        assert!(!enabled.contains("disabled"), "{enabled}");
        for text in [added, removed, enabled] {
            let value: Value = serde_json::from_str(&jsonc::strip(&text)).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert!(value["mcpServers"].is_object());
        }
    }

    #[test]
    fn a_new_file_gets_the_native_shape_and_bad_json_is_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("new.json");
        write_server(&path, &NewServer::new("n", serde_json::json!({"url": "https://e.com/mcp"})))
            .unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(value["servers"]["n"]["url"], "https://e.com/mcp");

        let broken = "{\n  \"servers\": {\"a\": 1 \"b\": 2}\n}";
        std::fs::write(&path, broken).unwrap_or_else(|e| panic!("{e}"));
        let err = remove_server(&path, "n").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("new.json:2:"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), broken);
    }

    #[test]
    fn enable_takes_away_what_disables_and_an_override_is_added_and_removed_whole() {
        let text = "{\n  \"servers\": {\"a\": {\"command\": \"x\", \"enabled\": false}}\n}\n";
        let out = edit_text(text, |p| enable_server(p, "a").map(drop));
        let value: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(
            value["servers"]["a"],
            serde_json::json!({"command": "x"}),
            "enabled: false taken away, not true written"
        );
        // An override in a file that does not define the server.
        let out = edit_text("{}\n", |p| disable_server(p, "repo", true));
        let value: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(value["servers"]["repo"], serde_json::json!({"enabled": false}));
        let back = edit_text(&out, |p| enable_server(p, "repo").map(drop));
        let value: Value = serde_json::from_str(&back).unwrap_or_else(|e| panic!("{e}: {back}"));
        assert_eq!(value["servers"], serde_json::json!({}), "the override goes whole");
        let err = edit_text_err("{}\n", |p| disable_server(p, "nope", false));
        assert!(err.contains("no server named `nope`"), "{err}");
    }

    fn edit_text_err(text: &str, f: impl FnOnce(&Path) -> Result<(), EditError>) -> String {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.json");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        f(&path).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn zcode_files_are_edited_in_place() {
        let text = r#"{"mcp": {"servers": {"z": {"command": "q"}}, "timeout": 5}}"#;
        let out = edit_text(text, |p| disable_server(p, "z", false));
        let value: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(value["mcp"]["servers"]["z"]["enabled"], false);
        assert_eq!(value["mcp"]["timeout"], 5);
    }
}

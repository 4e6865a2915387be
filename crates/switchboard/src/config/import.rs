//! Bringing other tools' servers into switchboard's own file: [`scan`] reads what each tool's
//! files hold (in switchboard's shape, what cannot be carried said in notes), [`plan_import`]
//! decides what becomes of each server against the file written to (added, renamed because
//! the name is taken, there already, found twice, skipped and why), and [`apply_import`]
//! writes the plan in one edit that keeps the file's comments, with the `inputs` the servers
//! use and the values given for them so far.
//!
//! Secrets stay as the source had them: a `${VAR}` reference stays one (`${env:VAR}` is
//! written `${VAR}`), `${input:ID}` stays one with its declaration; a value written out in the
//! source is copied as it was.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::foreign::{self, KnownFile, Note, Tool};
use super::{EditError, InputStore, NewServer, Scope, ServerEntry};

/// One server found in another tool's file.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FoundServer {
    /// Its name there.
    pub name: String,
    /// Its entry in switchboard's shape, variables as written.
    pub entry: Value,
    /// What was not carried over.
    pub notes: Vec<Note>,
    /// Why it cannot be a switchboard server, if it cannot.
    pub problem: Option<String>,
    /// The inputs (`${input:ID}`) it uses, as the file declares them.
    pub inputs: Vec<Value>,
}

/// One file of another tool, read.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Found {
    /// The file.
    pub source: KnownFile,
    /// Its servers, in the file's order.
    pub servers: Vec<FoundServer>,
    /// Why it could not be read, if it could not.
    pub error: Option<String>,
}

/// Reads each of `files` that exists. `project_root` picks Claude Code's local servers;
/// `env` is the environment (for checking entries, never written anywhere).
pub fn scan(files: &[KnownFile], project_root: &Path, env: &HashMap<String, String>) -> Vec<Found> {
    let mut out = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.push(Found { source: file.clone(), servers: Vec::new(), error: Some(format!("cannot read: {e}")) });
                continue;
            }
        };
        let dialect = foreign::detect(&file.path);
        let value = match foreign::parse_text(dialect, &text) {
            Ok(v) => v,
            Err((at, message)) => {
                let at = at.map(|(l, c)| format!("{l}:{c}: ")).unwrap_or_default();
                out.push(Found { source: file.clone(), servers: Vec::new(), error: Some(format!("{at}{message}")) });
                continue;
            }
        };
        let canonical = foreign::canonical(dialect, &value, project_root);
        let declared = super::inputs::declared(&canonical.root);
        let raw_inputs: Vec<Value> =
            canonical.root.get("inputs").and_then(Value::as_array).cloned().unwrap_or_default();
        let servers = canonical.root.get("servers").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut found = Vec::new();
        for (name, entry) in servers {
            let notes: Vec<Note> =
                canonical.notes.iter().filter(|n| n.server.as_deref() == Some(name.as_str())).cloned().collect();
            let used = super::inputs::referenced(&entry);
            let inputs = raw_inputs
                .iter()
                .filter(|i| i.get("id").and_then(Value::as_str).is_some_and(|id| used.contains(id)))
                .cloned()
                .collect();
            let undeclared: Vec<&String> = used.iter().filter(|id| !declared.iter().any(|d| &d.id == *id)).collect();
            let problem = check(&sanitize(&name), &entry, &file.path, env).or_else(|| {
                undeclared.first().map(|id| format!("uses `${{input:{id}}}`, which its file does not declare"))
            });
            found.push(FoundServer { name, entry, notes, problem, inputs });
        }
        // Entries that cannot be servers at all (a Zed extension's): said, not imported.
        for note in &canonical.notes {
            if let Some(name) = &note.server
                && !found.iter().any(|f| &f.name == name)
            {
                let problem = Some(note.message.clone());
                found.push(FoundServer {
                    name: name.clone(),
                    entry: Value::Null,
                    notes: Vec::new(),
                    problem,
                    inputs: Vec::new(),
                });
            }
        }
        out.push(Found { source: file.clone(), servers: found, error: None });
    }
    out
}

/// Why `entry` cannot be a switchboard server, if it cannot. Variables need not be set yet:
/// each one it names counts as set.
fn check(name: &str, entry: &Value, path: &Path, env: &HashMap<String, String>) -> Option<String> {
    // switchboard itself (README's `claude mcp add switchboard -- switchboard gateway` followed
    // in that tool): imported, every gateway would start another.
    if let Some(command) = entry.get("command").and_then(Value::as_str) {
        let args: Vec<String> = entry
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        if let Some(how) = crate::chain::switchboard_in(command, &args) {
            let mut line = vec![command.to_string()];
            line.extend(args);
            return Some(format!(
                "this is switchboard itself (`{}`: {how}): imported, switchboard would start itself without end",
                crate::text::excerpt(&line.join(" "), 120)
            ));
        }
    }
    let mut vars = env.clone();
    for var in variables(entry) {
        vars.entry(var).or_insert_with(|| "x".into());
    }
    // An env file need not exist yet either.
    let mut entry = entry.clone();
    if let Some(obj) = entry.as_object_mut() {
        obj.remove("envFile");
        obj.remove("env_file");
    }
    let (parsed, _) = super::parse_server(name, &entry, Scope::User, path, &vars);
    match parsed {
        ServerEntry::Valid(_) => None,
        ServerEntry::Invalid(i) => Some(i.message),
    }
}

/// The names of every `${NAME}`, `${env:NAME}` and (as `input:ID`) `${input:ID}` in `v`.
fn variables(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut walk_str = |s: &str| {
        let mut rest = s;
        while let Some(at) = rest.find("${") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(['}', ':']).map(|e| {
                // `${env:NAME}` and `${input:ID}`: up to the `}`.
                if after.starts_with("env:") || after.starts_with("input:") { after.find('}').unwrap_or(e) } else { e }
            }) else {
                break;
            };
            let name = after[..end].strip_prefix("env:").unwrap_or(&after[..end]);
            out.push(name.to_string());
            rest = &after[end..];
        }
    };
    fn strings<'a>(v: &'a Value, f: &mut dyn FnMut(&'a str)) {
        match v {
            Value::String(s) => f(s),
            Value::Array(a) => a.iter().for_each(|i| strings(i, f)),
            Value::Object(m) => m.values().for_each(|i| strings(i, f)),
            _ => {}
        }
    }
    strings(v, &mut |s| walk_str(s));
    out
}

/// What becomes of one found server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Action {
    /// Added under its own name.
    Add,
    /// Added under another name: its own cannot be a switchboard name, or is taken by a
    /// different server.
    Rename {
        /// Its name in the source.
        from: String,
        /// Why.
        why: RenameReason,
    },
    /// The file written to has the same server already (under `name`).
    AlreadyThere {
        /// Its name there.
        name: String,
    },
    /// Another source of this import has the same server (added from there).
    Duplicate {
        /// That file.
        of: PathBuf,
    },
    /// Not imported.
    Skip {
        /// Why.
        reason: String,
    },
}

/// Why an imported server gets another name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RenameReason {
    /// Its name has characters a switchboard name cannot have (spaces, `/`, letters beyond
    /// ASCII...): they became `-`.
    Characters,
    /// Its name is over 64 characters.
    TooLong,
    /// Another server has the name.
    Taken,
}

/// One found server and what becomes of it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Planned {
    /// The tool it comes from.
    pub tool: Tool,
    /// The file it comes from.
    pub file: PathBuf,
    /// The name it gets (its own unless renamed).
    pub name: String,
    /// What happens to it.
    #[serde(flatten)]
    pub action: Action,
    /// Its entry as it is written (shown with the values of `env`, `headers` and the OAuth
    /// client secret left out: a source may hold them written out).
    #[serde(serialize_with = "redacted")]
    pub entry: Value,
    /// What was not carried over.
    pub notes: Vec<Note>,
    /// The inputs it uses.
    #[serde(skip)]
    pub inputs: Vec<Value>,
}

/// An entry with its secret values replaced (names kept).
fn redacted<S: serde::Serializer>(entry: &Value, s: S) -> Result<S::Ok, S::Error> {
    let mut shown = entry.clone();
    for key in ["env", "environment", "headers", "http_headers"] {
        if let Some(Value::Object(m)) = shown.get_mut(key) {
            m.values_mut().for_each(|v| *v = Value::String(super::REDACTED.into()));
        }
    }
    if let Some(Value::Object(oauth)) = shown.get_mut("oauth") {
        for key in ["client_secret", "clientSecret"] {
            if let Some(v) = oauth.get_mut(key) {
                *v = Value::String(super::REDACTED.into());
            }
        }
    }
    serde::Serialize::serialize(&shown, s)
}

impl Planned {
    /// Whether it is written.
    pub fn writes(&self) -> bool {
        matches!(self.action, Action::Add | Action::Rename { .. })
    }
}

/// The servers of `target` (switchboard's file the import writes to) by name, as written.
fn existing(target: &Path) -> BTreeMap<String, Value> {
    let Ok(text) = std::fs::read_to_string(target) else { return BTreeMap::new() };
    let Ok(value) = serde_json::from_str::<Value>(&super::jsonc::strip(&text)) else { return BTreeMap::new() };
    let mut out = BTreeMap::new();
    for key in ["servers", "mcpServers"] {
        if let Some(m) = value.get(key).and_then(Value::as_object) {
            out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    out
}

/// An entry as compared: without its description (which the import writes).
fn essence(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
    }
    v
}

/// Decides what becomes of each found server when imported into `target`. `skip_files` are
/// files switchboard reads already (a project's `.mcp.json`, included files): their servers
/// are there without an import.
pub fn plan_import(found: &[Found], target: &Path, skip_files: &[PathBuf]) -> Vec<Planned> {
    let there = existing(target);
    let mut taken: Vec<String> = there.keys().cloned().collect();
    let mut planned: Vec<Planned> = Vec::new();
    for f in found {
        for s in &f.servers {
            let mut entry = s.entry.clone();
            let action = if let Some(reason) = &s.problem {
                Action::Skip { reason: reason.clone() }
            } else if skip_files.contains(&f.source.path) {
                Action::Skip { reason: "switchboard reads this file already".into() }
            } else if let Some((name, _)) = there.iter().find(|(_, v)| essence(v) == essence(&entry)) {
                Action::AlreadyThere { name: name.clone() }
            } else if let Some(p) = planned.iter().find(|p| p.writes() && essence(&p.entry) == essence(&entry)) {
                Action::Duplicate { of: p.file.clone() }
            } else {
                Action::Add
            };
            let mut name = sanitize(&s.name);
            let mut action = action;
            if matches!(action, Action::Add) {
                let why = if name == s.name {
                    RenameReason::Taken
                } else if s.name.len() > 64 && super::entry::validate_name(&s.name[..64.min(s.name.len())]).is_ok() {
                    RenameReason::TooLong
                } else {
                    RenameReason::Characters
                };
                if name != s.name || taken.contains(&name) {
                    name = free_name(&name, f.source.tool, &taken);
                    action = Action::Rename { from: s.name.clone(), why };
                }
                taken.push(name.clone());
                if let Some(obj) = entry.as_object_mut()
                    && !obj.contains_key("description")
                {
                    let from = format!("imported from {} ({})", f.source.tool.title(), f.source.path.display());
                    obj.insert("description".into(), Value::String(from));
                }
            }
            planned.push(Planned {
                tool: f.source.tool,
                file: f.source.path.clone(),
                name,
                action,
                entry,
                notes: s.notes.clone(),
                inputs: s.inputs.clone(),
            });
        }
    }
    planned
}

/// A server name switchboard takes (letters, digits, `_`, `-`, `.`; at most 64): every run of
/// other characters becomes one `-` (none at either end), cut to 56 (room for a suffix).
fn sanitize(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || "_-.".contains(c) {
            s.push(c);
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s: String = s.trim_matches('-').chars().take(56).collect();
    let s = s.trim_end_matches('-');
    if s.is_empty() { "server".into() } else { s.to_string() }
}

/// `name` with the tool's id after it (`github-cursor`), then a number, until it is free.
fn free_name(name: &str, tool: Tool, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == name) {
        return name.to_string();
    }
    let base = format!("{name}-{}", tool.id());
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    candidate
}

/// Writes the servers of `plan` that are added into `target` at once, with the inputs they
/// use; the values given for those inputs in their own files are kept for `target` too
/// (`store`), so nobody is asked again. Returns how many servers were written.
pub fn apply_import(plan: &[Planned], target: &Path, store: Option<&InputStore>) -> Result<usize, EditError> {
    let writes: Vec<&Planned> = plan.iter().filter(|p| p.writes()).collect();
    if writes.is_empty() {
        return Ok(0);
    }
    let servers: Vec<NewServer> = writes.iter().map(|p| NewServer::new(p.name.clone(), p.entry.clone())).collect();
    let mut inputs: Vec<Value> = Vec::new();
    for p in &writes {
        for i in &p.inputs {
            if !inputs.iter().any(|have| have.get("id") == i.get("id")) {
                inputs.push(i.clone());
            }
        }
    }
    super::edit::write_servers(target, &servers, &inputs)?;
    if let Some(store) = store {
        for p in &writes {
            let Ok(given) = store.values_for(&p.file) else { continue };
            for id in super::inputs::referenced(&p.entry) {
                if let Some(v) = given.get(&id) {
                    // The import itself is done; a value not copied is asked for once more.
                    let _ = store.set(target, &id, v);
                }
            }
        }
    }
    Ok(writes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_found_in_every_spelling() {
        let v = serde_json::json!({"a": "${X}-${env:Y}", "b": ["${input:api-key}", "${Z:-d}"]});
        assert_eq!(variables(&v), vec!["X", "Y", "input:api-key", "Z"]);
    }

    #[test]
    fn a_plan_shows_no_secret() {
        let entry = serde_json::json!({"command": "x", "env": {"TOKEN": "ghp_written_out"},
            "headers": {"Authorization": "Bearer abc"}, "oauth": {"client_secret": "s3"}});
        let planned = Planned {
            tool: Tool::Cursor,
            file: PathBuf::from("/f"),
            name: "x".into(),
            action: Action::Add,
            entry,
            notes: Vec::new(),
            inputs: Vec::new(),
        };
        let shown = serde_json::to_string(&planned).unwrap_or_default();
        assert!(shown.contains("TOKEN") && shown.contains("Authorization"), "{shown}");
        assert!(!shown.contains("ghp_") && !shown.contains("Bearer abc") && !shown.contains("s3\""), "{shown}");
    }

    #[test]
    fn names_are_made_free_and_valid() {
        let taken = vec!["github".to_string(), "github-cursor".to_string()];
        assert_eq!(free_name("github", Tool::Cursor, &taken), "github-cursor-2");
        assert_eq!(free_name("fs", Tool::Cursor, &taken), "fs");
        assert_eq!(sanitize("my server@1"), "my-server-1");
    }
}

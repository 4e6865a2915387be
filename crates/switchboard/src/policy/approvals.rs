//! "Always allow", remembered: `<data>/approvals.json` (0600, written atomically, changed under
//! `approvals.json.lock`), or a team's store's document `approvals` (changed in one
//! transaction under its lock: every gateway on the store shares them). A record is keyed by the server's launch digest (what runs, or the
//! URL: see [`crate::trust::launch_digest`]) and the tool's own name, and holds a digest of the
//! tool's definition (description, input schema, annotations). A tool whose definition changed
//! since it was approved is asked about again: the "rug pull", where a server changes what an
//! approved tool says or takes after the person said yes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::JsonStore;
use crate::store::db::Database;

/// The name of the approvals' document in a team's store.
const DOCUMENT: &str = "approvals";

fn body_of(file: &File) -> Value {
    serde_json::to_value(file).unwrap_or(Value::Null)
}

/// Why the approvals file could not be used.
pub type ApprovalsError = crate::store::StoreError;

/// One remembered approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Remembered {
    /// The server's name when it was approved.
    pub server: String,
    /// The server's launch digest.
    pub launch: String,
    /// The tool's own name.
    pub tool: String,
    /// Its model-visible name when it was approved.
    pub name: String,
    /// The digest of its definition when it was approved.
    pub definition: String,
    /// When (Unix seconds).
    pub approved_at: u64,
    /// The definition as it was approved ([`definition_of`]), to show what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<Value>,
}

/// What the file says of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lookup {
    /// Approved "always", with this very definition.
    Approved,
    /// Approved once, but its definition has changed since: ask again.
    Changed,
    /// Never approved "always".
    Unknown,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    approvals: Vec<Remembered>,
}

/// The remembered approvals.
#[derive(Debug)]
pub struct ApprovalStore {
    file: File,
}

impl ApprovalStore {
    /// The file in `data_dir`.
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("approvals.json")
    }

    /// Opens `<data_dir>/approvals.json` (absent: empty).
    pub fn open(data_dir: &Path) -> Result<Self, ApprovalsError> {
        Ok(ApprovalStore { file: Self::store(data_dir).read()? })
    }

    /// Changes the records under the lock (read, changed, written while no other process can).
    pub fn update<R>(data_dir: &Path, change: impl FnOnce(&mut ApprovalStore) -> R) -> Result<R, ApprovalsError> {
        Self::store(data_dir).update(|file: &mut File| {
            let mut store = ApprovalStore { file: std::mem::take(file) };
            let out = change(&mut store);
            *file = store.file;
            out
        })
    }

    /// The approvals kept in a team's store.
    pub async fn open_in(db: &Database) -> Result<Self, ApprovalsError> {
        match db.document(DOCUMENT).await? {
            Some(body) => Ok(ApprovalStore { file: Self::decode(db, body)? }),
            None => Ok(ApprovalStore { file: File::default() }),
        }
    }

    /// [`ApprovalStore::update`] in a team's store.
    pub async fn update_in<R>(
        db: &Database,
        change: impl FnOnce(&mut ApprovalStore) -> R,
    ) -> Result<R, ApprovalsError> {
        db.update_document(DOCUMENT, |body| {
            let file = match body.map(|b| Self::decode(db, b)) {
                Some(Ok(file)) => file,
                // Not ours: left as it is (the change is not made), and said.
                Some(Err(e)) => return (None, Err(e)),
                None => File::default(),
            };
            let mut store = ApprovalStore { file };
            let out = change(&mut store);
            (Some(body_of(&store.file)), Ok(out))
        })
        .await?
    }

    fn decode(db: &Database, body: Value) -> Result<File, ApprovalsError> {
        serde_json::from_value(body).map_err(|e| crate::store::StoreError::Corrupt {
            path: PathBuf::from(format!("{} [{DOCUMENT}]", db.shown())),
            what: "approvals document",
            message: e.to_string(),
        })
    }

    fn store(data_dir: &Path) -> JsonStore {
        JsonStore::new(Self::path(data_dir), "approvals file")
    }

    /// What is remembered of `tool` of the server launched as `launch`.
    pub fn lookup(&self, launch: &str, tool: &str, definition: &str) -> Lookup {
        let mut found = Lookup::Unknown;
        for r in self.file.approvals.iter().filter(|r| r.launch == launch && r.tool == tool) {
            if r.definition == definition {
                return Lookup::Approved;
            }
            found = Lookup::Changed;
        }
        found
    }

    /// The approval of `tool` of the server launched as `launch`, when its definition (digest
    /// `definition`) changed since.
    pub fn changed(&self, launch: &str, tool: &str, definition: &str) -> Option<&Remembered> {
        if self.lookup(launch, tool, definition) != Lookup::Changed {
            return None;
        }
        self.file.approvals.iter().rev().find(|r| r.launch == launch && r.tool == tool)
    }

    /// Remembers an approval (replacing one of the same server launch and tool), with the
    /// definition approved.
    pub fn remember(
        &mut self,
        server: &str,
        launch: &str,
        tool: &str,
        name: &str,
        definition: &str,
        approved: Option<Value>,
    ) {
        self.file.approvals.retain(|r| !(r.launch == launch && r.tool == tool));
        let approved_at = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        self.file.approvals.push(Remembered {
            server: server.into(),
            launch: launch.into(),
            tool: tool.into(),
            name: name.into(),
            definition: definition.into(),
            approved_at,
            approved,
        });
    }

    /// Forgets every approval `matches` picks; returns them.
    pub fn revoke(&mut self, mut matches: impl FnMut(&Remembered) -> bool) -> Vec<Remembered> {
        let (gone, kept) = std::mem::take(&mut self.file.approvals).into_iter().partition(|r| matches(r));
        self.file.approvals = kept;
        gone
    }

    /// Every remembered approval, oldest first.
    pub fn list(&self) -> &[Remembered] {
        &self.file.approvals
    }
}

/// The digest of what a tool says of itself that a person approves: its description, input
/// schema and annotations (object keys sorted, so the same definition in another key order is
/// the same).
pub fn definition_digest(tool: &Tool) -> String {
    let mut text = String::new();
    canonical(&definition_of(tool), &mut text);
    super::audit::hex(&Sha256::digest(text.as_bytes()))
}

/// What a person approves of a tool: its description, input schema and annotations.
pub fn definition_of(tool: &Tool) -> Value {
    serde_json::json!({
        "description": tool.description,
        "inputSchema": &*tool.input_schema,
        "annotations": tool.annotations,
    })
}

/// What changed between two definitions ([`definition_of`]), for the person: the description
/// before and after, the parameters added and removed, and whether the rest of the schema or
/// the annotations changed.
pub fn what_changed(old: &Value, new: &Value) -> String {
    let mut said = Vec::new();
    let text = |v: &Value| crate::text::excerpt(v.as_str().unwrap_or(""), 300);
    if old["description"] != new["description"] {
        said.push(format!("description: \"{}\" → \"{}\"", text(&old["description"]), text(&new["description"])));
    }
    let props = |v: &Value| -> Vec<String> {
        v["inputSchema"]["properties"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    let (before, after) = (props(old), props(new));
    let added: Vec<&String> = after.iter().filter(|p| !before.contains(p)).collect();
    let removed: Vec<&String> = before.iter().filter(|p| !after.contains(p)).collect();
    if !added.is_empty() {
        said.push(format!("parameters added: {}", added.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if !removed.is_empty() {
        said.push(format!("parameters removed: {}", removed.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if added.is_empty() && removed.is_empty() && old["inputSchema"] != new["inputSchema"] {
        said.push("the input schema changed".into());
    }
    if old["annotations"] != new["annotations"] {
        said.push(format!("annotations: {} → {}", old["annotations"], new["annotations"]));
    }
    if said.is_empty() { "the definition changed".into() } else { said.join("; ") }
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = m.get(k) {
                    canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(description: &str, schema: Value) -> Tool {
        serde_json::from_value(serde_json::json!({"name": "t", "description": description, "inputSchema": schema}))
            .unwrap_or_else(|_| Tool::new("t", "", std::sync::Arc::new(Default::default())))
    }

    #[test]
    fn digests_follow_the_definition_not_key_order() {
        let a = tool("adds", serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}}}));
        let b: Tool = serde_json::from_str(
            r#"{"name": "t", "inputSchema": {"properties": {"a": {"type": "number"}}, "type": "object"}, "description": "adds"}"#,
        )
        .unwrap_or_else(|_| Tool::new("t", "", std::sync::Arc::new(Default::default())));
        assert_eq!(definition_digest(&a), definition_digest(&b));
        let c = tool("adds, and sends your keys to a server", serde_json::json!({"type": "object"}));
        assert_ne!(definition_digest(&a), definition_digest(&c));
    }

    #[test]
    fn remembered_then_changed_then_revoked() {
        let dir = tempfile::tempdir().ok();
        let data = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let r = ApprovalStore::update(&data, |s| s.remember("gh", "L", "create", "mcp__gh__create", "D1", None));
        assert!(r.is_ok());
        let store = ApprovalStore::open(&data).unwrap();
        assert_eq!(store.lookup("L", "create", "D1"), Lookup::Approved);
        assert_eq!(store.lookup("L", "create", "D2"), Lookup::Changed);
        assert_eq!(store.lookup("L2", "create", "D1"), Lookup::Unknown);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ApprovalStore::path(&data)).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        let gone = ApprovalStore::update(&data, |s| s.revoke(|r| r.name == "mcp__gh__create")).unwrap_or_default();
        assert_eq!(gone.len(), 1);
        assert_eq!(ApprovalStore::open(&data).unwrap().lookup("L", "create", "D1"), Lookup::Unknown);
    }
}

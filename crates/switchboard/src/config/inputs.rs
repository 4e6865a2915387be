//! VS Code's `inputs`: values a config asks the person for once (`${input:ID}`), such as an
//! API key. The file declares them (`"inputs": [{"type": "promptString", "id": "api-key",
//! "description": "...", "password": true}]`); the values are never written in a config file
//! but kept in the data folder (`inputs.json`, 0600, written whole, under a lock), per config
//! file and id, as tokens are. The loader puts them where `${input:ID}` stands; one not given
//! yet makes its server wait, and is listed in [`super::LoadedConfig::inputs_missing`] so a
//! host with a person at a terminal can ask.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::JsonStore;

/// One input a config file declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InputDecl {
    /// Its id (`${input:ID}`).
    pub id: String,
    /// What to ask.
    pub description: Option<String>,
    /// Whether the value is a secret (not echoed while typed).
    pub password: bool,
    /// The value offered when the person gives none.
    pub default: Option<String>,
    /// For VS Code's `pickString`: the values to choose from.
    pub options: Vec<String>,
}

/// An input a server needs that has no value yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MissingInput {
    /// The config file that uses it (values are kept per file).
    pub file: PathBuf,
    /// What the file declares of it (just the id when it declares nothing).
    pub input: InputDecl,
    /// The servers of the file that use it.
    pub servers: BTreeSet<String>,
    /// Each person's own to give, not the host's: in a team's config (`identity`) every server
    /// that uses it is each signed-in person's own (`sharing`), so each person gives theirs
    /// on the gateway's values page, and the host is not asked.
    pub each_persons: bool,
}

/// The declarations in a file's `inputs` array (those without an id are skipped).
pub(crate) fn declared(root: &Value) -> Vec<InputDecl> {
    let Some(items) = root.get("inputs").and_then(Value::as_array) else { return Vec::new() };
    items
        .iter()
        .filter_map(|item| {
            let s = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_string);
            let options = item.get("options").and_then(Value::as_array).map_or_else(Vec::new, |o| {
                o.iter()
                    .filter_map(|v| v.as_str().or_else(|| v.get("value").and_then(Value::as_str)).map(str::to_string))
                    .collect()
            });
            Some(InputDecl {
                id: s("id")?,
                description: s("description"),
                password: item.get("password").and_then(Value::as_bool).unwrap_or(false),
                default: s("default"),
                options,
            })
        })
        .collect()
}

/// The ids of every `${input:ID}` in `value`'s strings.
pub(crate) fn referenced(value: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::String(s) => {
                let mut rest = s.as_str();
                while let Some(at) = rest.find("${input:") {
                    let after = &rest[at + "${input:".len()..];
                    let Some(end) = after.find('}') else { break };
                    out.insert(after[..end].to_string());
                    rest = &after[end + 1..];
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(m) => m.iter().filter(|(k, _)| k.as_str() != "inputs").for_each(|(_, v)| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(value, &mut out);
    out
}

/// For each input id, the servers of `root` whose entries use it (in every shape of server
/// map: `servers`, `mcpServers`, and ZCode's `mcpServers.servers`).
pub(crate) fn users(root: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let maps = [root.get("servers"), root.get("mcpServers"), root.get("mcpServers").and_then(|m| m.get("servers"))];
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for map in maps.into_iter().flatten().filter_map(Value::as_object) {
        for (server, entry) in map {
            for id in referenced(entry) {
                out.entry(id).or_default().insert(server.clone());
            }
        }
    }
    out
}

/// Why the input store could not be used.
pub type InputsError = crate::store::StoreError;

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    /// Config file → id → value.
    #[serde(default)]
    files: BTreeMap<PathBuf, BTreeMap<String, String>>,
}

/// The values given for inputs, in `<data_dir>/inputs.json`.
#[derive(Debug, Clone)]
pub struct InputStore {
    store: JsonStore,
}

impl InputStore {
    /// The store of the data folder `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        InputStore::at(data_dir.join("inputs.json"))
    }

    /// The store kept at `path`.
    pub fn at(path: PathBuf) -> Self {
        InputStore { store: JsonStore::new(path, "input store") }
    }

    /// Where it is kept.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    fn read(&self) -> Result<StoreFile, InputsError> {
        self.store.read()
    }

    /// The values given for `file`'s inputs, by id.
    pub fn values_for(&self, file: &Path) -> Result<BTreeMap<String, String>, InputsError> {
        Ok(self.read()?.files.remove(file).unwrap_or_default())
    }

    /// Every (file, id) with a value, values left out.
    pub fn list(&self) -> Result<Vec<(PathBuf, String)>, InputsError> {
        let store = self.read()?;
        Ok(store.files.into_iter().flat_map(|(f, ids)| ids.into_keys().map(move |id| (f.clone(), id))).collect())
    }

    /// Keeps `value` for `file`'s input `id`.
    pub fn set(&self, file: &Path, id: &str, value: &str) -> Result<(), InputsError> {
        self.update(|s| {
            s.files.entry(file.to_path_buf()).or_default().insert(id.to_string(), value.to_string());
        })
    }

    /// Forgets input `id` (of `file`, or of every file); returns how many values went.
    pub fn forget(&self, file: Option<&Path>, id: &str) -> Result<usize, InputsError> {
        self.update(|s| {
            let mut gone = 0;
            for (f, ids) in &mut s.files {
                if file.is_none_or(|want| want == f) && ids.remove(id).is_some() {
                    gone += 1;
                }
            }
            s.files.retain(|_, ids| !ids.is_empty());
            gone
        })
    }

    fn update<R>(&self, change: impl FnOnce(&mut StoreFile) -> R) -> Result<R, InputsError> {
        self.store.update(change)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn declarations_and_references() {
        let root = serde_json::json!({
            "inputs": [
                {"type": "promptString", "id": "key", "description": "API key", "password": true},
                {"type": "pickString", "id": "region", "options": ["eu", "us"], "default": "eu"},
                {"type": "promptString"}
            ],
            "servers": {"a": {"command": "x", "env": {"K": "${input:key}", "R": "${input:region}-${input:key}"}}}
        });
        let decls = declared(&root);
        assert_eq!(decls.len(), 2);
        assert!(decls[0].password && decls[0].description.as_deref() == Some("API key"));
        assert_eq!(decls[1].options, vec!["eu", "us"]);
        assert_eq!(referenced(&root), BTreeSet::from(["key".to_string(), "region".to_string()]));
    }

    #[test]
    fn values_are_kept_per_file_at_0600() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = InputStore::new(dir.path());
        assert!(store.values_for(Path::new("/a.json")).is_ok_and(|v| v.is_empty()));
        store.set(Path::new("/a.json"), "key", "one").unwrap_or_else(|e| panic!("{e}"));
        store.set(Path::new("/b.json"), "key", "two").unwrap_or_else(|e| panic!("{e}"));
        let a = store.values_for(Path::new("/a.json")).unwrap_or_default();
        assert_eq!(a.get("key").map(String::as_str), Some("one"));
        let mode = std::fs::metadata(store.path()).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert_eq!(store.forget(Some(Path::new("/b.json")), "key").unwrap_or(0), 1);
        assert_eq!(store.list().unwrap_or_default(), vec![(PathBuf::from("/a.json"), "key".to_string())]);
    }
}

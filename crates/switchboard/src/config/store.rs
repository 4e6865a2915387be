//! The `store` block: a team's state on PostgreSQL ([`crate::store::db`]). Read from the user
//! file, a `--config` file or the managed file (which wins), never from a project's:
//!
//! ```json
//! "store": {"url": "postgres://switchboard@db.internal:5432/switchboard", "key_file": "/etc/switchboard/store.keys"}
//! ```
//!
//! `${VAR}` in `url` and `key_file` is expanded (not in the managed file); a relative
//! `key_file` is taken from the file's folder.

use serde_json::Value;

use super::Severity;
use super::expand::expand;
use super::file::FileCtx;
use crate::store::db::StoreConfig;

/// Parses `store`; each mistake is a diagnostic naming its field, and a block with one is not
/// used (nor is the data folder then: the caller refuses to start a team's host without it).
pub(crate) fn parse(value: &Value, ctx: &mut FileCtx<'_>) -> Option<StoreConfig> {
    let mut errors: Vec<(String, String)> = Vec::new();
    let mut url = None;
    let mut key_file = None;
    match value.as_object() {
        None => errors.push(("store".into(), "`store` must be an object with `url` (and `key_file`)".into())),
        Some(obj) => {
            for (key, v) in obj {
                let field = format!("store.{key}");
                let text = v.as_str().map(|s| expand(s, ctx.env).map_err(|e| e.to_string()));
                match (key.as_str(), text) {
                    ("url", Some(Ok(s))) if StoreConfig::is_store_url(&s) => url = Some(s),
                    ("url", Some(Err(e))) => errors.push((field, e)),
                    ("url", _) => errors.push((field, "`url` must be `postgres://user@host:port/database`".into())),
                    ("key_file", Some(Ok(s))) if !s.is_empty() => {
                        let folder = ctx.path.parent().unwrap_or(std::path::Path::new("."));
                        key_file = Some(folder.join(s));
                    }
                    ("key_file", Some(Err(e))) => errors.push((field, e)),
                    ("key_file", _) => {
                        errors.push((field, "`key_file` must be the path of the key ring's file".into()))
                    }
                    (other, _) => errors.push((
                        field,
                        format!("unknown field `{}`: use `url` and `key_file`", crate::text::excerpt(other, 60)),
                    )),
                }
            }
            if url.is_none() && !errors.iter().any(|(f, _)| f == "store.url") {
                errors.push(("store".into(), "`store` needs `url`: `postgres://user@host:port/database`".into()));
            }
        }
    }
    for (field, message) in &errors {
        ctx.diag(Severity::Error, None, Some(field), message.clone());
    }
    let mut config = StoreConfig::new(&url?);
    config.key_file = key_file;
    errors.is_empty().then_some(config)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;
    use crate::config::Scope;

    fn parsed(value: Value) -> (Option<StoreConfig>, Vec<String>) {
        let env = HashMap::from([("DB_HOST".to_string(), "db.internal".to_string())]);
        let mut diagnostics = Vec::new();
        let mut ctx = FileCtx {
            path: Path::new("/etc/sb/config.json"),
            text: "",
            scope: Scope::User,
            env: &env,
            diagnostics: &mut diagnostics,
        };
        let config = parse(&value, &mut ctx);
        (config, diagnostics.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn a_url_and_a_key_file_beside_the_config() {
        let (config, errors) =
            parsed(serde_json::json!({"url": "postgres://sb@${DB_HOST}:5432/sb", "key_file": "store.keys"}));
        let config = config.unwrap_or_else(|| panic!("{errors:?}"));
        assert_eq!(config.url, "postgres://sb@db.internal:5432/sb");
        assert_eq!(config.key_file.as_deref(), Some(Path::new("/etc/sb/store.keys")));
    }

    #[test]
    fn each_mistake_names_its_field_and_the_block_is_not_used() {
        let (config, errors) = parsed(serde_json::json!({"url": "mysql://x", "keyfile": "k"}));
        assert!(config.is_none());
        assert!(errors.iter().any(|e| e.contains("store.url")), "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("store.keyfile") && e.contains("unknown field")), "{errors:?}");
        let (config, errors) = parsed(serde_json::json!({"key_file": "k"}));
        assert!(config.is_none() && errors.iter().any(|e| e.contains("needs `url`")), "{errors:?}");
    }
}

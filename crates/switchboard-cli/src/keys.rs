//! `switchboard keys`: API keys for service accounts of a protected gateway; `switchboard
//! store`: a team's store and its key ring.

use anyhow::{Result, bail};
use serde_json::json;
use switchboard::identity::api_keys::ApiKeys;

use crate::ctx::{Ctx, print_json};
use crate::render::safe;

/// `switchboard keys create|list|revoke`.
pub(crate) async fn keys(ctx: &Ctx, action: &str, name: Option<&str>, groups: &[String], json: bool) -> Result<u8> {
    // In the team's store when there is one: every gateway on it accepts them.
    let keys = match ctx.store().await? {
        Some(db) => ApiKeys::in_store(db),
        None => ApiKeys::open(&ctx.paths.data_dir),
    };
    match (action, name) {
        // A secret is never in JSON output: the key is printed once, as plain text.
        ("create", Some(_)) if json => {
            bail!("`switchboard keys create` prints the key once, as plain text (a secret is never in JSON output)")
        }
        ("create", Some(name)) => {
            let key = keys.create(name, groups).await?;
            out!("{key}");
            note!(
                "the key `{}` is shown this once (only its hash is kept in {}); callers send it as \
                 `Authorization: Bearer <key>` to a gateway with `identity`",
                safe(name),
                keys.shown()
            );
        }
        ("revoke", Some(name)) => {
            keys.revoke(name).await?;
            if json {
                print_json(&json!({"revoked": name}))?;
            } else {
                out!("revoked `{}`", safe(name));
            }
        }
        ("list", _) => {
            let all = keys.list().await?;
            if json {
                let list: Vec<_> =
                    all.iter().map(|k| json!({"name": k.name, "groups": k.groups, "created": k.created})).collect();
                print_json(&json!({"keys": list}))?;
            } else if all.is_empty() {
                out!("No API keys (`switchboard keys create NAME --group GROUP` makes one).");
            } else {
                for k in &all {
                    out!("{}  groups: {}", safe(&k.name), safe(&k.groups.join(", ")));
                }
            }
        }
        (other, None) => bail!("`switchboard keys {other}` needs the key's name"),
        (other, Some(_)) => bail!("`switchboard keys {other}`: use create, list or revoke"),
    }
    Ok(0)
}

/// `switchboard store key|status|reseal`.
pub(crate) async fn store(ctx: &Ctx, action: &str, id: Option<&str>, json: bool) -> Result<u8> {
    if action == "key" {
        let Some(id) = id else { bail!("name the key: `switchboard store key ID` (letters, digits, `-`, `_`)") };
        if json {
            bail!("`switchboard store key` prints the key once, as plain text (a secret is never in JSON output)");
        }
        let line = switchboard::store::seal::KeyRing::new_key_line(id)?;
        // Checked as a ring reads it (the id's characters).
        switchboard::store::seal::KeyRing::parse(&line)?;
        out!("{line}");
        note!(
            "a line for the key ring (`store.key_file`, mode 0600, or {}): add it after the others on every \
             replica, then move it first",
            switchboard::store::seal::KEYS_ENV
        );
        return Ok(0);
    }
    let Some(db) = ctx.store().await? else {
        bail!("no team's store: set `store.url` in your user or managed file, or give `--store postgres://…`")
    };
    match action {
        "reseal" => {
            let n = db.reseal().await?;
            if json {
                print_json(&json!({"resealed": n, "store": db.shown()}))?;
            } else {
                out!("sealed {n} secret(s) again with the key ring's first key ({})", db.shown());
            }
        }
        _ => {
            let status = db.status().await?;
            if json {
                print_json(&json!({"store": db.shown(), "status": status}))?;
            } else {
                out!("{}: schema version {}, {} people", db.shown(), status.schema, status.people);
                for (kind, key, n) in &status.secrets {
                    out!("  {n} {kind} secret(s) sealed with key `{}`", safe(key));
                }
            }
        }
    }
    db.close().await;
    Ok(0)
}

//! The `identity` block: a gateway or `serve` over HTTP as an OAuth 2.1 protected resource
//! (see [`crate::identity`]). Read from the user file, a `--config` file or the managed file,
//! never from a project's (a repository must not decide who may call):
//!
//! ```json
//! "identity": {
//!   "issuers": [{"issuer": "https://login.example.com/realms/dev", "groups_claim": "realm_access.roles"}],
//!   "scopes": ["mcp"],
//!   "resource": "https://mcp.example.com/mcp",
//!   "admin_groups": ["platform"]
//! }
//! ```
//!
//! An issuer may be given as its identifier alone (`"issuers": ["https://…"]`).

use serde_json::Value;

use super::Severity;
use super::file::FileCtx;
use crate::identity::{DashboardClient, IdentityConfig, Introspection, Issuer};

/// Parses `identity`; each mistake is a diagnostic naming its field, and a block with one is
/// not used (a gateway must not run open because an issuer was misspelt).
pub(crate) fn parse(value: &Value, ctx: &mut FileCtx<'_>) -> Option<IdentityConfig> {
    let mut errors = Vec::new();
    let config = read(value, ctx.env, &mut errors);
    for (field, message) in &errors {
        ctx.diag(Severity::Error, None, Some(field), message.clone());
    }
    config.filter(|_| errors.is_empty())
}

fn read(value: &Value, env: &Env, errors: &mut Vec<(String, String)>) -> Option<IdentityConfig> {
    let Some(obj) = value.as_object() else {
        errors.push((
            "identity".into(),
            "`identity` must be an object with `issuers`, `scopes`, `resource` and `admin_groups`".into(),
        ));
        return None;
    };
    let mut config = IdentityConfig::new(Vec::new());
    for (key, v) in obj {
        let field = format!("identity.{key}");
        match key.as_str() {
            "issuers" => match v.as_array() {
                Some(items) if !items.is_empty() => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(issuer) = issuer(item, &format!("{field}[{i}]"), env, errors) {
                            config.issuers.push(issuer);
                        }
                    }
                }
                _ => errors.push((field, "`issuers` must be a non-empty list of issuers".into())),
            },
            "scopes" => match strings(v) {
                Some(s) => config.scopes = s,
                None => errors.push((field, "`scopes` must be a list of scope names".into())),
            },
            "resource" => match v.as_str().and_then(|s| url(s).ok().map(|()| s)) {
                Some(s) => config.resource = Some(s.to_string()),
                None => errors.push((field, "`resource` must be the http(s) URL clients reach (…/mcp)".into())),
            },
            "dashboard_client" => match dashboard_client(v, env) {
                Ok(c) => config.dashboard_client = Some(c),
                Err((at, message)) => errors.push((format!("{field}{at}"), message)),
            },
            "admin_groups" => match strings(v) {
                Some(s) => config.admin_groups = s,
                None => errors.push((field, "`admin_groups` must be a list of group names".into())),
            },
            other => errors.push((
                field,
                format!(
                    "unknown field `{}`: use `issuers`, `scopes`, `resource`, `admin_groups` and `dashboard_client`",
                    crate::text::excerpt(other, 60)
                ),
            )),
        }
    }
    if config.issuers.is_empty() && !errors.iter().any(|(f, _)| f.starts_with("identity.issuers")) {
        errors.push((
            "identity".into(),
            "`identity` needs `issuers`: the authorization servers whose tokens are accepted".into(),
        ));
    }
    Some(config)
}

fn issuer(item: &Value, field: &str, env: &Env, errors: &mut Vec<(String, String)>) -> Option<Issuer> {
    if let Some(id) = item.as_str() {
        return match url(id) {
            Ok(()) => Some(Issuer::new(id)),
            Err(e) => {
                errors.push((field.to_string(), e));
                None
            }
        };
    }
    let Some(obj) = item.as_object() else {
        errors.push((field.to_string(), "an issuer is its identifier (a URL) or an object with `issuer`".into()));
        return None;
    };
    let Some(id) = obj.get("issuer").and_then(Value::as_str) else {
        errors.push((
            format!("{field}.issuer"),
            "each issuer needs `issuer`: its identifier, as its tokens' `iss`".into(),
        ));
        return None;
    };
    if let Err(e) = url(id) {
        errors.push((format!("{field}.issuer"), e));
        return None;
    }
    let mut issuer = Issuer::new(id);
    for (key, v) in obj {
        let here = format!("{field}.{key}");
        match (key.as_str(), v) {
            ("issuer", _) => {}
            ("jwks_uri", Value::String(s)) if url(s).is_ok() => issuer.jwks_uri = Some(s.clone()),
            ("audiences", v) if strings(v).is_some() => issuer.audiences = strings(v).unwrap_or_default(),
            ("groups_claim", Value::String(s)) if !s.is_empty() => issuer.groups_claim = s.clone(),
            ("name_claim", Value::String(s)) if !s.is_empty() => issuer.name_claim = s.clone(),
            ("introspection", v) => match introspection(v, env) {
                Ok(i) => issuer.introspection = Some(i),
                Err((at, message)) => errors.push((format!("{here}{at}"), message)),
            },
            ("jwks_uri", _) => errors.push((here, "`jwks_uri` must be an http(s) URL".into())),
            ("audiences", _) => errors.push((here, "`audiences` must be a list of strings".into())),
            ("groups_claim" | "name_claim", _) => errors.push((here, format!("`{key}` must be a claim name"))),
            (other, _) => errors.push((
                here,
                format!(
                    "unknown field `{}`: use `issuer`, `jwks_uri`, `audiences`, `groups_claim`, `name_claim` and `introspection`",
                    crate::text::excerpt(other, 60)
                ),
            )),
        }
    }
    Some(issuer)
}

type Env = std::collections::HashMap<String, String>;

/// `{"url", "client_id", "client_secret_env"}`: the secret is read from the environment
/// variable named (a config file holds no secret).
fn introspection(v: &Value, env: &Env) -> Result<Introspection, (String, String)> {
    let obj = v.as_object().ok_or_else(|| {
        (String::new(), "`introspection` must be an object with `url`, `client_id` and `client_secret_env`".to_string())
    })?;
    let text = |key: &str| obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let url_ =
        text("url").ok_or_else(|| (".url".to_string(), "`url` must be the introspection endpoint".to_string()))?;
    url(url_).map_err(|e| (".url".to_string(), e))?;
    let client_id = text("client_id").ok_or_else(|| (".client_id".to_string(), "`client_id` is needed".to_string()))?;
    let var = text("client_secret_env").ok_or_else(|| {
        (
            ".client_secret_env".to_string(),
            "`client_secret_env` must name the environment variable with the secret".to_string(),
        )
    })?;
    // The managed file is read without the loader's variables: the process's own then.
    let secret =
        env.get(var).cloned().or_else(|| std::env::var(var).ok()).filter(|s| !s.is_empty()).ok_or_else(|| {
            (".client_secret_env".to_string(), format!("the environment variable `{var}` is not set"))
        })?;
    if let Some(k) = obj.keys().find(|k| !["url", "client_id", "client_secret_env"].contains(&k.as_str())) {
        return Err((format!(".{k}"), "unknown field: use `url`, `client_id` and `client_secret_env`".into()));
    }
    Ok(Introspection::new(url_, client_id, secret))
}

/// `{"client_id", "client_secret_env"?}`: the dashboard's client at the first issuer (the
/// secret, for a confidential client, from the environment variable named).
fn dashboard_client(v: &Value, env: &Env) -> Result<DashboardClient, (String, String)> {
    let obj = v.as_object().ok_or_else(|| {
        (String::new(), "`dashboard_client` must be an object with `client_id` (and `client_secret_env`)".to_string())
    })?;
    if let Some(k) = obj.keys().find(|k| !["client_id", "client_secret_env"].contains(&k.as_str())) {
        return Err((format!(".{k}"), "unknown field: use `client_id` and `client_secret_env`".into()));
    }
    let text = |key: &str| obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let client_id = text("client_id").ok_or_else(|| (".client_id".to_string(), "`client_id` is needed".to_string()))?;
    let secret = match text("client_secret_env") {
        None => None,
        Some(var) => {
            Some(env.get(var).cloned().or_else(|| std::env::var(var).ok()).filter(|s| !s.is_empty()).ok_or_else(
                || (".client_secret_env".to_string(), format!("the environment variable `{var}` is not set")),
            )?)
        }
    };
    Ok(DashboardClient::new(client_id, secret))
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|s| s.as_str().map(str::to_string)).collect()
}

fn url(s: &str) -> Result<(), String> {
    match reqwest::Url::parse(s) {
        Ok(u) if u.scheme() == "https" || u.scheme() == "http" => Ok(()),
        _ => Err(format!("`{}` is not an http(s) URL", crate::text::excerpt(s, 100))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parsed(v: Value) -> (Option<IdentityConfig>, Vec<(String, String)>) {
        let mut errors = Vec::new();
        let config = read(&v, &Env::from([("SB_SECRET".to_string(), "s3".to_string())]), &mut errors);
        (config.filter(|_| errors.is_empty()), errors)
    }

    #[test]
    fn issuers_scopes_and_the_resource_are_read_and_mistakes_named() {
        let (config, errors) = parsed(serde_json::json!({
            "issuers": ["https://a.example", {"issuer": "https://b.example/realms/x",
                         "groups_claim": "realm_access.roles", "audiences": ["api://sb"]}],
            "scopes": ["mcp"], "resource": "https://mcp.example.com/mcp", "admin_groups": ["platform"]}));
        assert!(errors.is_empty(), "{errors:?}");
        let config = config.unwrap();
        assert_eq!(config.issuers.len(), 2);
        assert_eq!(config.issuers[1].groups_claim, "realm_access.roles");
        assert_eq!(config.issuers[1].audiences, ["api://sb"]);
        assert_eq!(config.scopes, ["mcp"]);
        assert_eq!(config.resource.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(config.admin_groups, ["platform"]);
        let (config, errors) =
            parsed(serde_json::json!({"issuers": [{"issuer": "login.example", "grups": 1}], "scope": []}));
        assert!(config.is_none());
        let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["identity.issuers[0].issuer", "identity.scope"], "{errors:?}");
        let (config, errors) = parsed(serde_json::json!({"scopes": ["mcp"]}));
        assert!(config.is_none() && errors[0].1.contains("needs `issuers`"), "{errors:?}");
        let (config, errors) = parsed(serde_json::json!({"issuers": [{"issuer": "https://a.example",
            "introspection": {"url": "https://a.example/introspect", "client_id": "sb", "client_secret_env": "SB_SECRET"}}]}));
        let i = config.unwrap().issuers[0].introspection.clone().unwrap();
        assert!(errors.is_empty() && i.client_secret == "s3" && !format!("{i:?}").contains("s3"));
        let (_, errors) = parsed(serde_json::json!({"issuers": [{"issuer": "https://a.example",
            "introspection": {"url": "https://a.example/introspect", "client_id": "sb", "client_secret_env": "UNSET_X"}}]}));
        assert_eq!(errors[0].0, "identity.issuers[0].introspection.client_secret_env", "{errors:?}");
        // The dashboard's client: public, or confidential with its secret from the environment.
        let (config, errors) = parsed(serde_json::json!({"issuers": ["https://a.example"],
            "dashboard_client": {"client_id": "dash", "client_secret_env": "SB_SECRET"}}));
        let c = config.unwrap().dashboard_client.unwrap();
        assert!(errors.is_empty() && c.client_id == "dash" && c.client_secret.as_deref() == Some("s3"));
        assert!(!format!("{c:?}").contains("s3"), "never in logs");
        let (config, errors) = parsed(serde_json::json!({"issuers": ["https://a.example"],
            "dashboard_client": {"client_id": "dash", "client_secret_env": "UNSET_X"}}));
        assert!(config.is_none());
        assert_eq!(errors[0].0, "identity.dashboard_client.client_secret_env", "{errors:?}");
    }
}

//! The environment a stdio server gets: a minimal default set from the host, plus the names
//! the config passes through, plus the config's own `env`. Host secrets (tokens, keys) do not
//! reach a server unless asked for; `inherit_env` opts into everything.

use std::collections::HashMap;

use crate::config::StdioConfig;

/// Host variables every server gets, when set. Names ending in `*` are prefixes.
pub const DEFAULT_ENV_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_*",
    "TERM",
    "TMPDIR",
    "TZ",
    "XDG_*",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
];

fn is_default(name: &str) -> bool {
    DEFAULT_ENV_VARS.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *p,
    })
}

/// Builds the child's environment.
pub fn child_env(config: &StdioConfig, host: &HashMap<String, String>) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = host
        .iter()
        .filter(|(k, _)| config.inherit_env || is_default(k) || config.env_passthrough.iter().any(|p| p == *k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend(config.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(passthrough: &[&str], inherit: bool) -> StdioConfig {
        StdioConfig {
            command: "x".into(),
            command_as_written: "x".into(),
            cwd_as_written: None,
            env_file: None,
            env_file_as_written: None,
            args: vec![],
            args_as_written: vec![],
            env: [("MINE".to_string(), "1".to_string())].into(),
            cwd: None,
            env_passthrough: passthrough.iter().map(|s| s.to_string()).collect(),
            inherit_env: inherit,
            sandbox: None,
        }
    }

    #[test]
    fn secrets_stay_home_unless_asked_for() {
        let host: HashMap<String, String> = [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("XDG_RUNTIME_DIR", "/run"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("GITHUB_TOKEN", "t"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let env = child_env(&cfg(&[], false), &host);
        assert!(env.contains_key("PATH") && env.contains_key("LC_ALL") && env.contains_key("XDG_RUNTIME_DIR"));
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY") && !env.contains_key("GITHUB_TOKEN"));
        assert_eq!(env.get("MINE").map(String::as_str), Some("1"));
        let env = child_env(&cfg(&["GITHUB_TOKEN"], false), &host);
        assert!(env.contains_key("GITHUB_TOKEN") && !env.contains_key("AWS_SECRET_ACCESS_KEY"));
        let env = child_env(&cfg(&[], true), &host);
        assert!(env.contains_key("AWS_SECRET_ACCESS_KEY"));
    }
}

//! `${VAR}` and `${VAR:-default}` expansion in config values.
//!
//! Variables come from an explicit map (the host environment at load time), never read from
//! the process here, so tests and embedders choose what a config can see. `$$` is a literal `$`.

use std::collections::HashMap;

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${NAME}` with no default and `NAME` unset.
    #[error("environment variable `{0}` is not set (use `${{{0}:-default}}` to give a default)")]
    Unset(String),
    /// `${` without its closing `}`.
    #[error("unterminated `${{` in `{0}`")]
    Unterminated(String),
    /// `${}` or a name with characters other than letters, digits and `_`.
    #[error("invalid variable name `{0}`")]
    BadName(String),
}

/// Expands every `${VAR}` / `${VAR:-default}` in `input` from `env`.
pub fn expand(input: &str, env: &HashMap<String, String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or_else(|| ExpandError::Unterminated(input.to_string()))?;
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ExpandError::BadName(name.to_string()));
            }
            match (env.get(name).filter(|v| !v.is_empty()), default) {
                (Some(v), _) => out.push_str(v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => return Err(ExpandError::Unset(name.to_string())),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> HashMap<String, String> {
        HashMap::from([("HOME".into(), "/home/u".into()), ("EMPTY".into(), String::new())])
    }

    #[test]
    fn expands_set_default_and_literal() {
        assert_eq!(expand("${HOME}/x", &env()), Ok("/home/u/x".into()));
        assert_eq!(expand("${NOPE:-d}-${HOME:-z}", &env()), Ok("d-/home/u".into()));
        assert_eq!(expand("${EMPTY:-fallback}", &env()), Ok("fallback".into()));
        assert_eq!(expand("cost $5 and $$HOME", &env()), Ok("cost $5 and $HOME".into()));
        assert_eq!(expand("${NOPE:-}", &env()), Ok(String::new()));
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(expand("a ${TOKEN} b", &env()), Err(ExpandError::Unset("TOKEN".into())));
        assert!(matches!(expand("${HOME", &env()), Err(ExpandError::Unterminated(_))));
        assert!(matches!(expand("${a-b}", &env()), Err(ExpandError::BadName(_))));
        let msg = expand("${API_KEY}", &env()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("API_KEY"), "{msg}");
    }
}

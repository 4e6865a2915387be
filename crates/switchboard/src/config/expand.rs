//! `${VAR}` and `${VAR:-default}` expansion in config values, as shells do it.
//!
//! Variables come from an explicit map (the host environment at load time), never read from
//! the process here, so tests and embedders choose what a config can see. `$$` is a literal
//! `$`. `${VAR}` is the variable's value (empty if it is set but empty; an error if unset);
//! `${VAR:-default}` is the default when the variable is unset or empty, and the default is
//! expanded too, so `${A:-${B}}` and `${A:-${B:-c}}` nest. Messages quote at most a short
//! excerpt of what was written.
//!
//! Other tools' spellings are understood too, so their files work as they are: `${env:NAME}`
//! (VS Code, Cursor, Windsurf) is `${NAME}`; `${input:ID}` is a VS Code input, which the
//! loader puts in the map as `input:ID` once the person has given it; `${/}` is the path
//! separator; and the loader sets the [`BUILTINS`] (`${userHome}`, `${workspaceFolder}`...).

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
    #[error("invalid variable name `{0}`: use letters, digits and `_`, then `}}` or `:-default}}`")]
    BadName(String),
    /// `${input:ID}` with no value given yet.
    #[error(
        "needs the input `{0}`, which has no value yet: run a switchboard command on a terminal to be asked, \
         or `switchboard inputs set {0}`"
    )]
    Input(String),
    /// Another tool's kind of variable that has no meaning here (`${config:...}`, `${command:...}`).
    #[error("`${{{0}:...}}` is another tool's kind of variable, not known here: use `${{VAR}}` or `${{env:VAR}}`")]
    Unsupported(String),
}

/// Variables the loader sets besides the environment (VS Code's and Cursor's names): the
/// home folder, the project root and its folder name, and the path separator. They are not
/// secrets, so they are not among a value's [`substitutions`].
pub const BUILTINS: [&str; 5] =
    ["userHome", "workspaceFolder", "workspaceRoot", "workspaceFolderBasename", "pathSeparator"];

/// The key under which the loader puts the value of `${input:ID}` in the variables.
pub fn input_key(id: &str) -> String {
    format!("input:{id}")
}

/// Expands every `${VAR}` / `${VAR:-default}` in `input` from `env`.
pub fn expand(input: &str, env: &HashMap<String, String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let rest = expand_into(input, input, env, &mut out, &mut Vec::new(), false)?;
    debug_assert!(rest.is_empty());
    Ok(out)
}

/// The values variables put into `input` (what must never be shown of it), in order; empty
/// when it does not expand.
pub fn substitutions(input: &str, env: &HashMap<String, String>) -> Vec<String> {
    let mut subs = Vec::new();
    let _ = expand_into(input, input, env, &mut String::new(), &mut subs, false);
    subs
}

/// Expands `input` into `out` up to its end, or (`nested`) up to the `}` that closes the
/// default it is; returns what follows. Variable values go to `subs`; messages quote `whole`.
fn expand_into<'a>(
    input: &'a str,
    whole: &str,
    env: &HashMap<String, String>,
    out: &mut String,
    subs: &mut Vec<String>,
    nested: bool,
) -> Result<&'a str, ExpandError> {
    let excerpt = |_: &str| crate::text::excerpt(whole, 40);
    let mut rest = input;
    loop {
        let stop = if nested { rest.find(['$', '}']) } else { rest.find('$') };
        let Some(pos) = stop else {
            if nested {
                return Err(ExpandError::Unterminated(excerpt(input)));
            }
            out.push_str(rest);
            return Ok("");
        };
        out.push_str(&rest[..pos]);
        if rest[pos..].starts_with('}') {
            return Ok(&rest[pos + 1..]);
        }
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            // `${/}`: VS Code's path separator.
            if let Some(tail) = body.strip_prefix("/}") {
                out.push('/');
                rest = tail;
                continue;
            }
            // `${input:ID}`: a value the person gave once (a secret).
            if let Some(id_and_tail) = body.strip_prefix("input:") {
                let Some(end) = id_and_tail.find('}') else {
                    return Err(ExpandError::Unterminated(excerpt(input)));
                };
                let id = &id_and_tail[..end];
                match env.get(&input_key(id)) {
                    Some(v) => {
                        out.push_str(v);
                        subs.push(v.clone());
                    }
                    None => return Err(ExpandError::Input(crate::text::excerpt(id, 40))),
                }
                rest = &id_and_tail[end + 1..];
                continue;
            }
            // `${env:NAME}` is `${NAME}`.
            let body = body.strip_prefix("env:").unwrap_or(body);
            let name_len = body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(body.len());
            let (name, tail) = body.split_at(name_len);
            if tail.is_empty() {
                return Err(ExpandError::Unterminated(excerpt(input)));
            }
            if !name.is_empty() && tail.starts_with(':') && !tail.starts_with(":-") {
                return Err(ExpandError::Unsupported(crate::text::excerpt(name, 20)));
            }
            if name.is_empty() || !(tail.starts_with('}') || tail.starts_with(":-")) {
                let shown: String = body.chars().take_while(|&c| c != '}').take(40).collect();
                return Err(ExpandError::BadName(shown));
            }
            let value = env.get(name);
            if let Some(default) = tail.strip_prefix(":-") {
                match value.filter(|v| !v.is_empty()) {
                    Some(v) => {
                        out.push_str(v);
                        if !BUILTINS.contains(&name) {
                            subs.push(v.clone());
                        }
                        // Skip the default without using it (its variables need not be set).
                        rest = skip_default(default).ok_or_else(|| ExpandError::Unterminated(excerpt(input)))?;
                    }
                    None => rest = expand_into(default, whole, env, out, subs, true)?,
                }
            } else {
                match value {
                    Some(v) => {
                        out.push_str(v);
                        if !BUILTINS.contains(&name) {
                            subs.push(v.clone());
                        }
                    }
                    None => return Err(ExpandError::Unset(name.to_string())),
                }
                rest = &tail[1..];
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
}

/// What follows the `}` closing a default that is not used (counting nested `${`).
fn skip_default(default: &str) -> Option<&str> {
    let mut depth = 0usize;
    let bytes = default.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'$') => i += 1,
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(&default[i + 1..]),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> HashMap<String, String> {
        HashMap::from([
            ("HOME".into(), "/home/u".into()),
            ("EMPTY".into(), String::new()),
            ("SET_A".into(), "value-a".into()),
            ("SET_B".into(), "value-b".into()),
        ])
    }

    #[test]
    fn expands_set_default_and_literal() {
        assert_eq!(expand("${HOME}/x", &env()), Ok("/home/u/x".into()));
        assert_eq!(expand("${NOPE:-d}-${HOME:-z}", &env()), Ok("d-/home/u".into()));
        assert_eq!(expand("${EMPTY:-fallback}", &env()), Ok("fallback".into()));
        assert_eq!(expand("cost $5 and $$HOME", &env()), Ok("cost $5 and $HOME".into()));
        assert_eq!(expand("${NOPE:-}", &env()), Ok(String::new()));
        assert_eq!(expand("a}b", &env()), Ok("a}b".into()));
    }

    #[test]
    fn defaults_nest_as_in_shells() {
        assert_eq!(expand("${A:-${SET_B}}", &env()), Ok("value-b".into()));
        assert_eq!(expand("${SET_A:-${SET_B}}", &env()), Ok("value-a".into()));
        assert_eq!(expand("${SET_A:-${UNSET}}/x", &env()), Ok("value-a/x".into()), "an unused default is not expanded");
        assert_eq!(expand("${A:-${B:-deep}}!", &env()), Ok("deep!".into()));
        assert_eq!(expand("${A:-pre-${HOME}-post}", &env()), Ok("pre-/home/u-post".into()));
        assert_eq!(expand("${A:-${B}}", &env()), Err(ExpandError::Unset("B".into())));
        assert_eq!(expand("${A:-x", &env()), Err(ExpandError::Unterminated("${A:-x".into())));
    }

    #[test]
    fn a_set_but_empty_variable_is_empty_not_unset() {
        assert_eq!(expand("[${EMPTY}]", &env()), Ok("[]".into()));
        assert_eq!(expand("${EMPTY:-d}", &env()), Ok("d".into()));
    }

    #[test]
    fn errors_name_the_variable_and_quote_little() {
        assert_eq!(expand("a ${TOKEN} b", &env()), Err(ExpandError::Unset("TOKEN".into())));
        assert!(matches!(expand("${HOME", &env()), Err(ExpandError::Unterminated(_))));
        assert!(matches!(expand("${a-b}", &env()), Err(ExpandError::BadName(_))));
        assert!(matches!(expand("${}", &env()), Err(ExpandError::BadName(_))));
        let msg = expand("${API_KEY}", &env()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("API_KEY"), "{msg}");
        let long = format!("${{{}", "x".repeat(100_000));
        let msg = expand(&long, &env()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.len() < 200, "{} bytes", msg.len());
    }

    #[test]
    fn other_tools_spellings() {
        let mut vars = env();
        vars.insert("workspaceFolder".into(), "/work/proj".into());
        vars.insert(input_key("api-key"), "s3cret".into());
        assert_eq!(expand("${env:SET_A}/${env:NOPE:-d}", &vars), Ok("value-a/d".into()));
        assert_eq!(expand("${workspaceFolder}${/}src", &vars), Ok("/work/proj/src".into()));
        assert_eq!(expand("Bearer ${input:api-key}", &vars), Ok("Bearer s3cret".into()));
        assert_eq!(expand("${input:other}", &vars), Err(ExpandError::Input("other".into())));
        assert_eq!(expand("${config:editor.font}", &vars), Err(ExpandError::Unsupported("config".into())));
        assert_eq!(expand("${env:NOPE}", &vars), Err(ExpandError::Unset("NOPE".into())));
        // An input is a secret; the project folder is not.
        assert_eq!(substitutions("${workspaceFolder}/${input:api-key}", &vars), vec!["s3cret"]);
    }

    #[test]
    fn substitutions_are_the_values_put_in() {
        assert_eq!(substitutions("--token=${SET_A} ${NOPE:-lit} ${HOME}", &env()), vec!["value-a", "/home/u"]);
        assert!(substitutions("plain", &env()).is_empty());
    }
}

//! switchboard as its own upstream: the configs of the switchboard processes a connection
//! passed through, so that none serves itself. A config imported into itself (`switchboard
//! import` of an agent's file where README's `claude mcp add switchboard -- switchboard
//! gateway` was followed) would otherwise start a gateway that reads the same file and starts
//! another, without end.
//!
//! A hub passes its chain on: to a stdio server in its environment ([`CHAIN_VAR`]), to a remote
//! one in a header ([`CHAIN_HEADER`]); the chain is the one it inherited plus its own config's
//! id ([`crate::workspace::config_key`]). A switchboard that would serve (a gateway, `serve`)
//! with its own config already in the chain it was reached through refuses ([`refusal`]): the
//! stdio one exits with [`REFUSED_EXIT`] saying why on stderr, the HTTP one answers 508 Loop
//! Detected; the hub above shows that server as `config_invalid` with the reason, and does not
//! try it again.

use std::collections::HashMap;

/// The environment variable a hub gives its stdio servers: the chain, comma-separated.
pub const CHAIN_VAR: &str = "SWITCHBOARD_CHAIN";

/// The header a hub sends its remote servers: the chain, comma-separated.
pub const CHAIN_HEADER: &str = "x-switchboard-chain";

/// The exit code of a stdio switchboard that refuses to serve (EX_CONFIG of sysexits.h).
pub const REFUSED_EXIT: i32 = 78;

/// How many switchboards deep a chain may go, whatever their configs.
pub const MAX_DEPTH: usize = 8;

/// The ids of the configs of the switchboard processes a connection passed through, oldest
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain(Vec<String>);

impl Chain {
    /// The chain this process was reached through (its environment's [`CHAIN_VAR`]).
    pub fn inherited(env: &HashMap<String, String>) -> Chain {
        Chain::parse(env.get(CHAIN_VAR).map(String::as_str).unwrap_or_default())
    }

    /// A chain as written in [`CHAIN_VAR`] or [`CHAIN_HEADER`].
    pub fn parse(text: &str) -> Chain {
        let ids = text.split(',').map(str::trim).filter(|s| is_id(s)).take(MAX_DEPTH + 1).map(str::to_string);
        Chain(ids.collect())
    }

    /// This chain with `id` after it.
    pub fn with(&self, id: &str) -> Chain {
        let mut ids = self.0.clone();
        ids.push(id.to_string());
        Chain(ids)
    }

    /// Whether it is empty (nothing to pass on).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As [`CHAIN_VAR`] and [`CHAIN_HEADER`] carry it.
    pub fn to_value(&self) -> String {
        self.0.join(",")
    }
}

/// An id as this module makes them: hexadecimal, 8 to 64 digits.
fn is_id(s: &str) -> bool {
    (8..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Why a switchboard whose config has `id`, reached through `chain`, must not serve, if it must
/// not.
pub fn refusal(chain: &Chain, id: &str) -> Option<String> {
    if chain.0.iter().any(|c| c == id) {
        return Some(format!(
            "switchboard refuses to be its own upstream: it was started by a switchboard with the same config \
             ({} levels up), so it would start itself again without end (remove the server that runs \
             switchboard from that config, however it is started: `switchboard import` leaves such entries out)",
            chain.0.len() - chain.0.iter().position(|c| c == id).unwrap_or(0)
        ));
    }
    (chain.0.len() >= MAX_DEPTH).then(|| {
        format!(
            "switchboard refuses to serve {} switchboards deep: a chain of gateways that long is a loop through \
             several configs",
            chain.0.len()
        )
    })
}

/// How a stdio server's command line runs switchboard, when it does: switchboard itself (by
/// name, by any path, or this very program), or through what starts it: `env` (with its
/// options and `NAME=value`s), a package runner (`npx`, `bunx`, `pnpx`, `pnpm dlx`, `yarn dlx`,
/// `uvx`, `pipx run`) of a package named `switchboard`, or a shell's `-c` script with a
/// command that does (`exec`, assignments and `&&`, `;`, `|` between commands followed).
pub fn switchboard_in(command: &str, args: &[String]) -> Option<String> {
    let mut line = vec![command.to_string()];
    line.extend(args.iter().cloned());
    find_in(&line, 0).map(|how| if how.is_empty() { "its command".to_string() } else { how })
}

/// [`switchboard_in`] over one command line (`words`), `depth` wrappers in.
fn find_in(words: &[String], depth: usize) -> Option<String> {
    let (first, rest) = words.split_first()?;
    if depth > 8 {
        return None;
    }
    if runs_switchboard(first) {
        return Some(String::new());
    }
    let program = std::path::Path::new(first).file_name().and_then(|n| n.to_str()).unwrap_or(first);
    let through = |how: Option<String>, what: &str| {
        how.map(|h| if h.is_empty() { format!("run through `{what}`") } else { format!("{h}, run through `{what}`") })
    };
    match program {
        "env" => {
            let mut i = 0;
            while let Some(w) = rest.get(i) {
                match w.as_str() {
                    "-u" | "--unset" | "-C" | "--chdir" | "-S" => i += 2,
                    "--" => {
                        i += 1;
                        break;
                    }
                    w if w.starts_with('-') || w.contains('=') => i += 1,
                    _ => break,
                }
            }
            through(find_in(rest.get(i..)?, depth + 1), "env")
        }
        "npx" | "bunx" | "pnpx" | "uvx" => {
            package(rest, &["-p", "--package", "--from", "--with", "--python"]).and_then(|p| through(Some(p), program))
        }
        "pnpm" | "yarn" | "bun" if rest.first().is_some_and(|w| w == "dlx" || w == "x") => {
            package(&rest[1..], &["-p", "--package"]).and_then(|p| through(Some(p), &format!("{program} dlx")))
        }
        "pipx" if rest.first().is_some_and(|w| w == "run") => {
            package(&rest[1..], &["--spec", "--python"]).and_then(|p| through(Some(p), "pipx run"))
        }
        "sh" | "bash" | "zsh" | "dash" | "ksh" => {
            let at = rest.iter().position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
            let script = rest.get(at + 1)?;
            let shell = format!("{program} {}", rest[at]);
            commands(script).iter().find_map(|c| find_in(c, depth + 1)).and_then(|h| through(Some(h), &shell))
        }
        _ => None,
    }
}

/// The package a runner's arguments run, when it is switchboard (`switchboard`,
/// `switchboard@1.2`, `@scope/switchboard`): `Some("")`.
fn package(args: &[String], valued: &[&str]) -> Option<String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if valued.contains(&w.as_str()) {
            i += 2;
        } else if w.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let spec = args.get(i)?;
    let name = spec.rsplit_once('@').filter(|(n, _)| !n.is_empty()).map_or(spec.as_str(), |(n, _)| n);
    let name = name.rsplit('/').next().unwrap_or(name);
    (name == "switchboard").then(String::new)
}

/// The commands of a shell script, each as its words (quotes taken off; `exec` and leading
/// `NAME=value`s dropped), split at `;`, `&&`, `||`, `|` and new lines.
fn commands(script: &str) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut String, out: &mut Vec<Vec<String>>| {
        if !word.is_empty()
            && let Some(last) = out.last_mut()
        {
            last.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => word.extend(chars.next()),
            (None, ';' | '&' | '|' | '\n') => {
                end_word(&mut word, &mut out);
                out.push(Vec::new());
            }
            (None, c) if c.is_whitespace() => end_word(&mut word, &mut out),
            (None, c) => word.push(c),
        }
    }
    end_word(&mut word, &mut out);
    out.into_iter()
        .map(|c| c.into_iter().skip_while(|w| w == "exec" || (w.contains('=') && !w.starts_with('-'))).collect())
        .filter(|c: &Vec<String>| !c.is_empty())
        .collect()
}

/// Whether a stdio server's command runs switchboard (its file name, or this very program).
pub fn runs_switchboard(command: &str) -> bool {
    let path = std::path::Path::new(command);
    let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == "switchboard" || n == "switchboard.exe");
    named || std::env::current_exe().is_ok_and(|me| std::fs::canonicalize(path).is_ok_and(|p| p == me))
}

/// Whether stderr lines are a refusal of [`refusal`]'s (what the hub above looks for).
pub fn is_refusal(stderr: &[String]) -> bool {
    stderr.iter().any(|l| l.contains("switchboard refuses to"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(line: &[&str]) -> Option<String> {
        let args: Vec<String> = line[1..].iter().map(|s| s.to_string()).collect();
        switchboard_in(line[0], &args)
    }

    #[test]
    fn switchboard_is_recognised_however_it_is_started() {
        assert_eq!(how(&["switchboard", "gateway"]).as_deref(), Some("its command"));
        assert_eq!(how(&["/usr/local/bin/switchboard", "gateway"]).as_deref(), Some("its command"));
        assert_eq!(how(&["env", "RUST_LOG=info", "switchboard", "gateway"]).as_deref(), Some("run through `env`"));
        assert_eq!(
            how(&["/usr/bin/env", "-i", "-u", "X", "A=1", "--", "switchboard"]).as_deref(),
            Some("run through `env`")
        );
        assert_eq!(how(&["npx", "-y", "switchboard", "gateway"]).as_deref(), Some("run through `npx`"));
        assert_eq!(how(&["npx", "-y", "switchboard@0.3.1", "gateway"]).as_deref(), Some("run through `npx`"));
        assert_eq!(how(&["bunx", "@acme/switchboard", "gateway"]).as_deref(), Some("run through `bunx`"));
        assert_eq!(how(&["uvx", "--from", "x", "switchboard"]).as_deref(), Some("run through `uvx`"));
        assert_eq!(how(&["pnpm", "dlx", "switchboard", "gateway"]).as_deref(), Some("run through `pnpm dlx`"));
        assert_eq!(
            how(&["sh", "-c", "cd /x && RUST_LOG=debug exec switchboard gateway 2>/tmp/log"]).as_deref(),
            Some("run through `sh -c`")
        );
        assert_eq!(
            how(&["bash", "-lc", "env A=1 'switchboard' gateway"]).as_deref(),
            Some("run through `env`, run through `bash -lc`")
        );
        // Not switchboard: other servers, a package that only has the word in it, an echo of it.
        assert_eq!(how(&["npx", "-y", "@modelcontextprotocol/server-memory"]), None);
        assert_eq!(how(&["npx", "switchboard-weather"]), None);
        assert_eq!(how(&["env", "A=switchboard", "node", "server.js"]), None);
        assert_eq!(how(&["sh", "-c", "echo switchboard; node s.js"]), None);
        assert_eq!(how(&["node", "switchboard"]), None);
    }

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    #[test]
    fn a_config_met_again_is_refused_and_so_is_a_long_chain() {
        let env = HashMap::from([(CHAIN_VAR.to_string(), format!("{A}, junk,{B}"))]);
        let chain = Chain::inherited(&env);
        assert_eq!(chain.to_value(), format!("{A},{B}"), "what is not an id is left out");
        assert!(refusal(&chain, A).is_some_and(|r| r.contains("own upstream") && r.contains("2 levels up")));
        assert!(refusal(&chain, "00000000aaaaaaaa").is_none());
        let long = (0..MAX_DEPTH).fold(Chain::default(), |c, i| c.with(&format!("{i:016x}")));
        assert!(refusal(&long, "ffffffffffffffff").is_some_and(|r| r.contains("deep")));
        assert!(Chain::parse("").is_empty());
    }

    #[test]
    fn commands_that_run_switchboard() {
        assert!(runs_switchboard("switchboard"));
        assert!(runs_switchboard("/usr/local/bin/switchboard"));
        assert!(!runs_switchboard("npx"));
        assert!(!runs_switchboard("switchboard-fixture"));
    }
}

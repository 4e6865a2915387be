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
             `switchboard gateway` from that config; `switchboard import` leaves such entries out)",
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

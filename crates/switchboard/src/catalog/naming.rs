//! Model-visible tool names: `mcp__<server>__<tool>`.
//!
//! Characters outside `[A-Za-z0-9_-]` become `_`; names are at most 64 bytes. When two tools
//! would get the same name, or a name is too long, the name is shortened and given `_` plus 12
//! hex characters of SHA-256 over the raw `server\0tool`. Names depend only on the set of
//! (server, tool) pairs, never on the order servers connected in: candidates are processed in
//! sorted raw order, and the first of a colliding group keeps the plain name.

use std::collections::{BTreeMap, HashSet};

use sha2::{Digest, Sha256};

/// Longest model-visible name, in bytes (OpenAI and Anthropic both cap at 64).
pub const MAX_NAME_LEN: usize = 64;
/// Hex characters of hash appended on collision.
const HASH_LEN: usize = 12;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The name before collision handling.
pub fn base_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(tool))
}

fn hashed(server: &str, tool: &str, attempt: u32) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0]);
    h.update(tool.as_bytes());
    if attempt > 0 {
        h.update([0]);
        h.update(attempt.to_string().as_bytes());
    }
    let digest = h.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut base = base_name(server, tool);
    base.truncate(MAX_NAME_LEN - HASH_LEN - 1); // ASCII only after sanitize
    format!("{base}_{}", &hex[..HASH_LEN])
}

/// Assigns a unique name to every `(server, tool)` pair. The result maps each pair to its name.
pub fn assign<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> BTreeMap<(String, String), String> {
    let mut sorted: Vec<(&str, &str)> = pairs.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut by_base: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
    for &(s, t) in &sorted {
        by_base.entry(base_name(s, t)).or_default().push((s, t));
    }
    let mut taken: HashSet<String> = HashSet::with_capacity(sorted.len());
    let mut names = BTreeMap::new();
    let mut rest = Vec::new();
    // First pass: every short base keeps its plain name for the first pair of its group.
    for (base, group) in &by_base {
        let mut members = group.iter();
        if base.len() <= MAX_NAME_LEN
            && let Some(&(s, t)) = members.next()
        {
            taken.insert(base.clone());
            names.insert((s.to_string(), t.to_string()), base.clone());
        }
        rest.extend(members.copied());
    }
    // Second pass, in raw order: hashed names, rehashed on the (unlikely) clash.
    rest.sort_unstable();
    for (s, t) in rest {
        let mut attempt = 0;
        let name = loop {
            let candidate = hashed(s, t, attempt);
            if !taken.contains(&candidate) {
                break candidate;
            }
            attempt += 1;
        };
        taken.insert(name.clone());
        names.insert((s.to_string(), t.to_string()), name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(map: &BTreeMap<(String, String), String>, s: &str, t: &str) -> String {
        map.get(&(s.to_string(), t.to_string())).cloned().unwrap_or_default()
    }

    #[test]
    fn sanitizes() {
        assert_eq!(base_name("my.server", "read file"), "mcp__my_server__read_file");
        assert_eq!(sanitize("ok-_9"), "ok-_9");
        assert_eq!(sanitize("é/x"), "__x");
    }

    #[test]
    fn collisions_get_stable_distinct_hashes() {
        let a = assign([("a.b", "t"), ("a_b", "t"), ("c", "x")]);
        assert_eq!(name(&a, "a.b", "t"), "mcp__a_b__t");
        let other = name(&a, "a_b", "t");
        assert!(other.starts_with("mcp__a_b__t_") && other.len() == "mcp__a_b__t_".len() + 12, "{other}");
        assert_eq!(name(&a, "c", "x"), "mcp__c__x");
        // Order of input does not matter.
        let b = assign([("c", "x"), ("a_b", "t"), ("a.b", "t")]);
        assert_eq!(a, b);
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let tool = "t".repeat(80);
        let a = assign([("srv", tool.as_str()), ("srv", "short")]);
        let long = name(&a, "srv", &tool);
        assert_eq!(long.len(), MAX_NAME_LEN);
        assert!(long.starts_with("mcp__srv__ttt"));
        assert_eq!(name(&a, "srv", "short"), "mcp__srv__short");
        // Two long names sharing a 64-byte prefix still differ.
        let t2 = format!("{}x", "t".repeat(80));
        let b = assign([("srv", tool.as_str()), ("srv", t2.as_str())]);
        assert_ne!(name(&b, "srv", &tool), name(&b, "srv", &t2));
        assert!(b.values().all(|n| n.len() <= MAX_NAME_LEN));
    }

    #[test]
    fn all_names_unique_at_scale() {
        let servers: Vec<String> = (0..50).map(|i| format!("s{}", i % 10)).collect();
        let tools: Vec<String> = (0..50).map(|i| format!("t.{i}")).collect();
        let pairs: Vec<(&str, &str)> =
            servers.iter().flat_map(|s| tools.iter().map(move |t| (s.as_str(), t.as_str()))).collect();
        let a = assign(pairs.iter().copied());
        let unique: HashSet<&String> = a.values().collect();
        assert_eq!(unique.len(), a.len());
    }
}

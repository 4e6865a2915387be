//! Model-visible tool names: `mcp__<server>__<tool>` in the catalog ([`Scheme::CATALOG`]), and
//! `<server>__<tool>` within a shorter limit where an agent adds its own prefix
//! ([`Scheme::short`], the gateway's default).
//!
//! Characters outside `[A-Za-z0-9_-]` become `_`; catalog names are at most 64 bytes. When two
//! tools would get the same name, or a name is too long, the name is shortened and given `_`
//! plus hex characters (12 in the catalog, 8 in short names) of SHA-256 over the raw
//! `server\0tool`. Names depend only on the set of
//! (server, tool) pairs, never on the order servers connected in: candidates are processed in
//! sorted raw order, and the first of a colliding group keeps the plain name.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

/// Longest model-visible name, in bytes (OpenAI and Anthropic both cap at 64).
pub const MAX_NAME_LEN: usize = 64;

/// How names are made: a prefix, then `<server>__<tool>`, at most `max` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Scheme {
    /// Written before the server (`mcp__` in the catalog).
    pub prefix: &'static str,
    /// Longest name, in bytes.
    pub max: usize,
    /// Hex characters of hash appended on collision or shortening.
    pub hash_len: usize,
}

impl Scheme {
    /// The catalog's `mcp__<server>__<tool>`, at most 64 bytes.
    pub const CATALOG: Scheme = Scheme { prefix: "mcp__", max: MAX_NAME_LEN, hash_len: 12 };
    /// The shortest limit [`Scheme::short`] takes (room for a server, a tool and the hash).
    pub const MIN_SHORT: usize = 24;

    /// `<server>__<tool>` within `max` bytes (clamped to [`Scheme::MIN_SHORT`]..=64): for
    /// clients that prefix names themselves.
    pub fn short(max: usize) -> Scheme {
        Scheme { prefix: "", max: max.clamp(Self::MIN_SHORT, MAX_NAME_LEN), hash_len: 8 }
    }

    /// The name before collision handling.
    pub fn base(&self, server: &str, tool: &str) -> String {
        format!("{}{}__{}", self.prefix, sanitize(server), sanitize(tool))
    }

    fn hashed(&self, server: &str, tool: &str, attempt: u32) -> String {
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
        let mut base = self.base(server, tool);
        base.truncate(self.max - self.hash_len - 1); // ASCII only after sanitize
        format!("{base}_{}", &hex[..self.hash_len])
    }
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The gateway's short spelling of a tool, `<server>__<tool>` sanitised, before shortening or
/// collision handling: how rules and lookups know a tool by the name an agent shows.
pub fn short_base(server: &str, tool: &str) -> String {
    Scheme::short(MAX_NAME_LEN).base(server, tool)
}

/// Whether a tool named `name` may be one of `server`'s, by any spelling a name takes:
/// `server/tool`, the catalog's `mcp__<server>__…` or the gateway's short `<server>__…` (the
/// server's name sanitised; a hashed name keeps its server's prefix unless the server's name
/// alone was too long). What starts only the servers a call may need, and what says a call's
/// server is not connected rather than that the tool does not exist.
pub fn may_belong(name: &str, server: &str) -> bool {
    if name.strip_prefix(server).is_some_and(|rest| rest.starts_with('/')) {
        return true;
    }
    let short = format!("{}__", sanitize(server));
    name.starts_with(&short) || name.strip_prefix(Scheme::CATALOG.prefix).is_some_and(|n| n.starts_with(&short))
}

/// The catalog's name before collision handling.
pub fn base_name(server: &str, tool: &str) -> String {
    Scheme::CATALOG.base(server, tool)
}

/// Assigns a unique catalog name to every `(server, tool)` pair ([`assign_with`] of
/// [`Scheme::CATALOG`]).
pub fn assign<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    assign_with(Scheme::CATALOG, pairs)
}

/// Assigns a unique name of `scheme` to every `(server, tool)` pair, returned in input order.
/// A pair that repeats an earlier one (a server listing the same tool twice) gets an empty
/// name: callers drop it.
pub fn assign_with<'a>(scheme: Scheme, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    let mut names = vec![String::new(); pairs.len()];
    // Distinct pairs in raw order; indices into `pairs`.
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_unstable_by(|&a, &b| pairs[a].cmp(&pairs[b]).then(a.cmp(&b)));
    order.dedup_by(|b, a| pairs[*a] == pairs[*b]);
    let bases: Vec<String> = pairs.iter().map(|&(s, t)| scheme.base(s, t)).collect();
    // Grouped by base name (stable, so raw order within a group).
    let mut by_base = order.clone();
    by_base.sort_by(|&a, &b| bases[a].cmp(&bases[b]));
    let mut plain: HashSet<&str> = HashSet::with_capacity(order.len());
    let mut rest = Vec::new();
    // First pass: every short base keeps its plain name for the first pair of its group.
    for (k, &i) in by_base.iter().enumerate() {
        let first_of_group = k == 0 || bases[by_base[k - 1]] != bases[i];
        if first_of_group && bases[i].len() <= scheme.max {
            plain.insert(&bases[i]);
            names[i] = bases[i].clone();
        } else {
            rest.push(i);
        }
    }
    // Second pass, in raw order: hashed names, rehashed on the (unlikely) clash.
    rest.sort_unstable_by(|&a, &b| pairs[a].cmp(&pairs[b]));
    let mut hashed_taken: HashSet<String> = HashSet::new();
    for i in rest {
        let (s, t) = pairs[i];
        let mut attempt = 0;
        let name = loop {
            let candidate = scheme.hashed(s, t, attempt);
            if !plain.contains(candidate.as_str()) && !hashed_taken.contains(&candidate) {
                break candidate;
            }
            attempt += 1;
        };
        hashed_taken.insert(name.clone());
        names[i] = name;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_name_belongs_to_its_server_by_every_spelling() {
        for name in ["my.srv/read", "mcp__my_srv__read", "my_srv__read"] {
            assert!(may_belong(name, "my.srv"), "{name}");
        }
        for name in ["other/read", "mcp__other__read", "my_srv_read", "mcp__my_srvx__read", "my.srvx/read"] {
            assert!(!may_belong(name, "my.srv"), "{name}");
        }
    }

    fn map<'a>(pairs: &[(&'a str, &'a str)]) -> BTreeMap<(&'a str, &'a str), String> {
        pairs.iter().copied().zip(assign(pairs.iter().copied())).collect()
    }

    fn name(map: &BTreeMap<(&str, &str), String>, s: &str, t: &str) -> String {
        map.get(&(s, t)).cloned().unwrap_or_default()
    }

    #[test]
    fn sanitizes() {
        assert_eq!(base_name("my.server", "read file"), "mcp__my_server__read_file");
        assert_eq!(sanitize("ok-_9"), "ok-_9");
        assert_eq!(sanitize("é/x"), "__x");
    }

    #[test]
    fn collisions_get_stable_distinct_hashes() {
        let a = map(&[("a.b", "t"), ("a_b", "t"), ("c", "x")]);
        assert_eq!(name(&a, "a.b", "t"), "mcp__a_b__t");
        let other = name(&a, "a_b", "t");
        assert!(other.starts_with("mcp__a_b__t_") && other.len() == "mcp__a_b__t_".len() + 12, "{other}");
        assert_eq!(name(&a, "c", "x"), "mcp__c__x");
        // Order of input does not matter.
        let b = map(&[("c", "x"), ("a_b", "t"), ("a.b", "t")]);
        assert_eq!(a, b);
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let tool = "t".repeat(80);
        let a = map(&[("srv", tool.as_str()), ("srv", "short")]);
        let long = name(&a, "srv", &tool);
        assert_eq!(long.len(), MAX_NAME_LEN);
        assert!(long.starts_with("mcp__srv__ttt"));
        assert_eq!(name(&a, "srv", "short"), "mcp__srv__short");
        // Two long names sharing a 64-byte prefix still differ.
        let t2 = format!("{}x", "t".repeat(80));
        let b = map(&[("srv", tool.as_str()), ("srv", t2.as_str())]);
        assert_ne!(name(&b, "srv", &tool), name(&b, "srv", &t2));
        assert!(b.values().all(|n| n.len() <= MAX_NAME_LEN));
    }

    #[test]
    fn short_names_drop_the_prefix_and_keep_within_their_limit() {
        let long = "trigger-long-running-operation";
        let a = assign_with(Scheme::short(45), [("everything", long), ("my.srv", "x"), ("s", &"y".repeat(60))]);
        assert_eq!(a[0], "everything__trigger-long-running-operation");
        assert_eq!(a[1], "my_srv__x");
        assert_eq!(a[2].len(), 45, "{}", a[2]);
        assert!(a[2].starts_with("s__yyy"));
        // A tighter limit shortens the first one too, keeping the server.
        let b = assign_with(Scheme::short(30), [("everything", long)]);
        assert!(b[0].starts_with("everything__trigger") && b[0].len() == 30, "{}", b[0]);
        // Limits are clamped to what can hold a server, a tool and a hash.
        assert_eq!(Scheme::short(3).max, Scheme::MIN_SHORT);
        assert_eq!(Scheme::short(500).max, MAX_NAME_LEN);
    }

    #[test]
    fn all_names_unique_at_scale() {
        let servers: Vec<String> = (0..50).map(|i| format!("s{}", i % 10)).collect();
        let tools: Vec<String> = (0..50).map(|i| format!("t.{i}")).collect();
        let pairs: Vec<(&str, &str)> =
            servers.iter().flat_map(|s| tools.iter().map(move |t| (s.as_str(), t.as_str()))).collect();
        let a = assign(pairs.iter().copied());
        let unique: HashSet<&String> = a.iter().filter(|n| !n.is_empty()).collect();
        // 10 distinct servers x 50 tools; the other 2,000 pairs repeat earlier ones.
        assert_eq!(unique.len(), 500);
        assert_eq!(a.iter().filter(|n| n.is_empty()).count(), 2000);
    }

    #[test]
    fn a_hashed_name_never_takes_a_plain_one() {
        // Whatever the hash of ("a.b", "t") is, a tool literally named like it keeps its plain
        // name and the colliding pair is rehashed.
        let first = assign([("a.b", "t"), ("a_b", "t")]);
        let hashed_name = first[1].clone();
        let tool = hashed_name.trim_start_matches("mcp__a_b__").to_string();
        let server = "a_b";
        let again = assign([("a.b", "t"), ("a_b", "t"), (server, tool.as_str())]);
        assert_eq!(again[2], hashed_name, "the literal tool keeps its plain name");
        assert_ne!(again[1], hashed_name);
        assert_eq!(again.iter().collect::<HashSet<_>>().len(), 3);
    }
}

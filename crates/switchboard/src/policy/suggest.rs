//! What a rule's pattern matches among the tools there are, and, when it matches none, the
//! pattern that was probably meant: `deny create_relations` (a tool's own name, which a rule
//! never matches alone) is `mcp__*__create_relations`; `mcp__memroy__*` (a server mistyped)
//! is `mcp__memory__*`; a tool's name mistyped is that tool's.

use super::rules::ToolRef;
use crate::catalog::naming::sanitize;
use crate::text::closest;

/// Whether the glob `pattern` matches `tool` by any of its spellings ([`ToolRef::spellings`]);
/// a pattern that is not a glob matches nothing.
pub fn matches(pattern: &str, tool: &ToolRef<'_>) -> bool {
    let Ok(glob) = globset::Glob::new(pattern) else { return false };
    let glob = glob.compile_matcher();
    tool.spellings().iter().any(|s| glob.is_match(s))
}

/// Whether `pattern` matches any of `tools`.
pub fn matches_any(pattern: &str, tools: &[ToolRef<'_>]) -> bool {
    let Ok(glob) = globset::Glob::new(pattern) else { return false };
    let glob = glob.compile_matcher();
    tools.iter().any(|t| t.spellings().iter().any(|s| glob.is_match(s)))
}

fn is_literal(s: &str) -> bool {
    !s.contains(['*', '?', '[', ']', '{', '}'])
}

/// The server part of a pattern, and the pattern with another server put there.
struct Shape<'a> {
    server: &'a str,
    before: &'a str,
    after: &'a str,
}

impl<'a> Shape<'a> {
    /// `mcp__SERVER__TOOL`, `SERVER/TOOL` or `SERVER__TOOL`.
    fn of(pattern: &'a str) -> Option<Shape<'a>> {
        let (before, rest) = match pattern.strip_prefix("mcp__") {
            Some(rest) => ("mcp__", rest),
            None => ("", pattern),
        };
        let cut = match (rest.find("__"), rest.find('/')) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        let (server, after) = rest.split_at(cut);
        Some(Shape { server, before, after })
    }

    fn with(&self, server: &str) -> String {
        format!("{}{server}{}", self.before, self.after)
    }
}

/// Whether `pattern` may match a tool of `server` (whose tools are not known: a server not
/// connected): it names that server, or a glob over servers that takes it, or is a glob with
/// no server part (a literal without one, like a tool's own name, is no tool's spelling).
pub fn may_name(pattern: &str, server: &str) -> bool {
    let Some(shape) = Shape::of(pattern) else { return !is_literal(pattern) };
    let Ok(glob) = globset::Glob::new(shape.server) else { return false };
    let glob = glob.compile_matcher();
    glob.is_match(server) || glob.is_match(sanitize(server))
}

/// The pattern probably meant by `pattern`, which matches none of `tools` (of the servers
/// named `servers`): one that matches at least one of them, or `None` when nothing is close.
pub fn suggest(pattern: &str, servers: &[&str], tools: &[ToolRef<'_>]) -> Option<String> {
    // A tool's own name alone: every server's tool of that name.
    if is_literal(pattern) && tools.iter().any(|t| t.tool == pattern) {
        return Some(format!("mcp__*__{pattern}"));
    }
    // A server that is not there, close to one that is.
    if let Some(shape) = Shape::of(pattern).filter(|s| is_literal(s.server) && !s.server.is_empty()) {
        let known: Vec<String> = servers.iter().map(|s| sanitize(s)).collect();
        if !known.iter().any(|k| k == shape.server) {
            let raw = servers.iter().copied();
            // `SERVER/TOOL` takes the server's raw name; the other shapes its sanitised one.
            let candidates: Vec<&str> =
                if shape.after.starts_with('/') { raw.collect() } else { known.iter().map(String::as_str).collect() };
            if let Some(server) = closest(shape.server, candidates) {
                let fixed = shape.with(server);
                if matches_any(&fixed, tools) {
                    return Some(fixed);
                }
            }
        }
    }
    // A tool's name mistyped: the closest spelling of one, or its own name.
    if is_literal(pattern) {
        let spellings: Vec<[String; 3]> = tools.iter().map(ToolRef::spellings).collect();
        let all = spellings.iter().flat_map(|s| s.iter().map(String::as_str));
        if let Some(found) = closest(pattern, all) {
            return Some(found.to_string());
        }
        if let Some(own) = closest(pattern, tools.iter().map(|t| t.tool)) {
            return Some(format!("mcp__*__{own}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolRef<'static>> {
        vec![
            ToolRef::new("mcp__memory__create_relations", "memory", "create_relations"),
            ToolRef::new("mcp__memory__delete_entities", "memory", "delete_entities"),
            ToolRef::new("mcp__my_fs__read_file", "my.fs", "read_file"),
        ]
    }

    #[test]
    fn every_spelling_matches() {
        let t = &tools()[0];
        for p in ["mcp__memory__create_relations", "memory/create_*", "memory__create_relations", "mcp__*"] {
            assert!(matches(p, t), "{p}");
        }
        assert!(!matches("create_relations", t), "a tool's own name alone is not a spelling");
        assert!(!matches("mcp__[", t), "not a glob");
    }

    #[test]
    fn patterns_that_may_name_a_server() {
        assert!(may_name("mcp__memory__*", "memory"));
        assert!(may_name("my_fs__read", "my.fs"));
        assert!(may_name("mem*/x", "memory"));
        assert!(may_name("*delete*", "memory"));
        assert!(!may_name("create_relations", "memory"));
        assert!(!may_name("mcp__github__*", "memory"));
    }

    #[test]
    fn the_pattern_meant() {
        let servers = ["memory", "my.fs"];
        let s = |p: &str| suggest(p, &servers, &tools());
        assert_eq!(s("create_relations").as_deref(), Some("mcp__*__create_relations"));
        assert_eq!(s("mcp__memroy__*").as_deref(), Some("mcp__memory__*"));
        assert_eq!(s("memroy/delete_*").as_deref(), Some("memory/delete_*"));
        assert_eq!(s("my_f__read_file").as_deref(), Some("my_fs__read_file"));
        assert_eq!(s("mcp__memory__create_relation").as_deref(), Some("mcp__memory__create_relations"));
        assert_eq!(s("delete_entites").as_deref(), Some("mcp__*__delete_entities"));
        assert_eq!(s("mcp__github__*"), None);
        assert_eq!(s("*nothing*"), None);
    }
}

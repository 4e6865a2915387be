//! Tool globs, compiled one way for every use: a config's tool filter
//! (`catalog::CompiledFilter`), a profile's view (`hub::ViewFilter`) and the policy's rules
//! (`policy::rules`). `*` crosses every character (a tool name has no path separators), and a
//! list keeps its patterns in order, so a match can say which one it was.

/// Patterns compiled together.
#[derive(Debug, Clone)]
pub(crate) struct GlobList {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

/// Checks one pattern: the message says what is wrong with it.
pub(crate) fn check(pattern: &str) -> Result<(), String> {
    globset::Glob::new(pattern).map(drop).map_err(|e| format!("bad glob `{pattern}`: {e}"))
}

impl GlobList {
    /// Compiles `patterns`, refusing the list for one that does not compile.
    pub(crate) fn new(patterns: &[String]) -> Result<GlobList, String> {
        let mut builder = globset::GlobSetBuilder::new();
        for p in patterns {
            builder.add(globset::Glob::new(p).map_err(|e| format!("bad glob `{p}`: {e}"))?);
        }
        let set = builder.build().map_err(|e| format!("bad globs: {e}"))?;
        Ok(GlobList { patterns: patterns.to_vec(), set })
    }

    /// Compiles `patterns` that were checked when their file was read: one that does not
    /// compile all the same matches nothing (it is left out, so the others stay in order).
    pub(crate) fn lenient(patterns: &[String]) -> GlobList {
        let mut builder = globset::GlobSetBuilder::new();
        let mut kept = Vec::new();
        for p in patterns {
            if let Ok(g) = globset::Glob::new(p) {
                builder.add(g);
                kept.push(p.clone());
            }
        }
        match builder.build() {
            Ok(set) => GlobList { patterns: kept, set },
            Err(_) => GlobList { patterns: Vec::new(), set: globset::GlobSet::empty() },
        }
    }

    /// `None` for an empty list (no filter), else the list compiled leniently.
    pub(crate) fn filter(patterns: &[String]) -> Option<GlobList> {
        (!patterns.is_empty()).then(|| GlobList::lenient(patterns))
    }

    /// Whether any pattern matches `name`.
    pub(crate) fn is_match(&self, name: &str) -> bool {
        self.set.is_match(name)
    }

    /// The patterns matching any of `names`, with their places in the list.
    pub(crate) fn matching<'a>(&'a self, names: &[&str]) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        let mut hits: Vec<usize> = names.iter().flat_map(|n| self.set.matches(n)).collect();
        hits.sort_unstable();
        hits.dedup();
        hits.into_iter().filter_map(|i| self.patterns.get(i).map(|p| (i, p.as_str())))
    }

    /// Whether the list has no pattern.
    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn strict_refuses_and_lenient_keeps_the_rest_in_order() {
        assert!(GlobList::new(&list(&["ok_*", "bad[", "x"])).is_err_and(|e| e.contains("bad[")));
        let g = GlobList::lenient(&list(&["ok_*", "bad[", "mcp__*__delete_*"]));
        assert!(g.is_match("ok_go") && !g.is_match("bad["));
        let hits: Vec<_> = g.matching(&["mcp__gh__delete_repo", "ok_x"]).collect();
        assert_eq!(hits, vec![(0, "ok_*"), (1, "mcp__*__delete_*")]);
        assert!(GlobList::filter(&[]).is_none() && check("a*").is_ok() && check("[").is_err());
    }
}

//! Tool search quality on real servers' tools: the recorded lists of 24 servers from npm and
//! PyPI, 311 tools (`tests/search/catalog.json`, recorded by `scripts/search-catalog`), and 140
//! requests in a person's words with the tool that answers each, or the tools that answer it
//! alike (`tests/search/queries.json`), which the ranking's weights were chosen on; and 62
//! requests written before that and never used to choose anything (`tests/search/unseen.json`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;
use switchboard::catalog::{Catalog, CompiledFilter, ServerLists};
use switchboard::config::ToolFilter;

/// What the ranking measures on the recorded catalog (95 and 122 of 140 requests; by words
/// alone, before meaning was added, 78 and 108), less one request's worth of slack. The goal
/// was 75 % and 90 % (issue 26: requests in everyday words).
#[cfg(feature = "meaning")]
const TOP1_FLOOR: f64 = 94.0 / 140.0;
#[cfg(feature = "meaning")]
const TOP3_FLOOR: f64 = 121.0 / 140.0;
/// The same for the unseen requests (42 and 53 of 62; by words alone, before, 31 and 51).
#[cfg(feature = "meaning")]
const UNSEEN_TOP1_FLOOR: f64 = 41.0 / 62.0;
#[cfg(feature = "meaning")]
const UNSEEN_TOP3_FLOOR: f64 = 52.0 / 62.0;
/// Without the `meaning` feature, words alone: 76 and 105 of 140, 35 and 49 of 62.
#[cfg(not(feature = "meaning"))]
const TOP1_FLOOR: f64 = 75.0 / 140.0;
#[cfg(not(feature = "meaning"))]
const TOP3_FLOOR: f64 = 104.0 / 140.0;
#[cfg(not(feature = "meaning"))]
const UNSEEN_TOP1_FLOOR: f64 = 34.0 / 62.0;
#[cfg(not(feature = "meaning"))]
const UNSEEN_TOP3_FLOOR: f64 = 48.0 / 62.0;

fn data(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/search").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn recorded() -> Catalog {
    let recorded = data("catalog.json");
    let lists: Vec<(String, ServerLists)> = recorded["servers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, server)| {
            let mut lists = ServerLists::default();
            lists.tools = serde_json::from_value(server["tools"].clone()).unwrap();
            (name.clone(), lists)
        })
        .collect();
    let all = CompiledFilter::new(&ToolFilter::default());
    Catalog::build(lists.iter().map(|(n, l)| (n.as_str(), l, &all)))
}

/// Share of requests whose tool is first, in the top three, in the top five.
struct Quality {
    top1: f64,
    top3: f64,
    top5: f64,
    /// The requests whose tool is not in the top three, with what came.
    missed: Vec<String>,
}

fn quality(catalog: &Catalog, queries: &[Value]) -> Quality {
    let (mut top1, mut top3, mut top5) = (0, 0, 0);
    let mut missed = Vec::new();
    for q in queries {
        let query = q["query"].as_str().unwrap();
        // One tool, or the tools that answer it alike (several servers do the same).
        let expect: Vec<&str> = match &q["expect"] {
            Value::Array(all) => all.iter().map(|e| e.as_str().unwrap()).collect(),
            one => vec![one.as_str().unwrap()],
        };
        let wanted: Vec<&str> = expect
            .iter()
            .map(|e| catalog.tool(e).unwrap_or_else(|| panic!("{e} is not in the recorded catalog")).name.as_str())
            .collect();
        let hits = catalog.search(query, 5).unwrap();
        let at = hits.iter().position(|h| wanted.contains(&h.tool.name.as_str()));
        top1 += usize::from(at == Some(0));
        top3 += usize::from(at.is_some_and(|p| p < 3));
        top5 += usize::from(at.is_some());
        if at.is_none_or(|p| p >= 3) {
            let got: Vec<&str> = hits.iter().take(3).map(|h| h.tool.name.as_str()).collect();
            missed.push(format!("  {query:?}: wanted {}, got {got:?}", expect.join(" or ")));
        }
    }
    let n = queries.len() as f64;
    Quality { top1: top1 as f64 / n, top3: top3 as f64 / n, top5: top5 as f64 / n, missed }
}

/// Measures `file`'s requests, prints the shares and the misses, and holds the floors (README,
/// "Tool search", has the numbers): a change that loses requests fails here.
fn holds(catalog: &Catalog, file: &str, least: usize, floors: (f64, f64)) {
    let queries = data(file);
    let queries = queries["queries"].as_array().unwrap();
    assert!(queries.len() >= least);
    let q = quality(catalog, queries);
    println!(
        "{file}: {} requests over {} tools of {} servers: top-1 {:.1} %, top-3 {:.1} %, top-5 {:.1} %\nnot in the top three:\n{}",
        queries.len(),
        catalog.tools().len(),
        catalog.tools().iter().map(|t| &t.server).collect::<std::collections::BTreeSet<_>>().len(),
        100.0 * q.top1,
        100.0 * q.top3,
        100.0 * q.top5,
        q.missed.join("\n")
    );
    assert!(
        q.top1 >= floors.0 && q.top3 >= floors.1,
        "{file}: top-1 {:.3}, top-3 {:.3}:\n{}",
        q.top1,
        q.top3,
        q.missed.join("\n")
    );
}

#[test]
fn requests_in_everyday_words_find_their_tool() {
    let catalog = recorded();
    assert_eq!(catalog.tools().len(), 311);
    holds(&catalog, "queries.json", 100, (TOP1_FLOOR, TOP3_FLOOR));
}

/// The requests written before the ranking's weights were chosen and never used to choose
/// them (`tests/search/unseen.json`): what choosing on `queries.json` is worth on requests
/// nobody chose for.
#[test]
fn requests_nobody_tuned_for_find_their_tool() {
    holds(&recorded(), "unseen.json", 60, (UNSEEN_TOP1_FLOOR, UNSEEN_TOP3_FLOOR));
}

#[test]
fn exact_names_and_patterns_over_real_tools() {
    let catalog = recorded();
    let names = |q: &str| catalog.search(q, 50).unwrap().iter().map(|h| h.tool.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names("select:git/git_status,mcp__time__convert_time"),
        ["mcp__git__git_status", "mcp__time__convert_time"]
    );
    assert_eq!(
        names("/^git_diff/"),
        ["mcp__git__git_diff", "mcp__git__git_diff_staged", "mcp__git__git_diff_unstaged"]
    );
    assert_eq!(names("/pull_request_re/").len(), 2);
}

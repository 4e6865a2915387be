//! Tool search quality on real servers' tools: the recorded lists of nine servers from npm
//! and PyPI (`tests/search/catalog.json`, recorded by `scripts/search-catalog`) and 80 requests
//! with the tool that answers each (`tests/search/queries.json`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;
use switchboard::catalog::{Catalog, CompiledFilter, ServerLists};
use switchboard::config::ToolFilter;

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

#[test]
fn requests_find_their_tool_in_the_top_five() {
    let catalog = recorded();
    assert_eq!(catalog.tools().len(), 104);
    let queries = data("queries.json");
    let queries = queries["queries"].as_array().unwrap();
    assert!(queries.len() >= 60);
    let (mut top1, mut top5) = (0, 0);
    let mut missed = Vec::new();
    for q in queries {
        let (query, expect) = (q["query"].as_str().unwrap(), q["expect"].as_str().unwrap());
        let wanted = catalog.tool(expect).unwrap_or_else(|| panic!("{expect} is not in the recorded catalog"));
        let hits = catalog.search(query, 5).unwrap();
        match hits.iter().position(|h| h.tool.name == wanted.name) {
            Some(0) => (top1, top5) = (top1 + 1, top5 + 1),
            Some(_) => top5 += 1,
            None => missed.push(format!(
                "  {query:?}: wanted {expect}, got {:?}",
                hits.iter().map(|h| &h.tool.name).collect::<Vec<_>>()
            )),
        }
    }
    let n = queries.len() as f64;
    println!(
        "tool search on {} tools, {} requests: top-1 {:.1} %, top-5 {:.1} %\nnot in the top five:\n{}",
        catalog.tools().len(),
        queries.len(),
        100.0 * top1 as f64 / n,
        100.0 * top5 as f64 / n,
        missed.join("\n")
    );
    assert!(top5 as f64 / n >= 0.90, "top-5 accuracy under 90 %: {}\n", missed.join("\n"));
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

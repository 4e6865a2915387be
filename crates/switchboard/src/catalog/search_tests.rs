use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

use super::*;
use crate::catalog::{CompiledFilter, ServerLists};
use crate::config::ToolFilter;

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    serde_json::from_value(json!({"name": name, "description": description, "inputSchema": schema}))
        .unwrap_or_else(|_| Tool::new(name.to_string(), description.to_string(), Arc::default()))
}

fn catalog(servers: &[(&str, Vec<Tool>)]) -> Catalog {
    let lists: Vec<(&str, ServerLists)> =
        servers.iter().map(|(s, tools)| (*s, ServerLists { tools: tools.clone(), ..ServerLists::default() })).collect();
    let all = CompiledFilter::new(&ToolFilter::default());
    Catalog::build(lists.iter().map(|(s, l)| (*s, l, &all)))
}

fn names(hits: &[SearchHit<'_>]) -> Vec<String> {
    hits.iter().map(|h| h.tool.name.clone()).collect()
}

fn github() -> Catalog {
    let obj = json!({"type": "object"});
    catalog(&[
        (
            "github",
            vec![
                tool("create_issue", "Create a new issue in a GitHub repository", obj.clone()),
                tool("list_issues", "List issues in a GitHub repository with filtering options", obj.clone()),
                tool("create_pull_request", "Create a new pull request in a GitHub repository", obj.clone()),
                tool(
                    "search_code",
                    "Search for code across GitHub repositories",
                    json!({"type": "object", "properties": {"q": {"type": "string", "description": "Search query"}}}),
                ),
            ],
        ),
        (
            "fs",
            vec![
                tool("readFile", "Read the complete contents of a file from the file system", obj.clone()),
                tool("write_file", "Create a new file or completely overwrite an existing file", obj.clone()),
                tool(
                    "move_file",
                    "Move or rename files and directories",
                    json!({"type": "object", "properties": {"source": {}, "destination": {}}}),
                ),
            ],
        ),
    ])
}

#[test]
fn words_split_identifiers_drop_common_words_and_stem() {
    let w = Words::new();
    assert_eq!(w.tokenize("getFileInfo"), ["get", "file", "info"]);
    assert_eq!(w.tokenize("HTTPServer v2beta"), ["http", "server", "v", "2", "beta"]);
    assert_eq!(w.tokenize("mcp__git-hub__list_issues"), ["mcp", "git", "hub", "list", "issu"]);
    assert_eq!(w.tokenize("Create an issue for the repositories"), ["creat", "issu", "repositori"]);
    assert!(w.tokenize("the of and to").is_empty());
}

#[test]
fn words_rank_the_tool_named_for_them_first() {
    let cat = github();
    let hits = cat.search("create an issue", 3).unwrap_or_default();
    assert_eq!(names(&hits)[0], "mcp__github__create_issue");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score), "{hits:?}");
    // Plural, other case, camelCase name.
    assert_eq!(names(&cat.search("Issues LIST", 1).unwrap_or_default()), ["mcp__github__list_issues"]);
    assert_eq!(names(&cat.search("read file", 1).unwrap_or_default()), ["mcp__fs__readFile"]);
    // Parameter names count.
    assert_eq!(names(&cat.search("destination", 5).unwrap_or_default()), ["mcp__fs__move_file"]);
    // Server names count.
    assert!(names(&cat.search("github", 10).unwrap_or_default()).len() == 4);
    // No word in common: the closest by meaning, marked as not close (none with the meaning
    // model off).
    let far = cat.search("weather forecast", 5).unwrap_or_default();
    assert!(far.iter().all(|h| !h.close), "{far:?}");
    assert_eq!(far.is_empty(), !cfg!(feature = "meaning"), "{far:?}");
    assert!(cat.search("the", 5).unwrap_or_default().iter().all(|h| !h.close));
    assert!(cat.search("create an issue", 3).unwrap_or_default().iter().all(|h| h.close));
}

#[test]
fn equal_scores_go_by_name_and_limits_hold() {
    // One tool under three servers whose names are as long as each other: the same words, the
    // same length, the same meaning, so the same score.
    let obj = json!({"type": "object"});
    let same = vec![tool("frob", "frobnicate the widget", obj.clone())];
    let cat = catalog(&[("s2", same.clone()), ("s3", same.clone()), ("s1", same)]);
    let hits = cat.search("frobnicate", 10).unwrap_or_default();
    assert!(hits.windows(2).all(|w| w[0].score == w[1].score), "{hits:?}");
    let all = names(&hits);
    assert_eq!(all, ["mcp__s1__frob", "mcp__s2__frob", "mcp__s3__frob"]);
    assert_eq!(names(&cat.search("frobnicate", 2).unwrap_or_default()), all[..2]);
    assert!(cat.search("frobnicate", 0).unwrap_or_default().is_empty());
    // The same answer from another snapshot built from the same lists.
    assert_eq!(names(&cat.clone().search("widget", 10).unwrap_or_default()), all);
}

/// Words the tools do not use find them by meaning: "capture an image of the website" has no
/// word of `take_screenshot`'s (a cosine of 0.37, the others under 0.1); made-up words find
/// nothing.
#[cfg(feature = "meaning")]
#[test]
fn meaning_finds_tools_without_their_words() {
    let obj = json!({"type": "object"});
    let cat = catalog(&[(
        "web",
        vec![
            tool("take_screenshot", "Take a screenshot of the current page", obj.clone()),
            tool("add_observations", "Add new observations to existing entities in the knowledge graph", obj.clone()),
            tool("list_issues", "List issues in a GitHub repository", obj),
        ],
    )]);
    let words = Index::words(cat.tools());
    assert!(words.rank("capture an image of the website", 5, |_| true).is_empty(), "no word in common");
    let hits = cat.search("capture an image of the website", 5).unwrap_or_default();
    assert_eq!(names(&hits), ["mcp__web__take_screenshot"]);
    assert!(hits.iter().all(|h| h.close));
    // Made-up words: still the best candidates, none of them close.
    let made_up = cat.search("qwertyuiop zxcvb", 5).unwrap_or_default();
    assert_eq!(made_up.len(), 3, "{made_up:?}");
    assert!(made_up.iter().all(|h| !h.close), "{made_up:?}");
}

#[test]
fn select_takes_names_in_the_order_asked() {
    let cat = github();
    let hits = cat.search("select:mcp__fs__move_file, github/create_issue,readFile,nope", 10).unwrap_or_default();
    assert_eq!(names(&hits), ["mcp__fs__move_file", "mcp__github__create_issue", "mcp__fs__readFile"]);
    assert!(cat.search("select:nope", 10).unwrap_or_default().is_empty());
}

#[test]
fn regex_matches_names_and_descriptions_in_catalog_order() {
    let cat = github();
    let hits = cat.search("/^(create|write)_/", 10).unwrap_or_default();
    assert_eq!(names(&hits), ["mcp__fs__write_file", "mcp__github__create_issue", "mcp__github__create_pull_request"]);
    assert_eq!(names(&cat.search("/(?i)DIRECTORIES/", 10).unwrap_or_default()), ["mcp__fs__move_file"]);
    match cat.search("/(unclosed/", 10) {
        Err(SearchError::BadRegex { pattern, reason }) => {
            assert_eq!(pattern, "(unclosed");
            assert!(reason.contains("unclosed"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(cat.search("  ", 10).err(), Some(SearchError::Empty));
}

#[test]
fn search_in_keeps_to_the_tools_asked() {
    let cat = github();
    let hits = cat.search_in("create", 10, |t| t.server == "fs").unwrap_or_default();
    assert_eq!(names(&hits), ["mcp__fs__write_file"]);
    let hits = cat.search_in("/file/", 10, |t| t.tool.name != "readFile").unwrap_or_default();
    assert_eq!(names(&hits), ["mcp__fs__move_file", "mcp__fs__write_file"]);
    assert!(cat.search_in("select:readFile", 10, |_| false).unwrap_or_default().is_empty());
}

#[test]
fn each_field_counts_by_its_weight() {
    let mut t = tool("create_issue", "Opens an issue.", json!({"type": "object", "properties": {"repo": {}}}));
    t.title = Some("Create issue".into());
    let cat = catalog(&[("gh", vec![t])]);
    let index = Index::build(cat.tools());
    // Name 3 × (creat, issu), title 2 × (creat, issu), server (gh), description (open, issu),
    // parameter (repo): 6 + 4 + 1 + 2 + 1 words.
    assert_eq!(index.avgdl, 14.0);
}

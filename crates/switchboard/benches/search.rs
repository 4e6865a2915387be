//! Tool search at scale: the recorded catalog of 24 real servers (`tests/search/`, 311 tools),
//! copied under 33 server names each into 10,263 tools, searched with the 140 requests of the
//! quality set.
//!
//! Rows: the index build (a snapshot's first search; the process's first also decodes the
//! meaning model's tables), and word, `select:` and regex queries:
//! median, 99th percentile and spread over every request, repeated in interleaved rounds.
//! Targets from issue 16: p99 under 2 ms at 10,000 tools. `cargo bench -p switchboard --bench
//! search` (about a minute with the release build).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::catalog::{Catalog, CompiledFilter, ServerLists};
use switchboard::config::ToolFilter;

const COPIES: usize = 33;
const ROUNDS: usize = 15;

fn data(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/search").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn row(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{what:<44} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>8}",
        us(quantile(&times, 0.5)),
        us(quantile(&times, 0.99)),
        us(quantile(&times, 0.25)),
        us(quantile(&times, 0.75)),
        times.len()
    );
}

fn main() {
    let recorded = data("catalog.json");
    let mut lists: Vec<(String, ServerLists)> = Vec::new();
    for copy in 0..COPIES {
        for (name, server) in recorded["servers"].as_object().unwrap() {
            let mut l = ServerLists::default();
            l.tools = serde_json::from_value(server["tools"].clone()).unwrap();
            lists.push((format!("{name}-{copy}"), l));
        }
    }
    let all = CompiledFilter::new(&ToolFilter::default());
    let build = || Catalog::build(lists.iter().map(|(n, l)| (n.as_str(), l, &all)));
    let queries: Vec<String> = data("queries.json")["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_str().unwrap().to_string())
        .collect();
    let catalog = build();
    let tools = catalog.tools().len();
    println!(
        "tool search over {tools} tools ({COPIES} copies of 24 real servers), {} requests, {ROUNDS} rounds",
        queries.len()
    );
    println!("{:<44} {:>10} {:>10} {:>10} {:>10} {:>8}", "row (microseconds)", "median", "p99", "p25", "p75", "n");

    // The process's first index build also decodes the meaning model's tables (once).
    let fresh = build();
    let t = Instant::now();
    std::hint::black_box(fresh.search("create issue", 5).unwrap());
    row("index build, the process's first (tables decoded)", vec![t.elapsed()]);

    // Index build: the first search of a fresh snapshot, against an A/A pair of later searches.
    let (mut first, mut later) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let fresh = build();
        let t = Instant::now();
        std::hint::black_box(fresh.search("create issue", 5).unwrap());
        first.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(fresh.search("create issue", 5).unwrap());
        later.push(t.elapsed());
    }
    row("index build (first search of a snapshot)", first);
    row("the same search again (index built)", later);

    // Word queries, and the same set once more as the A/A row; select and regex interleaved.
    let names: Vec<String> = catalog.tools().iter().step_by(97).map(|t| t.name.clone()).collect();
    let (mut words, mut again, mut select, mut regex) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for (i, q) in queries.iter().enumerate() {
            let t = Instant::now();
            std::hint::black_box(catalog.search(q, 5).unwrap());
            words.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(catalog.search(q, 5).unwrap());
            again.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(catalog.search(&format!("select:{}", names[i % names.len()]), 5).unwrap());
            select.push(t.elapsed());
        }
        for pattern in ["/^create_/", "/(?i)screenshot/", "/pull_request_re/"] {
            let t = Instant::now();
            std::hint::black_box(catalog.search(pattern, 5).unwrap());
            regex.push(t.elapsed());
        }
    }
    row("words, top 5", words);
    row("words, top 5 (A/A: the same again)", again);
    row("select:NAME", select);
    row("/regex/ (stops at 5 matches)", regex);
}

//! Tool search: which of the catalog's tools answer a request such as "create an issue".
//!
//! Three kinds of query, as Claude Code's ToolSearch and Anthropic's tool-search tools take:
//! - `select:NAME[,NAME...]`: exactly these tools (model-visible name, `server/tool`, or a raw
//!   tool name, which may be several servers' tools), in the order asked;
//! - `/REGEX/`: tools whose model-visible name, raw name, title or description match (Rust
//!   `regex` syntax; `(?i)` for any case), in catalog order;
//! - anything else: words, ranked with BM25 over each tool's name (split on `_`, `-`, `.`,
//!   case changes and digits), title, server, description, and parameter names and
//!   descriptions. The name counts three times and the title twice, so "create issue" finds
//!   `create_issue` before a tool that only mentions issues.
//!
//! The BM25 weights (k1 1.2, b 0.75, the corpus's average length) come from the `bm25` crate's
//! `Embedder`; the postings are ours, flat, because its `Scorer` reads each candidate's whole
//! embedding per query token (12 ms at the 99th percentile on 10,000 tools, against 0.3 ms
//! here: `docs/ARCHITECTURE.md` has the comparison with tantivy).
//!
//! Invariants: the same catalog and query always give the same answer (equal scores are
//! ordered by model-visible name); the index is built on a snapshot's first search, once, and
//! shared by its clones, so a catalog nobody searches costs nothing.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use super::{Catalog, ToolEntry};

/// Why a query could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// `/.../` held a pattern that is not a regular expression.
    #[error("`/{pattern}/` is not a regular expression: {reason}")]
    BadRegex {
        /// The pattern, as written.
        pattern: String,
        /// What the regex parser said.
        reason: String,
    },
    /// Nothing to search for.
    #[error("the query is empty: give words, `select:NAME[,NAME]` or `/REGEX/`")]
    Empty,
}

/// One tool found, with how well it matched.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SearchHit<'a> {
    /// The tool.
    pub tool: &'a ToolEntry,
    /// Its BM25 score for a word query; 1 for `select:` and regex matches.
    pub score: f32,
}

impl SearchHit<'_> {
    /// The score to four decimals, as shown (JSON of the CLI and the API): the same text
    /// whichever process ranked it.
    pub fn shown_score(&self) -> f64 {
        (f64::from(self.score) * 10_000.0).round() / 10_000.0
    }
}

/// Longest regex a query may hold (Anthropic's regex tool takes 200 characters).
const MAX_REGEX: usize = 1_000;

impl Catalog {
    /// At most `limit` tools that answer `query` (see the module's documentation), best first.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit<'_>>, SearchError> {
        self.search_in(query, limit, |_| true)
    }

    /// As [`Catalog::search`], among the tools `keep` accepts (a profile's view, one server).
    pub fn search_in(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&ToolEntry) -> bool,
    ) -> Result<Vec<SearchHit<'_>>, SearchError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(SearchError::Empty);
        }
        if let Some(names) = query.strip_prefix("select:") {
            return Ok(self.select(names, limit, &keep));
        }
        if let Some(pattern) = query.strip_prefix('/').and_then(|q| q.strip_suffix('/')).filter(|p| !p.is_empty()) {
            return self.regex(pattern, limit, &keep);
        }
        let index = self.index.get_or_init(|| Index::build(&self.tools));
        Ok(index
            .rank(query, limit, |i| self.tools.get(i).is_some_and(&keep))
            .into_iter()
            .filter_map(|(i, score)| Some(SearchHit { tool: self.tools.get(i)?, score }))
            .collect())
    }

    fn select(&self, names: &str, limit: usize, keep: &impl Fn(&ToolEntry) -> bool) -> Vec<SearchHit<'_>> {
        let mut out: Vec<SearchHit<'_>> = Vec::new();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let found: Vec<&ToolEntry> = match self.tool(name) {
                Some(t) => vec![t],
                None => self.tools.iter().filter(|t| t.tool.name == name).collect(),
            };
            for tool in found {
                if keep(tool) && !out.iter().any(|h| h.tool.name == tool.name) {
                    out.push(SearchHit { tool, score: 1.0 });
                }
            }
        }
        out.truncate(limit);
        out
    }

    fn regex(
        &self,
        pattern: &str,
        limit: usize,
        keep: &impl Fn(&ToolEntry) -> bool,
    ) -> Result<Vec<SearchHit<'_>>, SearchError> {
        let bad = |reason: String| SearchError::BadRegex { pattern: crate::text::excerpt(pattern, 80), reason };
        if pattern.len() > MAX_REGEX {
            return Err(bad(format!("longer than {MAX_REGEX} characters")));
        }
        let re = regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| bad(e.to_string().lines().last().unwrap_or("invalid").trim().to_string()))?;
        let matches = |t: &ToolEntry| {
            re.is_match(&t.name)
                || re.is_match(&t.tool.name)
                || t.tool.title.as_deref().is_some_and(|s| re.is_match(s))
                || t.tool.description.as_deref().is_some_and(|s| re.is_match(s))
        };
        Ok(self
            .tools
            .iter()
            .filter(|t| keep(t) && matches(t))
            .take(limit)
            .map(|tool| SearchHit { tool, score: 1.0 })
            .collect())
    }
}

/// The words of a text as the index keeps them: split on anything not a letter or digit and on
/// case changes (`getFileInfo`, `HTTPServer`) and letter/digit boundaries, lower-cased, common
/// English words left out, stemmed (Snowball English: "issues" and "issue" are one word).
pub(crate) struct Words {
    stemmer: Stemmer,
}

impl Default for Words {
    fn default() -> Words {
        Words { stemmer: Stemmer::create(Algorithm::English) }
    }
}

impl Words {
    pub(crate) fn new() -> Words {
        Words::default()
    }

    /// Each word of `text`, lower-cased, common words left out, not stemmed yet.
    fn each(text: &str, mut word: impl FnMut(&str)) {
        let mut lower = String::new();
        let mut push = |piece: &str| {
            lower.clear();
            if piece.is_ascii() {
                lower.push_str(piece);
                lower.make_ascii_lowercase();
            } else {
                lower.extend(piece.chars().flat_map(char::to_lowercase));
            }
            if !lower.is_empty() && !is_stop_word(&lower) {
                word(&lower);
            }
        };
        for chunk in text.split(|c: char| !c.is_alphanumeric()).filter(|c| !c.is_empty()) {
            let mut start = 0;
            let mut chars = chunk.char_indices().peekable();
            let mut prev: Option<char> = None;
            while let Some((at, c)) = chars.next() {
                if let Some(p) = prev {
                    let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
                    let boundary = (p.is_lowercase() && c.is_uppercase())
                        || (p.is_uppercase() && c.is_uppercase() && next_lower)
                        || (p.is_alphabetic() && c.is_numeric())
                        || (p.is_numeric() && c.is_alphabetic());
                    if boundary {
                        push(&chunk[start..at]);
                        start = at;
                    }
                }
                prev = Some(c);
            }
            push(&chunk[start..]);
        }
    }
}

impl bm25::Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Words::each(text, |w| out.push(self.stemmer.stem(w).into_owned()));
        out
    }
}

/// Words already split and stemmed, one space apart (the index's documents: each word of the
/// catalog is stemmed once per build, not once per occurrence).
#[derive(Default)]
struct Spaces;

impl bm25::Tokenizer for Spaces {
    fn tokenize(&self, text: &str) -> Vec<String> {
        text.split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect()
    }
}

/// English words too common to tell tools apart (a `match`: by length, then the bytes; a
/// sorted list searched by halves spent a quarter of the index build comparing strings).
fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "a" | "about"
            | "all"
            | "an"
            | "and"
            | "any"
            | "are"
            | "as"
            | "at"
            | "be"
            | "been"
            | "by"
            | "can"
            | "could"
            | "do"
            | "does"
            | "for"
            | "from"
            | "has"
            | "have"
            | "how"
            | "i"
            | "if"
            | "in"
            | "into"
            | "is"
            | "it"
            | "its"
            | "me"
            | "my"
            | "of"
            | "on"
            | "or"
            | "our"
            | "please"
            | "should"
            | "so"
            | "some"
            | "that"
            | "the"
            | "their"
            | "them"
            | "then"
            | "there"
            | "these"
            | "this"
            | "those"
            | "to"
            | "tool"
            | "use"
            | "used"
            | "using"
            | "want"
            | "was"
            | "we"
            | "what"
            | "when"
            | "where"
            | "which"
            | "will"
            | "with"
            | "would"
            | "you"
            | "your"
    )
}

/// Characters of a description or parameter description that are indexed (the start says
/// what a tool does; a 50 KB description must not make one tool match everything).
const DESCRIPTION_CHARS: usize = 4_000;
const PARAM_CHARS: usize = 300;

/// One tool's fields for the index, each with its weight (times it counts) and how many of its
/// characters are read.
fn fields<'a>(entry: &'a ToolEntry, mut field: impl FnMut(&'a str, usize)) {
    let tool = &entry.tool;
    let cut = |text: &'a str, cap: usize| text.char_indices().nth(cap).map_or(text, |(at, _)| &text[..at]);
    field(cut(&tool.name, 200), 3);
    if let Some(title) = tool.title.as_deref() {
        field(cut(title, 200), 2);
    }
    field(cut(&entry.server, 200), 1);
    field(cut(tool.description.as_deref().unwrap_or(""), DESCRIPTION_CHARS), 1);
    if let Some(Value::Object(props)) = entry.input_schema.get("properties") {
        for (name, prop) in props.iter().take(64) {
            field(cut(name, 100), 1);
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                field(cut(d, PARAM_CHARS), 1);
            }
        }
    }
}

/// The catalog's word index.
pub(crate) struct Index {
    /// Queries' words, weighted as the documents' were.
    embedder: bm25::Embedder<u32, Words>,
    /// Per word: its inverse document frequency and the tools that have it with their BM25
    /// term weight, in catalog order.
    postings: HashMap<u32, (f32, Vec<(u32, f32)>)>,
    tools: usize,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("tools", &self.tools).field("words", &self.postings.len()).finish()
    }
}

impl Index {
    pub(crate) fn build(tools: &[ToolEntry]) -> Index {
        let words = Words::new();
        let mut stems: HashMap<String, String> = HashMap::new();
        let mut total = 0usize;
        let docs: Vec<String> = tools
            .iter()
            .map(|tool| {
                let mut doc = String::new();
                fields(tool, |text, times| {
                    let (start, mut n) = (doc.len(), 0);
                    Words::each(text, |w| {
                        let stem = match stems.get(w) {
                            Some(s) => s,
                            None => stems.entry(w.to_string()).or_insert_with(|| words.stemmer.stem(w).into_owned()),
                        };
                        doc.push_str(stem);
                        doc.push(' ');
                        n += 1;
                    });
                    // A weighted field's words again, not split and stemmed again.
                    let end = doc.len();
                    for _ in 1..times {
                        doc.extend_from_within(start..end);
                    }
                    total += n * times;
                });
                doc
            })
            .collect();
        let avgdl = if docs.is_empty() { 1.0 } else { total as f32 / docs.len() as f32 };
        let documents = bm25::EmbedderBuilder::<u32, Spaces>::with_avgdl(avgdl).build();
        let embedder = bm25::EmbedderBuilder::<u32, Words>::with_avgdl(avgdl).tokenizer(words).build();
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let mut postings: HashMap<u32, (f32, Vec<(u32, f32)>)> = HashMap::new();
        for (i, doc) in refs.iter().enumerate() {
            let Ok(i) = u32::try_from(i) else { break };
            // The embedding has an entry per occurrence, each with the word's weight.
            let mut words = documents.embed(doc).0;
            words.sort_unstable_by_key(|w| w.index);
            words.dedup_by_key(|w| w.index);
            for word in words {
                postings.entry(word.index).or_default().1.push((i, word.value));
            }
        }
        let n = tools.len() as f32;
        for (idf, docs) in postings.values_mut() {
            let df = docs.len() as f32;
            *idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        }
        Index { embedder, postings, tools: tools.len() }
    }

    /// The best `limit` tools for `query` among those `keep` accepts: (position, score).
    pub(crate) fn rank(&self, query: &str, limit: usize, keep: impl Fn(usize) -> bool) -> Vec<(usize, f32)> {
        let mut words: Vec<u32> = self.embedder.embed(query).indices().copied().collect();
        words.sort_unstable();
        words.dedup();
        let mut scores = vec![0f32; self.tools];
        let mut touched: Vec<u32> = Vec::new();
        for word in &words {
            let Some((idf, docs)) = self.postings.get(word) else { continue };
            for &(doc, weight) in docs {
                let Some(score) = scores.get_mut(doc as usize) else { continue };
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += idf * weight;
            }
        }
        let mut found: Vec<(usize, f32)> = touched
            .into_iter()
            .map(|d| (d as usize, scores[d as usize]))
            .filter(|&(d, s)| s > 0.0 && keep(d))
            .collect();
        // Catalog positions follow model-visible names, so ties go by name.
        let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if limit < found.len() {
            if limit == 0 {
                return Vec::new();
            }
            found.select_nth_unstable_by(limit - 1, order);
            found.truncate(limit);
        }
        found.sort_unstable_by(order);
        found
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;

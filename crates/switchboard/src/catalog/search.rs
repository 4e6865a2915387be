//! Tool search: which of the catalog's tools answer a request such as "create an issue".
//!
//! Three kinds of query, as Claude Code's ToolSearch and Anthropic's tool-search tools take:
//! - `select:NAME[,NAME...]`: exactly these tools (model-visible name, `server/tool`, or a raw
//!   tool name, which may be several servers' tools), in the order asked;
//! - `/REGEX/`: tools whose model-visible name, raw name, title or description match (Rust
//!   `regex` syntax; `(?i)` for any case), in catalog order;
//! - anything else: words, ranked by what they say and what they mean. Words: BM25 over each
//!   tool's name (split on `_`, `-`, `.`, case changes and digits), title, server,
//!   description, and parameter names and descriptions; the name counts three times and the
//!   title twice, so "create issue" finds `create_issue` before a tool that only mentions
//!   issues; a tool's BM25 is weighed by the square of the share of the query's words it has.
//!   Meaning: the cosine of the query's vector and the tool's (its name, title and the first
//!   200 characters of its description), from WordLlama's token vectors (`embed`), so that
//!   "capture an image of the website" finds `take_screenshot` with no word in common. A tool
//!   is found by a word, or by a cosine of at least 0.3; its score is its words over the best
//!   found tool's, plus three times its cosine. When no tool is found so, the closest by
//!   meaning are given, each `SearchHit::close` false: a search always has an answer.
//!
//! The BM25 weights (k1 1.2, b 0.75, the corpus's average length) are computed here, over
//! stems numbered as the index is built, into flat postings (`docs/ARCHITECTURE.md` has the
//! comparison with the `bm25` crate and tantivy, and the measurements that chose the weights).
//!
//! Invariants: the same catalog and query always give the same answer (equal scores are
//! ordered by model-visible name); the index is built on a snapshot's first search, once, and
//! shared by its clones, so a catalog nobody searches costs nothing.

use foldhash::HashMap;
use foldhash::HashMapExt;

use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use super::embed::{self, Embedder, Packed};
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
    /// For a word query, its words (0..1: its BM25 over the best tool's) plus three times the
    /// cosine of its meaning and the query's; 1 for `select:` and regex matches.
    pub score: f32,
    /// It has a word of the query or a meaning near enough (see [`Catalog::search`]); false
    /// when no tool does and it is among the closest by meaning, given so that a search
    /// always answers with its best candidates.
    pub close: bool,
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
            .filter_map(|(i, score, close)| Some(SearchHit { tool: self.tools.get(i)?, score, close }))
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
                    out.push(SearchHit { tool, score: 1.0, close: true });
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
            .map(|tool| SearchHit { tool, score: 1.0, close: true })
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

impl Words {
    /// The stems of `text`'s words, in order (a query's words as the index keeps them).
    pub(crate) fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Words::each(text, |w| out.push(self.stemmer.stem(w).into_owned()));
        out
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

/// How much meaning counts against words: a tool's score is its words (0..1) plus this times
/// the cosine of its meaning and the query's. Chosen on the requests of `tests/search`: 2, 3
/// and 4 gave 66.4, 68.6 and 66.4 % top-1 (86.4 % top-3 for 3 and 4).
const MEANING_WEIGHT: f32 = 3.0;
/// Least cosine that finds a tool that has none of the query's words: unrelated texts (made-up
/// words, "banana smoothie recipe", "hello") stay under 0.3 with every recorded tool, and the
/// requests' own tools are under it for one in ten, which their words then find.
const MIN_MEANING: f32 = 0.3;
/// Characters of a description its meaning is taken from: the start says what a tool does
/// (200 did better than 500 and 4,000 on the requests).
const MEANING_CHARS: usize = 200;

/// The words a tool's meaning is taken from: its name's words, its title, and the start of
/// its description.
fn meaning_text(entry: &ToolEntry) -> [String; 3] {
    let tool = &entry.tool;
    let mut name = String::with_capacity(tool.name.len() + 4);
    let mut prev: Option<char> = None;
    for c in tool.name.chars() {
        if !c.is_alphanumeric() {
            name.push(' ');
        } else {
            if prev.is_some_and(|p| p.is_lowercase() && c.is_uppercase()) {
                name.push(' ');
            }
            name.push(c);
        }
        prev = Some(c);
    }
    let cut = |text: &str| text.char_indices().nth(MEANING_CHARS).map_or(text, |(at, _)| &text[..at]).to_string();
    [name, tool.title.as_deref().map(cut).unwrap_or_default(), cut(tool.description.as_deref().unwrap_or(""))]
}

/// Each tool's meaning, in catalog order; none if the model is not there.
fn meanings(tools: &[ToolEntry]) -> Vec<Packed> {
    let Some(model) = embed::model() else { return Vec::new() };
    let mut embedder = Embedder::new(model);
    tools.iter().map(|t| Packed::new(&embedder.embed(meaning_text(t).iter().map(String::as_str)))).collect()
}

/// BM25's term-frequency saturation and length normalisation (the usual values).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The catalog's word index.
pub(crate) struct Index {
    /// Queries' words, split and stemmed as the documents' were.
    words: Words,
    /// Stem → its number in `postings`.
    ids: HashMap<String, u32>,
    /// Per stem: its inverse document frequency and the tools that have it with their BM25
    /// term weight, in catalog order.
    postings: Vec<(f32, Vec<(u32, f32)>)>,
    /// The tools' average length in words, field weights counted.
    avgdl: f32,
    tools: usize,
    /// Each tool's meaning (its name, title and the start of its description; `embed`), in
    /// catalog order; empty if the model is not there.
    meanings: Vec<Packed>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("tools", &self.tools)
            .field("words", &self.postings.len())
            .field("avgdl", &self.avgdl)
            .finish()
    }
}

impl Index {
    /// The index of `tools`: their words (`Index::words`) and, on a second thread at the same
    /// time, their meanings (the words take about three times as long: 0.13 s and 0.04 s at
    /// 10,000 tools; the process's first build also decodes the model's tables, 0.05 s).
    pub(crate) fn build(tools: &[ToolEntry]) -> Index {
        std::thread::scope(|scope| {
            // A thread the system will not give: the meanings after the words, on this one.
            let second =
                std::thread::Builder::new().name("search-index".into()).spawn_scoped(scope, || meanings(tools));
            let mut index = Index::words(tools);
            index.meanings = match second {
                // A panic there (none is known) leaves search to the words.
                Ok(handle) => handle.join().unwrap_or_default(),
                Err(_) => meanings(tools),
            };
            index
        })
    }

    /// Each tool's words counted straight into numbered stems (a word is stemmed once per
    /// build, whatever its occurrences), then each (stem, tool) weighed by BM25:
    /// `tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`, with the field weights counted into
    /// `tf` and `dl` (the name three times, the title twice).
    fn words(tools: &[ToolEntry]) -> Index {
        let words = Words::new();
        // Lower-cased word → stem number, and stem → number.
        let mut seen: HashMap<String, u32> = HashMap::new();
        let mut ids: HashMap<String, u32> = HashMap::new();
        // Per tool: (stem, tf) and its length.
        let mut docs: Vec<(Vec<(u32, u32)>, u32)> = Vec::with_capacity(tools.len());
        // Counts of the tool being read, by stem, and the stems it has.
        let mut counts: Vec<u32> = Vec::new();
        let mut has: Vec<u32> = Vec::new();
        let mut total = 0u64;
        for tool in tools {
            let mut length = 0u32;
            fields(tool, |text, times| {
                let times = u32::try_from(times).unwrap_or(1);
                Words::each(text, |w| {
                    let id = match seen.get(w) {
                        Some(&id) => id,
                        None => {
                            let stem = words.stemmer.stem(w).into_owned();
                            let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                            let id = *ids.entry(stem).or_insert(next);
                            seen.insert(w.to_string(), id);
                            id
                        }
                    };
                    let i = id as usize;
                    if i >= counts.len() {
                        counts.resize(i + 1, 0);
                    }
                    if counts[i] == 0 {
                        has.push(id);
                    }
                    counts[i] += times;
                    length += times;
                });
            });
            has.sort_unstable();
            let terms = has.drain(..).map(|id| (id, std::mem::take(&mut counts[id as usize]))).collect();
            total += u64::from(length);
            docs.push((terms, length));
        }
        let avgdl = if docs.is_empty() { 1.0 } else { (total as f32 / docs.len() as f32).max(1.0) };
        let mut postings: Vec<(f32, Vec<(u32, f32)>)> = vec![(0.0, Vec::new()); ids.len()];
        for (doc, (terms, length)) in docs.iter().enumerate() {
            let Ok(doc) = u32::try_from(doc) else { break };
            let norm = K1 * (1.0 - B + B * (*length as f32 / avgdl));
            for &(id, tf) in terms {
                let tf = tf as f32;
                if let Some(list) = postings.get_mut(id as usize) {
                    list.1.push((doc, tf * (K1 + 1.0) / (tf + norm)));
                }
            }
        }
        let n = tools.len() as f32;
        for (idf, docs) in &mut postings {
            let df = docs.len() as f32;
            *idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        }
        Index { words, ids, postings, avgdl, tools: tools.len(), meanings: Vec::new() }
    }

    /// The best `limit` tools for `query` among those `keep` accepts: (position, score). A
    /// tool is found by a word of the query (BM25) or by its meaning alone (a cosine of at
    /// least `MIN_MEANING`); it scores its words over the best found tool's, plus
    /// `MEANING_WEIGHT` times its cosine. Its words are its BM25 times the square of the share
    /// of the query's words it has (of those any tool has): "add two numbers" wants `get-sum`
    /// ("the sum of two numbers") before `add_observations` (the rarer word, three times in its
    /// name). That square took top-1 from 64.5 to 67.7 % on the unseen requests of
    /// `tests/search` (67.9 % either way on the others) and top-3 from 86.4 to 87.1 % and 83.9
    /// to 85.5 %.
    ///
    /// When no tool is found either way and the meaning model is there, the closest tools by
    /// meaning are given instead, marked as not close (the third field): a search always
    /// answers with its best candidates.
    pub(crate) fn rank(&self, query: &str, limit: usize, keep: impl Fn(usize) -> bool) -> Vec<(usize, f32, bool)> {
        let mut words: Vec<u32> = self.words.tokenize(query).iter().filter_map(|w| self.ids.get(w).copied()).collect();
        words.sort_unstable();
        words.dedup();
        // Per tool: BM25, and how many of the query's words it has.
        let mut scores = vec![(0f32, 0u32); self.tools];
        for word in &words {
            let Some((idf, docs)) = self.postings.get(*word as usize) else { continue };
            for &(doc, weight) in docs {
                if let Some((score, has)) = scores.get_mut(doc as usize) {
                    *score += idf * weight;
                    *has = has.saturating_add(1);
                }
            }
        }
        let asked = words.len().max(1) as f32;
        let query_meaning = embed::model().map(|m| Embedder::new(m).embed([query]));
        // (position, BM25, cosine) of each tool found, and of every tool kept (the fallback).
        let mut candidates: Vec<(usize, f32, f32)> = Vec::new();
        let mut closest: Vec<(usize, f32)> = Vec::new();
        let mut top = 0f32;
        for (d, &(score, has)) in scores.iter().enumerate() {
            let covered = has as f32 / asked;
            let score = score * covered * covered;
            let meaning = match (&query_meaning, self.meanings.get(d)) {
                (Some(q), Some(m)) => Some(m.dot(q)),
                _ => None,
            };
            if !keep(d) {
                continue;
            }
            if score > 0.0 || meaning.is_some_and(|m| m >= MIN_MEANING) {
                top = top.max(score);
                candidates.push((d, score, meaning.unwrap_or(0.0)));
            } else if let Some(m) = meaning {
                closest.push((d, MEANING_WEIGHT * m));
            }
        }
        let close = !candidates.is_empty();
        let mut found: Vec<(usize, f32)> = if close {
            candidates
                .into_iter()
                .map(|(d, score, meaning)| {
                    let words = if top > 0.0 { score / top } else { 0.0 };
                    (d, words + MEANING_WEIGHT * meaning)
                })
                .collect()
        } else {
            closest
        };
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
        found.into_iter().map(|(d, score)| (d, score, close)).collect()
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;

//! Meaning for tool search: a text's place among texts, as the mean of its tokens' vectors.
//!
//! The vectors are WordLlama's (MIT; `model/README.md` says where from and their SHA-256):
//! a static embedding of the 32,000 tokens of Llama 2's tokenizer, trained so that texts that
//! mean the same thing ("remember that Alice likes tea", "add observations about an entity")
//! lie close although they share no word. No network and no model runtime: the tokenizer (a
//! byte-fallback BPE) is here, and a text's vector is the mean of its tokens' rows, made unit
//! length, so that two texts' dot product is their cosine.
//!
//! The tables are compiled into the library (8.3 MB of vectors: 256 signed bytes and a scale
//! per token) and decoded once per process, on the first search that needs them; they are
//! constant data, never written after. Without the `meaning` feature there are no tables and
//! search ranks by words alone.
#![cfg_attr(not(feature = "meaning"), allow(dead_code))]

use foldhash::HashMap;
use foldhash::HashMapExt;

/// Dimensions of a vector.
pub(crate) const DIMS: usize = 256;
/// Bytes per token in `vectors.bin`: its bytes, then its scale (f32, little-endian).
const ROW: usize = DIMS + 4;
/// Longest word tokenized, in characters (a longer one is cut: merging is quadratic in it).
const MAX_WORD: usize = 256;

#[cfg(feature = "meaning")]
static TOKENS: &str = include_str!("model/tokens.json");
#[cfg(feature = "meaning")]
static MERGES: &str = include_str!("model/merges.txt");
#[cfg(feature = "meaning")]
static VECTORS: &[u8] = include_bytes!("model/vectors.bin");
#[cfg(not(feature = "meaning"))]
static VECTORS: &[u8] = &[];

/// The tokenizer and the vectors, decoded.
pub(crate) struct Model {
    /// Token of each single character the vocabulary has.
    chars: HashMap<char, u32>,
    /// The tokens of the 256 bytes, for characters it has not (`<0x00>`..`<0xFF>`).
    bytes: [u32; 256],
    /// (left, right) → (rank, merged token): merges are applied lowest rank first.
    merges: HashMap<(u32, u32), (u32, u32)>,
    tokens: usize,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("tokens", &self.tokens).field("merges", &self.merges.len()).finish()
    }
}

/// The model, decoded on first use; `None` without the `meaning` feature, or if the
/// compiled-in tables do not decode (a build defect the unit tests catch): search then ranks
/// by words alone.
pub(crate) fn model() -> Option<&'static Model> {
    #[cfg(feature = "meaning")]
    {
        static MODEL: std::sync::OnceLock<Option<Model>> = std::sync::OnceLock::new();
        MODEL.get_or_init(|| Model::decode(TOKENS, MERGES, VECTORS)).as_ref()
    }
    #[cfg(not(feature = "meaning"))]
    None
}

impl Model {
    fn decode(tokens: &str, merges: &str, vectors: &[u8]) -> Option<Model> {
        let tokens: Vec<String> = serde_json::from_str(tokens).ok()?;
        if vectors.len() != tokens.len() * ROW {
            return None;
        }
        let mut chars = HashMap::new();
        let mut bytes = [0u32; 256];
        let mut found = 0;
        for (id, token) in tokens.iter().enumerate() {
            let id = u32::try_from(id).ok()?;
            let mut it = token.chars();
            if let (Some(c), None) = (it.next(), it.next()) {
                chars.insert(c, id);
            }
            if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'))
                && let (2, Ok(b)) = (hex.len(), u8::from_str_radix(hex, 16))
            {
                bytes[usize::from(b)] = id;
                found += 1;
            }
        }
        if found != 256 {
            return None;
        }
        let mut pairs = HashMap::with_capacity(merges.len() / 14);
        for (rank, line) in merges.lines().enumerate() {
            let mut it = line.split(' ').map(str::parse::<u32>);
            let (Some(Ok(a)), Some(Ok(b)), Some(Ok(m)), None) = (it.next(), it.next(), it.next(), it.next()) else {
                return None;
            };
            pairs.entry((a, b)).or_insert((u32::try_from(rank).ok()?, m));
        }
        Some(Model { chars, bytes, merges: pairs, tokens: tokens.len() })
    }

    /// The tokens of one word (no white space in it), as the tokenizer gives them after the
    /// word boundary it marks with `▁`: each character, or its UTF-8 bytes if the vocabulary
    /// has not the character, then merges, lowest rank first (the leftmost of equal ranks).
    pub(crate) fn word(&self, word: &str, out: &mut Vec<u32>) {
        let mut symbols: Vec<u32> = Vec::with_capacity(word.len() + 1);
        let mut buf = [0u8; 4];
        for c in std::iter::once('\u{2581}').chain(word.chars().take(MAX_WORD)) {
            match self.chars.get(&c) {
                Some(&id) => symbols.push(id),
                None => symbols.extend(c.encode_utf8(&mut buf).bytes().map(|b| self.bytes[usize::from(b)])),
            }
        }
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(at, pair)| self.merges.get(&(pair[0], pair[1])).map(|&(rank, to)| (rank, at, to)))
                .min();
            let Some((_, at, to)) = best else { break };
            symbols[at] = to;
            symbols.remove(at + 1);
        }
        out.extend_from_slice(&symbols);
    }

    /// Adds token `id`'s vector to `sum`.
    fn add(&self, id: u32, sum: &mut [f32; DIMS]) {
        let at = id as usize * ROW;
        let Some(row) = VECTORS.get(at..at + ROW) else { return };
        let (values, scale) = row.split_at(DIMS);
        let (Ok(values), Ok(scale)) = (<&[u8; DIMS]>::try_from(values), <[u8; 4]>::try_from(scale)) else { return };
        let scale = f32::from_le_bytes(scale);
        // Fixed lengths: no bounds checks, so the loop is vector instructions.
        for i in 0..DIMS {
            sum[i] += f32::from(values[i] as i8) * scale;
        }
    }
}

/// Vectors of texts, remembering each word's tokens (a catalog repeats its words).
pub(crate) struct Embedder<'m> {
    model: &'m Model,
    words: HashMap<String, (u32, u32)>,
    ids: Vec<u32>,
}

impl<'m> Embedder<'m> {
    pub(crate) fn new(model: &'m Model) -> Embedder<'m> {
        Embedder { model, words: HashMap::new(), ids: Vec::new() }
    }

    /// The unit vector of the texts' tokens together (split on white space; the zero vector
    /// for a text with no token).
    pub(crate) fn embed<'t>(&mut self, texts: impl IntoIterator<Item = &'t str>) -> [f32; DIMS] {
        let mut sum = [0f32; DIMS];
        let mut count = 0u32;
        for word in texts.into_iter().flat_map(str::split_whitespace) {
            let (start, len) = match self.words.get(word) {
                Some(&range) => range,
                None => {
                    let start = self.ids.len();
                    self.model.word(word, &mut self.ids);
                    let range =
                        (u32::try_from(start).unwrap_or(u32::MAX), u32::try_from(self.ids.len() - start).unwrap_or(0));
                    self.words.insert(word.to_string(), range);
                    range
                }
            };
            let (start, len) = (start as usize, len as usize);
            for &id in self.ids.get(start..start + len).unwrap_or(&[]) {
                self.model.add(id, &mut sum);
                count += 1;
            }
        }
        let norm = dot(&sum, &sum).sqrt();
        if count > 0 && norm > 0.0 {
            sum.iter_mut().for_each(|v| *v /= norm);
        }
        sum
    }
}

/// Two unit vectors' cosine (eight sums side by side, which the compiler turns into vector
/// instructions: one running sum cannot be reordered).
pub(crate) fn dot(a: &[f32; DIMS], b: &[f32; DIMS]) -> f32 {
    let mut sums = [0f32; 8];
    for chunk in 0..DIMS / 8 {
        for (i, sum) in sums.iter_mut().enumerate() {
            *sum += a[chunk * 8 + i] * b[chunk * 8 + i];
        }
    }
    sums.iter().sum()
}

/// A unit vector in a quarter of the memory (a byte per dimension and a scale): at 10,000
/// tools 2.6 MB that a query reads whole, where 10 MB of `f32` did not stay in the cache (a
/// query took three times as long). Cosines move by less than 0.01.
#[derive(Clone)]
pub(crate) struct Packed {
    values: [i8; DIMS],
    scale: f32,
}

impl Packed {
    pub(crate) fn new(v: &[f32; DIMS]) -> Packed {
        let top = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if top > 0.0 { top / 127.0 } else { 1.0 };
        let mut values = [0i8; DIMS];
        for (out, x) in values.iter_mut().zip(v) {
            // In -127..=127 by construction.
            *out = (x / scale).round().clamp(-127.0, 127.0) as i8;
        }
        Packed { values, scale }
    }

    /// The cosine of this vector and a unit vector.
    pub(crate) fn dot(&self, q: &[f32; DIMS]) -> f32 {
        let mut sums = [0f32; 8];
        for chunk in 0..DIMS / 8 {
            for (i, sum) in sums.iter_mut().enumerate() {
                *sum += f32::from(self.values[chunk * 8 + i]) * q[chunk * 8 + i];
            }
        }
        sums.iter().sum::<f32>() * self.scale
    }
}

#[cfg(all(test, feature = "meaning"))]
#[path = "embed_tests.rs"]
mod tests;

//! A fuzz-style layer in `cargo test` (the nightly-only `cargo fuzz` cannot be installed
//! here): bounded random and mutated input thrown at everything that reads what others wrote
//! (the JSONC reader, config entries, `${VAR}` expansion, the stdio framing and the `id`
//! reader, the legacy SSE stream's bound, naming, result formatting, schema normalisation,
//! `check_answer`, terminal escaping). None may panic, take long, or grow its output beyond a
//! bound of its input.
//!
//! The generator is seeded: `SWITCHBOARD_FUZZ_SEED` fixes it (`.ci/run` does), otherwise each
//! run picks one and prints it, so a failure found by hand can be run again.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// Inputs per target.
const ROUNDS: usize = 5000;
/// The longest one input may take.
const SLOW: Duration = Duration::from_millis(500);

/// SplitMix64: small, fast, good enough to explore.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Bytes that look like what a broken peer sends: fragments of JSON, controls, UTF-8 and
    /// not, brackets.
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        const PIECES: &[&[u8]] = &[
            b"{",
            b"}",
            b"[",
            b"]",
            b"\"",
            b"\\",
            b":",
            b",",
            b"${",
            b"$$",
            b":-",
            b"//",
            b"/*",
            b"*/",
            b"\n",
            b"\r\n",
            b"\x1b[2J",
            b"\x1b]0;t\x07",
            b"\xff\xfe",
            b"\xe2\x80\xae",
            b"null",
            b"true",
            b"1e999",
            b"-0",
            b"\"id\"",
            b"\"jsonrpc\":\"2.0\"",
            b"\"result\"",
            b"\"method\"",
            b"\"type\":\"object\"",
            b"$ref",
            b"\"#/$defs/a\"",
            b"data: ",
            b"event: message",
            b"\n\n",
            b"\x00",
        ];
        let n = self.below(max + 1);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.below(3) == 0 {
                out.push(self.next() as u8);
            } else {
                let piece: &[u8] = self.pick(PIECES);
                out.extend_from_slice(piece);
            }
        }
        out
    }

    fn string(&mut self, max: usize) -> String {
        String::from_utf8_lossy(&self.bytes(max)).into_owned()
    }

    /// A JSON value of bounded depth and breadth, sometimes deep on purpose.
    fn value(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 4 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.next() as i64 >> self.below(64)),
            3 => json!(self.string(12)),
            4 | 5 => {
                let n = self.below(5);
                Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
            }
            _ => {
                const KEYS: &[&str] = &[
                    "type",
                    "properties",
                    "required",
                    "items",
                    "$ref",
                    "$defs",
                    "allOf",
                    "anyOf",
                    "oneOf",
                    "enum",
                    "const",
                    "minimum",
                    "maximum",
                    "minLength",
                    "maxLength",
                    "pattern",
                    "format",
                    "default",
                    "title",
                    "command",
                    "args",
                    "env",
                    "url",
                    "headers",
                    "cwd",
                    "enabled",
                    "tools",
                    "content",
                    "text",
                    "data",
                    "mimeType",
                    "isError",
                    "structuredContent",
                    "resource",
                    "oauth",
                    "transport",
                ];
                let n = self.below(6);
                let mut m = Map::new();
                for _ in 0..n {
                    let key = if self.below(4) == 0 { self.string(6) } else { self.pick(KEYS).to_string() };
                    m.insert(key, self.value(depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    /// `seed` changed a little: bytes flipped, inserted, cut, or a piece repeated.
    fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut out = seed.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(5) {
                0 if !out.is_empty() => {
                    let i = at.min(out.len() - 1);
                    out[i] ^= 1 << self.below(8);
                }
                1 => {
                    let piece = self.bytes(8);
                    out.splice(at..at, piece);
                }
                2 => out.truncate(at),
                3 if !out.is_empty() => {
                    let from = self.below(out.len());
                    let to = (from + 1 + self.below(16)).min(out.len());
                    let piece = out[from..to].to_vec();
                    out.splice(at..at, piece);
                }
                _ => {
                    let to = (at + self.below(8)).min(out.len());
                    out.drain(at..to);
                }
            }
        }
        out
    }
}

fn seed() -> u64 {
    let seed = std::env::var("SWITCHBOARD_FUZZ_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7)
    });
    eprintln!("fuzz seed: {seed} (SWITCHBOARD_FUZZ_SEED={seed} runs this again)");
    seed
}

/// Runs `f` on `ROUNDS` inputs from `make`; a panic or a slow input fails with the seed and
/// the input.
fn run<I: std::fmt::Debug>(name: &str, mut make: impl FnMut(&mut Rng) -> I, f: impl Fn(&I)) {
    let seed = seed() ^ name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut rng = Rng(seed);
    for round in 0..ROUNDS {
        let input = make(&mut rng);
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&input)));
        let took = started.elapsed();
        assert!(outcome.is_ok(), "{name}: panicked on round {round} (seed {seed}) with {input:?}");
        assert!(took < SLOW, "{name}: took {took:?} on round {round} (seed {seed}) with {input:?}");
    }
}

const CONFIG_SEEDS: &[&str] = &[
    r#"{"servers": {"a": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${HOME}"}, "cwd": "t"}}}"#,
    r#"{"mcpServers": {"b": {"url": "https://e.com/mcp?k=${K:-${J}}", "headers": {"A": "b"}, "transport": "sse"}}}"#,
    "// c\n{\"mcp\": {\"c\": {\"type\": \"local\", \"command\": [\"x\", \"y\"], \"environment\": {}, /* d */},},}",
    r#"{"mcp": {"servers": {"z": {"command": "q", "tools": {"allow": ["a*"], "deny": ["[z"]}}}}}"#,
    r#"{"servers": {"o": {"url": "http://h/mcp", "oauth": {"grant": "client_credentials", "client_id": "c"}, "tool_timeout_ms": 5}}}"#,
];

#[test]
fn the_jsonc_reader_and_config_entries_take_anything() {
    let env: HashMap<String, String> =
        [("HOME", "/home/u"), ("K", "k"), ("EMPTY", "")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    run(
        "config",
        |r| {
            let seed = r.pick(CONFIG_SEEDS).as_bytes().to_vec();
            String::from_utf8_lossy(&if r.below(4) == 0 { r.bytes(200) } else { r.mutate(&seed) }).into_owned()
        },
        |text| {
            let stripped = crate::config::jsonc::strip(text);
            assert!(stripped.len() <= text.len() + 8, "strip grew the text");
            let _ = crate::config::jsonc::line_of_key(text, "servers");
            if let Ok(value) = serde_json::from_str::<Value>(&stripped) {
                let dir = std::path::Path::new("/tmp/fuzz.json");
                for (name, entry) in value.get("servers").and_then(Value::as_object).into_iter().flatten() {
                    let _ = crate::config::parse_server(name, entry, crate::config::Scope::User, dir, &env);
                }
            }
        },
    );
    run(
        "entries",
        |r| r.value(4),
        |entry| {
            let dir = std::path::Path::new("/tmp/fuzz.json");
            let _ = crate::config::parse_server("s", entry, crate::config::Scope::Project, dir, &env);
        },
    );
}

#[test]
fn expansion_takes_anything_and_stays_bounded() {
    let env: HashMap<String, String> = [("A", "value-a"), ("B", ""), ("LONG", "0123456789")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    run(
        "expand",
        |r| match r.below(3) {
            0 => r.string(80),
            1 => String::from_utf8_lossy(&r.mutate(b"${A:-${B:-${C}}}-$${LONG}${LONG:-x}")).into_owned(),
            _ => "${A:-".repeat(r.below(300)) + &"}".repeat(r.below(300)),
        },
        |input| {
            if let Ok(out) = crate::config::expand::expand(input, &env) {
                // Each reference puts in at most the longest value.
                assert!(out.len() <= input.len() * 10 + 10, "{} -> {} bytes", input.len(), out.len());
            }
            let _ = crate::config::expand::substitutions(input, &env);
        },
    );
}

#[test]
fn the_stdio_framing_and_the_id_reader_take_anything() {
    const LINES: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"bad"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"roots/list"}"#,
    ];
    run(
        "stdio",
        |r| {
            if r.below(4) == 0 {
                r.bytes(300)
            } else {
                let line: &[u8] = r.pick(LINES);
                r.mutate(line)
            }
        },
        |line| {
            let _ = crate::transport::stdio::fuzz_parse(line);
        },
    );
}

#[test]
fn the_sse_bound_takes_any_chunks() {
    run(
        "sse",
        |r| {
            let n = r.below(6);
            (0..n).map(|_| r.bytes(40)).collect::<Vec<_>>()
        },
        |chunks| {
            let total: usize = chunks.iter().map(Vec::len).sum();
            let seen = crate::transport::sse::fuzz_bounded(chunks.clone(), 64);
            assert!(seen <= total, "the bound added bytes");
        },
    );
}

#[test]
fn naming_formatting_and_schemas_take_anything() {
    run(
        "naming",
        |r| (0..r.below(8)).map(|_| (r.string(20), r.string(70))).collect::<Vec<_>>(),
        |pairs| {
            let names = crate::catalog::naming::assign(pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())));
            assert_eq!(names.len(), pairs.len());
            for n in &names {
                assert!(n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{n}");
            }
        },
    );
    run(
        "format",
        |r| {
            let mut v = r.value(3);
            if r.below(2) == 0 {
                v = json!({"content": [r.value(2), {"type": "text", "text": r.string(50)}, {"type": "image", "data": r.string(30), "mimeType": r.string(8)}], "isError": r.below(2) == 0});
            }
            v
        },
        |raw| {
            let budget = crate::output::ResultBudget::default();
            let out = crate::output::format_result(raw, budget, None);
            assert!(out.text().len() <= raw.to_string().len() * 2 + 512, "formatting grew the result");
        },
    );
    run(
        "schema",
        |r| r.value(5),
        |schema| {
            if let Value::Object(m) = schema {
                let _ = crate::catalog::normalize_schema(&std::sync::Arc::new(m.clone()));
            }
            let answer = match schema.get("properties") {
                Some(Value::Object(p)) => p.keys().map(|k| (k.clone(), json!("x"))).collect(),
                _ => Map::new(),
            };
            let _ = crate::elicitation::check_answer(schema, &answer);
            let _ = crate::elicitation::schema_defaults(schema);
        },
    );
}

#[test]
fn terminal_escaping_takes_anything_and_lets_no_control_through() {
    run(
        "terminal",
        |r| r.string(120),
        |s| {
            let one = crate::text::for_terminal(s);
            assert!(!one.chars().any(char::is_control), "{one:?}");
            assert!(one.len() <= s.len() * 10 + 1);
            let lines = crate::text::for_terminal_lines(s);
            assert!(!lines.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{lines:?}");
            let _ = crate::text::excerpt(s, 7);
        },
    );
}

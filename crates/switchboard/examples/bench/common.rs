//! What `bench_bare` and `bench_hub` share (each includes this file; neither links the other).

use serde_json::json;

/// A number from the environment, or `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Prints `/proc/self/status` and a separator.
pub fn status() {
    println!("{}\n---", std::fs::read_to_string("/proc/self/status").unwrap_or_default());
}

/// Call `i`'s tool and arguments: `big` (1 MiB) every `every`th call (`0`: never), else `echo`.
pub fn call(i: u64, every: u64) -> (&'static str, serde_json::Map<String, serde_json::Value>) {
    let big = every > 0 && i % every == every - 1;
    let (tool, a) = if big { ("big", json!({"bytes": 1 << 20})) } else { ("echo", json!({"text": "hi"})) };
    (tool, a.as_object().cloned().unwrap_or_default())
}

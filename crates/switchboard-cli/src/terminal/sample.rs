//! A server asking the host's model for a completion (`sampling/createMessage`) while a person
//! runs a command at a terminal: the person is the model, as the spec's "human in the loop"
//! asks. Shown: the server, its system prompt, each message (text as written, other content
//! named), the token limit and model hints; then `[w]rite a reply / [N]o`. A reply is typed
//! over lines and ends with a line holding only `.` (or the end of input). Only set up when
//! stdin and stderr are terminals: elsewhere the capability is not declared, and no server
//! is offered sampling.

// Sampling is deprecated by SEP-2577 (protocol 2026-07-28), which still carries it.
#![allow(deprecated)]

use std::io::{BufRead, Write};
use std::pin::Pin;

use serde_json::Value;
use switchboard::sampling::{CreateMessageResult, Sampler, SamplingMessage, SamplingRequest};

use super::Terminal;
use crate::render::safe;

/// The model name a reply carries: a person wrote it.
pub const HUMAN: &str = "human";

/// Asks at the terminal.
pub struct TerminalSampler {
    terminal: Terminal,
}

impl TerminalSampler {
    /// A sampler asking at `terminal`.
    pub fn new(terminal: Terminal) -> Self {
        TerminalSampler { terminal }
    }
}

impl Sampler for TerminalSampler {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> Pin<Box<dyn std::future::Future<Output = Result<CreateMessageResult, String>> + Send + '_>> {
        Box::pin(async move {
            let reply = self.terminal.ask(move |input, err| ask(&request, input, err)).await.flatten();
            match reply {
                Some(text) => Ok(CreateMessageResult::new(SamplingMessage::assistant_text(text), HUMAN.into())
                    .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN)),
                None => Err("the person at the terminal declined to answer".into()),
            }
        })
    }
}

/// Shows the request and reads the reply; `None`: declined.
pub fn ask(request: &SamplingRequest, input: &mut impl BufRead, out: &mut impl Write) -> Option<String> {
    let params = serde_json::to_value(&request.params).unwrap_or_default();
    let _ = writeln!(out, "\nserver `{}` asks for a completion (you answer as the model):", safe(&request.server));
    if let Some(system) = params["systemPrompt"].as_str() {
        let _ = writeln!(out, "  system: {}", safe(system));
    }
    for m in params["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        for line in describe(&m["content"]).lines() {
            let _ = writeln!(out, "  {}: {}", safe(role), safe(line));
        }
    }
    let mut limits = Vec::new();
    if let Some(n) = params["maxTokens"].as_u64() {
        limits.push(format!("at most {n} tokens"));
    }
    if let Some(hints) = params["modelPreferences"]["hints"].as_array() {
        let names: Vec<&str> = hints.iter().filter_map(|h| h["name"].as_str()).collect();
        if !names.is_empty() {
            limits.push(format!("models it prefers: {}", names.join(", ")));
        }
    }
    if !limits.is_empty() {
        let _ = writeln!(out, "  ({})", safe(&limits.join("; ")));
    }
    let _ = write!(out, "[w]rite a reply / [N]o: ");
    let _ = out.flush();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 || !matches!(line.trim(), "w" | "W" | "write") {
        let _ = writeln!(out, "  declined");
        return None;
    }
    let _ = writeln!(out, "  your reply (end it with a line holding only `.`):");
    let mut reply = Vec::new();
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if line == "." {
            break;
        }
        reply.push(line.to_string());
    }
    Some(reply.join("\n"))
}

/// A message's content for people: its text, other kinds named.
fn describe(content: &Value) -> String {
    let one = |c: &Value| match c["type"].as_str() {
        Some("text") => c["text"].as_str().unwrap_or_default().to_string(),
        Some("image" | "audio") => format!(
            "[{} {}, {} bytes]",
            c["type"].as_str().unwrap_or_default(),
            c["mimeType"].as_str().unwrap_or("?"),
            c["data"].as_str().map_or(0, |d| d.len() * 3 / 4)
        ),
        Some("tool_use") => format!("[asks to use tool `{}`]", c["name"].as_str().unwrap_or("?")),
        Some("tool_result") => "[a tool's result]".into(),
        other => format!("[{} content]", other.unwrap_or("unknown")),
    };
    match content {
        Value::Array(items) => items.iter().map(one).collect::<Vec<_>>().join("\n"),
        c => one(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> SamplingRequest {
        let params = serde_json::json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is 2+2?\nAnswer briefly."}}],
            "systemPrompt": "You are terse.",
            "maxTokens": 50,
            "modelPreferences": {"hints": [{"name": "claude"}]},
        });
        SamplingRequest::new("calc", serde_json::from_value(params).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn the_person_sees_the_request_and_writes_the_reply() {
        let mut out = Vec::new();
        let reply = ask(&request(), &mut "w\nFour.\nThat is all.\n.\nignored\n".as_bytes(), &mut out);
        assert_eq!(reply.as_deref(), Some("Four.\nThat is all."));
        let shown = String::from_utf8_lossy(&out);
        for expected in [
            "server `calc` asks for a completion",
            "system: You are terse.",
            "user: What is 2+2?",
            "user: Answer briefly.",
            "at most 50 tokens; models it prefers: claude",
        ] {
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
    }

    #[test]
    fn anything_but_write_declines() {
        for typed in ["\n", "n\n", "yes\n", ""] {
            assert_eq!(ask(&request(), &mut typed.as_bytes(), &mut Vec::new()), None, "{typed:?}");
        }
    }
}

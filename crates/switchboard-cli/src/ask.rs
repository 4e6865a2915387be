//! Asking the person at the terminal when a server requests input (`elicitation/create`):
//! form mode, each field with its title, description, choices and default (Enter keeps the
//! default), then whether to send; URL mode, the whole URL and whether to open it (no unless
//! they say yes; opened in the desktop's browser, or printed to open by hand). Only set up when stdin and stderr are terminals; otherwise
//! the library declines for us.

use std::io::{BufRead, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};

/// The spinner or progress bar on screen, if any, so a question is not drawn over.
#[derive(Clone, Default)]
pub struct Screen(Arc<Mutex<Option<indicatif::ProgressBar>>>);

impl Screen {
    /// Records the bar being drawn now (`None`: nothing).
    pub fn set(&self, bar: Option<indicatif::ProgressBar>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = bar;
    }

    fn current(&self) -> Option<indicatif::ProgressBar> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Asks on the terminal, one request at a time.
pub struct TerminalElicitor {
    screen: Screen,
    turn: tokio::sync::Mutex<()>,
}

impl TerminalElicitor {
    /// An elicitor that keeps clear of what `screen` draws.
    pub fn new(screen: Screen) -> Self {
        TerminalElicitor { screen, turn: tokio::sync::Mutex::new(()) }
    }
}

impl Elicitor for TerminalElicitor {
    fn elicit(
        &self,
        request: ElicitationRequest,
    ) -> Pin<Box<dyn std::future::Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let bar = self.screen.current();
            let asked = tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut err = std::io::stderr();
                let answer = match &bar {
                    Some(bar) => bar.suspend(|| ask(&request, &mut input, &mut err)),
                    None => ask(&request, &mut input, &mut err),
                };
                // URL mode: the person said yes to opening it.
                if let (ElicitationAnswer::Accept(_), Some(url)) = (&answer, &request.url) {
                    let opened = crate::login::has_display() && crate::login::open_browser(url);
                    if !opened {
                        let _ = writeln!(err, "  open it in a browser: {url}");
                    }
                }
                answer
            })
            .await;
            asked.unwrap_or(ElicitationAnswer::Decline)
        })
    }

    fn takes_urls(&self) -> bool {
        true
    }
}

/// URL mode: the whole URL, then whether to open it (no unless the person says yes). Only
/// http(s) URLs are put to the person.
fn ask_url(
    request: &ElicitationRequest,
    url: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ElicitationAnswer {
    let server = console::style(&request.server).bold();
    let _ = writeln!(out, "\n{server} asks you to open a page: {}", request.message);
    let _ = writeln!(out, "  {url}");
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        let _ = writeln!(out, "  not a web address: declined");
        return ElicitationAnswer::Decline;
    }
    let _ = write!(out, "  Open it? [y/N, c cancels] ");
    let _ = out.flush();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 {
        return ElicitationAnswer::Cancel;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ElicitationAnswer::Accept(Map::new()),
        "c" | "cancel" => ElicitationAnswer::Cancel,
        _ => ElicitationAnswer::Decline,
    }
}

/// The questions and the answer, on `input`/`out` (a terminal; tests give buffers).
pub fn ask(request: &ElicitationRequest, input: &mut impl BufRead, out: &mut impl Write) -> ElicitationAnswer {
    if let Some(url) = &request.url {
        return ask_url(request, url, input, out);
    }
    let _ = writeln!(out, "\n{} asks: {}", console::style(&request.server).bold(), request.message);
    let required: Vec<&str> = request
        .schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut values = Map::new();
    let props = request.schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    for (name, prop) in &props {
        let title = prop.get("title").and_then(Value::as_str).unwrap_or(name);
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "  {}", console::style(d).dim());
        }
        let choices: Vec<String> = prop
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect())
            .unwrap_or_default();
        let default = prop.get("default");
        for _attempt in 0..3 {
            let mut hint = String::new();
            if !choices.is_empty() {
                hint.push_str(&format!(" ({})", choices.join("/")));
            }
            if let Some(d) = default {
                hint.push_str(&format!(" [{}]", d.as_str().map_or_else(|| d.to_string(), str::to_string)));
            }
            let _ = write!(out, "  {title}{hint}: ");
            let _ = out.flush();
            let mut line = String::new();
            if input.read_line(&mut line).unwrap_or(0) == 0 {
                return ElicitationAnswer::Cancel;
            }
            let line = line.trim();
            if line.is_empty() {
                match default {
                    Some(d) => {
                        values.insert(name.clone(), d.clone());
                        break;
                    }
                    None if !required.contains(&name.as_str()) => break,
                    None => {
                        let _ = writeln!(out, "  (needed)");
                        continue;
                    }
                }
            }
            match parse(prop, line, &choices) {
                Ok(v) => {
                    values.insert(name.clone(), v);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(out, "  {why}");
                }
            }
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|r| !values.contains_key(*r)).collect();
    if !missing.is_empty() {
        let _ = writeln!(out, "  not sent: no value for {}", missing.join(", "));
        return ElicitationAnswer::Decline;
    }
    let _ = write!(out, "  Send? [Y/n, c cancels] ");
    let _ = out.flush();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 {
        return ElicitationAnswer::Cancel;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "y" | "yes" => ElicitationAnswer::Accept(values),
        "c" | "cancel" => ElicitationAnswer::Cancel,
        _ => ElicitationAnswer::Decline,
    }
}

/// A typed value for the property, or why the text is not one.
fn parse(prop: &Value, text: &str, choices: &[String]) -> Result<Value, String> {
    if !choices.is_empty() && !choices.iter().any(|c| c == text) {
        return Err(format!("one of: {}", choices.join(", ")));
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("integer") => text.parse::<i64>().map(Value::from).map_err(|_| "a whole number, please".into()),
        Some("number") => text.parse::<f64>().map(Value::from).map_err(|_| "a number, please".into()),
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("yes or no, please".into()),
        },
        _ => Ok(Value::String(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ElicitationRequest {
        let schema = json!({"type": "object", "required": ["name"], "properties": {
            "age": {"type": "integer", "default": 30},
            "name": {"type": "string", "title": "Your name"},
            "ok": {"type": "boolean", "default": true},
        }});
        ElicitationRequest::new("srv", "Who are you?", schema)
    }

    #[test]
    fn fields_take_defaults_typed_values_and_retries() {
        let mut out = Vec::new();
        // age: "x" (rejected) then 41; name: Enter (needed) then "Ada"; ok: Enter (default); send: Enter.
        let mut input = std::io::Cursor::new("x\n41\n\nAda\n\n\n");
        let answer = ask(&request(), &mut input, &mut out);
        let expected = json!({"age": 41, "name": "Ada", "ok": true}).as_object().cloned().unwrap_or_default();
        assert_eq!(answer, ElicitationAnswer::Accept(expected));
        let shown = String::from_utf8_lossy(&out);
        assert!(
            shown.contains("Your name") && shown.contains("a whole number") && shown.contains("(needed)"),
            "{shown}"
        );
    }

    #[test]
    fn a_page_to_open_is_shown_whole_and_opened_only_on_yes() {
        let request = ElicitationRequest::url("srv", "Approve it", "https://example.com/ok?x=1", "e1");
        let mut out = Vec::new();
        let answer = ask(&request, &mut std::io::Cursor::new("y\n"), &mut out);
        assert_eq!(answer, ElicitationAnswer::Accept(Map::new()));
        let shown = String::from_utf8_lossy(&out);
        assert!(shown.contains("https://example.com/ok?x=1") && shown.contains("Approve it"), "{shown}");
        assert_eq!(
            ask(&request, &mut std::io::Cursor::new("\n"), &mut out),
            ElicitationAnswer::Decline,
            "no by default"
        );
        assert_eq!(ask(&request, &mut std::io::Cursor::new("c\n"), &mut out), ElicitationAnswer::Cancel);
        let sneaky = ElicitationRequest::url("srv", "Click", "javascript:alert(1)", "e2");
        let mut out = Vec::new();
        assert_eq!(ask(&sneaky, &mut std::io::Cursor::new("y\n"), &mut out), ElicitationAnswer::Decline);
        assert!(String::from_utf8_lossy(&out).contains("not a web address"));
    }

    #[test]
    fn no_and_cancel_and_end_of_input() {
        let mut out = Vec::new();
        assert_eq!(ask(&request(), &mut std::io::Cursor::new("\nAda\n\nn\n"), &mut out), ElicitationAnswer::Decline);
        assert_eq!(ask(&request(), &mut std::io::Cursor::new("\nAda\n\nc\n"), &mut out), ElicitationAnswer::Cancel);
        assert_eq!(ask(&request(), &mut std::io::Cursor::new(""), &mut out), ElicitationAnswer::Cancel);
    }
}

//! Asking the person at the terminal when a server requests input (`elicitation/create`):
//! form mode, each field with its title, description, choices and default (Enter keeps the
//! default), then whether to send; URL mode, the whole URL and whether to open it (no unless
//! they say yes; opened in the desktop's browser, or printed to open by hand; the library
//! declines non-http(s) URLs before asking). Only set up when stdin and stderr are terminals; otherwise
//! the library declines for us.

use std::io::{BufRead, Write};
use std::pin::Pin;

use serde_json::json;
use serde_json::{Map, Value};
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor, check_answer};

use super::Terminal;

/// Asks servers' questions on the terminal.
pub struct TerminalElicitor {
    terminal: Terminal,
}

impl TerminalElicitor {
    /// An elicitor asking at `terminal`.
    pub fn new(terminal: Terminal) -> Self {
        TerminalElicitor { terminal }
    }
}

impl Elicitor for TerminalElicitor {
    fn elicit(
        &self,
        request: ElicitationRequest,
    ) -> Pin<Box<dyn std::future::Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(async move {
            let asked = self.terminal.ask(move |input, err| {
                let answer = ask(&request, input, err);
                // URL mode: the person said yes to opening it.
                if let (ElicitationAnswer::Accept(_), Some(url)) = (&answer, &request.url) {
                    let opened = super::has_display() && super::open_browser(url);
                    if !opened {
                        let _ = writeln!(err, "  open it in a browser: {}", one_line(url));
                    }
                }
                answer
            });
            asked.await.unwrap_or(ElicitationAnswer::Decline)
        })
    }

    fn takes_urls(&self) -> bool {
        true
    }
}

/// URL mode: the whole URL, then whether to open it (no unless the person says yes).
fn ask_url(
    request: &ElicitationRequest,
    url: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ElicitationAnswer {
    let server = console::style(&request.server).bold();
    let _ = writeln!(out, "\n{server} asks you to open a page: {}", lines(&request.message));
    let _ = writeln!(out, "  {}", one_line(url));
    match confirm("Open it? [y/N, c cancels]", false, input, out) {
        Reply::Yes => ElicitationAnswer::Accept(Map::new()),
        Reply::No => ElicitationAnswer::Decline,
        Reply::Cancel => ElicitationAnswer::Cancel,
    }
}

/// What a server wrote, on one line: control characters (escape sequences) escaped.
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    switchboard::text::for_terminal(s)
}

/// What a server wrote, on its own lines: newlines kept, other control characters escaped.
fn lines(s: &str) -> std::borrow::Cow<'_, str> {
    switchboard::text::for_terminal_lines(s)
}

/// What the person said to a yes/no question.
enum Reply {
    Yes,
    No,
    Cancel,
}

/// Asks `question` and reads the reply: Enter means `default_yes`, `c` cancels, and so does
/// the end of the input.
fn confirm(question: &str, default_yes: bool, input: &mut impl BufRead, out: &mut impl Write) -> Reply {
    let _ = write!(out, "  {question} ");
    let _ = out.flush();
    let mut line = String::new();
    if input.read_line(&mut line).unwrap_or(0) == 0 {
        return Reply::Cancel;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "" if default_yes => Reply::Yes,
        "y" | "yes" => Reply::Yes,
        "c" | "cancel" => Reply::Cancel,
        _ => Reply::No,
    }
}

/// The questions and the answer, on `input`/`out` (a terminal; tests give buffers).
pub fn ask(request: &ElicitationRequest, input: &mut impl BufRead, out: &mut impl Write) -> ElicitationAnswer {
    if let Some(url) = &request.url {
        return ask_url(request, url, input, out);
    }
    let _ = writeln!(out, "\n{} asks: {}", console::style(&request.server).bold(), lines(&request.message));
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
        let title = one_line(prop.get("title").and_then(Value::as_str).unwrap_or(name));
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "  {}", console::style(lines(d)).dim());
        }
        let many = prop.get("type").and_then(Value::as_str) == Some("array");
        let choices = choices_of(if many { prop.get("items").unwrap_or(&Value::Null) } else { prop });
        let default = prop.get("default");
        for _attempt in 0..3 {
            let mut hint = String::new();
            if !choices.is_empty() {
                let labels: Vec<&str> = choices.iter().map(|c| c.label.as_str()).collect();
                let sep = if many { ", " } else { "/" };
                hint.push_str(&format!(" ({}{})", labels.join(sep), if many { "; several with commas" } else { "" }));
            }
            if let Some(d) = default {
                hint.push_str(&format!(" [{}]", shown(d, &choices)));
            }
            let _ = write!(out, "  {title}{}: ", one_line(&hint));
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
            // Typed, then checked against the property's bounds (what the server would refuse).
            let checked = parse(prop, line, &choices).and_then(|v| {
                let one = json!({"properties": {name.as_str(): prop}});
                let answer = Map::from_iter([(name.clone(), v.clone())]);
                let problems = check_answer(&one, &answer);
                if problems.is_empty() { Ok(v) } else { Err(problems.join("; ")) }
            });
            match checked {
                Ok(v) => {
                    values.insert(name.clone(), v);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(out, "  {}", one_line(&why));
                }
            }
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|r| !values.contains_key(*r)).collect();
    if !missing.is_empty() {
        let _ = writeln!(out, "  not sent: no value for {}", one_line(&missing.join(", ")));
        return ElicitationAnswer::Decline;
    }
    match confirm("Send? [Y/n, c cancels]", true, input, out) {
        Reply::Yes => ElicitationAnswer::Accept(values),
        Reply::No => ElicitationAnswer::Decline,
        Reply::Cancel => ElicitationAnswer::Cancel,
    }
}

/// One value a property offers, and what the person sees (its title, or the value).
struct Choice {
    value: Value,
    label: String,
}

/// The choices of a property (or of an array's items): `enum` (with legacy `enumNames`), or
/// the `const`s of `oneOf`/`anyOf` with their titles.
fn choices_of(prop: &Value) -> Vec<Choice> {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| Choice {
                value: v.clone(),
                label: names.and_then(|n| n.get(i)).map_or_else(|| text(v), text),
            })
            .collect();
    }
    let options = prop.get("oneOf").or_else(|| prop.get("anyOf")).and_then(Value::as_array);
    options
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let value = o.get("const")?.clone();
            let label = o.get("title").map_or_else(|| text(&value), text);
            Some(Choice { value, label })
        })
        .collect()
}

/// A value as the person would type it (a choice by its label).
fn shown(value: &Value, choices: &[Choice]) -> String {
    let one = |v: &Value| {
        choices
            .iter()
            .find(|c| &c.value == v)
            .map_or_else(|| v.as_str().map_or_else(|| v.to_string(), str::to_string), |c| c.label.clone())
    };
    match value.as_array() {
        Some(items) => items.iter().map(one).collect::<Vec<_>>().join(", "),
        None => one(value),
    }
}

/// The choice `text` names (its label, any case, or its value).
fn pick(text: &str, choices: &[Choice]) -> Result<Value, String> {
    choices
        .iter()
        .find(|c| {
            c.label.eq_ignore_ascii_case(text)
                || c.value
                    .as_str()
                    .map_or_else(|| serde_json::from_str::<Value>(text).is_ok_and(|v| v == c.value), |v| v == text)
        })
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("one of: {}", choices.iter().map(|c| c.label.as_str()).collect::<Vec<_>>().join(", ")))
}

/// A typed value for the property, or why the text is not one.
fn parse(prop: &Value, text: &str, choices: &[Choice]) -> Result<Value, String> {
    let kind = prop.get("type").and_then(Value::as_str);
    if kind == Some("array") {
        let items = text.split(',').map(str::trim).filter(|t| !t.is_empty());
        return match choices.is_empty() {
            true => Ok(Value::Array(items.map(|t| Value::String(t.to_string())).collect())),
            false => items.map(|t| pick(t, choices)).collect::<Result<Vec<_>, _>>().map(Value::Array),
        };
    }
    if !choices.is_empty() {
        return pick(text, choices);
    }
    match kind {
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
    fn choices_by_title_several_with_commas_and_bounds_checked() {
        // The field kinds of server-everything's `trigger-elicitation-request`.
        let schema = json!({"type": "object", "properties": {
            "hero": {"type": "string", "title": "Hero", "oneOf": [
                {"const": "hero-1", "title": "Superman"}, {"const": "hero-3", "title": "Wonder Woman"}],
                "default": "hero-1"},
            "fish": {"type": "array", "title": "Fish", "minItems": 1, "maxItems": 2,
                "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}]}},
            "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]},
            "integer": {"type": "integer", "minimum": 1, "maximum": 100},
        }});
        let request = ElicitationRequest::new("srv", "Tell me", schema);
        let mut out = Vec::new();
        // hero: "batman" (refused), then "wonder woman"; fish: "Tuna, Salmon, Tuna" (too many),
        // then "salmon"; pet: "Dogs"; integer: 1000 (out of bounds), then 7; send.
        let typed = "batman\nwonder woman\nTuna, Salmon, Tuna\nsalmon\nDogs\n1000\n7\n\n";
        let answer = ask(&request, &mut std::io::Cursor::new(typed), &mut out);
        let expected = json!({"hero": "hero-3", "fish": ["fish-2"], "pet": "pet-2", "integer": 7});
        assert_eq!(answer, ElicitationAnswer::Accept(expected.as_object().cloned().unwrap_or_default()));
        let shown = String::from_utf8_lossy(&out);
        assert!(shown.contains("Hero (Superman/Wonder Woman) [Superman]"), "{shown}");
        assert!(shown.contains("Fish (Tuna, Salmon; several with commas)"), "{shown}");
        assert!(shown.contains("one of: Superman, Wonder Woman"), "{shown}");
        assert!(shown.contains("`fish` must have 1 to 2 items"), "{shown}");
        assert!(shown.contains("`integer` must be within 1 and 100"), "{shown}");
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
        assert_eq!(ask(&request, &mut std::io::Cursor::new(""), &mut out), ElicitationAnswer::Cancel, "input ended");
    }

    #[test]
    fn no_and_cancel_and_end_of_input() {
        let mut out = Vec::new();
        assert_eq!(ask(&request(), &mut std::io::Cursor::new("\nAda\n\nn\n"), &mut out), ElicitationAnswer::Decline);
        assert_eq!(ask(&request(), &mut std::io::Cursor::new("\nAda\n\nc\n"), &mut out), ElicitationAnswer::Cancel);
        assert_eq!(ask(&request(), &mut std::io::Cursor::new(""), &mut out), ElicitationAnswer::Cancel);
    }
}

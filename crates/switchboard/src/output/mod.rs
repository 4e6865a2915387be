//! Tool results made ready for a model.
//!
//! As ZCode does: text is kept; images become data URLs; audio is replaced by a one-line note
//! with its MIME type; embedded resources are serialised; non-empty `structuredContent` is
//! appended after [`STRUCTURED_LABEL`], unless a text block already is it (serialised, as the
//! spec asks servers to send it too); `isError` results are prefixed `MCP tool returned an
//! error:`. On top of that a budget: past [`ResultBudget::text_bytes`] of text the result is cut with a note, and an image
//! over [`ResultBudget::image_bytes`] of base64 is not inlined; in both cases the full content
//! is written to a file under the data folder whose path the note gives.

mod spill;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

pub use spill::clean_spills;

/// Prefix of the text of a result with `isError: true`.
pub const ERROR_PREFIX: &str = "MCP tool returned an error:";
/// What introduces a result's `structuredContent` in its model form.
pub const STRUCTURED_LABEL: &str = "Structured content:";

/// Limits on what goes to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultBudget {
    /// Bytes of text (all text blocks together).
    pub text_bytes: usize,
    /// Bytes of base64 per inline image.
    pub image_bytes: usize,
}

impl Default for ResultBudget {
    fn default() -> Self {
        ResultBudget { text_bytes: 50_000, image_bytes: 200 * 1024 }
    }
}

/// One block for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, inline.
    Image {
        /// Its MIME type.
        mime_type: String,
        /// `data:<mime>;base64,<data>`.
        data_url: String,
    },
}

/// A result ready for a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModelResult {
    /// The tool reported an error.
    pub is_error: bool,
    /// The blocks, in order.
    pub blocks: Vec<ModelBlock>,
    /// Something was cut or left out to fit the budget.
    pub truncated: bool,
    /// Files holding what was cut.
    pub spilled: Vec<PathBuf>,
}

impl ModelResult {
    /// An empty result that only says whether the tool reported an error.
    pub fn of_error(is_error: bool) -> ModelResult {
        ModelResult { is_error, blocks: Vec::new(), truncated: false, spilled: Vec::new() }
    }

    /// All the text, images shown as a one-line placeholder.
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .blocks
            .iter()
            .map(|b| match b {
                ModelBlock::Text { text } => text.clone(),
                ModelBlock::Image { mime_type, data_url } => {
                    format!("[image {mime_type}, {} bytes inline]", data_url.len())
                }
            })
            .collect();
        parts.join("\n")
    }
}

/// Where cut content goes, and a label for the file names.
#[derive(Debug, Clone, Copy)]
pub struct Spill<'a> {
    /// The folder (created when needed).
    pub dir: &'a Path,
    /// A label for the files (`server-tool`).
    pub label: &'a str,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn ext_for(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        _ => "bin",
    }
}

/// One content block as the formatter sees it, borrowed from the result.
enum View<'a> {
    Text(&'a str),
    Image {
        mime: &'a str,
        data: &'a str,
    },
    Audio {
        mime: &'a str,
    },
    /// Shown as its JSON (embedded resources, resource links, unknown kinds).
    Json(String),
}

/// Turns a raw `CallToolResult` (as JSON) into a [`ModelResult`]: what
/// [`format_call_result`] does, for a result that is not (or not yet) typed.
pub fn format_result(raw: &Value, budget: ResultBudget, spill: Option<Spill<'_>>) -> ModelResult {
    let is_error = raw.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let blocks = raw.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let views = blocks.iter().map(|block| match str_of(block, "type") {
        "text" => View::Text(str_of(block, "text")),
        "image" => View::Image { mime: str_of(block, "mimeType"), data: str_of(block, "data") },
        "audio" => View::Audio { mime: str_of(block, "mimeType") },
        "resource" => {
            View::Json(serde_json::to_string(block.get("resource").unwrap_or(&Value::Null)).unwrap_or_default())
        }
        _ => View::Json(serde_json::to_string(block).unwrap_or_default()),
    });
    format_views(views, raw.get("structuredContent"), is_error, budget, spill)
}

/// Turns a `CallToolResult` into a [`ModelResult`] (text kept, images inlined up to the budget,
/// audio noted, resources as JSON, structured content appended, errors prefixed), cut to the
/// budget with the whole written to a spill file. Only what the model is shown is copied.
pub fn format_call_result(raw: &CallToolResult, budget: ResultBudget, spill: Option<Spill<'_>>) -> ModelResult {
    let views = raw.content.iter().map(|block| match block {
        ContentBlock::Text(t) => View::Text(&t.text),
        ContentBlock::Image(i) => View::Image { mime: &i.mime_type, data: &i.data },
        ContentBlock::Audio(a) => View::Audio { mime: &a.mime_type },
        ContentBlock::Resource(r) => View::Json(serde_json::to_string(&r.resource).unwrap_or_default()),
        other => View::Json(serde_json::to_string(other).unwrap_or_default()),
    });
    format_views(views, raw.structured_content.as_ref(), raw.is_error == Some(true), budget, spill)
}

/// A piece of the model's form before the budget: text borrowed where it can be.
enum Piece<'a> {
    Text(Cow<'a, str>),
    Image(ModelBlock),
}

fn format_views<'a>(
    views: impl Iterator<Item = View<'a>>,
    structured: Option<&Value>,
    is_error: bool,
    budget: ResultBudget,
    spill: Option<Spill<'_>>,
) -> ModelResult {
    let mut pieces: Vec<Piece<'a>> = Vec::new();
    let mut truncated = false;
    let mut spilled = Vec::new();
    let structured = match structured {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) if o.is_empty() => None,
        Some(v) => Some((v, serde_json::to_string(v).unwrap_or_default())),
    };
    // Whether a text block already is the structured content, serialised (as the spec asks
    // servers to send it, for clients that read only text). Only a text that could be it is
    // parsed: JSON, and not far longer than the compact form (indentation at most).
    let mut echoed = false;
    for view in views {
        match view {
            View::Text(text) => {
                if let Some((v, compact)) = &structured
                    && !echoed
                    && text.len() <= 8 * compact.len() + 1024
                    && text.trim_start().starts_with(['{', '['])
                {
                    echoed = serde_json::from_str::<Value>(text).is_ok_and(|t| &t == *v);
                }
                pieces.push(Piece::Text(Cow::Borrowed(text)))
            }
            View::Image { mime, data } if data.len() <= budget.image_bytes => {
                pieces.push(Piece::Image(ModelBlock::Image {
                    mime_type: mime.to_string(),
                    data_url: format!("data:{mime};base64,{data}"),
                }))
            }
            View::Image { mime, data } => {
                truncated = true;
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .unwrap_or_else(|_| data.as_bytes().to_vec());
                let note = match spill::spill_file(spill, ext_for(mime), &[&decoded]) {
                    Some(Ok(path)) => {
                        let note = format!(
                            "[Image ({mime}, {} bytes) too large to inline; saved to {}]",
                            decoded.len(),
                            path.display()
                        );
                        spilled.push(path);
                        note
                    }
                    Some(Err(e)) => format!(
                        "[Image ({mime}, {} bytes) omitted: too large to inline, and it could not be kept ({e})]",
                        decoded.len()
                    ),
                    None => format!("[Image ({mime}, {} bytes) omitted: too large to inline]", decoded.len()),
                };
                pieces.push(Piece::Text(Cow::Owned(note)));
            }
            View::Audio { mime } => pieces.push(Piece::Text(Cow::Owned(format!("[Audio content ({mime}) omitted]")))),
            View::Json(json) => pieces.push(Piece::Text(Cow::Owned(json))),
        }
    }
    if let Some((_, compact)) = structured
        && !echoed
    {
        pieces.push(Piece::Text(Cow::Owned(format!("{STRUCTURED_LABEL} {compact}"))));
    }
    if is_error {
        match pieces.iter_mut().find_map(|p| match p {
            Piece::Text(text) => Some(text),
            Piece::Image(_) => None,
        }) {
            Some(text) => *text = Cow::Owned(format!("{ERROR_PREFIX} {text}")),
            None => pieces.insert(0, Piece::Text(Cow::Borrowed(ERROR_PREFIX))),
        }
    }
    let texts = || pieces.iter().filter_map(|p| if let Piece::Text(t) = p { Some(t.as_ref()) } else { None });
    let total: usize = texts().map(str::len).sum();
    if total <= budget.text_bytes {
        let blocks = pieces
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) => ModelBlock::Text { text: t.into_owned() },
                Piece::Image(image) => image,
            })
            .collect();
        return ModelResult { is_error, blocks, truncated, spilled };
    }
    // Over the budget: the whole text (blocks joined by newlines) to a file, written straight
    // from the result, and the model gets the first `text_bytes` of it and a note.
    let mut parts: Vec<&[u8]> = Vec::new();
    for (i, text) in texts().enumerate() {
        if i > 0 {
            parts.push(b"\n");
        }
        parts.push(text.as_bytes());
    }
    let path = spill::spill_file(spill, "txt", &parts);
    let mut left = budget.text_bytes;
    let mut blocks = Vec::with_capacity(pieces.len() + 1);
    for piece in pieces {
        match piece {
            Piece::Text(text) => {
                if left == 0 {
                    continue;
                }
                let mut cut = text.len().min(left);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                left -= cut;
                blocks.push(ModelBlock::Text { text: text[..cut].to_string() });
            }
            Piece::Image(image) => blocks.push(image),
        }
    }
    let note = match &path {
        Some(Ok(p)) => format!(
            "[Output truncated: showing {} of {total} bytes of text. The full output is in {}]",
            budget.text_bytes,
            p.display()
        ),
        Some(Err(e)) => format!(
            "[Output truncated: showing {} of {total} bytes of text. The full output could not be kept: {e}]",
            budget.text_bytes
        ),
        None => format!("[Output truncated: showing {} of {total} bytes of text]", budget.text_bytes),
    };
    blocks.push(ModelBlock::Text { text: note });
    spilled.extend(path.and_then(Result::ok));
    ModelResult { is_error, blocks, truncated: true, spilled }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn big() -> Value {
        json!({"content": [{"type": "text", "text": "x".repeat(200_000)}]})
    }

    #[test]
    fn a_long_label_makes_a_bounded_name_and_a_failed_spill_is_said() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let label = "s-".to_string() + &"t".repeat(300);
        let r = format_result(&big(), ResultBudget::default(), Some(Spill { dir: dir.path(), label: &label }));
        assert_eq!(r.spilled.len(), 1, "{}", r.text());
        let name = r.spilled[0].file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(name.len() < 100, "{name}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&r.spilled[0]).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        // A folder that cannot be made: the model is told the full output was not kept.
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap_or_else(|e| panic!("{e}"));
        let r = format_result(&big(), ResultBudget::default(), Some(Spill { dir: &blocked.join("sub"), label: "s-t" }));
        assert!(r.spilled.is_empty());
        assert!(r.text().contains("could not be kept"), "{}", r.text());
    }

    #[test]
    fn old_and_excess_spills_are_removed_oldest_first() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let day = std::time::Duration::from_secs(86_400);
        let now = std::time::SystemTime::now();
        for (i, age_days) in [(0, 10u64), (1, 3), (2, 2), (3, 1)] {
            let path = dir.path().join(format!("f{i}.txt"));
            std::fs::write(&path, vec![b'x'; 1000]).unwrap_or_else(|e| panic!("{e}"));
            let file = std::fs::File::options().write(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
            file.set_modified(now - day * age_days as u32).unwrap_or_else(|e| panic!("{e}"));
        }
        // f0 is older than 7 days; then the oldest go until 2000 bytes are left.
        assert_eq!(clean_spills(dir.path(), day * 7, 2000), (2, 2000));
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let mut left = left;
        left.sort();
        assert_eq!(left, vec!["f2.txt", "f3.txt"]);
    }

    #[test]
    fn formats_every_kind_of_block() {
        let raw = json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "x://y", "text": "body"}},
            ],
            "structuredContent": {"n": 1},
        });
        let r = format_result(&raw, ResultBudget::default(), None);
        assert_eq!(r.blocks.len(), 5);
        assert_eq!(
            r.blocks[1],
            ModelBlock::Image { mime_type: "image/png".into(), data_url: "data:image/png;base64,iVBO".into() }
        );
        assert_eq!(r.blocks[2], ModelBlock::Text { text: "[Audio content (audio/wav) omitted]".into() });
        assert!(r.text().contains("\"uri\":\"x://y\"") && r.text().ends_with("Structured content: {\"n\":1}"));
        assert!(!r.truncated && !r.is_error);
    }

    /// Structured content is labelled, and left out where a text block already carries it.
    #[test]
    fn structured_content_is_labelled_or_not_repeated() {
        let echoed = json!({"content": [{"type": "text", "text": "{ \"n\": 1, \"m\": [2] }"}],
            "structuredContent": {"m": [2], "n": 1}});
        let r = format_result(&echoed, ResultBudget::default(), None);
        assert_eq!(r.blocks.len(), 1, "{r:?}");
        assert!(!r.text().contains(STRUCTURED_LABEL));
        let other = json!({"content": [{"type": "text", "text": "{\"n\": 2}"}], "structuredContent": {"n": 1}});
        let r = format_result(&other, ResultBudget::default(), None);
        assert_eq!(r.text(), "{\"n\": 2}\nStructured content: {\"n\":1}");
    }

    /// The typed formatter (what the hub uses) and the JSON one give the same model form.
    #[test]
    fn typed_and_json_results_are_formatted_alike() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cases = [
            json!({"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "x://y", "text": "body"}},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
            ], "structuredContent": {"n": 1}}),
            json!({"content": [{"type": "image", "data": "A".repeat(300_000), "mimeType": "image/png"}], "isError": true}),
            json!({"content": [{"type": "text", "text": "é".repeat(30_000)}, {"type": "text", "text": "z".repeat(30_000)}]}),
            json!({"content": [], "isError": true, "structuredContent": {}}),
            json!({"content": [{"type": "text", "text": "x".repeat(60_000)}], "isError": true, "structuredContent": [1, 2]}),
        ];
        for raw in cases {
            let typed: CallToolResult = serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{e}: {raw}"));
            let spill = |label| Some(Spill { dir: dir.path(), label });
            let a = format_result(&raw, ResultBudget::default(), spill("a"));
            let b = format_call_result(&typed, ResultBudget::default(), spill("b"));
            let files =
                |r: &ModelResult| r.spilled.iter().map(|p| std::fs::read(p).unwrap_or_default()).collect::<Vec<_>>();
            assert_eq!(files(&a), files(&b), "{raw}");
            let strip = |r: &ModelResult| {
                let mut r = r.clone();
                for p in &r.spilled {
                    for block in &mut r.blocks {
                        if let ModelBlock::Text { text } = block {
                            *text = text.replace(&p.display().to_string(), "FILE");
                        }
                    }
                }
                r.spilled.clear();
                r
            };
            assert_eq!(strip(&a), strip(&b), "{raw}");
        }
    }

    #[test]
    fn errors_are_prefixed_and_empty_structured_content_dropped() {
        let raw = json!({"content": [{"type": "text", "text": "boom"}], "isError": true, "structuredContent": {}});
        let r = format_result(&raw, ResultBudget::default(), None);
        assert_eq!(r.text(), "MCP tool returned an error: boom");
        let r = format_result(&json!({"content": [], "isError": true}), ResultBudget::default(), None);
        assert_eq!(r.text(), ERROR_PREFIX);
    }

    #[test]
    fn cuts_to_budget_and_spills_the_whole() {
        let dir = tempfile::tempdir().ok();
        let dir_path = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let text = "é".repeat(40_000); // 80,000 bytes
        let raw = json!({"content": [{"type": "text", "text": text}, {"type": "image", "data": "A".repeat(300_000), "mimeType": "image/png"}]});
        let r = format_result(&raw, ResultBudget::default(), Some(Spill { dir: &dir_path, label: "s-t" }));
        assert!(r.truncated);
        assert_eq!(r.spilled.len(), 2);
        let shown: usize =
            r.blocks.iter().map(|b| if let ModelBlock::Text { text } = b { text.len() } else { 0 }).sum();
        assert!(shown < 50_000 + 300, "{shown}");
        let full = std::fs::read_to_string(&r.spilled[1]).unwrap_or_default();
        assert!(full.starts_with(&text));
        assert!(r.text().contains(&r.spilled[1].display().to_string()));
        assert!(std::fs::metadata(&r.spilled[0]).map(|m| m.len()).unwrap_or(0) > 200_000);
    }
}

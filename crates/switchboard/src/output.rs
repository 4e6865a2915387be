//! Tool results made ready for a model.
//!
//! As ZCode does: text is kept; images become data URLs; audio is replaced by a one-line note
//! with its MIME type; embedded resources are serialised; non-empty `structuredContent` is
//! appended; `isError` results are prefixed `MCP tool returned an error:`. On top of that a
//! budget: past [`ResultBudget::text_bytes`] of text the result is cut with a note, and an image
//! over [`ResultBudget::image_bytes`] of base64 is not inlined; in both cases the full content
//! is written to a file under the data folder whose path the note gives.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Serialize;
use serde_json::Value;

/// Prefix of the text of a result with `isError: true`.
pub const ERROR_PREFIX: &str = "MCP tool returned an error:";

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

fn spill_file(spill: Option<Spill<'_>>, ext: &str, bytes: &[u8]) -> Option<PathBuf> {
    let spill = spill?;
    crate::fsutil::create_private_dir(spill.dir).ok()?;
    let label: String =
        spill.label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let file =
        tempfile::Builder::new().prefix(&format!("{label}-")).suffix(&format!(".{ext}")).tempfile_in(spill.dir).ok()?;
    std::fs::write(file.path(), bytes).ok()?;
    let (_, path) = file.keep().ok()?;
    Some(path)
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

/// Turns a raw `CallToolResult` (as JSON) into a [`ModelResult`].
pub fn format_result(raw: &Value, budget: ResultBudget, spill: Option<Spill<'_>>) -> ModelResult {
    let is_error = raw.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let mut blocks = Vec::new();
    let mut truncated = false;
    let mut spilled = Vec::new();
    for block in raw.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        match str_of(block, "type") {
            "text" => blocks.push(ModelBlock::Text { text: str_of(block, "text").to_string() }),
            "image" => {
                let mime = str_of(block, "mimeType");
                let data = str_of(block, "data");
                if data.len() <= budget.image_bytes {
                    blocks.push(ModelBlock::Image {
                        mime_type: mime.to_string(),
                        data_url: format!("data:{mime};base64,{data}"),
                    });
                } else {
                    truncated = true;
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(data.trim())
                        .unwrap_or_else(|_| data.as_bytes().to_vec());
                    let note = match spill_file(spill, ext_for(mime), &decoded) {
                        Some(path) => {
                            let note = format!(
                                "[Image ({mime}, {} bytes) too large to inline; saved to {}]",
                                decoded.len(),
                                path.display()
                            );
                            spilled.push(path);
                            note
                        }
                        None => format!("[Image ({mime}, {} bytes) omitted: too large to inline]", decoded.len()),
                    };
                    blocks.push(ModelBlock::Text { text: note });
                }
            }
            "audio" => blocks
                .push(ModelBlock::Text { text: format!("[Audio content ({}) omitted]", str_of(block, "mimeType")) }),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                blocks.push(ModelBlock::Text { text: serde_json::to_string(&resource).unwrap_or_default() });
            }
            _ => blocks.push(ModelBlock::Text { text: serde_json::to_string(block).unwrap_or_default() }),
        }
    }
    match raw.get("structuredContent") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) if o.is_empty() => {}
        Some(v) => blocks.push(ModelBlock::Text { text: serde_json::to_string(v).unwrap_or_default() }),
    }
    if is_error {
        match blocks.iter_mut().find_map(|b| match b {
            ModelBlock::Text { text } => Some(text),
            ModelBlock::Image { .. } => None,
        }) {
            Some(text) => *text = format!("{ERROR_PREFIX} {text}"),
            None => blocks.insert(0, ModelBlock::Text { text: ERROR_PREFIX.to_string() }),
        }
    }
    let total: usize = blocks.iter().map(|b| if let ModelBlock::Text { text } = b { text.len() } else { 0 }).sum();
    if total > budget.text_bytes {
        truncated = true;
        let full: Vec<&str> = blocks
            .iter()
            .filter_map(|b| if let ModelBlock::Text { text } = b { Some(text.as_str()) } else { None })
            .collect();
        let path = spill_file(spill, "txt", full.join("\n").as_bytes());
        let mut left = budget.text_bytes;
        let mut kept = Vec::with_capacity(blocks.len());
        for block in blocks {
            match block {
                ModelBlock::Text { mut text } => {
                    if left == 0 {
                        continue;
                    }
                    if text.len() > left {
                        let mut cut = left;
                        while !text.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        text.truncate(cut);
                    }
                    left -= text.len();
                    kept.push(ModelBlock::Text { text });
                }
                image => kept.push(image),
            }
        }
        let note = match &path {
            Some(p) => format!(
                "[Output truncated: showing {} of {total} bytes of text. The full output is in {}]",
                budget.text_bytes,
                p.display()
            ),
            None => format!("[Output truncated: showing {} of {total} bytes of text]", budget.text_bytes),
        };
        kept.push(ModelBlock::Text { text: note });
        spilled.extend(path);
        blocks = kept;
    }
    ModelResult { is_error, blocks, truncated, spilled }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(r.text().contains("\"uri\":\"x://y\"") && r.text().ends_with("{\"n\":1}"));
        assert!(!r.truncated && !r.is_error);
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

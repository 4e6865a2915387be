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

/// The longest label in a spill file's name (the rest of a longer one is a hash of it).
const LABEL_MAX: usize = 60;

/// Writes cut content to a new file (0600, in a 0700 folder) named after the label. `None`
/// without a spill folder; an error when the file could not be written (said to the model).
fn spill_file(spill: Option<Spill<'_>>, ext: &str, bytes: &[u8]) -> Option<Result<PathBuf, String>> {
    let spill = spill?;
    let written = (|| -> std::io::Result<PathBuf> {
        crate::fsutil::create_private_dir(spill.dir)?;
        let mut label: String = spill
            .label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        if label.len() > LABEL_MAX {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(spill.label.as_bytes());
            let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            label.truncate(LABEL_MAX - 9);
            label = format!("{label}-{hash}");
        }
        let file =
            tempfile::Builder::new().prefix(&format!("{label}-")).suffix(&format!(".{ext}")).tempfile_in(spill.dir)?;
        std::fs::write(file.path(), bytes)?;
        let (_, path) = file.keep().map_err(|e| e.error)?;
        Ok(path)
    })();
    Some(written.map_err(|e| {
        tracing::warn!("could not keep the full output in {}: {e}", spill.dir.display());
        e.to_string()
    }))
}

/// Removes kept outputs from `dir`: those older than `keep`, then the oldest until they hold
/// at most `max_bytes` in all. Returns how many were removed and how many bytes that freed.
pub fn clean_spills(dir: &Path, keep: std::time::Duration, max_bytes: u64) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return (0, 0) };
    let now = std::time::SystemTime::now();
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().unwrap_or(now), meta.len(), e.path()))
        })
        .collect();
    files.sort();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    let (mut removed, mut freed) = (0, 0);
    for (modified, len, path) in files {
        let old = now.duration_since(modified).is_ok_and(|age| age > keep);
        if (old || total > max_bytes) && std::fs::remove_file(&path).is_ok() {
            removed += 1;
            freed += len;
            total -= len;
        }
    }
    (removed, freed)
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
        kept.push(ModelBlock::Text { text: note });
        spilled.extend(path.and_then(Result::ok));
        blocks = kept;
    }
    ModelResult { is_error, blocks, truncated, spilled }
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

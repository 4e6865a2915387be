//! What tool definitions cost in a model's context, in tokens: so people see which server
//! eats it, and the gateway can defer schemas only when the catalog is big (`auto:N`).
//!
//! An estimate with OpenAI's o200k_base encoding (GPT-4o and later; Anthropic publishes no
//! tokenizer, and its counts for English and JSON are within about a tenth of this one) over
//! the tool's MCP definition as compact JSON: its model-visible name, title, description and
//! input schema. Each provider wraps definitions in its own framing, a few tokens a tool.
//!
//! The encoding's table (3.6 MB, in the binary) is parsed only when a [`TokenCounter`] is
//! made (about a tenth of a second), so programs that never count never pay for it: `list`
//! and calls keep their speed and memory. Behind the `tokens` feature.

use serde_json::{Map, Value, json};

use super::ToolEntry;

/// Counts tokens with o200k_base.
pub struct TokenCounter {
    bpe: tiktoken_rs::CoreBPE,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter(o200k_base)")
    }
}

/// The encoding's table could not be read (it is built into the binary: a build defect).
#[derive(Debug, thiserror::Error)]
#[error("the o200k_base token table could not be loaded: {0}")]
pub struct TokenTableError(String);

impl TokenCounter {
    /// Loads the o200k_base table.
    pub fn o200k() -> Result<TokenCounter, TokenTableError> {
        tiktoken_rs::o200k_base().map(|bpe| TokenCounter { bpe }).map_err(|e| TokenTableError(e.to_string()))
    }

    /// Tokens of `text` (special tokens counted as text).
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// Tokens of one tool's definition as a model receives it.
    pub fn tool(&self, entry: &ToolEntry) -> usize {
        self.definition(
            &entry.name,
            entry.tool.title.as_deref(),
            entry.tool.description.as_deref(),
            &entry.input_schema,
        )
    }

    /// Tokens of a definition given by its parts (a gateway's renamed tool, say).
    pub fn definition(
        &self,
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        schema: &Map<String, Value>,
    ) -> usize {
        let mut def = json!({"name": name});
        if let Some(t) = title {
            def["title"] = json!(t);
        }
        if let Some(d) = description {
            def["description"] = json!(d);
        }
        def["inputSchema"] = Value::Object(schema.clone());
        self.count(&def.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_o200k() {
        let Ok(counter) = TokenCounter::o200k() else { panic!("table") };
        // Known counts for o200k_base.
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
        // Ten tokens a sentence (the space before the next one joins its first word), and the
        // last space on its own.
        assert_eq!(counter.count("Create a new issue in a GitHub repository."), 10);
        assert_eq!(counter.count(&"Create a new issue in a GitHub repository. ".repeat(100)), 1001);
    }
}

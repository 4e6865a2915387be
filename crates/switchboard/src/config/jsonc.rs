//! JSON with comments and trailing commas, as people write config files.
//!
//! [`strip`] blanks out `//` and `/* */` comments and trailing commas with spaces, keeping
//! every newline and every byte offset, so `serde_json`'s line and column in an error point at
//! the same place in the file the person wrote. No crate on crates.io does both while keeping
//! positions (json_comments keeps positions but leaves trailing commas), hence these lines.

/// Returns `text` with comments and trailing commas replaced by spaces (newlines kept).
pub fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    // Position of the last comma seen outside a string, cleared by any other significant byte.
    let mut pending_comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                let end = (i + 2).min(bytes.len());
                for b in &mut out[start..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                i = end;
                continue;
            }
            b',' => pending_comma = Some(i),
            b']' | b'}' => {
                if let Some(at) = pending_comma.take() {
                    out[at] = b' ';
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => pending_comma = None,
        }
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII spaces, so the text is still UTF-8; the lossy
    // conversion never allocates a replacement in practice.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The 1-based line on which `needle` (a JSON object key, with its quotes) first appears.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    let mut from = 0;
    while let Some(pos) = text[from..].find(&quoted) {
        let at = from + pos;
        let rest = text[at + quoted.len()..].trim_start();
        if rest.starts_with(':') {
            return Some(text[..at].matches('\n').count() + 1);
        }
        from = at + quoted.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_and_trailing_commas_keeping_positions() {
        let src = "{\n  // a comment\n  \"a\": [1, 2,], /* b */\n  \"s\": \"// not a comment, \",\n}\n";
        let out = strip(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(out.matches('\n').count(), src.matches('\n').count());
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["a"], serde_json::json!([1, 2]));
        assert_eq!(v["s"], "// not a comment, ");
    }

    #[test]
    fn error_positions_survive() {
        let src = "{\n /* x\n y */ \"a\": @\n}";
        let err = serde_json::from_str::<serde_json::Value>(&strip(src)).err();
        assert_eq!(err.map(|e| e.line()), Some(3));
    }

    #[test]
    fn finds_key_lines() {
        let src = "{\n \"servers\": {\n  \"x\": \"x\",\n  \"x\" : {}\n }\n}";
        assert_eq!(line_of_key(src, "servers"), Some(2));
        assert_eq!(line_of_key(src, "x"), Some(3));
        assert_eq!(line_of_key(src, "nope"), None);
    }
}

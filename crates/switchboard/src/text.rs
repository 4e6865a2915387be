//! Text from elsewhere, made safe to show: short excerpts of values for messages (never a
//! whole 13 MB value), and control characters escaped before anything a server sent reaches
//! a terminal (an OSC sequence can retitle the window or write the clipboard, a CSI sequence
//! can move the cursor over what the person reads).

use std::borrow::Cow;
use std::time::Duration;

/// `s` cut to at most `max` characters, with `…` and the full size when it was cut.
pub fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// A duration as a person reads it: `1.5 s`, `30 s`, `250 ms`.
pub(crate) fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The candidate closest to `word` by edit distance (letters swapped count as one edit, case
/// is ignored), if it is close enough to have been meant: at most a third of the longer of
/// the two apart, and at least one edit (`word` itself is not "meant", it is there).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .into_iter()
        .filter_map(|c| {
            let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
            let limit = (lower.chars().count().max(c.chars().count()) / 3).max(1);
            (d <= limit && c != word).then_some((d, c))
        })
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

/// Whether `c` must not reach a terminal raw: C0 and C1 controls, DEL, and the bidirectional
/// overrides and isolates (which reorder what is shown).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// One line for a terminal: every control character (newlines and tabs included) escaped as
/// `\n`, `\t`, `\x1b`, `\u{202e}`.
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Text of several lines for a terminal: newlines and tabs kept, every other control
/// character escaped.
pub fn for_terminal_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_lines && matches!(c, '\n' | '\t');
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !is_unsafe(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_word_is_one_that_could_have_been_meant() {
        let servers = ["memory", "everything", "filesystem"];
        assert_eq!(closest("memroy", servers), Some("memory"));
        assert_eq!(closest("Everthing", servers), Some("everything"));
        assert_eq!(closest("github", servers), None);
        assert_eq!(closest("memory", servers), None, "itself is not a suggestion");
        assert_eq!(closest("comand", ["command", "args", "env", "cwd"]), Some("command"));
        assert_eq!(closest("x", ["y", "xy"]), Some("y"));
    }

    #[test]
    fn excerpts_are_short_and_say_the_size() {
        assert_eq!(excerpt("short", 10), "short");
        let long = "é".repeat(100);
        let e = excerpt(&long, 5);
        assert_eq!(e, format!("{}… (200 bytes)", "é".repeat(5)));
    }

    #[test]
    fn escapes_reach_no_terminal() {
        let hostile = "ok\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}evil\r\nnext\tx";
        let one = for_terminal(hostile);
        assert!(!one.chars().any(is_unsafe), "{one}");
        assert_eq!(one, "ok\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u{202e}evil\\r\\nnext\\tx");
        let lines = for_terminal_lines(hostile);
        assert!(lines.contains("\nnext\tx") && lines.contains("\\x1b") && !lines.contains('\r'));
        assert!(matches!(for_terminal("plain text"), Cow::Borrowed(_)));
    }
}

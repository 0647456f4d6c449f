//! Text made safe for a terminal: the one function every human rendering
//! passes through before it is written (see [`crate::output`]).
//!
//! Titles, questions, notes and summaries are written by agents, and reach a
//! person's terminal. Raw, an escape sequence in them could erase or rewrite
//! lines (`ESC[2K`, a carriage return), write the clipboard (OSC 52), or a
//! bidi override could reorder what is read. Here every such character is
//! shown as a visible escape instead: C0 controls except newline and tab,
//! DEL, C1 controls, and Unicode's bidi controls and line separators. JSON
//! output never goes through here: it keeps the exact text.

use std::borrow::Cow;

/// The colour sequences loopx writes itself (diffs, when stdout is a
/// terminal and `NO_COLOR` is unset); [`safe_keeping_colour`] lets exactly
/// these through.
const OWN_COLOURS: [&str; 5] = ["\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m"];

/// `text` with every control character shown as an escape; newlines and
/// tabs stay.
pub fn safe(text: &str) -> Cow<'_, str> {
    escape(text, true, false)
}

/// One line: like [`safe`], and a newline is shown as `\n` too (a title in
/// a listing must not start a line of its own).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false, false)
}

/// Like [`safe`], but loopx's own diff colours pass.
pub fn safe_keeping_colour(text: &str) -> Cow<'_, str> {
    escape(text, true, true)
}

fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings, overrides, isolates and marks.
        | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{61c}'
        // Line and paragraph separators, which some terminals break on.
        | '\u{2028}' | '\u{2029}')
}

fn escape(text: &str, keep_newline: bool, keep_colour: bool) -> Cow<'_, str> {
    let needs = |c: char| is_unsafe(c) || (c == '\n' && !keep_newline);
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if keep_colour
            && c == '\x1b'
            && let Some(own) = OWN_COLOURS.iter().find(|s| rest.starts_with(**s))
        {
            out.push_str(own);
            rest = &rest[own.len()..];
            continue;
        }
        match c {
            '\n' if !keep_newline => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x1b' => out.push_str("\\e"),
            c if is_unsafe(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_become_visible() {
        let hostile = "publish\x1b[2K\r(no gates)\x1b]52;c;ZXZpbA==\x07 \u{202e}txt.exe\u{9b}";
        let shown = safe(hostile);
        assert_eq!(
            shown,
            "publish\\e[2K\\r(no gates)\\e]52;c;ZXZpbA==\\x07 \\u{202e}txt.exe\\x9b"
        );
        assert!(!shown.chars().any(is_unsafe));
    }

    #[test]
    fn ordinary_text_is_borrowed_and_newlines_kept_where_asked() {
        let text = "Write the parser — naïve, 日本語, tabs\there\nsecond line";
        assert!(matches!(safe(text), Cow::Borrowed(_)));
        assert_eq!(line("a\nb"), "a\\nb");
        assert_eq!(safe("a\nb"), "a\nb");
    }

    #[test]
    fn only_loopx_own_colours_pass() {
        let diff = "\x1b[31m-x\x1b[0m \x1b[2K";
        assert_eq!(safe_keeping_colour(diff), "\x1b[31m-x\x1b[0m \\e[2K");
        assert_eq!(safe(diff), "\\e[31m-x\\e[0m \\e[2K");
    }
}

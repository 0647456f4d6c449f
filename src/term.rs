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
//!
//! loopx's own colours (a diff's, when stdout takes colour) are added by
//! [`Painted`] after the text is escaped, so no text, whatever sequences it
//! carries, ever reaches the terminal as a colour: an agent cannot make a
//! failed line look green.

use std::borrow::Cow;

/// The colours loopx writes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    Red,
    Green,
    Cyan,
    Bold,
}

impl Colour {
    fn code(self) -> &'static str {
        match self {
            Colour::Red => "\x1b[31m",
            Colour::Green => "\x1b[32m",
            Colour::Cyan => "\x1b[36m",
            Colour::Bold => "\x1b[1m",
        }
    }
}

const RESET: &str = "\x1b[0m";

/// Human text as it reaches the terminal, coloured by loopx alone: every
/// text is escaped as it is added, and a colour goes around a line only
/// after its text was escaped (and only when colour is on).
#[derive(Debug, Default)]
pub struct Painted {
    text: String,
    colour: bool,
}

impl Painted {
    /// Empty text; `colour`: whether [`Painted::line`] colours.
    pub fn new(colour: bool) -> Self {
        Painted {
            text: String::new(),
            colour,
        }
    }

    /// Adds `text` as [`safe`] shows it (newlines and tabs kept).
    pub fn push(&mut self, text: &str) {
        self.text.push_str(&safe(text));
    }

    /// Adds one line as [`line()`] shows it (a newline in it shown as
    /// `\n`), in `colour` when colour is on, then a newline.
    pub fn line(&mut self, colour: Option<Colour>, text: &str) {
        match colour.filter(|_| self.colour) {
            Some(c) => {
                self.text.push_str(c.code());
                self.text.push_str(&line(text));
                self.text.push_str(RESET);
            }
            None => self.text.push_str(&line(text)),
        }
        self.text.push('\n');
    }

    /// The text, ready for the terminal.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `text` with every control character shown as an escape; newlines and
/// tabs stay.
pub fn safe(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// One line: like [`safe`], and a newline is shown as `\n` too (a title in
/// a listing must not start a line of its own).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings, overrides, isolates and marks.
        | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{61c}'
        // Line and paragraph separators, which some terminals break on.
        | '\u{2028}' | '\u{2029}')
}

fn escape(text: &str, keep_newline: bool) -> Cow<'_, str> {
    let needs = |c: char| is_unsafe(c) || (c == '\n' && !keep_newline);
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
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
    fn only_colours_loopx_adds_reach_the_terminal() {
        // Text that carries loopx's own colour sequences is escaped like
        // any other; the colour goes around the escaped line.
        let forged = "\x1b[32m+ passed\x1b[0m \x1b[2K";
        let mut p = Painted::new(true);
        p.line(Some(Colour::Red), forged);
        p.push("subject \x1b[32mgreen\x1b[0m\n");
        p.line(None, "a\nb");
        assert_eq!(
            p.as_str(),
            "\x1b[31m\\e[32m+ passed\\e[0m \\e[2K\x1b[0m\nsubject \\e[32mgreen\\e[0m\na\\nb\n"
        );
        let mut plain = Painted::new(false);
        plain.line(Some(Colour::Green), "+x");
        assert_eq!(plain.as_str(), "+x\n");
    }
}

//! Unified line diffs of canonical TOML files, as git prints them, with
//! ANSI colour only when asked.

use std::fmt::Write as _;

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// Lines of context around each change, as git shows them.
const CONTEXT: usize = 3;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// How a file changed between two trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
}

impl FileStatus {
    /// From which sides exist: no old file means added, no new one deleted.
    pub fn of(old: Option<&[u8]>, new: Option<&[u8]>) -> Self {
        match (old, new) {
            (None, _) => FileStatus::Added,
            (_, None) => FileStatus::Deleted,
            _ => FileStatus::Modified,
        }
    }
}

/// The unified diff of one file (`old`: `None` when added; `new`: `None`
/// when deleted), with git's `--- a/…`/`+++ b/…` headers, coloured with ANSI
/// escapes only when `color` is set.
pub fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>, color: bool) -> String {
    let old_text = old.map(String::from_utf8_lossy).unwrap_or_default();
    let new_text = new.map(String::from_utf8_lossy).unwrap_or_default();
    let from = old.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{path}"));
    let to = new.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{path}"));
    let mut out = String::new();
    paint(&mut out, BOLD, &format!("--- {from}"), color);
    paint(&mut out, BOLD, &format!("+++ {to}"), color);
    let diff = TextDiff::from_lines(old_text.as_ref(), new_text.as_ref());
    let mut udiff = diff.unified_diff();
    udiff.context_radius(CONTEXT);
    for hunk in udiff.iter_hunks() {
        paint(&mut out, CYAN, &hunk.header().to_string(), color);
        for change in hunk.iter_changes() {
            let (sign, style) = match change.tag() {
                ChangeTag::Delete => ('-', Some(RED)),
                ChangeTag::Insert => ('+', Some(GREEN)),
                ChangeTag::Equal => (' ', None),
            };
            let line = format!("{sign}{}", change.value().trim_end_matches(['\n', '\r']));
            match style {
                Some(style) => paint(&mut out, style, &line, color),
                None => {
                    out.push_str(&line);
                    out.push('\n');
                }
            }
            if change.missing_newline() {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
    out
}

fn paint(out: &mut String, style: &str, line: &str, color: bool) {
    if color {
        let _ = writeln!(out, "{style}{line}{RESET}");
    } else {
        out.push_str(line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diffs_name_both_sides() {
        let old = b"a = 1\nb = 2\nc = 3\n";
        let new = b"a = 1\nb = 20\nc = 3\n";
        assert_eq!(
            unified("todos/aa/t-aa.toml", Some(old), Some(new), false),
            "--- a/todos/aa/t-aa.toml\n+++ b/todos/aa/t-aa.toml\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"
        );
        assert_eq!(
            unified("x.toml", None, Some(b"x = 1\n"), false),
            "--- /dev/null\n+++ b/x.toml\n@@ -0,0 +1 @@\n+x = 1\n"
        );
        assert_eq!(
            unified("x.toml", Some(b"x = 1"), None, false),
            "--- a/x.toml\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n\\ No newline at end of file\n"
        );
        assert_eq!(FileStatus::of(None, Some(b"")), FileStatus::Added);
        assert_eq!(FileStatus::of(Some(b""), None), FileStatus::Deleted);
    }

    #[test]
    fn colour_only_when_asked() {
        let text = unified("x.toml", Some(b"x = 1\n"), Some(b"x = 2\n"), true);
        assert_eq!(
            text,
            "\x1b[1m--- a/x.toml\x1b[0m\n\x1b[1m+++ b/x.toml\x1b[0m\n\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-x = 1\x1b[0m\n\x1b[32m+x = 2\x1b[0m\n"
        );
        assert!(!unified("x.toml", Some(b"x = 1\n"), Some(b"x = 2\n"), false).contains('\x1b'));
    }
}

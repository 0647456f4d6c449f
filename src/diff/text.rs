//! Unified line diffs of canonical TOML files, as git prints them: each
//! line with its [`Tone`], which a renderer colours after escaping its text
//! (`term::Painted`), so a file's text never colours the terminal.

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// Lines of context around each change, as git shows them.
const CONTEXT: usize = 3;

/// What a line of a unified diff is, for the colour a renderer gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// `--- a/…` and `+++ b/…`.
    Header,
    /// `@@ -1,3 +1,3 @@`.
    Hunk,
    Delete,
    Insert,
    /// A line both sides have, and `\ No newline at end of file`.
    Context,
}

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
/// when deleted), with git's `--- a/…`/`+++ b/…` headers.
pub fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let mut out = String::new();
    for (_, line) in unified_lines(path, old, new) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// [`unified`] as lines (without their newlines), each with its tone.
pub fn unified_lines(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> Vec<(Tone, String)> {
    let old_text = old.map(String::from_utf8_lossy).unwrap_or_default();
    let new_text = new.map(String::from_utf8_lossy).unwrap_or_default();
    let from = old.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{path}"));
    let to = new.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{path}"));
    let mut out = vec![
        (Tone::Header, format!("--- {from}")),
        (Tone::Header, format!("+++ {to}")),
    ];
    let diff = TextDiff::from_lines(old_text.as_ref(), new_text.as_ref());
    let mut udiff = diff.unified_diff();
    udiff.context_radius(CONTEXT);
    for hunk in udiff.iter_hunks() {
        out.push((Tone::Hunk, hunk.header().to_string()));
        for change in hunk.iter_changes() {
            let (sign, tone) = match change.tag() {
                ChangeTag::Delete => ('-', Tone::Delete),
                ChangeTag::Insert => ('+', Tone::Insert),
                ChangeTag::Equal => (' ', Tone::Context),
            };
            let line = format!("{sign}{}", change.value().trim_end_matches(['\n', '\r']));
            out.push((tone, line));
            if change.missing_newline() {
                out.push((Tone::Context, "\\ No newline at end of file".to_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diffs_name_both_sides() {
        let old = b"a = 1\nb = 2\nc = 3\n";
        let new = b"a = 1\nb = 20\nc = 3\n";
        assert_eq!(
            unified("todos/aa/t-aa.toml", Some(old), Some(new)),
            "--- a/todos/aa/t-aa.toml\n+++ b/todos/aa/t-aa.toml\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"
        );
        assert_eq!(
            unified("x.toml", None, Some(b"x = 1\n")),
            "--- /dev/null\n+++ b/x.toml\n@@ -0,0 +1 @@\n+x = 1\n"
        );
        assert_eq!(
            unified("x.toml", Some(b"x = 1"), None),
            "--- a/x.toml\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n\\ No newline at end of file\n"
        );
        assert_eq!(FileStatus::of(None, Some(b"")), FileStatus::Added);
        assert_eq!(FileStatus::of(Some(b""), None), FileStatus::Deleted);
    }

    #[test]
    fn each_line_has_its_tone() {
        use Tone::*;
        let tones: Vec<Tone> =
            unified_lines("x.toml", Some(b"x = 1\ny = 2"), Some(b"x = 2\ny = 2"))
                .into_iter()
                .map(|(t, _)| t)
                .collect();
        assert_eq!(
            tones,
            [Header, Header, Hunk, Delete, Insert, Context, Context]
        );
    }
}

//! The last verified tip of each loopx ref, kept in a file outside `refs/`
//! (`<git common dir>/loopx/verified-tips/<ref>`): a plain `git fetch`
//! onto `refs/loopx/*`, `git update-ref` or a restored backup can move a
//! ref, never this mark. Writers and sync advance it only from the tip it
//! names; `loopx verify` and `verify::current` set it once they have
//! verified a tip. What runs code or unlocks a human-only act reads the
//! ref's tip against it (DESIGN §8.1; issue 44).

use std::path::{Path, PathBuf};

use super::{Oid, Store};

/// The mark's file for `state_ref` under `common_dir`.
pub fn file(common_dir: &Path, state_ref: &str) -> PathBuf {
    let key: String = state_ref
        .trim_start_matches("refs/")
        .chars()
        .map(|c| match c {
            '/' => '%',
            c if c.is_ascii_alphanumeric() || "-_.@".contains(c) => c,
            _ => '-',
        })
        .collect();
    common_dir.join("loopx").join("verified-tips").join(key)
}

/// The verified tip of `state_ref` as the mark's file holds it (full hex),
/// read without opening the repository (the hook's guard); None when there
/// is no mark.
pub fn read_hex(common_dir: &Path, state_ref: &str) -> Option<String> {
    let text = std::fs::read_to_string(file(common_dir, state_ref)).ok()?;
    let hex = text.trim();
    (hex.len() >= 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| hex.to_owned())
}

impl Store {
    /// The last verified tip of the loopx ref `name`, if one is marked.
    pub fn verified_mark(&self, name: &str) -> Option<Oid> {
        read_hex(self.common_dir(), name).and_then(|h| self.oid(&h).ok())
    }

    /// Marks `commit` as the verified tip of the loopx ref `name`. Best
    /// effort: a mark not written costs the next reader an incremental
    /// check, never trust.
    pub fn mark_verified(&self, name: &str, commit: Oid) {
        let path = file(self.common_dir(), name);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let _ = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, format!("{commit}\n")))
            .and_then(|()| std::fs::rename(&tmp, &path));
    }

    /// After the loopx ref `name` moved from `from` (None: it did not
    /// exist) to `to` by a writer that checked every tick in between (a
    /// tick loopx wrote, a sync's verified round, a split's landing): moves
    /// the mark along when it named `from`, so a tip nobody verified never
    /// becomes a mark's base.
    pub fn advance_mark(&self, name: &str, from: Option<Oid>, to: Oid) {
        if from.is_none() || self.verified_mark(name) == from {
            self.mark_verified(name, to);
        }
    }
}

//! When this clone last agreed with its hub: the time a sync last ended
//! with the local and remote tips in step (fetched, fast-forwarded or
//! pushed), kept per synced ref in `<git common dir>/loopx/synced-at/`,
//! outside `refs/` (no fetch moves it) and off the state ref. Up to then
//! this clone has seen every tick of every other clone, so a claim's
//! silence is measured up to it (`op::stuck`), never up to now.

use std::path::PathBuf;

use crate::repo::Repo;

use super::Names;

fn file(repo: &Repo, names: &Names) -> PathBuf {
    let key: String = names
        .synced
        .trim_start_matches("refs/loopx/synced/")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    repo.store()
        .common_dir()
        .join("loopx")
        .join("synced-at")
        .join(key)
}

/// Records that the sync with `names`' remote ended in step now (the
/// repository's clock). Best effort: a time not written is a claim
/// judged on an older sync, later.
pub(super) fn mark(repo: &Repo, names: &Names) {
    let path = file(repo, names);
    let secs = repo.now().unix();
    let tmp = path.with_extension("tmp");
    let _ = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&tmp, format!("{secs}\n")))
        .and_then(|()| std::fs::rename(&tmp, &path));
}

/// When the last sync with `remote` (None: the default remote) ended in
/// step, in seconds since the epoch; None when no sync recorded one.
pub fn last(repo: &Repo, remote: Option<&str>) -> Option<i64> {
    let names = super::names(repo, remote).ok()?;
    std::fs::read_to_string(file(repo, &names))
        .ok()?
        .trim()
        .parse()
        .ok()
}

//! The portfolio: the repositories a person follows, kept in that
//! person's global git config (a multi-valued `loopx.portfolio`, one
//! absolute path per value), never in any state (DESIGN §9). Read and
//! written through the system git, so `GIT_CONFIG_GLOBAL`, `HOME` and
//! `XDG_CONFIG_HOME` place the file exactly as they do for git.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// The global git config key that holds the portfolio.
pub const KEY: &str = "loopx.portfolio";

/// The repositories followed, in the order they were added, each once.
pub fn list() -> Result<Vec<PathBuf>> {
    let mut seen = Vec::new();
    for v in crate::git::global_values(KEY)? {
        let p = PathBuf::from(v.trim());
        if !p.as_os_str().is_empty() && !seen.contains(&p) {
            seen.push(p);
        }
    }
    Ok(seen)
}

/// Follows `path` (absolute, as the caller resolved it); false when it is
/// followed already (nothing written).
pub fn add(path: &Path) -> Result<bool> {
    if list()?.iter().any(|p| p == path) {
        return Ok(false);
    }
    crate::git::global_add(KEY, &path.to_string_lossy())?;
    Ok(true)
}

/// Stops following `path`; false when it was not followed.
pub fn remove(path: &Path) -> Result<bool> {
    if !list()?.iter().any(|p| p == path) {
        return Ok(false);
    }
    crate::git::global_remove(KEY, &path.to_string_lossy())?;
    Ok(true)
}

//! What every evidence record notes about the code it saw.

use crate::git;
use crate::model::evidence::Code;
use crate::store::Store;

/// The project's code right now: HEAD and whether the worktree is dirty
/// (neither without a repository).
pub fn code_now(store: Option<&Store>) -> Code {
    Code {
        head: store.and_then(Store::head),
        dirty: git::is_dirty(store.and_then(Store::workdir)),
    }
}

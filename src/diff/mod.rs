//! Differences between two states, for `log -p`, `show` and `diff`: line
//! diffs of the canonical TOML files ([`text`]), and a semantic summary
//! computed by comparing two [`State`](crate::model::State) values
//! ([`summary`](mod@summary): todos added, claimed, released, renewed, stolen, done,
//! reopened, updated; goals added or changed; agents registered).
//!
//! Pure: no git, no I/O. The caller finds the changed files (the store's tree
//! diff) and the states; this module only compares and renders.

pub mod summary;
pub mod text;

pub use summary::{Entity, Item, What, summary};
pub use text::{FileStatus, Tone, unified, unified_lines};

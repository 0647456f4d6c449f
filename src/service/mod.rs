//! What several commands do the same way, below the commands: the turn's
//! pieces `settle`, `refresh-state`, `quota spend-slot`, `todo done` and
//! the evidence commands share. Services take the repository handle
//! ([`Repo`](crate::repo::Repo)) or the store and explicit values, never the
//! command context, and print nothing: what a person should read comes
//! back to the command (a warning callback, a list of notes).
//!
//! [`progress`] measures a turn for its progress fingerprint, [`usage`]
//! reads the `--usage` flags, [`evidence`] says what code a record saw,
//! [`turn`] checks a turn token against its caller, [`worktree`] keeps a
//! claim's own linked worktree, [`portfolio`] the repositories a person
//! follows (their global git config).

pub mod evidence;
pub mod portfolio;
pub mod progress;
pub mod turn;
pub mod usage;
pub mod worktree;

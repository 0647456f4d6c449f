//! A tick: load the tip, apply one operation, write one commit, move the ref
//! by compare-and-swap, and retry on a moved ref or a busy lock (DESIGN §3).
//!
//! The caller passes a function that builds the op from the state it sees,
//! so a retry re-decides against the new state (for example `claim --next`
//! picks again) and re-applies the same rules.

mod read;
mod retry;
mod write;
pub use read::*;
pub use retry::*;
pub use write::*;

pub mod goalref;

#[cfg(test)]
mod tests;

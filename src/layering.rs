//! The layering rules of docs/design.md, checked against the module graph
//! read from the source. A small reader (comments and string literals
//! blanked, `#[cfg(test)]` items left out, `use` trees expanded across
//! lines) collects every `crate::…`, `super::…`, `self::…` and child-module
//! path of every file under src/ and turns it into an edge between modules
//! (the crate root is `lib`). The tests then check that every edge between
//! top-level modules is one their table `ALLOWED` lists, that there is no
//! cycle among the top-level modules nor among the files of one module,
//! and that op/ and model/ reach, through any number of edges, no module
//! that does I/O; that the command context (`ctx`) is used by the front
//! ends only; and that of sync's steps only `execute` moves a ref or writes
//! a commit. What a graph cannot see stays a search in the text: gix only
//! in the store, the system git only from git.rs, no printing below the
//! commands, commands reach the state only through `tx` and `history`
//! (calls wrapped over lines too), and the rules never spell a CLI command
//! (they name a [`Next`](crate::next::Next) step). A test, so a change that
//! breaks a rule fails the suite instead of waiting for review.

#[cfg(test)]
mod tests;

//! `loopx portfolio …`: the repositories a person follows, for `status
//! --all`. They live in the person's global git config (`loopx.portfolio`,
//! through `service::portfolio`), never in any state.

pub mod add;
pub mod list;
pub mod remove;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Follow a repository: `loopx status --all` shows it
    Add(add::Args),
    /// List the repositories you follow
    List(list::Args),
    /// Stop following a repository
    Remove(remove::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Add(a) => add::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Remove(a) => remove::run(ctx, a),
    }
}

/// `path` made absolute from where loopx runs (`-C`), without following
/// links: for a path that may not exist.
fn absolute(ctx: &Ctx, path: &Path) -> PathBuf {
    let joined = ctx.cwd.join(path);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// A path git config can hold: valid UTF-8, one line.
fn storable(path: &Path) -> Result<(), Refusal> {
    match path.to_str() {
        Some(s) if !s.contains('\n') => Ok(()),
        _ => Err(Refusal::usage(
            Code::BadPath,
            format!(
                "{} is not valid UTF-8 on one line, so git config cannot hold it",
                path.display()
            ),
        )
        .with_hint("rename the folder, or follow it through a symbolic link whose path is plain")),
    }
}

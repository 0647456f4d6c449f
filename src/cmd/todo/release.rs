//! `loopx todo release`: give a claim back.

use anyhow::Result;

use super::{report, tick_on};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, TodoRelease};

/// Release your claim on a todo, so others may take it
///
/// A human may free another agent's claim with --force (recorded in the
/// todo's notes and the history).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// Free another agent's claim (humans only)
    #[arg(long)]
    force: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tick_on(ctx, &args.held, |_, todo, epoch| {
        Change::TodoRelease(TodoRelease {
            todo,
            epoch,
            force: args.force,
        })
    })?;
    report(ctx, &done, |t| {
        format!("Released {} \"{}\".", t.id, t.title)
    })
}

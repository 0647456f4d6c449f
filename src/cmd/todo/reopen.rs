//! `loopx todo reopen`: a done, blocked or deferred todo becomes open.

use anyhow::Result;

use super::{report, tick_on};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, TodoReopen};

/// Open a done, blocked or deferred todo again
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tick_on(ctx, &args.held, |_, todo, epoch| {
        Change::TodoReopen(TodoReopen { todo, epoch })
    })?;
    report(ctx, &done, |t| {
        format!("Reopened {} \"{}\".", t.id, t.title)
    })
}

//! `loopx goal …`: goals are set by humans and read by everyone.

pub mod add;
pub mod list;
pub mod set;
pub mod show;
pub mod split;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Add a goal (humans only)
    Add(add::Args),
    /// List the goals
    List(list::Args),
    /// Show one goal
    Show(show::Args),
    /// Change a goal's objective, status, scope, guards, quota, resume policy, stall limit, lease or budget (humans only)
    Set(set::Args),
    /// Move each goal onto its own ref, the shared parts staying on
    /// refs/loopx/state (humans only; format 6)
    Split(split::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Add(a) => add::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Show(a) => show::run(ctx, a),
        Command::Set(a) => set::run(ctx, a),
        Command::Split(a) => split::run(ctx, a),
    }
}

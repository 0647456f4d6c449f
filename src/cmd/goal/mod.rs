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
pub enum Command {
    Add(add::Args),
    List(list::Args),
    Show(show::Args),
    Set(set::Args),
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

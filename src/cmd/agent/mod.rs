//! `loopx agent …`: the agents that may claim work.

pub mod list;
pub mod register;
pub mod retire;
pub mod show;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Register(register::Args),
    List(list::Args),
    Show(show::Args),
    Retire(retire::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Register(a) => register::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Show(a) => show::run(ctx, a),
        Command::Retire(a) => retire::run(ctx, a),
    }
}

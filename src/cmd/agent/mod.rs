//! `loopx agent …`: the agents that may claim work.

pub mod list;
pub mod register;
pub mod retire;
pub mod show;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Register an agent so it may claim todos
    Register(register::Args),
    /// List the registered agents and what they hold
    List(list::Args),
    /// Show one agent and the claims it holds
    Show(show::Args),
    /// Retire an agent: it may no longer act, and its claims are released
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

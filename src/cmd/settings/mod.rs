//! `loopx settings …`: the team's shared settings in the state (format 7):
//! the default lease, the clock-skew margin, when a silent claim shows
//! stuck, and prices by model.

pub mod set;
pub mod show;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Set the team's default lease, clock-skew margin, stuck time, agent-wide slots or model prices (a human act)
    Set(set::Args),
    /// Show the team's settings and where each price comes from
    Show(show::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Set(a) => set::run(ctx, a),
        Command::Show(a) => show::run(ctx, a),
    }
}

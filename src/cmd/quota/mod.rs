//! `loopx quota …`: whether to run a turn, the slots turns spend, and
//! parking until a runtime's window resets.

pub mod park;
pub mod resume;
pub mod should_run;
pub mod spend_slot;
pub mod status;
pub mod void_slot;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    ShouldRun(should_run::Args),
    SpendSlot(spend_slot::Args),
    VoidSlot(void_slot::Args),
    Status(status::Args),
    Park(park::Args),
    Resume(resume::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::ShouldRun(a) => should_run::run(ctx, a),
        Command::SpendSlot(a) => spend_slot::run(ctx, a),
        Command::VoidSlot(a) => void_slot::run(ctx, a),
        Command::Status(a) => status::run(ctx, a),
        Command::Park(a) => park::run(ctx, a),
        Command::Resume(a) => resume::run(ctx, a),
    }
}

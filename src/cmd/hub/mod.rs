//! `loopx hub …`: guard a bare repository that clones sync through, so it
//! refuses forged or rewritten state before it lands (DESIGN §8.1).

pub mod install;
pub mod pre_receive;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Install(install::Args),
    #[command(hide = true)]
    PreReceive(pre_receive::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Install(a) => install::run(ctx, a),
        Command::PreReceive(a) => pre_receive::run(ctx, a),
    }
}

//! `loopx hub …`: guard a bare repository that clones sync through, so it
//! refuses forged or rewritten state before it lands (DESIGN §8.1).

pub mod install;
pub mod pre_receive;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Guard this bare repository: refuse pushes to refs/loopx/* that forge or rewrite the state
    Install(install::Args),
    /// Check the ref updates of a push (run by the hook `hub install` writes)
    #[command(hide = true)]
    PreReceive(pre_receive::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Install(a) => install::run(ctx, a),
        Command::PreReceive(a) => pre_receive::run(ctx, a),
    }
}

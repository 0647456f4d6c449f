//! `loopx notify-run` (hidden): the detached runner that sends the
//! notifications a command found due ([`crate::notify`]). Commands start
//! it; people never need to.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

/// Send the notifications that are due (started by loopx itself)
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    crate::notify::run_pending(ctx)?;
    Ok(Exit::Ok)
}

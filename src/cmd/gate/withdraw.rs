//! `loopx gate withdraw`: close a gate without an answer.

use anyhow::Result;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, GateWithdraw};

/// Withdraw a gate that is no longer needed; its scope is unblocked
///
/// The same rule as answering: human-only kinds take only a human.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The gate's id or a unique prefix
    id: String,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::start(ctx)?.run(|state| {
        let gate = state.resolve_gate(&args.id)?;
        Ok(tx::op(ctx, Change::GateWithdraw(GateWithdraw { gate }))?)
    })?;
    super::emit(ctx, &done, |g| {
        format!("Withdrew {}: \"{}\".", g.id, g.question)
    })?;
    Ok(Exit::Ok)
}

//! `loopx gate withdraw`: close a gate without an answer.

use anyhow::Result;
use serde::Serialize;

use super::GateRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::tx;

/// Withdraw a gate that is no longer needed; its scope is unblocked
///
/// The same rule as answering: human-only kinds take only a human.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The gate's id or a unique prefix
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    gate: GateRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let gate = state.resolve_gate(&args.id)?;
        Ok(ctx.op(Change::GateWithdraw { gate })?)
    })?;
    let gate = done
        .effect
        .what
        .gate()
        .expect("gate.withdraw names its gate");
    let g = &done.state.gates[gate];
    ctx.out.emit(
        &Wire {
            gate: GateRef::of(g),
            tick: TickWire::of(&done),
        },
        || format!("Withdrew {gate}: \"{}\".", g.question),
    )?;
    Ok(Exit::Ok)
}

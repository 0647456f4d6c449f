//! `loopx todo release`: give a claim back.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::tx;

/// Release your claim on a todo, so others may take it
///
/// A human may free another agent's claim with --force (recorded in the
/// todo's notes and the history).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// Free another agent's claim (humans only)
    #[arg(long)]
    force: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(&args.id)?;
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoRelease {
            todo,
            epoch,
            force: args.force,
        })?)
    })?;
    let id = done.op.change.todo().expect("a release names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || format!("Released {id} \"{}\".", t.title),
    )?;
    Ok(Exit::Ok)
}

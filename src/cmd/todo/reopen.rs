//! `loopx todo reopen`: a done, blocked or deferred todo becomes open.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::tx;

/// Open a done, blocked or deferred todo again
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
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
        Ok(ctx.op(Change::TodoReopen { todo, epoch })?)
    })?;
    let id = done.op.change.todo().expect("a reopen names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || format!("Reopened {id} \"{}\".", t.title),
    )?;
    Ok(Exit::Ok)
}

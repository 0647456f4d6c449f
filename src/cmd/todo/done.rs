//! `loopx todo done`: mark a todo complete.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::tx;

/// Mark a todo done (its owner, or anyone if it is unclaimed)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// What was done, for the record
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
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
        Ok(ctx.op(Change::TodoDone {
            todo,
            epoch,
            note: args.note.clone(),
        })?)
    })?;
    let id = done.op.change.todo().expect("done names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || format!("Done {id} \"{}\".", t.title),
    )?;
    Ok(Exit::Ok)
}

//! `loopx todo update`: a note or a status change by the owner.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::{Exit, Refusal};
use crate::model::TodoStatus;
use crate::op::Change;
use crate::tx;

/// Add a note to a todo or change its status
///
/// Only the owner writes a claimed todo. Setting open, blocked or deferred
/// gives the claim up.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// open, blocked or deferred
    #[arg(long, value_name = "S")]
    status: Option<TodoStatus>,
    /// What happened, for the next one to read
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
    if args.status.is_none() && args.note.is_none() {
        return Err(
            Refusal::usage("nothing-to-update", "todo update needs --status or --note").into(),
        );
    }
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(&args.id)?;
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoUpdate {
            todo,
            epoch,
            status: args.status,
            note: args.note.clone(),
        })?)
    })?;
    let id = done.op.change.todo().expect("an update names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || format!("Updated {id} \"{}\" ({}).", t.title, t.status),
    )?;
    Ok(Exit::Ok)
}

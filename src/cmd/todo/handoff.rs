//! `loopx todo handoff`: give a claimed todo to another agent, with a note.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::{TickWire, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::AgentId;
use crate::op::Change;
use crate::time::Span;
use crate::tx;

/// Hand a claimed todo to another agent, with a note it will see
///
/// The owner (or a human) transfers the claim; the new owner gets a fresh
/// lease and the epoch moves on, so the old owner's late writes are refused.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// The agent that takes it over
    #[arg(long, value_name = "AGENT")]
    to: String,
    /// What the new owner needs to know
    #[arg(long, value_name = "TEXT")]
    note: String,
    /// The new owner's lease [default: the state's lease setting, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let to = slug("agent", &args.to, AgentId::new)?;
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(&args.id)?;
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoHandoff {
            todo,
            epoch,
            to: to.clone(),
            lease: args.ttl.unwrap_or(state.meta.settings.lease),
            note: args.note.clone(),
        })?)
    })?;
    let id = done.op.change.todo().expect("a handoff names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || format!("Handed {id} \"{}\" to {to} (epoch {}).", t.title, t.epoch),
    )?;
    Ok(Exit::Ok)
}

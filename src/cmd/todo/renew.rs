//! `loopx todo renew`: extend your lease without changing the epoch.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::time::Span;
use crate::tx;

/// Extend your lease on a todo you hold
///
/// Exits 4 if the lease was taken over by another agent meanwhile.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// The new lease, from now [default: the state's lease setting, 45m]
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
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(&args.id)?;
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoRenew {
            todo,
            epoch,
            lease: args.ttl.unwrap_or(state.meta.settings.lease),
        })?)
    })?;
    let id = done.op.change.todo().expect("a renew names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(&done),
        },
        || {
            let until = t
                .claim
                .as_ref()
                .map(|c| c.lease_until.to_string())
                .unwrap_or_default();
            format!(
                "Renewed {id} \"{}\" until {until} (epoch {}).",
                t.title, t.epoch
            )
        },
    )?;
    Ok(Exit::Ok)
}

//! `loopx todo claim`: take a todo, race-safe.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::time::Span;
use crate::tx;

/// Claim a todo for the acting agent (registered agents only)
///
/// Claiming a todo you already hold renews its lease. A todo claimed by
/// another agent whose lease has expired is taken over (stolen). If another
/// agent wins the race, this exits 4 and names the winner.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// How long the lease lasts [default: the state's lease setting, 45m]
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
        Ok(ctx.op(Change::TodoClaim {
            todo,
            epoch,
            lease: args.ttl.unwrap_or(state.meta.settings.lease),
        })?)
    })?;
    let id = done.op.change.todo().expect("a claim names its todo");
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
            let verb = done.effect.subject.split(' ').next().unwrap_or("claim");
            let verb = match verb {
                "renew" => "Renewed",
                "steal" => "Took over",
                _ => "Claimed",
            };
            format!(
                "{verb} {id} \"{}\" until {until} (epoch {}).",
                t.title, t.epoch
            )
        },
    )?;
    Ok(Exit::Ok)
}

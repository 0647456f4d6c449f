//! `loopx todo claim`: take a todo, race-safe; `--next` picks the best one.

use anyhow::Result;

use super::report;
use crate::cmd::pick_goal;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, rules};
use crate::time::Span;
use crate::tx;

/// Claim a todo for the acting agent (registered agents only)
///
/// Claiming a todo you already hold renews its lease. A todo whose lease has
/// expired is taken over (and the previous holder is recorded). If another
/// agent wins the race, this exits 4 and names the winner. With --next, the
/// most urgent ready todo (then the oldest) is picked and claimed in the same
/// compare-and-swap, and its id is printed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    #[arg(required_unless_present = "next", conflicts_with = "next")]
    id: Option<String>,
    /// Pick the best ready todo and print its id
    #[arg(long)]
    next: bool,
    /// With --next, pick only within this goal
    #[arg(long, value_name = "G", requires = "next")]
    goal: Option<String>,
    /// How long the lease lasts [default: the state's lease setting, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let todo = match &args.id {
            Some(id) => state.resolve_todo(id)?,
            None => {
                let actor = ctx.actor()?;
                let agent = rules::acting_agent(state, &actor, "claim a todo")?;
                let goal = match &args.goal {
                    Some(g) => Some(pick_goal(ctx, state, Some(g))?),
                    None => None,
                };
                rules::best_ready(state, agent, goal.as_ref(), ctx.now)?
                    .id
                    .clone()
            }
        };
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoClaim {
            todo,
            epoch,
            lease: args.ttl.unwrap_or(state.meta.settings.lease),
        })?)
    })?;
    let exit = report(ctx, &done, |t| {
        if args.next {
            return t.id.to_string();
        }
        let until = t
            .claim
            .as_ref()
            .map(|c| c.lease_until.to_string())
            .unwrap_or_default();
        let verb = match done.effect.subject.split(' ').next() {
            Some("renew") => "Renewed",
            Some("steal") => "Took over",
            _ => "Claimed",
        };
        format!(
            "{verb} {} \"{}\" until {until} (epoch {}).",
            t.id, t.title, t.epoch
        )
    })?;
    if args.next {
        let t = &done.state.todos[done.op.change.todo().expect("a claim names its todo")];
        ctx.out.status(&format!(
            "Claimed {} \"{}\" (epoch {}).",
            t.id, t.title, t.epoch
        ));
    }
    Ok(exit)
}

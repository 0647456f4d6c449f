//! `loopx todo handoff`: give a claimed todo to another agent, with a note.

use anyhow::Result;

use super::{lease_of, report, tick_on};
use crate::cmd::slug;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::AgentId;
use crate::op::{Change, TodoHandoff};
use crate::time::Span;

/// Hand a claimed todo to another agent, with a note it will see
///
/// The owner transfers the claim (a human frees one with `release --force`); the new owner gets a fresh
/// lease and the epoch moves on, so the old owner's late writes are refused.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// The agent that takes it over
    #[arg(long, value_name = "AGENT")]
    to: String,
    /// What the new owner needs to know
    #[arg(long, value_name = "TEXT")]
    note: String,
    /// The new owner's lease [default: the goal's lease, else the team's, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let to = slug("agent", &args.to, AgentId::new)?;
    let done = tick_on(ctx, &args.held, |state, todo, epoch| {
        let lease = args.ttl.unwrap_or_else(|| lease_of(state, &todo));
        Change::TodoHandoff(TodoHandoff {
            todo,
            epoch,
            to: to.clone(),
            lease,
            note: args.note.clone(),
        })
    })?;
    report(ctx, &done, |t| {
        format!(
            "Handed {} \"{}\" to {to} (epoch {}).",
            t.id, t.title, t.epoch
        )
    })
}

//! `loopx todo renew`: extend your lease without changing the epoch.

use anyhow::Result;

use super::{lease_of, report, tick_on};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, TodoRenew};
use crate::time::Span;

/// Extend your lease on a todo you hold
///
/// Exits 4 if the lease was taken over by another agent meanwhile.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// The new lease, from now [default: the goal's lease, else the team's, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tick_on(ctx, &args.held, |state, todo, epoch| {
        let lease = args.ttl.unwrap_or_else(|| lease_of(state, &todo));
        Change::TodoRenew(TodoRenew { todo, epoch, lease })
    })?;
    report(ctx, &done, |t| {
        let until = t.lease_until().map(|u| u.to_string()).unwrap_or_default();
        format!(
            "Renewed {} \"{}\" until {until} (epoch {}).",
            t.id, t.title, t.epoch
        )
    })
}

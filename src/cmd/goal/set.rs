//! `loopx goal set`: a human changes a goal.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{GoalId, GoalStatus};
use crate::op::{Change, Happened};
use crate::time::Span;
use crate::tx;

/// Change a goal's objective, status, scope, guards, quota, resume policy or stall limit (humans only)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The goal's id
    id: String,
    /// A new objective
    #[arg(long, value_name = "TEXT")]
    objective: Option<String>,
    /// active, paused or done
    #[arg(long, value_name = "STATUS")]
    status: Option<GoalStatus>,
    /// A path (glob) agents may write; replaces the scope (can be repeated)
    #[arg(long, value_name = "PATH")]
    scope: Vec<String>,
    /// A rule agents must follow; replaces the guards (can be repeated)
    #[arg(long, value_name = "TEXT")]
    guard: Vec<String>,
    /// Turns each agent may spend per window
    #[arg(long, value_name = "N")]
    quota_slots: Option<u32>,
    /// The rolling quota window, such as 24h
    #[arg(long, value_name = "DURATION")]
    quota_window: Option<Span>,
    /// Whether an agent parked by `quota park` runs again by itself once its
    /// time passes (true), or waits for a human's go (false, the default)
    #[arg(long, value_name = "BOOL")]
    auto_resume: Option<bool>,
    /// Advanced turns without progress on one todo before a human-only stall
    /// gate opens (default 3; 0 is off)
    #[arg(long, value_name = "N")]
    stall_after: Option<u32>,
}

#[derive(Serialize)]
struct Wire<'a> {
    goal: &'a GoalId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let goal = state.goal(&args.id)?.id.clone();
        Ok(tx::op(
            ctx,
            Change::GoalSet {
                goal,
                objective: args.objective.clone(),
                status: args.status,
                scope: (!args.scope.is_empty()).then(|| args.scope.clone()),
                guards: (!args.guard.is_empty()).then(|| args.guard.clone()),
                quota_slots: args.quota_slots,
                quota_window: args.quota_window,
                auto_resume: args.auto_resume,
                stall_after: args.stall_after,
            },
        )?)
    })?;
    let Happened::GoalSet { goal, changed } = &done.effect.what else {
        unreachable!("a goal.set op reports GoalSet")
    };
    ctx.out.emit(
        &Wire {
            goal,
            tick: TickWire::of(&done),
        },
        || format!("Updated goal {goal}: {}.", changed.join(" ")),
    )?;
    Ok(Exit::Ok)
}

//! `loopx goal set`: a human changes a goal.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{AgentId, GoalId, GoalStatus, usage};
use crate::op::{BudgetSet, Change, GoalSet, Happened};
use crate::time::Span;

/// Change a goal's objective, status, scope, guards, quota, resume policy, stall limit, lease or budget (humans only)
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx goal set web --status paused
  loopx goal set web --quota-slots 24 --quota-window 1d --budget-usd 20
  loopx goal set web --lease 2h")]
#[command(group = clap::ArgGroup::new("budget").multiple(true).args(["budget_usd", "budget_tokens", "budget_window"]))]
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
    /// A dollar budget per window, such as 20 or 2.50 (k and M allowed; 0
    /// removes it); reaching it opens a human-only spend gate
    #[arg(long, value_name = "USD", value_parser = usage::parse_usd)]
    budget_usd: Option<usage::Usd>,
    /// A token budget (input plus output) per window, such as 5000000, 500k
    /// or 5M (0 removes it)
    #[arg(long, value_name = "N", value_parser = usage::parse_count)]
    budget_tokens: Option<u64>,
    /// The budget's rolling window, such as 1d (default) or 12h
    #[arg(long, value_name = "DURATION")]
    budget_window: Option<Span>,
    /// Set the budget of this agent on the goal rather than the goal's own
    /// (`--agent` names who acts, so this flag has its own name)
    #[arg(long, value_name = "A", requires = "budget")]
    budget_agent: Option<String>,
    /// Whether an agent parked by `quota park` runs again by itself once its
    /// time passes (true), or waits for a human's go (false, the default)
    #[arg(long, value_name = "BOOL")]
    auto_resume: Option<bool>,
    /// Advanced turns without progress on one todo before a human-only stall
    /// gate opens (default 3; 0 is off)
    #[arg(long, value_name = "N")]
    stall_after: Option<u32>,
    /// The lease a claim on this goal gets when no --ttl is passed, such as
    /// 2h (0s goes back to the team's, `loopx settings set --lease`)
    #[arg(long, value_name = "DURATION")]
    lease: Option<Span>,
}

#[derive(Serialize)]
struct Wire<'a> {
    goal: &'a GoalId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let agent = args
        .budget_agent
        .as_deref()
        .map(AgentId::new)
        .transpose()
        .map_err(|e| Refusal::usage(Code::BadId, e))?;
    let budget =
        (args.budget_usd.is_some() || args.budget_tokens.is_some() || args.budget_window.is_some())
            .then_some(BudgetSet {
                agent,
                usd: args.budget_usd,
                tokens: args.budget_tokens,
                window: args.budget_window,
            });
    let done = tx::start(ctx)?.run(|state| {
        let goal = state.goal(&args.id)?.id.clone();
        Ok(tx::op(
            ctx,
            Change::GoalSet(GoalSet {
                goal,
                objective: args.objective.clone(),
                status: args.status,
                scope: (!args.scope.is_empty()).then(|| args.scope.clone()),
                guards: (!args.guard.is_empty()).then(|| args.guard.clone()),
                quota_slots: args.quota_slots,
                quota_window: args.quota_window,
                budget: budget.clone(),
                auto_resume: args.auto_resume,
                stall_after: args.stall_after,
                lease: args.lease,
            }),
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

//! `loopx refresh-state`: record how the turn ended and print the brief
//! the next turn should see.

use anyhow::Result;
use serde::Serialize;

use super::{TickWire, pick_goal};
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::Outcome;
use crate::op::brief::{self, Brief};
use crate::op::{self, Change, RefreshState};
use crate::service::progress;
use crate::service::turn::{own_token, parse_token};

/// Record how your turn ended, and print the brief for the next one
///
/// advanced or blocked count as a validated writeback for `spend-slot`;
/// unchanged lets the next `should-run` skip while nothing that concerns
/// you changes. The brief: objective, gates, your claims, the next ready
/// todos, others' evidence since your last turn, quota left.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// advanced, unchanged or blocked
    #[arg(long, value_name = "O")]
    outcome: Outcome,
    /// What the next turn should do first
    #[arg(long, value_name = "TEXT")]
    next_action: Option<String>,
    /// The todo the turn was about
    #[arg(long, value_name = "T")]
    todo: Option<String>,
    /// The turn token from `quota should-run`
    #[arg(long, value_name = "TOKEN")]
    turn: Option<String>,
    /// The goal [default: the token's goal, or the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// Print the brief without writing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Serialize)]
struct Wire {
    outcome: &'static str,
    dry_run: bool,
    brief: Brief,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    tick: Option<TickWire>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let token = args.turn.as_deref().map(parse_token).transpose()?;
    if let Some(t) = &token {
        own_token(&ctx.actor()?, t)?;
    }
    let actor = ctx.actor()?;
    let Some(agent) = actor.agent().cloned() else {
        return Err(Refusal::rule(
            Code::AgentsOnly,
            "refresh-state records an agent's turn, and no agent is acting",
        )
        .with_hint("pass --agent ID (or set LOOPX_AGENT)")
        .into());
    };
    let snap = tx::load(ctx)?;
    // The turn's progress fingerprint (stall detection), measured once:
    // the turn began when its token was issued, else after the last turn.
    let measured = match args.todo.as_deref().map(|t| snap.state.resolve_todo(t)) {
        Some(Ok(todo)) if !args.dry_run => {
            let since = match &token {
                Some(t) => Some(progress::Since {
                    at: t.issued,
                    inclusive: true,
                }),
                None => snap
                    .state
                    .agents
                    .get(&agent)
                    .and_then(|a| a.last_turn.as_ref())
                    .map(|t| progress::Since {
                        at: t.at,
                        inclusive: false,
                    }),
            };
            ctx.repo().ok().and_then(|repo| {
                progress::measure(
                    repo,
                    (&snap.state, snap.tip.commit),
                    (&agent, &todo),
                    since,
                    &[],
                    &|w| ctx.out.status(&w),
                )
            })
        }
        _ => None,
    };
    let build = |state: &crate::model::State| -> Result<Change> {
        let todo = args
            .todo
            .as_deref()
            .map(|t| state.resolve_todo(t))
            .transpose()?;
        // The turn token's goal, else the todo's, else the agent's pick.
        let goal = match (&args.goal, &token, &todo) {
            (None, Some(t), _) => t.goal.clone(),
            (None, None, Some(t)) => state.todos[t].goal.clone(),
            (g, _, _) => pick_goal(ctx, state, g.as_deref())?,
        };
        let progress = measured
            .as_ref()
            .zip(todo.as_ref())
            .and_then(|(m, t)| progress::fingerprint(m, state, t, None));
        Ok(Change::RefreshState(RefreshState {
            goal,
            outcome: args.outcome,
            turn: token.as_ref().map(|t| t.turn.clone()),
            todo,
            next_action: args.next_action.clone(),
            progress,
        }))
    };
    let since = snap
        .state
        .agents
        .get(&agent)
        .and_then(|a| a.last_turn.as_ref())
        .map(|t| t.at);
    let (state, tick, tip) = if args.dry_run {
        let mut after = snap.state.clone();
        op::apply(&mut after, &tx::op(ctx, build(&snap.state)?)?)?;
        (after, None, None)
    } else {
        let done = tx::start(ctx)?.run(|state| Ok(tx::op(ctx, build(state)?)?))?;
        let tick = TickWire::of(&done);
        (done.state, Some(tick), Some(done.tip))
    };
    let Some(crate::model::LastTurn { goal, .. }) = state.agents[&agent].last_turn.clone() else {
        unreachable!("refresh sets the last turn")
    };
    // The ready index the tick just wrote.
    let list = tip.and_then(|tip| tx::ready_list(ctx, &tip, &agent, &goal));
    let brief = brief::build(
        &state,
        &agent,
        &state.goals[&goal],
        ctx.now,
        since,
        list.as_ref(),
    );
    let wire = Wire {
        outcome: args.outcome.as_str(),
        dry_run: args.dry_run,
        brief,
        tick,
    };
    ctx.out.emit(&wire, || wire.brief.human())?;
    Ok(Exit::Ok)
}

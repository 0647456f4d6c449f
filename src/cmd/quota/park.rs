//! `loopx quota park`: an agent waits, without spending, until its
//! runtime's usage window resets.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, pick_goal, slug};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{AgentId, GoalId};
use crate::op::{Change, QuotaPark};
use crate::time::{Timestamp, When};

/// Park an agent until a time: should-run answers wait-until until then
///
/// An agent parks itself when its runtime says "limit reached, resets at
/// 9am": until that time `quota should-run` answers skip `wait-until`,
/// costing nothing and writing nothing. After it the agent runs again only
/// if the goal says `goal set G --auto-resume true`; otherwise should-run
/// answers `awaiting-go` and the agent's next `refresh-state` opens a
/// human-only gate that asks for the go (`resume` lets it run). Parking
/// again moves the time. A human may park any agent with --of.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Until when: a duration reads as that long from now (5h, 1h30m); or a
    /// date (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339 time or
    /// @UNIX-SECONDS; at most 31 days
    #[arg(long, value_name = "TIME")]
    until: String,
    /// Why, for the record (the runtime's message)
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// The goal whose resume policy applies [default: the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// The agent to park (a human's choice) [default: the acting agent]
    #[arg(long, value_name = "AGENT")]
    of: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    agent: &'a AgentId,
    goal: &'a GoalId,
    until: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let until = parse_until(&args.until, ctx.now)?;
    let agent = match &args.of {
        Some(a) => slug("agent", a, AgentId::new)?,
        None => match ctx.actor()?.agent() {
            Some(a) => a.clone(),
            None => {
                return Err(Refusal::usage(
                    Code::AgentsOnly,
                    "no agent is acting, so there is nobody to park",
                )
                .with_hint("an agent passes --agent ID (or sets LOOPX_AGENT); a human names the agent with --of AGENT")
                .into());
            }
        },
    };
    let mut goal = None;
    let done = tx::start(ctx)?.run(|state| {
        let g = pick_goal(ctx, state, args.goal.as_deref())?;
        goal = Some(g.clone());
        Ok(tx::op(
            ctx,
            Change::QuotaPark(QuotaPark {
                agent: agent.clone(),
                goal: g,
                until,
                reason: args.reason.clone(),
            }),
        )?)
    })?;
    let goal = goal.expect("the op was built");
    ctx.out.emit(
        &Wire {
            agent: &agent,
            goal: &goal,
            until,
            reason: args.reason.as_deref().map(str::trim),
            tick: TickWire::of(&done),
        },
        || format!("Parked {agent} until {until}: should-run answers wait-until till then."),
    )?;
    Ok(Exit::Ok)
}

/// A time, or a duration from `now` (the one time parser, [`When`]).
fn parse_until(s: &str, now: Timestamp) -> Result<Timestamp, Refusal> {
    s.parse::<When>().map(|w| w.on_from(now)).map_err(|_| {
        Refusal::usage(
            Code::BadTime,
            format!("--until {s:?} is neither a time nor a duration"),
        )
        .with_hint(format!(
            "write {}; a duration counts from now",
            crate::time::WHEN_FORMS
        ))
    })
}

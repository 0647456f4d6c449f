//! `loopx init`: create the state ref with its first tick.

use anyhow::Result;
use serde::Serialize;

use super::{TickWire, slug};
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::GoalId;
use crate::op::{Change, Init};

/// Create the loopx state in this repository
///
/// Writes the first tick on refs/loopx/state (or git config loopx.ref). On a
/// repository that already has a state, it refuses and changes nothing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also add a first goal with this id
    #[arg(long, value_name = "ID", requires = "objective")]
    goal: Option<String>,
    /// The first goal's objective
    #[arg(long, value_name = "TEXT", requires = "goal")]
    objective: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(rename = "ref")]
    state_ref: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<&'a GoalId>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let goal = args
        .goal
        .as_deref()
        .map(|g| slug("goal", g, GoalId::new))
        .transpose()?;
    let op = tx::op(
        ctx,
        Change::Init(Init {
            goal: goal.clone(),
            objective: args.objective.clone(),
        }),
    )?;
    let done = tx::init(ctx, op)?;
    let wire = Wire {
        state_ref: ctx.state_ref(),
        goal: goal.as_ref(),
        tick: TickWire::of(&done),
    };
    let state_ref = ctx.state_ref();
    ctx.out.emit(&wire, || {
        let mut s = format!("Initialized loopx state on {state_ref}.");
        if let Some(g) = &goal {
            s.push_str(&format!("\nGoal {g} is active."));
        } else {
            s.push_str("\nNext: add a goal with `loopx goal add ID --objective TEXT`.");
        }
        s
    })?;
    Ok(Exit::Ok)
}

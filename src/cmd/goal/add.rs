//! `loopx goal add`: a human adds a goal.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::GoalId;
use crate::op::{Change, GoalAdd};

/// Add a goal (humans only)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The goal's id: lowercase letters, digits, '.', '_' and '-'
    id: String,
    /// What the goal is for, in a sentence
    #[arg(long, value_name = "TEXT")]
    objective: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    goal: &'a GoalId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let goal = slug("goal", &args.id, GoalId::new)?;
    let done = commit_change(
        ctx,
        Change::GoalAdd(GoalAdd {
            goal: goal.clone(),
            objective: args.objective.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            goal: &goal,
            tick: TickWire::of(&done),
        },
        || format!("Added goal {goal}."),
    )?;
    Ok(Exit::Ok)
}

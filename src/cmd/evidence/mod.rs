//! `loopx evidence …`: append-only records of what was tried.

pub mod add;
pub mod list;
pub mod run;

use anyhow::Result;

use crate::cmd::pick_goal;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::git;
use crate::model::{EvidenceId, GoalId, State, TodoId, evidence::Code, id::RANDOM_HEX};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Add(add::Args),
    Run(run::Args),
    List(list::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Add(a) => add::run(ctx, a),
        Command::Run(a) => run::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
    }
}

/// The project's code right now: HEAD and whether the worktree is dirty.
pub fn code_now(ctx: &Ctx) -> Code {
    let store = ctx.store().ok();
    Code {
        head: store.and_then(|s| s.head()),
        dirty: git::is_dirty(store.and_then(|s| s.workdir())),
    }
}

/// The todo (resolved) and goal a record is for: the todo's goal, else
/// `--goal`, else the default goal.
pub fn target(
    ctx: &Ctx,
    state: &State,
    todo: Option<&str>,
    goal: Option<&str>,
) -> Result<(Option<TodoId>, GoalId), crate::error::Refusal> {
    let todo = todo.map(|t| state.resolve_todo(t)).transpose()?;
    let goal = match (&todo, goal) {
        (Some(t), None) => state.todos[t].goal.clone(),
        (_, g) => pick_goal(ctx, state, g)?,
    };
    Ok((todo, goal))
}

/// A fresh evidence id. Records are not loaded with the state, so this
/// relies on 32 random bits (or the seed) rather than a lookup.
pub fn fresh_id(ctx: &Ctx, context: &str) -> EvidenceId {
    EvidenceId::from_hex(&ctx.ids.hex(RANDOM_HEX, context.as_bytes()))
}

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

/// Records one piece of evidence in a tick: a fresh id, the code it saw, the
/// todo and goal it is for (`--todo`, `--goal`), and what was run or kept.
pub fn record(
    ctx: &Ctx,
    (todo, goal): (Option<&str>, Option<&str>),
    kind: crate::model::EvidenceKind,
    summary: &str,
    code: Code,
    run: Option<crate::model::run::CommandRun>,
    artifact: Option<crate::model::evidence::Artifact>,
) -> Result<crate::tx::Committed> {
    // The summary is the commit subject: a secret in it would reach every
    // clone's history.
    let summary = &*crate::redact::text(summary);
    let id = fresh_id(ctx, summary);
    crate::tx::commit(ctx, |state| {
        let (todo, goal) = target(ctx, state, todo, goal)?;
        Ok(crate::tx::op(
            ctx,
            crate::op::Change::EvidenceAdd {
                evidence: id.clone(),
                goal,
                todo,
                kind,
                summary: summary.to_owned(),
                code: Some(code.clone()),
                run: run.clone(),
                artifact: artifact.clone(),
            },
        )?)
    })
}

/// The record a [`record`] tick wrote.
pub fn recorded(done: &crate::tx::Committed) -> &crate::model::Evidence {
    done.effect
        .evidence
        .last()
        .expect("an evidence.add op writes one record")
}

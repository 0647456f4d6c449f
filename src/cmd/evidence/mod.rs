//! `loopx evidence …`: append-only records of what was tried.

pub mod add;
pub mod list;
pub mod run;

use anyhow::Result;

use crate::cmd::fresh_id;
use crate::cmd::pick_goal;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{GoalId, State, TodoId, evidence::Code};

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Record evidence: what was checked, reviewed or produced
    Add(add::Args),
    /// Run a command (no shell) and record it as evidence; exit 0 if it passed, 3 if not
    Run(run::Args),
    /// List evidence, newest first
    List(list::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Add(a) => add::run(ctx, a),
        Command::Run(a) => run::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
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
) -> Result<crate::cmd::tx::Committed> {
    // The summary is the commit subject: a secret in it would reach every
    // clone's history.
    let summary = &*crate::redact::text(summary);
    let id = fresh_id(ctx, summary);
    crate::cmd::tx::start(ctx)?.run(|state| {
        let (todo, goal) = target(ctx, state, todo, goal)?;
        Ok(crate::cmd::tx::op(
            ctx,
            crate::op::Change::EvidenceAdd(crate::op::EvidenceAdd {
                evidence: id.clone(),
                goal,
                todo,
                kind,
                summary: summary.to_owned(),
                code: Some(code.clone()),
                run: run.clone(),
                artifact: artifact.clone(),
            }),
        )?)
    })
}

/// The record a [`record`] tick wrote.
pub fn recorded(done: &crate::cmd::tx::Committed) -> &crate::model::Evidence {
    done.effect
        .evidence
        .last()
        .expect("an evidence.add op writes one record")
}

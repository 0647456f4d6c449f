//! `loopx goal list`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{GoalId, TodoStatus};

/// List the goals
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a GoalId,
    status: &'static str,
    objective: &'a str,
    open_todos: usize,
}

#[derive(Serialize)]
struct Wire<'a> {
    goals: Vec<Row<'a>>,
    /// On the shared ref of a split state: how to work a goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    split: Option<String>,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let mut snap = tx::load(ctx)?;
    // The shared ref of a split state lists every goal ref's goals, and
    // says how to work one.
    let split = crate::cmd::split_refs(ctx, &snap.state);
    if split.is_some() {
        snap.state = tx::goalref::union(ctx.store()?, snap.state)?;
    }
    let rows: Vec<Row> = snap
        .state
        .goals
        .values()
        .map(|g| Row {
            id: &g.id,
            status: g.status.as_str(),
            objective: &g.objective,
            open_todos: snap
                .state
                .todos
                .values()
                .filter(|t| t.goal == g.id && t.status != TodoStatus::Done)
                .count(),
        })
        .collect();
    let wire = Wire {
        goals: rows,
        split: split.as_deref().map(crate::cmd::split_fix),
    };
    ctx.out.emit(&wire, || {
        if wire.goals.is_empty() {
            return "No goals yet. Add one with `loopx goal add ID --objective TEXT`.".to_owned();
        }
        let note = wire
            .split
            .as_ref()
            .map(|s| format!("\n{s}"))
            .unwrap_or_default();
        let w = wire
            .goals
            .iter()
            .map(|r| r.id.as_str().len())
            .max()
            .unwrap_or(0);
        wire.goals
            .iter()
            .map(|r| {
                format!(
                    "{:w$}  {:6}  {:>3} open  {}",
                    r.id.as_str(),
                    r.status,
                    r.open_todos,
                    r.objective
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
            + &note
    })?;
    Ok(Exit::Ok)
}

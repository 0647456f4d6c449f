//! `loopx todo archive`: move done todos out of the live set.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, pick_goal};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{TodoId, TodoStatus};
use crate::op::{Change, TodoArchive};

/// Move done todos to the archive, keeping the live state small
///
/// Archived todos stay in the tree under archive/ and in the history;
/// `todo list --all` and `todo show` still find them.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this goal's done todos
    #[arg(long, value_name = "G")]
    goal: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    archived: &'a [TodoId],
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::start(ctx)?.run(|state| {
        let goal = match &args.goal {
            Some(g) => Some(pick_goal(ctx, state, Some(g))?),
            None => None,
        };
        let todos: Vec<TodoId> = state
            .todos
            .values()
            .filter(|t| t.status == TodoStatus::Done && goal.as_ref().is_none_or(|g| &t.goal == g))
            .map(|t| t.id.clone())
            .collect();
        if todos.is_empty() {
            return Err(Refusal::rule(
                Code::NothingToArchive,
                "there are no done todos to archive",
            )
            .with_hint("only done todos move to the archive; `loopx todo list --all` shows them")
            .into());
        }
        Ok(tx::op(ctx, Change::TodoArchive(TodoArchive { todos }))?)
    })?;
    let todos: Vec<_> = done.effect.archived.keys().cloned().collect();
    let todos = &todos;
    ctx.out.emit(
        &Wire {
            archived: todos,
            tick: TickWire::of(&done),
        },
        || {
            format!(
                "Archived {} done todo{}.",
                todos.len(),
                if todos.len() == 1 { "" } else { "s" }
            )
        },
    )?;
    Ok(Exit::Ok)
}

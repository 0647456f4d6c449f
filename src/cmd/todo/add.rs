//! `loopx todo add`: prints the new id.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, pick_goal};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Priority, TodoId, id::RANDOM_HEX};
use crate::op::Change;
use crate::tx;

/// Add a todo and print its id
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to do, in a line
    title: String,
    /// The goal it serves [default: the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// P0 (most urgent) to P4
    #[arg(long, value_name = "P", default_value = "P2")]
    priority: Priority,
    /// A todo that must be done first (can be repeated)
    #[arg(long, value_name = "ID")]
    after: Vec<String>,
    /// A capability an agent needs to take it (can be repeated)
    #[arg(long, value_name = "C")]
    capability: Vec<String>,
    /// A path (glob) the work will write (can be repeated)
    #[arg(long, value_name = "PATH")]
    scope: Vec<String>,
    /// A first note
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: &'a TodoId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let goal = pick_goal(ctx, state, args.goal.as_deref())?;
        let after = args
            .after
            .iter()
            .map(|a| state.resolve_todo(a))
            .collect::<Result<Vec<_>, _>>()?;
        // A fresh id that no todo has, drawn again on the rare collision.
        let todo = loop {
            let id = TodoId::from_hex(&ctx.ids.hex(RANDOM_HEX));
            if !state.todos.contains_key(&id) {
                break id;
            }
        };
        Ok(ctx.op(Change::TodoAdd {
            todo,
            goal,
            title: args.title.clone(),
            priority: args.priority,
            after,
            capabilities: args.capability.clone(),
            scope: args.scope.clone(),
            note: args.note.clone(),
        })?)
    })?;
    let id = done.op.change.todo().expect("a todo.add names its todo");
    ctx.out.emit(
        &Wire {
            todo: id,
            tick: TickWire::of(&done),
        },
        || id.to_string(),
    )?;
    ctx.out
        .status(&format!("Added {id} \"{}\".", args.title.trim()));
    Ok(Exit::Ok)
}

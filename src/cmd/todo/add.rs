//! `loopx todo add`: prints the new id.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, pick_goal};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Priority, TodoId, Validation, id::RANDOM_HEX};
use crate::op::{Change, TodoAdd};
use crate::time::Span;

/// Add a todo and print its id
///
/// A command after `--` becomes the todo's validation: `todo done` runs it
/// (no shell, in the repository root) and completes the todo only if it
/// passes.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx todo add 'Write the parser' --priority P1
  loopx todo add 'Fix the build' -- cargo test --locked
  loopx todo add 'Ship the docs' --goal docs --after t-3fa9c2d1")]
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
    /// How long the validation may run
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    validate_timeout: Span,
    /// The validation command and its arguments
    #[arg(last = true, value_name = "CMD")]
    validate: Vec<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: &'a TodoId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let validate = (!args.validate.is_empty()).then(|| Validation {
        argv: args.validate.clone(),
        timeout: args.validate_timeout,
    });
    let done = tx::start(ctx)?.run(|state| {
        let goal = pick_goal(ctx, state, args.goal.as_deref())?;
        let after = args
            .after
            .iter()
            .map(|a| state.resolve_todo(a))
            .collect::<Result<Vec<_>, _>>()?;
        // A fresh id that no todo has, drawn again on the rare collision.
        let todo = loop {
            let context = format!("{}\n{}", args.title, state.todos.len());
            let id = TodoId::from_hex(&ctx.ids.hex(RANDOM_HEX, context.as_bytes()));
            if !state.todos.contains_key(&id) {
                break id;
            }
        };
        Ok(tx::op(
            ctx,
            Change::TodoAdd(TodoAdd {
                todo,
                goal,
                title: args.title.clone(),
                priority: args.priority,
                after,
                capabilities: args.capability.clone(),
                scope: args.scope.clone(),
                note: args.note.clone(),
                validate: validate.clone(),
            }),
        )?)
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

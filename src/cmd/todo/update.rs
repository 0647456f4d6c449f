//! `loopx todo update`: a note or a status change by the owner.

use anyhow::Result;

use super::{report, tick_on};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::TodoStatus;
use crate::op::{Change, TodoUpdate};

/// Add a note to a todo or change its status
///
/// Only the owner writes a claimed todo. Setting open, blocked or deferred
/// gives the claim up.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// open, blocked or deferred
    #[arg(long, value_name = "S")]
    status: Option<TodoStatus>,
    /// What happened, for the next one to read
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    if args.status.is_none() && args.note.is_none() {
        return Err(Refusal::usage(
            Code::NothingToUpdate,
            "todo update needs --status or --note",
        )
        .into());
    }
    if let Some(s @ (TodoStatus::Claimed | TodoStatus::Done)) = args.status {
        let cmd = if s == TodoStatus::Done {
            "todo done"
        } else {
            "todo claim"
        };
        return Err(Refusal::usage(
            Code::BadStatus,
            format!("--status {s} is set by `loopx {cmd}`, not by update"),
        )
        .into());
    }
    let done = tick_on(ctx, &args.held, |_, todo, epoch| {
        Change::TodoUpdate(TodoUpdate {
            todo,
            epoch,
            status: args.status,
            note: args.note.clone(),
        })
    })?;
    report(ctx, &done, |t| {
        format!("Updated {} \"{}\" ({}).", t.id, t.title, t.status)
    })
}

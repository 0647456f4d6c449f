//! `loopx todo edit`: change a todo's title, priority, dependencies or
//! validation.

use anyhow::Result;

use super::report;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Priority, Validation};
use crate::op::{Change, TodoEdit};
use crate::time::Span;

/// Change a todo's title, priority, `after` list or validation, or add a note
///
/// Only the owner edits a claimed todo. --after replaces the whole list. A
/// command after `--` replaces the validation, which voids any earlier
/// `todo trust` of it.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// A new title
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
    /// A new priority, P0 to P4
    #[arg(long, value_name = "P")]
    priority: Option<Priority>,
    /// A todo that must be done first; replaces the list (can be repeated)
    #[arg(long, value_name = "ID", conflicts_with = "no_after")]
    after: Vec<String>,
    /// Wait for nothing
    #[arg(long)]
    no_after: bool,
    /// A note
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// How long a new validation may run
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    validate_timeout: Span,
    /// A new validation command and its arguments
    #[arg(last = true, value_name = "CMD")]
    validate: Vec<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::start(ctx)?.run(|state| {
        let todo = state.resolve_todo(&args.held.id)?;
        let epoch = args.held.epoch_in(state, &todo);
        let after = if args.no_after {
            Some(Vec::new())
        } else if args.after.is_empty() {
            None
        } else {
            Some(
                args.after
                    .iter()
                    .map(|a| state.resolve_todo(a))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        Ok(tx::op(
            ctx,
            Change::TodoEdit(TodoEdit {
                todo,
                epoch,
                title: args.title.clone(),
                priority: args.priority,
                after,
                note: args.note.clone(),
                validate: (!args.validate.is_empty()).then(|| Validation {
                    argv: args.validate.clone(),
                    timeout: args.validate_timeout,
                }),
            }),
        )?)
    })?;
    report(ctx, &done, |t| format!("Edited {} \"{}\".", t.id, t.title))
}

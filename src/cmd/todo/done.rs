//! `loopx todo done`: run the todo's validation once, then mark it complete.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::run::CommandRun;
use crate::op::Change;
use crate::tx;

/// Mark a todo done (its owner, or anyone if it is unclaimed)
///
/// If the todo has a validation command, it runs first (once, before the
/// tick); if it fails, nothing is marked done and this exits 3.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
    /// What was done, for the record
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    validation: Option<&'a CommandRun>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    // The validation runs once, before the tick; retries reuse its result.
    let snap = tx::load(ctx)?;
    let id = snap.state.resolve_todo(&args.id)?;
    let validation = snap.state.todos[&id].validate.as_ref().map(|v| {
        ctx.out
            .status(&format!("Validating {id}: {}", v.argv.join(" ")));
        ctx.run_command(&v.argv, ctx.store.root(), v.timeout)
    });
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(id.as_str())?;
        let epoch = state.todos[&todo].epoch;
        Ok(ctx.op(Change::TodoDone {
            todo,
            epoch,
            note: args.note.clone(),
            validation: validation.clone(),
        })?)
    })?;
    let t = &done.state.todos[&id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            validation: validation.as_ref(),
            tick: TickWire::of(&done),
        },
        || match &validation {
            Some(v) => format!(
                "Done {id} \"{}\" (validation passed in {} ms).",
                t.title, v.duration_ms
            ),
            None => format!("Done {id} \"{}\".", t.title),
        },
    )?;
    Ok(Exit::Ok)
}

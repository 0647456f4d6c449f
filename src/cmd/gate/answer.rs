//! `loopx gate answer`: close a gate with one of its options.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::Change;
use crate::tx;

/// Answer a gate with one of its options
///
/// permission, publish, production and spend gates take only a human's
/// answer; an agent is refused (exit 3) whatever flags it passes. The answer
/// records who (git identity), when, and the note.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The gate's id or a unique prefix
    id: String,
    /// One of the gate's options
    #[arg(long, value_name = "CHOICE")]
    choice: String,
    /// Why, for the record and for the agents waiting on it
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let gate = state.resolve_gate(&args.id)?;
        Ok(tx::op(
            ctx,
            Change::GateAnswer {
                gate,
                choice: args.choice.clone(),
                note: args.note.clone(),
            },
        )?)
    })?;
    super::emit(ctx, &done, |g| {
        format!(
            "Answered {}: {}. \"{}\"",
            g.id,
            g.answer.as_ref().map_or("", |a| a.choice.as_str()),
            g.question
        )
    })?;
    Ok(Exit::Ok)
}

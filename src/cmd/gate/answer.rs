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
    /// One of the gate's options: `loopx gate answer G approve`
    #[arg(
        value_name = "CHOICE",
        required_unless_present = "choice_flag",
        conflicts_with = "choice_flag"
    )]
    choice: Option<String>,
    /// The same, as a flag
    #[arg(long = "choice", value_name = "CHOICE")]
    choice_flag: Option<String>,
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
                choice: args
                    .choice
                    .clone()
                    .or_else(|| args.choice_flag.clone())
                    .expect("clap requires one of them"),
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

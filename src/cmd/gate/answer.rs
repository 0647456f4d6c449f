//! `loopx gate answer`: close a gate with one of its options.

use anyhow::Result;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::op::{Change, GateAnswer};

/// Answer a gate with one of its options
///
/// permission, publish, production and spend gates take only a human's
/// answer; an agent is refused (exit 3) whatever flags it passes. The answer
/// records who (git identity), when, and the note.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx gate answer g-3e91514f --choice approve
  loopx gate answer g-3e91514f reject --note 'not before Friday'
  loopx gate list                       the open gates and their options")]
pub struct Args {
    /// The gate's id or a unique prefix
    id: String,
    /// One of the gate's options: `loopx gate answer G approve`. A budget's
    /// spend gate also takes `raised` once its budget was raised past the
    /// spend (`loopx goal set G --budget-usd N` answers it so by itself)
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
    let choice = args
        .choice
        .clone()
        .or_else(|| args.choice_flag.clone())
        .expect("clap requires one of them");
    // A held validation's gate: `run` is the signed trust of the exact
    // validation it asks about, recorded with the answer.
    let snap = tx::load(ctx)?;
    if let Ok(gate) = snap.state.resolve_gate(&args.id)
        && snap.state.gates[&gate].is_open()
        && choice == crate::cmd::todo::trust::RUN
        && let Some((todo, current)) = crate::cmd::todo::trust::held_by(&snap.state, &gate)
    {
        if !current {
            return Err(Refusal::conflict(
                Code::ValidationChanged,
                format!("{gate} asked about an earlier validation of {todo}, which has changed since: nothing was trusted"),
            )
            .with_hint(format!(
                "look at the new one with `loopx todo show {todo}`; withdraw this gate with `loopx gate withdraw {gate}` (the next `todo done` asks again)"
            ))
            .into());
        }
        return crate::cmd::todo::trust::answer_run(ctx, &todo, args.note.as_deref());
    }
    let done = tx::start(ctx)?.run(|state| {
        let gate = state.resolve_gate(&args.id)?;
        Ok(tx::op(
            ctx,
            Change::GateAnswer(GateAnswer {
                gate,
                choice: choice.clone(),
                note: args.note.clone(),
            }),
        )?)
    })?;
    // The agents waiting on it may be on other machines.
    if crate::cmd::syncs(ctx, false, false)? {
        crate::cmd::push_after(ctx, &done.op.id, |r| {
            Refusal::conflict(
                r.code,
                format!("the hub's state rejected this answer: {}", r.reason),
            )
        })?;
    }
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

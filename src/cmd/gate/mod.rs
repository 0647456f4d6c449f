//! `loopx gate …`: concrete questions that block one scope until answered.

pub mod answer;
pub mod list;
pub mod open;
pub mod show;
pub mod withdraw;

pub use super::wire::GateRef;
use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Open a gate: a question that blocks a scope until it is answered; prints its id
    Open(open::Args),
    /// Answer a gate with one of its options
    Answer(answer::Args),
    /// Withdraw a gate that is no longer needed; its scope is unblocked
    Withdraw(withdraw::Args),
    /// List gates: open ones waiting on a human first
    List(list::Args),
    /// Show one gate with its answer
    Show(show::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Open(a) => open::run(ctx, a),
        Command::Answer(a) => answer::run(ctx, a),
        Command::Withdraw(a) => withdraw::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Show(a) => show::run(ctx, a),
    }
}

/// What a command that opened, answered or withdrew a gate prints: the
/// gate and the tick as JSON, or `human` of the gate. Returns the gate.
pub fn emit<'d>(
    ctx: &Ctx,
    done: &'d crate::cmd::tx::Committed,
    human: impl FnOnce(&crate::model::Gate) -> String,
) -> Result<&'d crate::model::Gate> {
    #[derive(Serialize)]
    struct Wire<'a> {
        gate: GateRef<'a>,
        /// The op's signature, when it was signed (docs/gates.md).
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<crate::trust::SignatureWire>,
        #[serde(flatten)]
        tick: crate::cmd::TickWire,
    }
    let id = done.effect.what.gate().expect("a gate op names its gate");
    let g = &done.state.gates[id];
    let signature = match &done.op.signature {
        Some(sig) => Some(crate::trust::SignatureWire::of(
            Some(sig),
            &crate::trust::AllowedSigners::load(ctx.repo()?)?,
        )),
        None => None,
    };
    let signed = signature.as_ref().map(|s| s.text.clone());
    ctx.out.emit(
        &Wire {
            gate: GateRef::of(g),
            signature,
            tick: crate::cmd::TickWire::of(done),
        },
        || match signed {
            // "… Signed by ada (SHA256:…)."
            Some(text) => format!("{} S{}.", human(g), text.trim_start_matches('s')),
            None => human(g),
        },
    )?;
    Ok(g)
}

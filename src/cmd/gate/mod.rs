//! `loopx gate …`: concrete questions that block one scope until answered.

pub mod answer;
pub mod list;
pub mod open;
pub mod show;
pub mod withdraw;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Gate, GateId, GoalId};
use crate::time::Timestamp;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Open(open::Args),
    Answer(answer::Args),
    Withdraw(withdraw::Args),
    List(list::Args),
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

/// A gate as lists and tick commands report it.
#[derive(Serialize)]
pub struct GateRef<'a> {
    pub id: &'a GateId,
    pub goal: &'a GoalId,
    pub kind: &'static str,
    pub human_only: bool,
    pub blocks: String,
    pub status: &'static str,
    pub question: &'a str,
    pub options: &'a [String],
    pub opened_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<&'a str>,
}

impl<'a> GateRef<'a> {
    pub fn of(g: &'a Gate) -> Self {
        GateRef {
            id: &g.id,
            goal: &g.goal,
            kind: g.kind.as_str(),
            human_only: g.kind.human_only(),
            blocks: g.blocks.to_string(),
            status: g.status.as_str(),
            question: &g.question,
            options: &g.options,
            opened_at: g.opened_at,
            choice: g.answer.as_ref().map(|a| a.choice.as_str()),
        }
    }

    /// One line: `g-1a2b3c4d  permission on goal  "May I push?"  (approve | reject)`.
    pub fn line(&self) -> String {
        let tail = match self.choice {
            Some(c) => format!("answered {c}"),
            None if self.status == "withdrawn" => "withdrawn".to_owned(),
            None => self.options.join(" | "),
        };
        // One line, whatever an older tick let the question hold.
        format!(
            "{}  {} on {}  \"{}\"  ({})",
            self.id,
            self.kind,
            self.blocks,
            crate::term::line(self.question),
            crate::term::line(&tail)
        )
    }
}

/// What a command that opened, answered or withdrew a gate prints: the
/// gate and the tick as JSON, or `human` of the gate. Returns the gate.
pub fn emit<'d>(
    ctx: &Ctx,
    done: &'d crate::tx::Committed,
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

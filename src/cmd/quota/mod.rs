//! `loopx quota …`: whether to run a turn, the slots turns spend, and
//! parking until a runtime's window resets.

pub mod park;
pub mod resume;
pub mod should_run;
pub mod spend_slot;
pub mod status;
pub mod void_slot;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::quota::TurnToken;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    ShouldRun(should_run::Args),
    SpendSlot(spend_slot::Args),
    VoidSlot(void_slot::Args),
    Status(status::Args),
    Park(park::Args),
    Resume(resume::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::ShouldRun(a) => should_run::run(ctx, a),
        Command::SpendSlot(a) => spend_slot::run(ctx, a),
        Command::VoidSlot(a) => void_slot::run(ctx, a),
        Command::Status(a) => status::run(ctx, a),
        Command::Park(a) => park::run(ctx, a),
        Command::Resume(a) => resume::run(ctx, a),
    }
}

/// Parses `--turn TOKEN` (exit 2 when malformed).
pub fn parse_token(s: &str) -> Result<TurnToken, Refusal> {
    TurnToken::parse(s).map_err(|e| {
        Refusal::usage(
            Code::BadToken,
            format!("{e}: pass the turn_token that `loopx quota should-run` printed"),
        )
    })
}

/// The acting agent must be the token's agent.
pub fn own_token(ctx: &Ctx, token: &TurnToken) -> Result<(), Refusal> {
    let actor = ctx.actor()?;
    match actor.agent() {
        Some(a) if *a == token.agent => Ok(()),
        Some(a) => Err(Refusal::conflict(
            Code::NotYourTurn,
            format!("the turn token belongs to {}, not {a}", token.agent),
        )),
        None => Err(Refusal::rule(
            Code::AgentsOnly,
            "only a registered agent may spend a slot: claims belong to registered agents",
        )
        .with_hint("pass --agent ID (or set LOOPX_AGENT)")),
    }
}

//! `loopx quota …`: whether to run a turn, and the slots turns spend.

pub mod should_run;
pub mod spend_slot;
pub mod status;
pub mod void_slot;

use anyhow::Result;
use sha2::{Digest, Sha256};

use crate::ctx::Ctx;
use crate::error::Code;
use crate::error::{Exit, Refusal};
use crate::model::{AgentId, GoalId, quota::TurnToken};
use crate::store::Tip;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    ShouldRun(should_run::Args),
    SpendSlot(spend_slot::Args),
    VoidSlot(void_slot::Args),
    Status(status::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::ShouldRun(a) => should_run::run(ctx, a),
        Command::SpendSlot(a) => spend_slot::run(ctx, a),
        Command::VoidSlot(a) => void_slot::run(ctx, a),
        Command::Status(a) => status::run(ctx, a),
    }
}

/// A new turn token: a stable turn id from the agent, the goal, the state's
/// tip and the time, so two should-runs a tick apart differ and a repeated
/// poll of the same state at the same instant does not.
pub fn new_token(
    agent: &AgentId,
    goal: &GoalId,
    tip: &Tip,
    now: crate::time::Timestamp,
) -> TurnToken {
    let digest = Sha256::new()
        .chain_update(agent.as_str())
        .chain_update([0])
        .chain_update(goal.as_str())
        .chain_update([0])
        .chain_update(tip.commit.to_string())
        .chain_update(now.unix().to_le_bytes())
        .finalize();
    TurnToken {
        goal: goal.clone(),
        agent: agent.clone(),
        turn: digest[..8].iter().map(|b| format!("{b:02x}")).collect(),
        issued: now,
    }
}

/// Parses `--turn TOKEN` (exit 2 when malformed).
pub fn parse_token(s: &str) -> Result<TurnToken, Refusal> {
    TurnToken::parse(s).map_err(|e| Refusal::usage(Code::BadToken, e))
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

//! `loopx quota void-slot`: a human's correction of a spend.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{Change, QuotaVoid};
use crate::service::turn::parse_token;

/// Void a spent slot: it stops counting and stays recorded (humans only)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn token of the spend
    #[arg(long, value_name = "TOKEN")]
    turn: String,
    /// Why, for the record
    #[arg(long, value_name = "TEXT")]
    reason: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    agent: &'a str,
    turn: &'a str,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let token = parse_token(&args.turn)?;
    let done = commit_change(
        ctx,
        Change::QuotaVoid(QuotaVoid {
            agent: token.agent.clone(),
            turn: token.turn.clone(),
            reason: args.reason.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            agent: token.agent.as_str(),
            turn: &token.turn,
            tick: TickWire::of(&done),
        },
        || format!("Voided turn {} of {}.", token.turn, token.agent),
    )?;
    Ok(Exit::Ok)
}

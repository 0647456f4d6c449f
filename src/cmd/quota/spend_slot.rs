//! `loopx quota spend-slot`: spend one slot for a turn that wrote back.

use anyhow::Result;
use serde::Serialize;

use super::{own_token, parse_token};
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{self, Change, turn};
use crate::tx;

/// Spend one slot for the turn a token names, after a validated writeback
///
/// A writeback is a `todo update` of your claim, a `todo done` that passed
/// its validation, evidence whose command passed (or `evidence add`), or a
/// `refresh-state --outcome advanced|blocked`, at or after the turn began.
/// Without one, nothing is written and this exits 3 saying so. Spending the
/// same turn again is a no-op (exit 0).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn token `quota should-run` printed
    #[arg(long, value_name = "TOKEN")]
    turn: String,
    /// Check, and say what would happen, without writing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Serialize)]
struct Wire {
    spent: bool,
    already: bool,
    dry_run: bool,
    turn: String,
    slots_left: u32,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    tick: Option<TickWire>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let token = parse_token(&args.turn)?;
    own_token(ctx, &token)?;
    let snap = tx::load(ctx)?;
    let goal = snap.state.goal(token.goal.as_str())?.clone();
    let change = Change::QuotaSpend {
        goal: token.goal.clone(),
        turn: token.turn.clone(),
        issued: token.issued,
    };
    let left =
        |state: &crate::model::State| turn::slots(state, &token.agent, &goal, ctx.now).left();
    if let Some(s) = snap
        .state
        .quota
        .get(&token.agent)
        .and_then(|l| l.spent(&token.turn))
    {
        let wire = Wire {
            spent: false,
            already: true,
            dry_run: args.dry_run,
            turn: token.turn.clone(),
            slots_left: left(&snap.state),
            tick: None,
        };
        ctx.out.emit(&wire, || {
            format!(
                "Turn {} was already spent at {}; nothing to do.",
                token.turn, s.at
            )
        })?;
        return Ok(Exit::Ok);
    }
    if args.dry_run {
        let mut after = snap.state.clone();
        op::apply(&mut after, &tx::op(ctx, change)?)?;
        let wire = Wire {
            spent: false,
            already: false,
            dry_run: true,
            turn: token.turn.clone(),
            slots_left: left(&after),
            tick: None,
        };
        ctx.out.emit(&wire, || {
            format!(
                "Would spend a slot for turn {} ({} left after).",
                token.turn, wire.slots_left
            )
        })?;
        return Ok(Exit::Ok);
    }
    let done = tx::commit(ctx, |_| Ok(tx::op(ctx, change.clone())?))?;
    let wire = Wire {
        spent: true,
        already: false,
        dry_run: false,
        turn: token.turn.clone(),
        slots_left: left(&done.state),
        tick: Some(TickWire::of(&done)),
    };
    ctx.out.emit(&wire, || {
        format!(
            "Spent a slot for turn {}: {} left.",
            token.turn, wire.slots_left
        )
    })?;
    Ok(Exit::Ok)
}

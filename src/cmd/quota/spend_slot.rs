//! `loopx quota spend-slot`: spend one slot for a turn that wrote back.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, commit_change};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::op::{self, Change, Happened, QuotaSpend, Settle, UsageRecord, turn};
use crate::service::turn::{own_token, parse_token};

/// Spend one slot for the turn a token names, after a validated writeback
///
/// A writeback is a `todo update` of your claim, a `todo done` that passed
/// its validation, evidence whose command passed (or `evidence add`), or a
/// `refresh-state --outcome advanced|blocked`, at or after the turn began.
/// Without one, nothing is written and this exits 3 saying so. Spending the
/// same turn again is a no-op (exit 0).
///
/// With --usage (or --usage-file), the turn's usage is recorded in the same
/// tick; reporting it again for a turn already spent records only what grew
/// (each figure keeps its maximum), and nothing when nothing did.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn token `quota should-run` printed
    #[arg(long, value_name = "TOKEN")]
    turn: String,
    /// Check, and say what would happen, without writing
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    usage: crate::service::usage::UsageArgs,
}

#[derive(Serialize)]
struct Wire {
    spent: bool,
    already: bool,
    dry_run: bool,
    turn: String,
    slots_left: u32,
    /// What the report added to the turn's usage (none: nothing new).
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_added: Option<crate::model::usage::Usage>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    tick: Option<TickWire>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let token = parse_token(&args.turn)?;
    own_token(&ctx.actor()?, &token)?;
    let usage = crate::cmd::read_usage(ctx, &args.usage)?;
    let snap = tx::load(ctx)?;
    let record = usage.map(|usage| {
        Change::UsageRecord(UsageRecord {
            goal: token.goal.clone(),
            turn: token.turn.clone(),
            usage,
        })
    });
    let goal = snap.state.goal(token.goal.as_str())?.clone();
    let change = Change::QuotaSpend(QuotaSpend {
        goal: token.goal.clone(),
        turn: token.turn.clone(),
        issued: token.issued,
    });
    let left =
        |state: &crate::model::State| turn::slots(state, &token.agent, &goal, ctx.now).left();
    let already = snap
        .state
        .quota
        .get(&token.agent)
        .and_then(|l| l.spent(&token.turn))
        .cloned();
    // The change to write: the spend, with the usage in the same tick; for
    // a turn already spent, the usage alone.
    let change = match (&already, record) {
        (Some(_), Some(r)) => Some(r),
        (Some(_), None) => None,
        (None, Some(r)) => Some(Change::Settle(Settle {
            turn: token.turn.clone(),
            steps: vec![r, change],
        })),
        (None, None) => Some(change),
    };
    if let (Some(s), Some(change)) = (&already, &change) {
        let mut after = snap.state.clone();
        let effect = op::apply(&mut after, &tx::op(ctx, change.clone())?)?;
        let added = usage_added(&effect.what);
        let done = match (&added, args.dry_run) {
            (Some(_), false) => Some(commit_change(ctx, change.clone())?),
            _ => None,
        };
        let wire = Wire {
            spent: false,
            already: true,
            dry_run: args.dry_run,
            turn: token.turn.clone(),
            slots_left: left(&snap.state),
            usage_added: added.clone(),
            tick: done.as_ref().map(TickWire::of),
        };
        ctx.out.emit(&wire, || match &added {
            Some(u) => format!(
                "Turn {} was already spent at {}; {} its usage: {}.",
                token.turn,
                s.at,
                if args.dry_run {
                    "would add to"
                } else {
                    "added to"
                },
                crate::op::usage::describe(u)
            ),
            None => format!(
                "Turn {} was already spent at {} and its usage is already recorded; nothing to do.",
                token.turn, s.at
            ),
        })?;
        return Ok(Exit::Ok);
    }
    let Some(change) = change else {
        let s = already.expect("no change only for a spent turn");
        let wire = Wire {
            spent: false,
            already: true,
            dry_run: args.dry_run,
            turn: token.turn.clone(),
            slots_left: left(&snap.state),
            usage_added: None,
            tick: None,
        };
        ctx.out.emit(&wire, || {
            format!(
                "Turn {} was already spent at {}; nothing to do.",
                token.turn, s.at
            )
        })?;
        return Ok(Exit::Ok);
    };
    if args.dry_run {
        let mut after = snap.state.clone();
        let effect = op::apply(&mut after, &tx::op(ctx, change)?)?;
        let wire = Wire {
            spent: false,
            already: false,
            dry_run: true,
            turn: token.turn.clone(),
            slots_left: left(&after),
            usage_added: usage_added(&effect.what),
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
    let done = commit_change(ctx, change.clone())?;
    let wire = Wire {
        spent: true,
        already: false,
        dry_run: false,
        turn: token.turn.clone(),
        slots_left: left(&done.state),
        usage_added: usage_added(&done.effect.what),
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

/// What a `usage.record` (alone or inside the spend's settle) added.
fn usage_added(what: &Happened) -> Option<crate::model::usage::Usage> {
    match what {
        Happened::UsageRecorded { added, .. } => added.clone(),
        Happened::Settled { steps, .. } => steps.iter().find_map(usage_added),
        _ => None,
    }
}

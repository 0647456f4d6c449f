//! `loopx settings set`: the team's shared settings, one human act.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::TeamPrice;
use crate::op::{Change, SettingsSet};
use crate::time::Span;

/// Set the team's default lease, clock-skew margin, stuck time, agent-wide slots or model prices (a human act)
///
/// Shared by every clone through the state, so two clones give the same
/// lease, call the same claims stuck and price a turn alike. A goal's own
/// lease (`loopx goal set G --lease D`) comes before the team's, and
/// `todo claim --ttl` before both. A team price comes before git config's
/// `loopx.price.<model>.*` and the shipped table. Where signatures are
/// required, the act is signed like every other human act.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx settings set --lease 30m
  loopx settings set --clock-skew 2m
  loopx settings set --stuck-after 15m
  loopx settings set --agent-slots 48 --agent-window 24h
  loopx settings set --price claude-opus-5-5=5/25 --price gpt-5.2=1.75/14/0.175
  loopx settings set --unprice gpt-5.2")]
pub struct Args {
    /// The lease `todo claim` gives when no --ttl is passed (e.g. 30m, 2h)
    #[arg(long, value_name = "DURATION")]
    lease: Option<Span>,
    /// How far clocks may disagree before a lease counts as expired or a
    /// tick as from the future (at most 1h)
    #[arg(long, value_name = "DURATION")]
    clock_skew: Option<Span>,
    /// How long a claim's holder may go without a tick (a turn, an update,
    /// a renew) before `status`, the page and `digest` show the claim stuck
    /// [default: half the lease; 0s goes back to it]
    #[arg(long, value_name = "DURATION")]
    stuck_after: Option<Span>,
    /// A model's price in dollars per million tokens:
    /// MODEL=INPUT/OUTPUT[/CACHED_INPUT] (repeatable)
    #[arg(long, value_name = "MODEL=IN/OUT[/CACHED]")]
    price: Vec<String>,
    /// Remove the team's price for MODEL (repeatable)
    #[arg(long, value_name = "MODEL")]
    unprice: Vec<String>,
    /// Turns one agent may spend per agent-wide window across every goal it
    /// works on, beside each goal's own slots [default: the largest of its
    /// goals' slots; 0 goes back to it]
    #[arg(long, value_name = "N")]
    agent_slots: Option<u32>,
    /// The agent-wide rolling window, such as 24h [default: the largest of
    /// its goals' windows]
    #[arg(long, value_name = "DURATION")]
    agent_window: Option<Span>,
}

#[derive(Serialize)]
struct Wire {
    changed: Vec<String>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let mut prices = BTreeMap::new();
    for p in &args.price {
        let (model, price) = parse_price(p)?;
        prices.insert(model, price);
    }
    let change = SettingsSet {
        lease: args.lease,
        clock_skew: args.clock_skew,
        stuck_after: args.stuck_after,
        prices,
        unprice: args.unprice.clone(),
        agent_slots: args.agent_slots,
        agent_window: args.agent_window,
    };
    let done = tx::start(ctx)?.run(|_| Ok(tx::op(ctx, Change::SettingsSet(change.clone()))?))?;
    let changed = match &done.effect.what {
        crate::op::Happened::SettingsSet { changed } => changed.clone(),
        _ => Vec::new(),
    };
    ctx.out.emit(
        &Wire {
            changed: changed.clone(),
            tick: TickWire::of(&done),
        },
        || format!("Set the team's {}.", changed.join(", ")),
    )?;
    Ok(Exit::Ok)
}

/// `MODEL=INPUT/OUTPUT[/CACHED_INPUT]`, dollars per million tokens.
fn parse_price(s: &str) -> Result<(String, TeamPrice), Refusal> {
    let bad = || {
        Refusal::usage(
            Code::BadPrice,
            format!("--price {s:?}: expected MODEL=INPUT/OUTPUT[/CACHED_INPUT], dollars per million tokens"),
        )
        .with_hint("for example --price claude-opus-5-5=5/25/0.5")
    };
    let (model, rates) = s.split_once('=').ok_or_else(bad)?;
    let rates: Vec<f64> = rates
        .split('/')
        .map(|r| r.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (input, output, cached_input) = match rates[..] {
        [i, o] => (i, o, None),
        [i, o, c] => (i, o, Some(c)),
        _ => return Err(bad()),
    };
    Ok((
        model.trim().to_owned(),
        TeamPrice {
            input,
            output,
            cached_input,
        },
    ))
}

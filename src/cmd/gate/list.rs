//! `loopx gate list`.

use anyhow::Result;
use serde::Serialize;

use super::GateRef;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Gate;

/// List gates: open ones waiting on a human first
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only open gates
    #[arg(long)]
    open: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    gates: Vec<GateRef<'a>>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let mut gates: Vec<&Gate> = snap
        .state
        .gates
        .values()
        .filter(|g| !args.open || g.is_open())
        .collect();
    // Open before closed; human-only before decisions; oldest first.
    gates.sort_by_key(|g| {
        (
            !g.is_open(),
            !g.kind.human_only(),
            g.opened_at,
            g.id.clone(),
        )
    });
    let wire = Wire {
        gates: gates.iter().map(|g| GateRef::of(g)).collect(),
    };
    ctx.out.emit(&wire, || {
        if wire.gates.is_empty() {
            return "No gates.".to_owned();
        }
        wire.gates
            .iter()
            .map(GateRef::line)
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(Exit::Ok)
}

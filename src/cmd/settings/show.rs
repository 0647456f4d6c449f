//! `loopx settings show`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use std::collections::BTreeMap;

use crate::model::TeamPrice;
use crate::time::Span;

/// Show the team's settings and where each price comes from
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Wire<'a> {
    lease: Span,
    clock_skew: Span,
    /// The team's `stuck_after`; absent when it is half the lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    stuck_after: Option<Span>,
    /// The signing policy: `off`, `humans` or `all`.
    signatures: &'static str,
    /// The team's prices by model (dollars per million tokens).
    prices: &'a BTreeMap<String, TeamPrice>,
    /// The agent-wide slot window; absent when it is the largest of each
    /// agent's goals'.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_quota: Option<crate::model::QuotaPolicy>,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let s = &snap.state.meta.settings;
    let wire = Wire {
        lease: s.lease,
        clock_skew: s.clock_skew,
        stuck_after: s.stuck_after,
        signatures: s.signatures.as_str(),
        prices: &s.prices,
        agent_quota: s.agent_quota,
    };
    ctx.out.emit(&wire, || {
        let stuck = match s.stuck_after {
            Some(d) => d.to_string(),
            None => "half the lease".to_owned(),
        };
        let mut out = format!(
            "lease: {}\nclock skew: {}\nstuck after: {stuck}\nsignatures: {}",
            s.lease,
            s.clock_skew,
            s.signatures.as_str()
        );
        match s.agent_quota {
            Some(q) => out.push_str(&format!(
                "\nagent-wide slots: {} per {} across every goal",
                q.slots, q.window
            )),
            None => out.push_str("\nagent-wide slots: the largest of each agent's goals'"),
        }
        if s.prices.is_empty() {
            out.push_str("\nprices: none set by the team (git config `loopx.price.<model>.*`, then the shipped table)");
        }
        for (model, p) in &s.prices {
            out.push_str(&format!(
                "\nprice of {model}: ${} in, ${} out{} per million tokens (team)",
                p.input,
                p.output,
                p.cached_input
                    .map(|c| format!(", ${c} cached in"))
                    .unwrap_or_default()
            ));
        }
        out
    })?;
    Ok(Exit::Ok)
}

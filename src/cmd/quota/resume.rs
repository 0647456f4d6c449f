//! `loopx quota resume`: a human's go for a parked agent.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::AgentId;
use crate::op::{Change, QuotaResume};

/// End an agent's park now, so it may run again (humans only)
///
/// The same go as answering `resume` on the gate an expired park opened;
/// this also ends a park whose time has not come, or one whose gate was
/// answered `stop`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The parked agent
    #[arg(value_name = "AGENT")]
    parked: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    agent: &'a AgentId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let agent = slug("agent", &args.parked, AgentId::new)?;
    let done = commit_change(
        ctx,
        Change::QuotaResume(QuotaResume {
            agent: agent.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            agent: &agent,
            tick: TickWire::of(&done),
        },
        || format!("Resumed {agent}: it may run again."),
    )?;
    Ok(Exit::Ok)
}

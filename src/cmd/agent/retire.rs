//! `loopx agent retire`: stop an agent and release what it holds.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::AgentId;
use crate::op::{AgentRetire, Change};

/// Retire an agent: it may no longer act, and its claims are released
///
/// A human retires any agent; an agent may retire only itself. Each released
/// claim gets a note saying why. `agent register` brings it back.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The agent's id
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    agent: &'a AgentId,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let agent = slug("agent", &args.id, AgentId::new)?;
    let done = commit_change(
        ctx,
        Change::AgentRetire(AgentRetire {
            agent: agent.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            agent: &agent,
            tick: TickWire::of(&done),
        },
        || {
            let what = match &done.effect.what {
                crate::op::Happened::Retired { released, .. } if !released.is_empty() => format!(
                    ", released {}",
                    released
                        .iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => String::new(),
            };
            format!("Retired agent {agent}{what}.")
        },
    )?;
    Ok(Exit::Ok)
}

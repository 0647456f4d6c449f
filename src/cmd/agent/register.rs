//! `loopx agent register`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{AgentId, AgentStatus, Runtime};
use crate::op::{AgentRegister, Change};

/// Register an agent so it may claim todos
///
/// An agent may register only itself; a human may register any agent.
/// Registering again with the same settings changes nothing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The agent's id: lowercase letters, digits, '.', '_' and '-'
    id: String,
    /// claude-code, codex, cursor, gemini, opencode, pi or custom
    #[arg(long, value_name = "RUNTIME", default_value = "custom")]
    runtime: Runtime,
    /// A capability the agent has (can be repeated)
    #[arg(long, value_name = "C")]
    capability: Vec<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    agent: &'a AgentId,
    changed: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    tick: Option<TickWire>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let agent = slug("agent", &args.id, AgentId::new)?;
    let caps = crate::op::agent::normalize(&args.capability);
    // Registering the same agent the same way again is a no-op without a
    // tick, so hooks can register at every session start.
    let snap = tx::load(ctx)?;
    if let Some(a) = snap.state.agents.get(&agent)
        && a.status == AgentStatus::Active
        && a.runtime == args.runtime
        && a.capabilities == caps
    {
        ctx.out.emit(
            &Wire {
                agent: &agent,
                changed: false,
                tick: None,
            },
            || format!("Agent {agent} is already registered."),
        )?;
        return Ok(Exit::Ok);
    }
    let done = commit_change(
        ctx,
        Change::AgentRegister(AgentRegister {
            agent: agent.clone(),
            runtime: args.runtime,
            capabilities: caps.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            agent: &agent,
            changed: true,
            tick: Some(TickWire::of(&done)),
        },
        || format!("Registered agent {agent} ({}).", args.runtime.as_str()),
    )?;
    Ok(Exit::Ok)
}

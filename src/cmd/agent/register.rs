//! `loopx agent register`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{AgentId, AgentStatus, GoalId, Runtime};
use crate::op::{AgentRegister, Change};

/// Register an agent so it may claim todos
///
/// An agent may register only itself; a human may register any agent.
/// Registering again with the same settings changes nothing. `--goal`
/// narrows the goals the agent works on (should-run, the brief, the
/// hooks and `claim --next` pick only there; without it, every active
/// goal); naming them, or `--every-goal`, is a human's act.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx agent register agent-a --runtime codex
  loopx agent register agent-a --runtime codex --goal docs --goal main
  loopx agent register agent-a --runtime codex --every-goal")]
pub struct Args {
    /// The agent's id: lowercase letters, digits, '.', '_' and '-'
    id: String,
    /// claude-code, codex, cursor, gemini, opencode, pi or custom
    #[arg(long, value_name = "RUNTIME", default_value = "custom")]
    runtime: Runtime,
    /// A capability the agent has (can be repeated)
    #[arg(long, value_name = "C")]
    capability: Vec<String>,
    /// A goal the agent may work on (can be repeated): replaces the goals
    /// it names [default: keep them; none named is every active goal]
    #[arg(long, value_name = "G")]
    goal: Vec<String>,
    /// Name no goals again: the agent works on every active goal
    #[arg(long, conflicts_with = "goal")]
    every_goal: bool,
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
    let snap = tx::load(ctx)?;
    let goals = match (args.every_goal, args.goal.is_empty()) {
        (true, _) => Some(Vec::new()),
        (false, true) => None,
        (false, false) => {
            let mut v = args
                .goal
                .iter()
                .map(|g| snap.state.goal(g).map(|g| g.id.clone()))
                .collect::<Result<Vec<GoalId>, _>>()?;
            v.sort();
            v.dedup();
            Some(v)
        }
    };
    // Registering the same agent the same way again is a no-op without a
    // tick, so hooks can register at every session start.
    if let Some(a) = snap.state.agents.get(&agent)
        && a.status == AgentStatus::Active
        && a.runtime == args.runtime
        && a.capabilities == caps
        && goals.as_ref().is_none_or(|g| &a.goals == g)
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
            goals,
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

//! Rules for `agent.register`.

use super::{Effect, Happened, Op, rules};
use crate::error::Refusal;
use crate::model::{Agent, AgentStatus, State, TodoStatus};
use crate::op::{AgentRegister, AgentRetire};

pub(super) fn register(state: &mut State, op: &Op, c: &AgentRegister) -> Result<Effect, Refusal> {
    let &AgentRegister {
        ref agent,
        runtime,
        ref capabilities,
        ref goals,
    } = c;
    let id = agent;
    let caps = normalize(capabilities);
    if let Some(goals) = goals {
        for g in goals {
            if !state.goals.contains_key(g) {
                return Err(crate::model::unknown_goal(g));
            }
        }
    }
    let goals = match goals {
        Some(g) => {
            let mut g = g.clone();
            g.sort();
            g.dedup();
            g
        }
        None => state
            .agents
            .get(id)
            .map(|a| a.goals.clone())
            .unwrap_or_default(),
    };
    let verb = match state.agents.get(id) {
        None => "register",
        Some(a) if a.status == AgentStatus::Retired => "re-register",
        Some(a) if a.runtime == runtime && a.capabilities == caps && a.goals == goals => {
            // Idempotent: two machines registering the same agent the same
            // way must both succeed, also when sync replays one onto the other.
            return Ok(Effect::new(
                Happened::Registered {
                    agent: id.clone(),
                    unchanged: true,
                },
                format!("register agent {id} (unchanged)"),
            ));
        }
        Some(_) => "re-register",
    };
    // The first registration is kept: who registered the agent, and when.
    let old = state.agents.get(id);
    let (registered_at, registered_by) = old.map_or((op.at, op.actor.clone()), |a| {
        (a.registered_at, a.registered_by.clone())
    });
    let (last_writeback, last_turn, parked, progress) = old.map_or((None, None, None, None), |a| {
        (
            a.last_writeback,
            a.last_turn.clone(),
            a.parked.clone(),
            a.progress.clone(),
        )
    });
    state.agents.insert(
        id.clone(),
        Agent {
            id: id.clone(),
            runtime,
            status: AgentStatus::Active,
            capabilities: caps,
            registered_at,
            registered_by,
            last_writeback,
            last_turn,
            parked,
            progress,
            goals: goals.clone(),
        },
    );
    let on = match goals.as_slice() {
        [] => String::new(),
        g => format!(
            " on {}",
            g.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    Ok(Effect::new(
        Happened::Registered {
            agent: id.clone(),
            unchanged: false,
        },
        format!("{verb} agent {id} ({}){on}", runtime.as_str()),
    ))
}

/// A list as stored (capabilities, scopes): trimmed, without empties,
/// sorted, deduplicated.
pub fn normalize(capabilities: &[String]) -> Vec<String> {
    let mut caps: Vec<String> = capabilities
        .iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    caps.sort();
    caps.dedup();
    caps
}

/// Retires an agent (a human, or the agent itself) and releases its claims,
/// each with a note saying why.
pub(super) fn retire(state: &mut State, op: &Op, c: &AgentRetire) -> Result<Effect, Refusal> {
    let id = &c.agent;
    rules::registered(state, id)?;
    let held: Vec<_> = state
        .todos
        .values()
        .filter(|t| t.owner() == Some(id))
        .map(|t| t.id.clone())
        .collect();
    for tid in &held {
        let t = state.todos.get_mut(tid).expect("collected above");
        t.claim = None;
        t.status = TodoStatus::Open;
        t.updated_at = op.at;
        t.add_note(op.at, &op.actor, format!("released because {id} retired"));
    }
    let a = state.agents.get_mut(id).expect("registered above");
    a.status = AgentStatus::Retired;
    let released = if held.is_empty() {
        String::new()
    } else {
        format!(
            ", released {}",
            held.iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(Effect::new(
        Happened::Retired {
            agent: id.clone(),
            released: held,
        },
        format!("retire agent {id}{released}"),
    ))
}

#[cfg(test)]
mod tests;

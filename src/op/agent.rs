//! Rules for `agent.register`.

use super::{Effect, Op};
use crate::error::Refusal;
use crate::model::{Actor, Agent, AgentId, AgentStatus, Runtime, State};

pub(super) fn register(
    state: &mut State,
    op: &Op,
    id: &AgentId,
    runtime: Runtime,
    capabilities: &[String],
) -> Result<Effect, Refusal> {
    if let Actor::Agent(me) = &op.actor
        && me != id
    {
        return Err(Refusal::rule(
            "register-self-only",
            format!("agent {me} may register only itself, not {id}"),
        )
        .with_hint("a human registers other agents"));
    }
    let mut caps: Vec<String> = capabilities
        .iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    caps.sort();
    caps.dedup();
    let verb = match state.agents.get(id) {
        None => "register",
        Some(a) if a.status == AgentStatus::Retired => "re-register",
        Some(a) if a.runtime == runtime && a.capabilities == caps => {
            // Idempotent: two machines registering the same agent the same
            // way must both succeed, also when sync replays one onto the other.
            return Ok(Effect::new(format!("register agent {id} (unchanged)")));
        }
        Some(_) => "re-register",
    };
    let registered_at = state.agents.get(id).map_or(op.at, |a| a.registered_at);
    state.agents.insert(
        id.clone(),
        Agent {
            id: id.clone(),
            runtime,
            status: AgentStatus::Active,
            capabilities: caps,
            registered_at,
            registered_by: op.actor.clone(),
        },
    );
    Ok(Effect::new(format!(
        "{verb} agent {id} ({})",
        runtime.as_str()
    )))
}

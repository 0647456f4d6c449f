//! Parking (format 3): an agent whose runtime said "limit reached, resets
//! at 9am" parks itself until then. `should-run` answers `wait-until`
//! before that time, costing nothing and writing nothing. After it, the
//! agent runs again only where its goal says `auto_resume`; otherwise it
//! waits for a human's go: its next turn-closing tick (`refresh-state`,
//! `settle`) opens a human-only `spend` gate on it, and a human answers
//! `resume` (or runs `quota resume`). No silent resume, no retry storm.

use super::{
    Effect, Happened, Op,
    rules::{self, non_empty},
};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    Agent, AgentId, Blocks, Gate, GateId, GateKind, GateStatus, Goal, GoalId, Parked, State,
};
use crate::op::{GateOpen, QuotaPark, QuotaResume};
use crate::time::{Span, Timestamp};

/// The longest park: a runtime's usage window resets within days.
pub const LONGEST: Span = Span::hours(31 * 24);

/// The gate option that lets a parked agent run again.
pub const RESUME: &str = "resume";

/// Where a parked agent stands at a moment, for one goal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not parked, or free to run again.
    Free,
    /// Parked until this time.
    Waiting {
        until: Timestamp,
        reason: Option<String>,
    },
    /// The time passed; a human's go is needed. `gate` is the gate its
    /// next tick opened, once it did.
    NeedsGo {
        until: Timestamp,
        gate: Option<GateId>,
    },
}

/// Whether `agent` may run on `goal` at `now` as far as parking goes. A
/// park the agent wrote itself (its runtime's usage limit: the
/// StopFailure hook) stops it on every goal; a human's stops it on the
/// goal it names only.
pub fn standing(state: &State, agent: &Agent, goal: &Goal, now: Timestamp) -> Standing {
    let Some(p) = &agent.parked else {
        return Standing::Free;
    };
    if !covers(p, agent, &goal.id) {
        return Standing::Free;
    }
    if now < p.until {
        return Standing::Waiting {
            until: p.until,
            reason: p.reason.clone(),
        };
    }
    if goal.auto_resume {
        return Standing::Free;
    }
    match state.gates.values().find(|g| is_park_gate(g, agent, p)) {
        None => Standing::NeedsGo {
            until: p.until,
            gate: None,
        },
        Some(g) if resumed(g) => Standing::Free,
        Some(g) => Standing::NeedsGo {
            until: p.until,
            gate: Some(g.id.clone()),
        },
    }
}

/// Whether park `p` of `agent` stops it on `goal`: a park by the agent
/// itself covers every goal, a human's (or another's) only its own goal.
pub fn covers(p: &Parked, agent: &Agent, goal: &GoalId) -> bool {
    p.by.agent() == Some(&agent.id) || &p.goal == goal
}

/// The gate an expired park opened: a spend gate on the agent, opened at
/// or after the park's end.
fn is_park_gate(g: &Gate, agent: &Agent, p: &Parked) -> bool {
    g.kind == GateKind::Spend
        && g.blocks == Blocks::Agent(agent.id.clone())
        && g.opened_at >= p.until
        && g.options.iter().any(|o| o == RESUME)
}

fn resumed(g: &Gate) -> bool {
    g.status == GateStatus::Answered && g.answer.as_ref().is_some_and(|a| a.choice == RESUME)
}

/// `quota.park`: an agent parks itself (a human may park any agent).
pub(super) fn park(state: &mut State, op: &Op, c: &QuotaPark) -> Result<Effect, Refusal> {
    let QuotaPark {
        agent,
        goal,
        until,
        reason,
    } = c;
    rules::registered(state, agent)?;
    if !state.goals.contains_key(goal) {
        return Err(crate::model::unknown_goal(goal));
    }
    if *until <= op.at {
        return Err(Refusal::usage(
            Code::BadTime,
            format!("--until {until} is not after now ({})", op.at),
        )
        .with_hint("give a time in the future, or a duration such as 2h"));
    }
    if until.since(op.at) > LONGEST {
        return Err(Refusal::usage(
            Code::BadTime,
            format!("--until {until} is more than {LONGEST} away"),
        )
        .with_hint("park for at most 31 days; pause the goal for longer"));
    }
    let reason = reason
        .as_deref()
        .map(|r| non_empty(r, "reason"))
        .transpose()?;
    let why = reason
        .as_deref()
        .map(|r| format!(": {}", super::short(r)))
        .unwrap_or_default();
    let a = state.agents.get_mut(agent).expect("registered() saw it");
    a.parked = Some(Parked {
        until: *until,
        goal: goal.clone(),
        at: op.at,
        by: op.actor.clone(),
        reason,
    });
    Ok(Effect::new(
        Happened::Parked {
            agent: agent.clone(),
            until: *until,
        },
        format!("park {agent} until {until}{why}"),
    ))
}

/// `quota.resume`: a human's go; the park ends now.
pub(super) fn resume(state: &mut State, _op: &Op, c: &QuotaResume) -> Result<Effect, Refusal> {
    let agent = &c.agent;
    let a = state.agents.get_mut(agent).ok_or_else(|| {
        Refusal::rule(
            Code::NotRegistered,
            format!("agent {agent} is not registered"),
        )
    })?;
    if a.parked.take().is_none() {
        return Err(
            Refusal::rule(Code::NotParked, format!("agent {agent} is not parked")).with_hint(
                Hint::new(
                    format!("{N} shows the agents and their parks"),
                    [Next::ListAgents],
                ),
            ),
        );
    }
    Ok(Effect::new(
        Happened::Resumed {
            agent: agent.clone(),
        },
        format!("resume {agent}"),
    ))
}

/// What a turn-closing tick (`refresh-state`, `settle`) of `agent` on
/// `goal` does to an expired park: clears it where the agent may run again
/// (the goal auto-resumes, or a human answered `resume`); where a human's
/// go is needed and no gate asks for it yet, opens a human-only `spend`
/// gate on the agent, with an id derived from the op so a replay opens the
/// same one. Returns the gate it opened.
pub(super) fn on_turn_end(state: &mut State, op: &Op, agent: &AgentId) -> Option<GateId> {
    let a = state.agents.get(agent)?;
    let p = a.parked.clone()?;
    let goal = state.goals.get(&p.goal)?;
    match standing(state, a, goal, op.at) {
        Standing::Waiting { .. } | Standing::NeedsGo { gate: Some(_), .. } => None,
        Standing::Free => {
            state.agents.get_mut(agent)?.parked = None;
            None
        }
        Standing::NeedsGo { until, gate: None } => {
            let id = GateId::derived(&op.id, "park");
            let why = p
                .reason
                .as_deref()
                .map(|r| format!(" ({})", super::short(r)))
                .unwrap_or_default();
            state.gates.insert(
                id.clone(),
                GateOpen {
                    gate: id.clone(),
                    goal: p.goal.clone(),
                    question: format!(
                        "{agent} was parked until {until}{why}; goal {} does not resume by itself: may it run again?",
                        p.goal
                    ),
                    options: vec![RESUME.to_owned(), "stop".to_owned()],
                    kind: GateKind::Spend,
                    blocks: Blocks::Agent(agent.clone()),
                }
                .open(op),
            );
            Some(id)
        }
    }
}

/// The refusal for a claim by a parked agent.
pub fn refusal(standing: &Standing, agent: &AgentId, goal: &GoalId) -> Option<Refusal> {
    match standing {
        Standing::Free => None,
        Standing::Waiting { until, .. } => Some(
            Refusal::rule(
                Code::Parked,
                format!("{agent} is parked until {until}"),
            )
            .with_hint(Hint::new(
                format!("wait until then; {N} says when to run"),
                [Next::ShouldRun],
            )),
        ),
        Standing::NeedsGo { until, .. } => Some(
            Refusal::rule(
                Code::Parked,
                format!(
                    "{agent} was parked until {until} and goal {goal} does not resume by itself: a human's go is needed"
                ),
            )
            .with_hint(Hint::new(
                format!("{N} opens a gate that asks for it"),
                [Next::RefreshState],
            )),
        ),
    }
}

#[cfg(test)]
mod tests;

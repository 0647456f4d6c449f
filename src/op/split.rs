//! `goal.split` (format 6): the one op of the migration to a ref per goal
//! (docs/scale.md, "A ref per goal"). The command `goal split` writes it once on
//! the shared ref (`goal` is None: the goals leave, the shared parts stay)
//! and once on each goal's new ref (`goal` is Some: only that goal stays),
//! every one on top of the same single-ref tick, so each ref's history
//! keeps everything before the split and `verify` replays it as any op.

use super::*;
use crate::error::Code;
use crate::model::Actor;

/// Applies `goal.split`: `loopx.toml` becomes format 6 with `goal_refs`;
/// then the shared side drops every goal, agent, todo, gate and quota
/// ledger, and a goal's side keeps its goal with its todos and gates, and
/// every agent and quota ledger (an agent's turn records are written on
/// the ref it works on from now on). Evidence and the archive stay where
/// they are on every side: they only grow, and git shares their objects.
pub(super) fn split(state: &mut State, op: &Op, goal: Option<&GoalId>) -> Result<Effect, Refusal> {
    if !matches!(op.actor, Actor::Human { .. }) {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "only a human splits a state into a ref per goal",
        ));
    }
    if state.meta.goal_refs {
        return Err(Refusal::rule(
            Code::AlreadySplit,
            "the state is already split into a ref per goal",
        ));
    }
    if let Some(g) = goal
        && !state.goals.contains_key(g)
    {
        return Err(Refusal::rule(
            Code::UnknownGoal,
            format!("there is no goal {g} to split off"),
        ));
    }
    state.meta.format = crate::model::FORMAT;
    state.meta.goal_refs = true;
    let subject = match goal {
        None => {
            state.goals.clear();
            state.agents.clear();
            state.todos.clear();
            state.gates.clear();
            state.quota.clear();
            "split the goals onto their own refs".to_owned()
        }
        Some(g) => {
            let others: Vec<GoalId> = state.goals.keys().filter(|k| *k != g).cloned().collect();
            for o in &others {
                state.goals.remove(o);
            }
            let todos: Vec<_> = state
                .todos
                .values()
                .filter(|t| &t.goal != g)
                .map(|t| t.id.clone())
                .collect();
            for t in &todos {
                state.todos.remove(t);
            }
            let gates: Vec<_> = state
                .gates
                .values()
                .filter(|x| &x.goal != g)
                .map(|x| x.id.clone())
                .collect();
            for x in &gates {
                state.gates.remove(x);
            }
            format!("split goal {g} onto its own ref")
        }
    };
    Ok(Effect {
        what: Happened::Split {
            goal: goal.cloned(),
        },
        subject,
        evidence: Vec::new(),
        archived: Default::default(),
    })
}

#[cfg(test)]
mod tests;

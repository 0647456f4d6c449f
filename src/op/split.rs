//! `goal.split` (format 6): the one op of the migration to a ref per goal
//! (docs/scale.md, "A ref per goal"). The command `goal split` writes it once on
//! the shared ref (`goal` is None: the goals leave, the shared parts stay)
//! and once on each goal's new ref (`goal` is Some: only that goal stays),
//! every one on top of the same single-ref tick, so each ref's history
//! keeps everything before the split and `verify` replays it as any op.

use super::*;
use crate::error::Code;

/// Applies `goal.split`: `loopx.toml` becomes format 6 with `goal_refs`;
/// then the shared side drops every goal, agent, todo, gate and quota
/// ledger, and a goal's side keeps its goal with its todos and gates, and
/// every agent and quota ledger (an agent's turn records are written on
/// the ref it works on from now on). Evidence and the archive stay where
/// they are on every side: they only grow, and git shares their objects.
///
/// On a goal ref of a state already split that holds more than one goal
/// (a goal added there after the split), `goal` keeps only that goal (its
/// own new ref's first tick) and `moved` drops that goal with its todos
/// and gates (the tick of the ref it leaves); agents, quota and evidence
/// stay on both, as at the first split.
pub(super) fn split(
    state: &mut State,
    _op: &Op,
    goal: Option<&GoalId>,
    moved: Option<&GoalId>,
) -> Result<Effect, Refusal> {
    match (state.meta.goal_refs, goal, moved) {
        (false, _, None) => {}
        (true, Some(g), None) | (true, None, Some(g)) => {
            if state.goals.contains_key(g) && state.goals.len() < 2 {
                return Err(Refusal::rule(
                    Code::AlreadySplit,
                    format!("goal {g} is the only goal on its ref: it has a ref of its own"),
                ));
            }
        }
        (true, None, None) => {
            return Err(Refusal::rule(
                Code::AlreadySplit,
                "the state is already split into a ref per goal",
            ));
        }
        (false, _, Some(_)) => {
            return Err(Refusal::rule(
                Code::NotSplit,
                "a goal moves off a goal ref only once the state is split",
            ));
        }
        (true, Some(_), Some(_)) => {
            return Err(Refusal::rule(
                Code::AlreadySplit,
                "a goal moves onto its own ref with one tick on each side, one goal at a time",
            ));
        }
    }
    if let Some(g) = goal.or(moved)
        && !state.goals.contains_key(g)
    {
        return Err(Refusal::rule(
            Code::UnknownGoal,
            format!("there is no goal {g} to split off"),
        ));
    }
    state.meta.format = crate::model::FORMAT;
    state.meta.goal_refs = true;
    let subject = match (goal, moved) {
        (None, Some(g)) => {
            state.goals.remove(g);
            drop_goal_parts(state, |x| x == g);
            format!("moved goal {g} onto its own ref")
        }
        (None, None) => {
            state.goals.clear();
            state.agents.clear();
            state.todos.clear();
            state.gates.clear();
            state.quota.clear();
            "split the goals onto their own refs".to_owned()
        }
        (Some(g), _) => {
            let others: Vec<GoalId> = state.goals.keys().filter(|k| *k != g).cloned().collect();
            for o in &others {
                state.goals.remove(o);
            }
            drop_goal_parts(state, |x| x != g);
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

/// Drops the todos and gates of the goals `gone` names.
fn drop_goal_parts(state: &mut State, gone: impl Fn(&GoalId) -> bool) {
    let todos: Vec<_> = state
        .todos
        .values()
        .filter(|t| gone(&t.goal))
        .map(|t| t.id.clone())
        .collect();
    for t in &todos {
        state.todos.remove(t);
    }
    let gates: Vec<_> = state
        .gates
        .values()
        .filter(|x| gone(&x.goal))
        .map(|x| x.id.clone())
        .collect();
    for x in &gates {
        state.gates.remove(x);
    }
}

#[cfg(test)]
mod tests;

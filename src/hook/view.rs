//! What concerns an agent, as the prompt-submit hook compares it between two
//! prompts: its goal's status, the open gates on its scopes, and its claims
//! with their epochs and lease. Kept per session in a small file (never on
//! the state ref); [`delta`] turns two views into the lines the agent reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{AgentId, Goal, State, TodoStatus};
use crate::op::{rules, short};
use crate::time::Timestamp;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalView>,
    /// Open gates that concern the agent: id → question.
    #[serde(default)]
    pub gates: BTreeMap<String, String>,
    /// The agent's claims: todo id → claim.
    #[serde(default)]
    pub claims: BTreeMap<String, ClaimView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalView {
    pub id: String,
    pub status: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimView {
    pub epoch: u64,
    /// Whether the lease had run out (past the clock-skew margin).
    pub expired: bool,
}

/// The view of `agent` on `goal` at `now`.
pub fn view(state: &State, agent: &AgentId, goal: Option<&Goal>, now: Timestamp) -> View {
    let goal_id = goal.map(|g| &g.id);
    let gates = rules::gates_for(state, agent, goal_id)
        .into_iter()
        .map(|g| (g.id.to_string(), short(&g.question)))
        .collect();
    let skew = state.meta.settings.clock_skew;
    let claims = state
        .todos
        .values()
        .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(agent))
        .map(|t| {
            (
                t.id.to_string(),
                ClaimView {
                    epoch: t.epoch,
                    expired: t.live_claim(now, skew).is_none(),
                },
            )
        })
        .collect();
    View {
        goal: goal.map(|g| GoalView {
            id: g.id.to_string(),
            status: g.status.as_str().to_owned(),
        }),
        gates,
        claims,
    }
}

/// What changed from `old` to `new` that the agent should hear, one line
/// each; `state` is the current state, to say how a gate or claim ended.
pub fn delta(old: &View, new: &View, state: &State, agent: &AgentId) -> Vec<String> {
    let mut lines = Vec::new();
    if let (Some(o), Some(n)) = (&old.goal, &new.goal)
        && o.id == n.id
        && o.status != n.status
    {
        lines.push(format!("goal {} is now {}", n.id, n.status));
    }
    for (id, question) in &old.gates {
        if new.gates.contains_key(id) {
            continue;
        }
        let gate = state
            .resolve_gate(id)
            .ok()
            .and_then(|g| state.gates.get(&g));
        lines.push(match gate {
            Some(g) => match &g.answer {
                Some(a) => {
                    let note = a
                        .note
                        .as_deref()
                        .map(|n| format!(" ({})", short(n)))
                        .unwrap_or_default();
                    format!(
                        "gate {id} was answered {} by {}{note}: \"{question}\"",
                        a.choice,
                        a.by.name()
                    )
                }
                None if g.is_open() => format!("gate {id} no longer concerns you: \"{question}\""),
                None => format!("gate {id} was withdrawn: \"{question}\""),
            },
            None => format!("gate {id} is gone: \"{question}\""),
        });
    }
    for (id, question) in &new.gates {
        if !old.gates.contains_key(id) {
            lines.push(format!("gate {id} is open: \"{question}\""));
        }
    }
    for (id, claim) in &old.claims {
        let todo = state
            .resolve_todo(id)
            .ok()
            .and_then(|t| state.todos.get(&t));
        match (new.claims.get(id), todo) {
            (Some(now), Some(t)) => {
                if now.expired && !claim.expired {
                    let until = t
                        .claim
                        .as_ref()
                        .map(|c| c.lease_until.to_string())
                        .unwrap_or_default();
                    lines.push(format!(
                        "your lease on {id} \"{}\" ran out at {until}; renew it with `loopx todo renew {id}` before someone takes it",
                        short(&t.title)
                    ));
                }
            }
            (None, Some(t)) => match t.owner() {
                Some(other) if other != agent => lines.push(format!(
                    "you lost {id} \"{}\": {other} holds it now; do not write to it",
                    short(&t.title)
                )),
                _ if t.status == TodoStatus::Done => {}
                _ => lines.push(format!(
                    "{id} \"{}\" is no longer your claim (it is {})",
                    short(&t.title),
                    t.status
                )),
            },
            (_, None) => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_view_says_nothing() {
        let v = View {
            goal: Some(GoalView {
                id: "main".into(),
                status: "active".into(),
            }),
            ..View::default()
        };
        let state = State::default();
        let agent = AgentId::new("a").unwrap();
        assert!(delta(&v, &v, &state, &agent).is_empty());
        let mut paused = v.clone();
        paused.goal.as_mut().unwrap().status = "paused".into();
        assert_eq!(
            delta(&v, &paused, &state, &agent),
            ["goal main is now paused"]
        );
    }
}

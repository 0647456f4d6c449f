//! Stall detection by material progress (docs/turn.md, "Stalled").
//!
//! A turn's progress fingerprint is one digest of the code under the agent
//! (HEAD and the tree `git add -A` would make of the working tree), the
//! todo's status and dependencies, and the set of distinct checks that
//! passed in the turn. The command computes it (it needs git) and passes it
//! into `turn.refresh` as data; `record` keeps the agent's run of
//! advanced turns with one fingerprint on one todo, and the turn that makes
//! the run `stall-after` long opens a human-only `spend` gate on the todo.
//! [`stalled`] is what `should-run` reads: no fingerprint is computed there.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use super::Op;
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    AgentId, Blocks, Gate, GateId, GateKind, GateStatus, GoalId, Outcome, Progress, State, TodoId,
    TodoStatus,
};
use crate::op::GateOpen;
use crate::time::Timestamp;

/// The most turns a run keeps, and so the largest `stall-after`.
pub const MAX_RUN: u32 = 100;

/// The answers a stall gate offers.
pub const OPTIONS: [&str; 3] = ["continue", "reassign", "drop"];

/// The code under the agent: HEAD (none on an unborn branch) and the tree
/// of the working tree with untracked files (none without a work tree).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeState {
    pub head: Option<String>,
    pub tree: Option<String>,
}

/// A check that passed in the turn: its argv and exit status.
pub type Check = (Vec<String>, Option<i32>);

/// The progress fingerprint of a turn, 16 hex digits. Each part is written
/// on lines of its own, with lengths, so no two inputs share a text.
pub fn fingerprint(
    code: &CodeState,
    status: TodoStatus,
    after: &[TodoId],
    checks: &BTreeSet<Check>,
) -> String {
    let mut h = Sha256::new();
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".to_owned());
    h.update(format!(
        "head {}\ntree {}\n",
        opt(&code.head),
        opt(&code.tree)
    ));
    let mut after: Vec<&str> = after.iter().map(|t| t.as_str()).collect();
    after.sort_unstable();
    after.dedup();
    h.update(format!("status {status}\nafter {}\n", after.join(",")));
    for (argv, exit) in checks {
        h.update(format!("check {}", argv.len()));
        for a in argv {
            h.update(format!(" {}:{a}", a.len()));
        }
        h.update(format!(
            " exit {}\n",
            exit.map_or("-".to_owned(), |e| e.to_string())
        ));
    }
    crate::model::id::hex(&h.finalize()[..8])
}

/// The stall gate an op at `at` opens for `agent` on `todo`: derived from
/// what the op holds, so a replay opens the same gate.
pub fn gate_id(agent: &AgentId, todo: &TodoId, at: Timestamp) -> GateId {
    let d = Sha256::new()
        .chain_update("stall\0")
        .chain_update(agent.as_str())
        .chain_update([0])
        .chain_update(todo.as_str())
        .chain_update(at.unix().to_le_bytes())
        .finalize();
    GateId::from_hex(&crate::model::id::hex(&d[..4]))
}

/// The open stall gate that stops `agent` on `goal`, and its todo.
pub fn stalled(state: &State, agent: &AgentId, goal: &GoalId) -> Option<(GateId, TodoId)> {
    let gate = state.agents.get(agent)?.progress.as_ref()?.gate.as_ref()?;
    let g = state.gates.get(gate).filter(|g| g.is_open())?;
    match &g.blocks {
        Blocks::Todo(t) if &g.goal == goal => Some((g.id.clone(), t.clone())),
        _ => None,
    }
}

/// The refusal for a spend while a stall gate is open, unless this very op
/// opened it (the settle that makes the stalled turn still spends for it).
pub fn refuse_spend(state: &State, op: &Op, agent: &AgentId, goal: &GoalId) -> Result<(), Refusal> {
    match stalled(state, agent, goal) {
        Some((gate, todo)) if gate != gate_id(agent, &todo, op.at) => Err(Refusal::rule(
            Code::Stalled,
            format!("{agent} is stalled on {todo}: gate {gate} is open, so nothing is spent"),
        )
        .with_hint(Hint::new(
            format!("a human answers it with {N} (continue, reassign or drop)"),
            [Next::CloseGate("answer".to_owned(), gate.to_string())],
        ))),
        _ => Ok(()),
    }
}

/// The stall part of a `turn.refresh`: records its fingerprint when it has
/// one and names a todo; returns the gate it opened and the words the
/// tick's subject adds for it.
pub(super) fn on_refresh(
    state: &mut State,
    op: &Op,
    agent: &AgentId,
    (goal, todo): (&GoalId, &Option<TodoId>),
    outcome: Outcome,
    fingerprint: &Option<String>,
) -> (Option<GateId>, String) {
    let gate = match (fingerprint, todo) {
        (Some(f), Some(t)) => record(state, op, agent, (goal, t), outcome, f),
        _ => None,
    };
    let words = gate
        .as_ref()
        .map(|g| format!(", stalled: gate {g}"))
        .unwrap_or_default();
    (gate, words)
}

/// The words a settle's summary adds after the outcome of a refresh step
/// that opened a stall gate.
pub(super) fn note(refreshed: Option<&super::Happened>) -> String {
    match refreshed {
        Some(super::Happened::Refreshed {
            stalled: Some(g), ..
        }) => format!(", stalled: gate {g}"),
        _ => String::new(),
    }
}

/// The sentence `should-run` and the hooks say for a stall.
pub fn message(gate: &GateId, todo: &TodoId) -> String {
    format!(
        "your last turns on {todo} claimed advanced but made no progress; a human answers gate {gate} (continue, reassign or drop)"
    )
}

/// Records a turn's fingerprint on the agent and opens the stall gate when
/// the run of advanced turns without progress reaches `stall-after`.
/// Returns the gate it opened.
fn record(
    state: &mut State,
    op: &Op,
    agent: &AgentId,
    (goal, todo): (&GoalId, &TodoId),
    outcome: Outcome,
    fingerprint: &str,
) -> Option<GateId> {
    let stall_after = state.goals.get(goal).map_or(0, |g| g.stall_after);
    let open = |state: &State, g: &Option<GateId>| {
        g.clone()
            .filter(|g| state.gates.get(g).is_some_and(Gate::is_open))
    };
    let old = state.agents.get(agent)?.progress.clone();
    let mut run = match old {
        Some(p) if &p.todo == todo && p.fingerprint == fingerprint => p,
        // A new todo or new progress starts a new run; an open gate stays
        // until a human answers it.
        other => Progress {
            todo: todo.clone(),
            fingerprint: fingerprint.to_owned(),
            turns: Vec::new(),
            gate: other.and_then(|p| open(state, &p.gate)),
        },
    };
    if outcome == Outcome::Advanced {
        run.turns.push(op.at);
        let keep = run.turns.len().saturating_sub(MAX_RUN as usize);
        run.turns.drain(..keep);
    } else {
        run.turns.clear();
    }
    // Only turns after the gate's answer (or withdrawal) count.
    let closed = run
        .gate
        .as_ref()
        .and_then(|g| state.gates.get(g))
        .map(|g| match g.status {
            GateStatus::Open => None,
            _ => g
                .answer
                .as_ref()
                .map(|a| a.at)
                .or(g.withdrawn.as_ref().map(|w| w.at)),
        });
    let count = match closed {
        Some(None) => 0, // still open: already stalled
        Some(Some(at)) => run.turns.iter().filter(|t| **t > at).count(),
        None => run.turns.len(),
    } as u32;
    let mut opened = None;
    if stall_after > 0 && count >= stall_after {
        let id = gate_id(agent, todo, op.at);
        if !state.gates.contains_key(&id) {
            let evidence = state
                .todos
                .get(todo)
                .and_then(|t| t.last_evidence.as_ref())
                .map(|e| format!(" Last evidence: {}.", e.id))
                .unwrap_or_default();
            state.gates.insert(
                id.clone(),
                GateOpen {
                    gate: id.clone(),
                    goal: goal.clone(),
                    question: format!(
                        "{todo} made no progress in {count} turns: continue, reassign, or drop?{evidence}"
                    ),
                    options: OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
                    kind: GateKind::Spend,
                    blocks: Blocks::Todo(todo.clone()),
                }
                .open(op),
            );
            run.gate = Some(id.clone());
            opened = Some(id);
        }
    }
    state.agents.get_mut(agent)?.progress = Some(run);
    opened
}

#[cfg(test)]
mod tests;

//! Rules for gates: open, answer, withdraw. Human-only kinds refuse agents
//! here, inside `apply`, so a replayed answer is judged the same way.

use super::{
    Effect, Happened, Op,
    rules::{self, non_empty},
    short,
};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    Actor, Blocks, Gate, GateId, GateStatus, GoalStatus, State,
    gate::{Answer, Withdrawn},
};
use crate::op::{GateAnswer, GateNotified, GateOpen, GateWithdraw};

impl GateOpen {
    /// The gate this describes, open, as `op` opens it: what `gate.open`
    /// records, and what a park, a stalled todo or a reached budget opens by
    /// itself in its own tick.
    pub(super) fn open(self, op: &Op) -> Gate {
        Gate {
            id: self.gate,
            goal: self.goal,
            question: self.question,
            options: self.options,
            kind: self.kind,
            blocks: self.blocks,
            status: GateStatus::Open,
            opened_at: op.at,
            opened_by: op.actor.clone(),
            answer: None,
            withdrawn: None,
            notified: None,
            budget: false,
        }
    }
}

pub(super) fn open(state: &mut State, op: &Op, c: &GateOpen) -> Result<Effect, Refusal> {
    let GateOpen {
        gate,
        goal,
        question,
        options,
        kind,
        blocks,
    } = c;
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    let g = state
        .goals
        .get(goal)
        .ok_or_else(|| crate::model::unknown_goal(goal))?;
    if g.status == GoalStatus::Done {
        return Err(Refusal::rule(
            Code::GoalDone,
            format!("goal {goal} is done"),
        ));
    }
    match blocks {
        Blocks::Goal => {}
        Blocks::Agent(a) => {
            if !state.agents.contains_key(a) {
                return Err(Refusal::rule(
                    Code::NotRegistered,
                    format!("--blocks names agent {a}, which is not registered"),
                ));
            }
        }
        Blocks::Todo(t) => match state.todos.get(t) {
            None => {
                return Err(Refusal::error(
                    Code::UnknownTodo,
                    format!("--blocks names {t}, which is not a live todo"),
                ));
            }
            Some(todo) if todo.goal != *goal => {
                return Err(Refusal::usage(
                    Code::WrongGoal,
                    format!("{t} belongs to goal {}, not {goal}", todo.goal),
                ));
            }
            Some(_) => {}
        },
    }
    if state.gates.contains_key(gate) {
        return Err(Refusal::conflict(
            Code::IdTaken,
            format!("gate {gate} already exists"),
        ));
    }
    let question = non_empty(question, "question")?;
    let mut opts: Vec<String> = Vec::new();
    for o in options {
        let o = o.trim();
        if o.is_empty() {
            return Err(Refusal::usage(Code::EmptyOption, "an --option is empty"));
        }
        if !opts.iter().any(|x| x == o) {
            opts.push(o.to_owned());
        }
    }
    if opts.len() < 2 {
        return Err(Refusal::usage(
            Code::TooFewOptions,
            "a gate needs at least two options",
        ));
    }
    let subject = format!(
        "gate open {gate} {} on {blocks}: \"{}\"",
        kind.as_str(),
        short(&question)
    );
    state.gates.insert(
        gate.clone(),
        GateOpen {
            gate: gate.clone(),
            goal: goal.clone(),
            question,
            options: opts,
            kind: *kind,
            blocks: blocks.clone(),
        }
        .open(op),
    );
    Ok(Effect::new(
        Happened::GateOpened { gate: gate.clone() },
        subject,
    ))
}

pub(super) fn answer(state: &mut State, op: &Op, c: &GateAnswer) -> Result<Effect, Refusal> {
    let GateAnswer {
        gate: id,
        choice,
        note,
    } = c;
    let note = note.as_deref();
    let gate = closable(state, op, id)?;
    let choice = choice.trim();
    // A budget gate may also be answered `raised` once its budget was
    // raised past the spend (a `goal.set` on a clone that did not see the
    // gate, or a window that moved on); else the refusal says how.
    let raised = gate.budget && choice == super::usage::RAISED;
    if raised {
        super::usage::check_raised(state, gate, op.at)?;
    } else if !gate.options.iter().any(|o| o == choice) {
        return Err(Refusal::usage(
            Code::BadChoice,
            format!(
                "{choice:?} is not an option of {id}: choose {}",
                gate.options.join(" or ")
            ),
        ));
    }
    let note = note.map(|n| non_empty(n, "note")).transpose()?;
    let g = state.gates.get_mut(id).expect("checked by closable");
    g.status = GateStatus::Answered;
    g.answer = Some(Answer {
        choice: choice.to_owned(),
        by: op.actor.clone(),
        at: op.at,
        note,
        signature: op.signature.clone(),
    });
    Ok(Effect::new(
        Happened::GateAnswered {
            gate: id.clone(),
            choice: choice.to_owned(),
        },
        format!("gate answer {id} {choice}: \"{}\"", short(&g.question)),
    ))
}

pub(super) fn withdraw(state: &mut State, op: &Op, c: &GateWithdraw) -> Result<Effect, Refusal> {
    let id = &c.gate;
    closable(state, op, id)?;
    let g = state.gates.get_mut(id).expect("checked by closable");
    g.status = GateStatus::Withdrawn;
    g.withdrawn = Some(Withdrawn {
        by: op.actor.clone(),
        at: op.at,
        signature: op.signature.clone(),
    });
    Ok(Effect::new(
        Happened::GateWithdrawn { gate: id.clone() },
        format!("gate withdraw {id}: \"{}\"", short(&g.question)),
    ))
}

/// Records that the `loopx.notify` command ran for a gate. Anyone may; a
/// gate already notified (another clone won the race) is left as it is, so
/// a replayed record never conflicts.
pub(super) fn notified(state: &mut State, op: &Op, c: &GateNotified) -> Result<Effect, Refusal> {
    let id = &c.gate;
    let g = state.gates.get_mut(id).ok_or_else(|| {
        Refusal::error(Code::UnknownGate, format!("there is no gate {id}"))
            .with_hint(Hint::new(format!("{N} shows the gates"), [Next::ListGates]))
    })?;
    let already = g.notified.is_some();
    if !already {
        g.notified = Some(crate::model::Notified {
            by: op.actor.clone(),
            at: op.at,
        });
    }
    Ok(Effect::new(
        Happened::GateNotified {
            gate: id.clone(),
            already,
        },
        format!("gate notified {id}: \"{}\"", short(&g.question)),
    ))
}

/// The gate exists, is open, and the actor may close it (an agent must be
/// registered).
fn closable<'s>(state: &'s State, op: &Op, id: &GateId) -> Result<&'s Gate, Refusal> {
    let gate = state.gates.get(id).ok_or_else(|| {
        Refusal::error(Code::UnknownGate, format!("there is no gate {id}"))
            .with_hint(Hint::new(format!("{N} shows the gates"), [Next::ListGates]))
    })?;
    // Human-only kinds refuse every agent before this (`authority`).
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    if !gate.is_open() {
        return Err(Refusal::rule(
            Code::GateClosed,
            format!("{id} is already {}", gate.status.as_str()),
        )
        .with_hint(Hint::new(
            format!("{N} shows how it was closed; open a new gate for a new question"),
            [Next::ShowGate(id.to_string())],
        )));
    }
    Ok(gate)
}

#[cfg(test)]
mod tests;

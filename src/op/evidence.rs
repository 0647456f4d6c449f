//! Rules for evidence: who may record it and what it must name. Records are
//! append-only; a failing command is evidence too, not a refusal.

use super::{
    Effect, Happened, Op,
    rules::{self, non_empty},
    short,
};
use crate::error::{Code, Refusal};
use crate::model::{Actor, Evidence, EvidenceKind, State, todo::EvidenceRef};
use crate::op::EvidenceAdd;

pub(super) fn add(state: &mut State, op: &Op, c: &EvidenceAdd) -> Result<Effect, Refusal> {
    let EvidenceAdd {
        evidence,
        goal,
        todo,
        kind,
        summary,
        code,
        run,
        artifact,
    } = c;
    // A sync-rejected record is written by sync, in the name of the actor
    // whose op lost; that actor may have been retired on the other machine
    // meanwhile, and the record must still land.
    if let Actor::Agent(a) = &op.actor
        && *kind != EvidenceKind::SyncRejected
    {
        rules::registered(state, a)?;
    }
    if !state.goals.contains_key(goal) {
        return Err(crate::model::unknown_goal(goal));
    }
    if let Some(t) = todo {
        match state.todos.get(t) {
            None => {
                return Err(Refusal::error(
                    Code::UnknownTodo,
                    format!("{t} is not a live todo"),
                ));
            }
            Some(x) if x.goal != *goal => {
                return Err(Refusal::usage(
                    Code::WrongGoal,
                    format!("{t} belongs to goal {}, not {goal}", x.goal),
                ));
            }
            Some(_) => {}
        }
    }
    let summary = non_empty(summary, "summary")?;
    let outcome = match run {
        Some(r) if r.passed() => " passed".to_owned(),
        Some(r) => format!(" failed ({})", r.outcome()),
        None => String::new(),
    };
    let on = todo
        .as_ref()
        .map(|t| format!(" on {t}"))
        .unwrap_or_default();
    let subject = format!(
        "evidence {evidence} {kind}{outcome}{on}: \"{}\"",
        short(&summary)
    );
    // A lost op's record is no check that passed, and no writeback.
    let passed = *kind != EvidenceKind::SyncRejected && run.as_ref().is_none_or(|r| r.passed());
    if let Some(t) = todo {
        let t = state.todos.get_mut(t).expect("checked above");
        t.last_evidence = Some(EvidenceRef {
            id: evidence.clone(),
            at: op.at,
            by: op.actor.clone(),
            passed,
        });
    }
    if passed {
        super::wrote_back(state, op);
    }
    let mut effect = Effect::new(
        Happened::EvidenceAdded {
            evidence: evidence.clone(),
            passed,
        },
        subject,
    );
    effect.evidence.push(Evidence {
        id: evidence.clone(),
        goal: goal.clone(),
        todo: todo.clone(),
        kind: *kind,
        summary,
        by: op.actor.clone(),
        at: op.at,
        code: code.clone(),
        run: run.clone(),
        artifact: artifact.clone(),
    });
    Ok(effect)
}

#[cfg(test)]
mod tests;

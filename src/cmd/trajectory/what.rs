//! An event's text, from the op's full fields: the kind, what it names, and
//! its free text whole (title, note, question, answer, reason, summary),
//! before any redaction or shortening.

use super::*;
use crate::op::{
    GateAnswer, GateOpen, GoalAdd, GoalSet, Init, QuotaPark, QuotaVoid, RefreshState, TodoAdd,
    TodoEdit, TodoUpdate,
};

/// One step of a tick in words: `todo.claim t-… "Write the parser"`,
/// `gate.answer g-… approve: fine by me`. Agent ids come as roles from
/// `red`; the rest is raw, for [`Redactor::text`] to redact whole.
pub(super) fn what<'s>(
    c: &Change,
    find: &impl Fn(&TodoId) -> Option<&'s Todo>,
    red: &mut Redactor,
) -> String {
    let kind = c.kind();
    let title =
        |t: &TodoId| find(t).map_or_else(|| t.to_string(), |x| format!("{t} \"{}\"", x.title));
    let with = |head: String, texts: &[Option<&str>]| {
        let texts: Vec<&str> = texts
            .iter()
            .flatten()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        if texts.is_empty() {
            head
        } else {
            format!("{head}: {}", texts.join(" — "))
        }
    };
    match c {
        Change::Init(Init { goal, objective }) => with(
            format!("{kind} {}", goal.as_ref().map_or("", |g| g.as_str())),
            &[objective.as_deref()],
        ),
        Change::GoalAdd(GoalAdd {
            goal, objective, ..
        }) => with(format!("{kind} {goal}"), &[Some(objective)]),
        Change::GoalSet(GoalSet {
            goal, objective, ..
        }) => with(format!("{kind} {goal}"), &[objective.as_deref()]),
        Change::TodoAdd(TodoAdd {
            todo, title, note, ..
        }) => with(format!("{kind} {todo} \"{title}\""), &[note.as_deref()]),
        Change::TodoHandoff(TodoHandoff { todo, to, note, .. }) => with(
            format!("{kind} {} to {}", title(todo), red.agent(to)),
            &[Some(note)],
        ),
        Change::TodoUpdate(TodoUpdate {
            todo, status, note, ..
        }) => with(
            format!(
                "{kind} {}{}",
                title(todo),
                status
                    .map(|s| format!(" {}", s.as_str()))
                    .unwrap_or_default()
            ),
            &[note.as_deref()],
        ),
        Change::TodoDone(TodoDone {
            todo,
            note,
            validation,
            ..
        }) => with(
            format!(
                "{kind} {}{}",
                title(todo),
                validation
                    .as_ref()
                    .map(|v| format!(" (validation {})", v.outcome()))
                    .unwrap_or_default()
            ),
            &[note.as_deref()],
        ),
        Change::TodoEdit(TodoEdit {
            todo,
            title: new,
            note,
            ..
        }) => with(
            format!(
                "{kind} {}{}",
                title(todo),
                new.as_ref()
                    .map(|n| format!(" → \"{n}\""))
                    .unwrap_or_default()
            ),
            &[note.as_deref()],
        ),
        Change::GateOpen(GateOpen {
            gate,
            question,
            options,
            kind: gk,
            ..
        }) => {
            let options = options.join(" / ");
            with(
                format!("{kind} {gate} ({})", gk.as_str()),
                &[Some(question), Some(&options)],
            )
        }
        Change::GateAnswer(GateAnswer { gate, choice, note }) => {
            with(format!("{kind} {gate}"), &[Some(choice), note.as_deref()])
        }
        Change::EvidenceAdd(EvidenceAdd {
            todo, summary, run, ..
        }) => with(
            format!(
                "{kind}{}{}",
                todo.as_ref().map(|t| format!(" {t}")).unwrap_or_default(),
                run.as_ref()
                    .map(|r| format!(" ({})", r.outcome()))
                    .unwrap_or_default()
            ),
            &[Some(summary)],
        ),
        Change::RefreshState(RefreshState {
            outcome,
            todo,
            next_action,
            progress,
            ..
        }) => with(
            format!(
                "{kind} {}{}",
                outcome.as_str(),
                todo.as_ref().map(|t| format!(" {t}")).unwrap_or_default()
            ),
            &[next_action.as_deref(), progress.as_deref()],
        ),
        Change::QuotaPark(QuotaPark {
            agent,
            until,
            reason,
            ..
        }) => with(
            format!("{kind} {} until {until}", red.agent(agent)),
            &[reason.as_deref()],
        ),
        Change::QuotaVoid(QuotaVoid { agent, reason, .. }) => {
            with(format!("{kind} {}", red.agent(agent)), &[Some(reason)])
        }
        Change::GateWithdraw(crate::op::GateWithdraw { gate, .. })
        | Change::GateNotified(crate::op::GateNotified { gate, .. }) => format!("{kind} {gate}"),
        c => match c.todo() {
            Some(t) => format!("{kind} {}", title(t)),
            None => kind.to_owned(),
        },
    }
}

//! Rules for the todo lifecycle: add, update, done, edit, reopen, archive;
//! the claim side (claim, renew, steal, release, handoff) is in `claim.rs`. Every op on a todo carries the epoch its writer read; a mismatch is
//! a conflict (fencing).

use super::{
    Effect, Happened, Op,
    agent::normalize,
    rules::{self, non_empty},
    short,
};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    Actor, GoalStatus, Note, State, Todo, TodoId, TodoStatus, Validation, Vouch, run::CommandRun,
};
use crate::op::{TodoAdd, TodoArchive, TodoDone, TodoEdit, TodoReopen, TodoUpdate};

mod claim;

use claim::fence;
pub use claim::lost_by;
pub(super) use claim::{claim, handoff, release, renew};

pub(super) fn add(state: &mut State, op: &Op, c: &TodoAdd) -> Result<Effect, Refusal> {
    let TodoAdd {
        todo,
        goal,
        title,
        priority,
        after,
        capabilities,
        scope,
        note,
        validate,
    } = c;
    if let Some(v) = validate {
        check_validation(v)?;
    }
    if let Actor::Agent(id) = &op.actor {
        rules::registered(state, id)?;
    }
    let g = state
        .goals
        .get(goal)
        .ok_or_else(|| crate::model::unknown_goal(goal))?;
    if g.status == GoalStatus::Done {
        return Err(
            Refusal::rule(Code::GoalDone, format!("goal {goal} is done")).with_hint(Hint::new(
                format!("a human can reopen it with {N}"),
                [Next::ResumeGoal(goal.to_string())],
            )),
        );
    }
    if state.todos.contains_key(todo) {
        return Err(Refusal::conflict(
            Code::IdTaken,
            format!("todo {todo} already exists"),
        ));
    }
    if let Some(missing) = after.iter().find(|id| !state.todos.contains_key(*id)) {
        return Err(Refusal::rule(
            Code::UnknownAfter,
            format!("--after names {missing}, which does not exist"),
        )
        .with_hint(Hint::new(format!("{N} shows the todos"), [Next::AllTodos])));
    }
    let title = non_empty(title, "title")?;
    let mut after = after.clone();
    after.sort();
    after.dedup();
    let notes = match note.as_deref().map(|n| non_empty(n, "note")).transpose()? {
        Some(text) => vec![Note {
            at: op.at,
            by: op.actor.clone(),
            text,
        }],
        None => Vec::new(),
    };
    let subject = format!("add {todo} \"{}\"", short(&title));
    state.todos.insert(
        todo.clone(),
        Todo {
            id: todo.clone(),
            goal: goal.clone(),
            title,
            priority: *priority,
            status: TodoStatus::Open,
            after,
            capabilities: normalize(capabilities),
            scope: normalize(scope),
            validate: validate.clone(),
            validate_from: validate.as_ref().map(|_| vouch(op, "add")),
            epoch: 0,
            created_at: op.at,
            created_by: op.actor.clone(),
            updated_at: op.at,
            done_at: None,
            claim: None,
            notes,
            last_evidence: None,
        },
    );
    Ok(Effect::new(
        Happened::TodoAdded { todo: todo.clone() },
        subject,
    ))
}

pub(super) fn update(state: &mut State, op: &Op, c: &TodoUpdate) -> Result<Effect, Refusal> {
    let &TodoUpdate {
        todo: ref id,
        epoch,
        status,
        ref note,
    } = c;
    let note = note.as_deref();
    let todo = writable(state, op, id, epoch, "update")?;
    if todo.status == TodoStatus::Done && status.is_none_or(|s| s != TodoStatus::Open) {
        return Err(
            Refusal::rule(Code::TodoDone, format!("{id} is done")).with_hint(Hint::new(
                format!("reopen it with {N}"),
                [Next::OpenTodo(id.to_string())],
            )),
        );
    }
    if let Some(s @ (TodoStatus::Claimed | TodoStatus::Done)) = status {
        // The command refuses this first, naming its own flags; a foreign
        // op that tries it is refused here.
        let by = if s == TodoStatus::Done {
            Next::FinishTodo(None)
        } else {
            Next::ClaimTodo("ID".to_owned())
        };
        return Err(Refusal::usage(
            Code::BadStatus,
            format!("status {s} is not set by an update"),
        )
        .with_hint(Hint::new(format!("{N} sets it"), [by])));
    }
    let note = note.map(|n| non_empty(n, "note")).transpose()?;
    if status.is_none() && note.is_none() {
        return Err(Refusal::usage(
            Code::NothingToUpdate,
            "todo update needs --status or --note",
        ));
    }
    let title = short(&todo.title);
    let owned_by_actor = todo.owner().is_some_and(|o| op.actor.agent() == Some(o));
    let t = todo_mut(state, id);
    let mut what = Vec::new();
    if let Some(s) = status {
        // Leaving the claimed state gives the claim up: a blocked or deferred
        // todo is nobody's work in progress.
        t.claim = None;
        t.status = s;
        t.done_at = None;
        what.push(format!("status={s}"));
    }
    if let Some(text) = note {
        t.add_note(op.at, &op.actor, text);
        what.push("note".to_owned());
    }
    t.updated_at = op.at;
    if owned_by_actor {
        super::wrote_back(state, op);
    }
    Ok(Effect::new(
        Happened::Updated { todo: id.clone() },
        format!("update {id} \"{title}\" {}", what.join(" ")),
    ))
}

pub(super) fn done(state: &mut State, op: &Op, c: &TodoDone) -> Result<Effect, Refusal> {
    let &TodoDone {
        todo: ref id,
        epoch,
        ref note,
        ref validation,
    } = c;
    let (note, validation) = (note.as_deref(), validation.as_ref());
    let todo = writable(state, op, id, epoch, "complete")?;
    if todo.status == TodoStatus::Done {
        return Err(Refusal::rule(
            Code::TodoDone,
            format!("{id} is already done"),
        ));
    }
    if let Some(v) = &todo.validate {
        match validation {
            None => {
                return Err(Refusal::rule(
                    Code::ValidationMissing,
                    format!(
                        "{id} has a validation command ({}) and this completion did not run it",
                        v.argv.join(" ")
                    ),
                )
                .with_hint(Hint::new(
                    format!("run {N}, which runs it first"),
                    [Next::FinishTodo(Some(id.to_string()))],
                )));
            }
            Some(run) if !run.ran(&v.argv) => {
                return Err(Refusal::conflict(
                    Code::ValidationChanged,
                    format!(
                        "{id}'s validation command changed to `{}` after `{}` ran",
                        v.argv.join(" "),
                        run.argv.join(" ")
                    ),
                )
                .with_hint(Hint::new(
                    format!("run {N} again"),
                    [Next::FinishTodo(Some(id.to_string()))],
                )));
            }
            Some(run) if !run.passed() => {
                return Err(validation_failed(id, run));
            }
            Some(_) => {}
        }
    }
    let note = note.map(|n| non_empty(n, "note")).transpose()?;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.status = TodoStatus::Done;
    t.claim = None;
    t.done_at = Some(op.at);
    t.updated_at = op.at;
    if let Some(text) = note {
        t.add_note(op.at, &op.actor, text);
    }
    super::wrote_back(state, op);
    Ok(Effect::new(
        Happened::Done { todo: id.clone() },
        format!("done {id} \"{title}\""),
    ))
}

pub(super) fn edit(state: &mut State, op: &Op, c: &TodoEdit) -> Result<Effect, Refusal> {
    let TodoEdit {
        todo: id,
        epoch,
        title,
        priority,
        after,
        note,
        validate,
    } = c;
    if let Some(v) = validate {
        check_validation(v)?;
    }
    let todo = writable(state, op, id, *epoch, "edit")?;
    let title = title
        .as_deref()
        .map(|t| non_empty(t, "title"))
        .transpose()?;
    let note = note.as_deref().map(|n| non_empty(n, "note")).transpose()?;
    let after = match after {
        Some(list) => {
            let mut list = list.clone();
            list.sort();
            list.dedup();
            if let Some(missing) = list.iter().find(|a| !state.todos.contains_key(*a)) {
                return Err(Refusal::rule(
                    Code::UnknownAfter,
                    format!("--after names {missing}, which is not a live todo"),
                ));
            }
            if let Some(cycle) = list.iter().find(|a| *a == id || waits_for(state, a, id)) {
                return Err(Refusal::rule(
                    Code::AfterCycle,
                    format!("{id} cannot wait for {cycle}: {cycle} already waits for {id}"),
                ));
            }
            Some(list)
        }
        None => None,
    };
    if title.is_none()
        && priority.is_none()
        && after.is_none()
        && note.is_none()
        && validate.is_none()
    {
        return Err(Refusal::usage(
            Code::NothingToEdit,
            "todo edit needs --title, --priority, --after, --no-after, --note or a validation after `--`",
        ));
    }
    let old_title = short(&todo.title);
    let t = todo_mut(state, id);
    let mut what = Vec::new();
    if let Some(v) = title {
        t.title = v;
        what.push("title".to_owned());
    }
    if let Some(p) = priority {
        t.priority = *p;
        what.push(format!("priority={p}"));
    }
    if let Some(a) = after {
        t.after = a;
        what.push("after".to_owned());
    }
    if let Some(text) = note {
        t.add_note(op.at, &op.actor, text);
        what.push("note".to_owned());
    }
    if let Some(v) = validate {
        t.validate = Some(v.clone());
        // A new validation voids whatever vouched for the old one.
        t.validate_from = Some(vouch(op, "edit"));
        what.push("validation".to_owned());
    }
    t.updated_at = op.at;
    Ok(Effect::new(
        Happened::Edited { todo: id.clone() },
        format!("edit {id} \"{old_title}\" {}", what.join(" ")),
    ))
}

/// A validation command must name a program and have a positive timeout.
fn check_validation(v: &Validation) -> Result<(), Refusal> {
    if v.argv.is_empty() || v.argv[0].trim().is_empty() {
        return Err(
            Refusal::usage(Code::BadValidation, "the validation command is empty").with_hint(
                Hint::new(
                    format!("put the command after `--`: {N}"),
                    [Next::AddTodoWithCheck],
                ),
            ),
        );
    }
    if v.timeout.as_secs() <= 0 {
        return Err(Refusal::usage(
            Code::BadValidation,
            "--validate-timeout must be longer than 0s",
        ));
    }
    Ok(())
}

/// The record of who wrote or trusted a validation, from the op doing it.
pub(super) fn vouch(op: &Op, how: &str) -> Vouch {
    Vouch {
        op: op.id.clone(),
        by: op.actor.clone(),
        at: op.at,
        how: how.to_owned(),
        signature: op.signature.clone(),
    }
}

/// Whether `from` waits (directly or through others) for `target`.
fn waits_for(state: &State, from: &TodoId, target: &TodoId) -> bool {
    let mut stack = vec![from];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(t) = state.todos.get(id) {
            for a in &t.after {
                if a == target {
                    return true;
                }
                stack.push(a);
            }
        }
    }
    false
}

pub(super) fn reopen(state: &mut State, op: &Op, c: &TodoReopen) -> Result<Effect, Refusal> {
    let &TodoReopen {
        todo: ref id,
        epoch,
    } = c;
    let todo = writable(state, op, id, epoch, "reopen")?;
    if matches!(todo.status, TodoStatus::Open | TodoStatus::Claimed) {
        return Err(Refusal::rule(
            Code::NotClosed,
            format!("{id} is {}, not done, blocked or deferred", todo.status),
        )
        .with_hint("only a done, blocked or deferred todo can be reopened; nothing to do"));
    }
    let was = todo.status;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.status = TodoStatus::Open;
    t.done_at = None;
    t.updated_at = op.at;
    Ok(Effect::new(
        Happened::Reopened {
            todo: id.clone(),
            was,
        },
        format!("reopen {id} \"{title}\" (was {was})"),
    ))
}

/// Moves the listed todos that are still done out of the live set.
pub(super) fn archive(state: &mut State, op: &Op, c: &TodoArchive) -> Result<Effect, Refusal> {
    let ids = &c.todos;
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    let moving: Vec<TodoId> = ids
        .iter()
        .filter(|id| {
            state
                .todos
                .get(*id)
                .is_some_and(|t| t.status == TodoStatus::Done)
        })
        .cloned()
        .collect();
    if moving.is_empty() {
        return Err(
            Refusal::rule(Code::NothingToArchive, "no done todos to archive").with_hint(Hint::new(
                format!("they were reopened or archived meanwhile; {N} shows them"),
                [Next::AllTodos],
            )),
        );
    }
    let n = moving.len();
    let mut effect = Effect::new(
        Happened::Archived {
            todos: moving.clone(),
        },
        format!("archive {n} done todo{}", if n == 1 { "" } else { "s" }),
    );
    for id in moving {
        let t = state.todos.remove(&id).expect("filtered on presence");
        effect.archived.insert(id, t);
    }
    Ok(effect)
}

/// A todo's validation failed: the refusal `todo done` and replays give,
/// with the last lines of its output.
pub fn validation_failed(id: &TodoId, run: &CommandRun) -> Refusal {
    let shown: String = run.last_lines(5).iter().map(|l| format!("\n{l}")).collect();
    Refusal::rule(
        Code::ValidationFailed,
        format!(
            "{id} is not done: its validation `{}` failed ({}){shown}",
            run.argv.join(" "),
            run.outcome()
        ),
    )
    .with_hint(Hint::new(
        format!("fix what it reports and run {N} again; nothing was marked done"),
        [Next::FinishTodo(None)],
    ))
}

/// Checks that the actor may write this todo: a registered agent or a human,
/// and if it is claimed, its owner; and that the epoch matches.
fn writable<'s>(
    state: &'s State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    verb: &str,
) -> Result<&'s Todo, Refusal> {
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    let todo = get(state, id)?;
    if let Some(owner) = todo.owner()
        && op.actor.agent() != Some(owner)
    {
        return Err(Refusal::conflict(
            Code::Claimed,
            format!("{id} is claimed by {owner}; only its owner may {verb} it"),
        )
        .with_hint(if op.actor.is_human() {
            Hint::new(
                format!("ask {owner} to release it, or free it with {N}"),
                [Next::ForceRelease(id.to_string())],
            )
        } else {
            Hint::new(format!("pick other work with {N}"), [Next::ReadyTodos])
        }));
    }
    fence(todo, epoch)?;
    Ok(todo)
}

fn get<'s>(state: &'s State, id: &TodoId) -> Result<&'s Todo, Refusal> {
    state.todos.get(id).ok_or_else(|| {
        Refusal::error(Code::UnknownTodo, format!("there is no todo {id}"))
            .with_hint(Hint::new(format!("{N} shows the todos"), [Next::Todos]))
    })
}

fn todo_mut<'s>(state: &'s mut State, id: &TodoId) -> &'s mut Todo {
    state
        .todos
        .get_mut(id)
        .expect("checked by get() before mutating")
}

#[cfg(test)]
mod tests;

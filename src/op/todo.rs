//! Rules for the todo lifecycle: add, claim (renew, steal), release, update,
//! done. Every op on a todo carries the epoch its writer read; a mismatch is
//! a conflict (fencing).

use super::{Change, Effect, Happened, Op, agent::normalize, goal::non_empty, rules, short};
use crate::error::{Code, Refusal};
use crate::model::{
    Actor, Claim, GoalStatus, Note, State, Todo, TodoId, TodoStatus, Validation, Vouch,
    run::CommandRun,
};
use crate::time::Span;

pub(super) fn add(state: &mut State, op: &Op) -> Result<Effect, Refusal> {
    let Change::TodoAdd {
        todo,
        goal,
        title,
        priority,
        after,
        capabilities,
        scope,
        note,
        validate,
    } = &op.change
    else {
        unreachable!("dispatched on TodoAdd")
    };
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
            Refusal::rule(Code::GoalDone, format!("goal {goal} is done")).with_hint(format!(
                "a human can reopen it with `loopx goal set {goal} --status active`"
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
        .with_hint("`loopx todo list --all` shows the todos"));
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

pub(super) fn claim(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    lease: Span,
) -> Result<Effect, Refusal> {
    let agent = rules::acting_agent(state, &op.actor, "claim a todo")?.clone();
    let todo = get(state, id)?;
    check_lease(lease)?;
    // Renew: the owner claims again; the epoch stays. A gate that covers
    // the todo stops a renew too.
    if todo.owner() == Some(&agent.id) && todo.status == TodoStatus::Claimed {
        if let Some(g) = rules::gate_on(state, todo, &agent) {
            return Err(rules::NotReady::Gated {
                gate: g.id.clone(),
                question: g.question.clone(),
            }
            .refusal(todo));
        }
        fence(todo, epoch)?;
        let title = short(&todo.title);
        let t = todo_mut(state, id);
        let c = t.claim.as_mut().expect("owner() saw a claim");
        c.lease_until = op.at.plus(lease);
        t.updated_at = op.at;
        return Ok(Effect::new(
            Happened::Renewed { todo: id.clone() },
            format!("renew {id} \"{title}\""),
        ));
    }
    rules::ready(state, todo, &agent, op.at).map_err(|why| why.refusal(todo))?;
    fence(todo, epoch)?;
    let previous = todo.owner().cloned();
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.epoch += 1;
    t.status = TodoStatus::Claimed;
    t.claim = Some(Claim {
        owner: agent.id.clone(),
        since: op.at,
        lease_until: op.at.plus(lease),
    });
    t.updated_at = op.at;
    Ok(match previous {
        Some(prev) => {
            t.notes.push(Note {
                at: op.at,
                by: op.actor.clone(),
                text: format!("stole the expired lease of {prev}"),
            });
            let subject = format!("steal {id} \"{title}\" from {prev}");
            Effect::new(
                Happened::Stole {
                    todo: id.clone(),
                    from: prev,
                },
                subject,
            )
        }
        None => Effect::new(
            Happened::Claimed { todo: id.clone() },
            format!("claim {id} \"{title}\""),
        ),
    })
}

pub(super) fn release(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    force: bool,
) -> Result<Effect, Refusal> {
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    if force {
        rules::human_only(&op.actor, "force a claim off its owner")?;
    }
    let todo = get(state, id)?;
    let Some(owner) = todo.owner().cloned() else {
        return Err(Refusal::rule(
            Code::NotClaimed,
            format!("{id} is not claimed"),
        ));
    };
    if !force && op.actor.agent() != Some(&owner) {
        let hint = if op.actor.is_human() {
            format!(
                "only the owner releases a claim; a human can free it with `loopx todo release {id} --force`"
            )
        } else {
            "only the owner releases a claim".to_owned()
        };
        return Err(Refusal::conflict(
            Code::Claimed,
            format!("{id} is claimed by {owner}, not by {}", op.actor.name()),
        )
        .with_hint(hint));
    }
    fence(todo, epoch)?;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.claim = None;
    t.status = TodoStatus::Open;
    t.updated_at = op.at;
    if force {
        t.notes.push(Note {
            at: op.at,
            by: op.actor.clone(),
            text: format!("released the claim of {owner} by force"),
        });
        let subject = format!("release {id} \"{title}\" from {owner} by force");
        return Ok(Effect::new(
            Happened::Released {
                todo: id.clone(),
                from: Some(owner),
            },
            subject,
        ));
    }
    Ok(Effect::new(
        Happened::Released {
            todo: id.clone(),
            from: None,
        },
        format!("release {id} \"{title}\""),
    ))
}

/// The owner extends its lease; a lease already taken over is a conflict.
pub(super) fn renew(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    lease: Span,
) -> Result<Effect, Refusal> {
    let acting = rules::acting_agent(state, &op.actor, "renew a lease")?.clone();
    let agent = acting.id.clone();
    let todo = get(state, id)?;
    check_lease(lease)?;
    if let Some(g) = rules::gate_on(state, todo, &acting) {
        return Err(rules::NotReady::Gated {
            gate: g.id.clone(),
            question: g.question.clone(),
        }
        .refusal(todo));
    }
    match todo.owner() {
        Some(o) if *o == agent => {}
        Some(o) => {
            return Err(Refusal::conflict(
                Code::Claimed,
                format!("{id} is claimed by {o}, not by {agent}"),
            )
            .with_hint(
                "your lease was taken over; pick other work with `loopx todo list --ready`",
            ));
        }
        None => {
            return Err(
                Refusal::rule(Code::NotClaimed, format!("{id} is not claimed by {agent}"))
                    .with_hint(format!("claim it with `loopx todo claim {id}`")),
            );
        }
    }
    fence(todo, epoch)?;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    let c = t.claim.as_mut().expect("owner() saw a claim");
    c.lease_until = op.at.plus(lease);
    t.updated_at = op.at;
    Ok(Effect::new(
        Happened::Renewed { todo: id.clone() },
        format!("renew {id} \"{title}\""),
    ))
}

/// An explicit transfer: the new owner gets a fresh lease, the epoch bumps,
/// and the note is recorded for the new owner to read.
pub(super) fn handoff(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    to: &crate::model::AgentId,
    lease: Span,
    note: &str,
) -> Result<Effect, Refusal> {
    // DESIGN §4: handoff is an agent's act; a human frees a claim with
    // `release --force` instead.
    rules::acting_agent(state, &op.actor, "hand a todo off")?;
    let todo = get(state, id)?;
    check_lease(lease)?;
    let Some(owner) = todo.owner().cloned() else {
        return Err(Refusal::rule(
            Code::NotClaimed,
            format!("{id} is not claimed, so there is nothing to hand off"),
        )
        .with_hint(format!("{to} can claim it with `loopx todo claim {id}`")));
    };
    if op.actor.agent().is_some_and(|a| *a != owner) {
        return Err(Refusal::conflict(
            Code::Claimed,
            format!("{id} is claimed by {owner}; only its owner hands it off"),
        ));
    }
    if *to == owner {
        return Err(Refusal::usage(
            Code::HandoffToSelf,
            format!("{id} already belongs to {to}"),
        ));
    }
    let target = rules::registered(state, to)?.clone();
    rules::fits(state, todo, &target, op.at).map_err(|why| {
        let mut r = why.refusal(todo);
        r.message = format!("{id} cannot go to {to}: {why}");
        r
    })?;
    fence(todo, epoch)?;
    let note = non_empty(note, "handoff note")?;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.epoch += 1;
    t.claim = Some(Claim {
        owner: to.clone(),
        since: op.at,
        lease_until: op.at.plus(lease),
    });
    t.status = TodoStatus::Claimed;
    t.updated_at = op.at;
    t.notes.push(Note {
        at: op.at,
        by: op.actor.clone(),
        text: format!("handoff from {owner} to {to}: {note}"),
    });
    Ok(Effect::new(
        Happened::HandedOff {
            todo: id.clone(),
            to: to.clone(),
        },
        format!("handoff {id} \"{title}\" from {owner} to {to}"),
    ))
}

pub(super) fn update(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    status: Option<TodoStatus>,
    note: Option<&str>,
) -> Result<Effect, Refusal> {
    let todo = writable(state, op, id, epoch, "update")?;
    if todo.status == TodoStatus::Done && status.is_none_or(|s| s != TodoStatus::Open) {
        return Err(
            Refusal::rule(Code::TodoDone, format!("{id} is done")).with_hint(format!(
                "reopen it with `loopx todo update {id} --status open`"
            )),
        );
    }
    if let Some(s @ (TodoStatus::Claimed | TodoStatus::Done)) = status {
        let cmd = if s == TodoStatus::Done {
            "todo done"
        } else {
            "todo claim"
        };
        return Err(Refusal::usage(
            Code::BadStatus,
            format!("--status {s} is set by `loopx {cmd}`, not by update"),
        ));
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
        t.notes.push(Note {
            at: op.at,
            by: op.actor.clone(),
            text,
        });
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

pub(super) fn done(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    note: Option<&str>,
    validation: Option<&CommandRun>,
) -> Result<Effect, Refusal> {
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
                .with_hint(format!("run `loopx todo done {id}`, which runs it first")));
            }
            Some(run) if run.argv != v.argv => {
                return Err(Refusal::conflict(
                    Code::ValidationChanged,
                    format!(
                        "{id}'s validation command changed to `{}` after `{}` ran",
                        v.argv.join(" "),
                        run.argv.join(" ")
                    ),
                )
                .with_hint(format!("run `loopx todo done {id}` again")));
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
        t.notes.push(Note {
            at: op.at,
            by: op.actor.clone(),
            text,
        });
    }
    super::wrote_back(state, op);
    Ok(Effect::new(
        Happened::Done { todo: id.clone() },
        format!("done {id} \"{title}\""),
    ))
}

pub(super) fn edit(state: &mut State, op: &Op) -> Result<Effect, Refusal> {
    let Change::TodoEdit {
        todo: id,
        epoch,
        title,
        priority,
        after,
        note,
        validate,
    } = &op.change
    else {
        unreachable!("dispatched on TodoEdit")
    };
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
        t.notes.push(Note {
            at: op.at,
            by: op.actor.clone(),
            text,
        });
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
            Refusal::usage(Code::BadValidation, "the validation command is empty")
                .with_hint("put the command after `--`: loopx todo add TITLE -- cargo test"),
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

pub(super) fn reopen(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
) -> Result<Effect, Refusal> {
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
pub(super) fn archive(state: &mut State, op: &Op, ids: &[TodoId]) -> Result<Effect, Refusal> {
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
            Refusal::rule(Code::NothingToArchive, "no done todos to archive").with_hint(
                "they were reopened or archived meanwhile; `loopx todo list --all` shows them",
            ),
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
    .with_hint("fix what it reports and run `loopx todo done` again; nothing was marked done")
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
            format!("ask {owner} to release it, or free it with `loopx todo release {id} --force`")
        } else {
            "pick other work with `loopx todo list --ready`".to_owned()
        }));
    }
    fence(todo, epoch)?;
    Ok(todo)
}

/// A lease must be longer than 0s and at most ten years.
fn check_lease(lease: Span) -> Result<(), Refusal> {
    if lease.as_secs() <= 0 || lease > Span::MAX {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!("a lease must be longer than 0s and at most {}", Span::MAX),
        ));
    }
    Ok(())
}

/// Fencing: the op must carry the epoch its writer read.
fn fence(todo: &Todo, epoch: u64) -> Result<(), Refusal> {
    if todo.epoch == epoch {
        return Ok(());
    }
    let now = match todo.owner() {
        Some(o) => format!("it now belongs to {o} at epoch {}", todo.epoch),
        None => format!("it is now at epoch {}", todo.epoch),
    };
    Err(Refusal::conflict(
        Code::StaleEpoch,
        format!(
            "{} changed hands since epoch {epoch} was read: {now}",
            todo.id
        ),
    )
    .with_hint(format!("look again with `loopx todo show {}`", todo.id)))
}

fn get<'s>(state: &'s State, id: &TodoId) -> Result<&'s Todo, Refusal> {
    state.todos.get(id).ok_or_else(|| {
        Refusal::error(Code::UnknownTodo, format!("there is no todo {id}"))
            .with_hint("`loopx todo list` shows the todos")
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

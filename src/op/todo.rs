//! Rules for the todo lifecycle: add, claim (renew, steal), release, update,
//! done. Every op on a todo carries the epoch its writer read; a mismatch is
//! a conflict (fencing).

use super::{Change, Effect, Op, goal::non_empty, rules, short};
use crate::error::Refusal;
use crate::model::{Actor, Claim, GoalStatus, Note, State, Todo, TodoId, TodoStatus};
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
    } = &op.change
    else {
        unreachable!("dispatched on TodoAdd")
    };
    if let Actor::Agent(id) = &op.actor {
        rules::registered(state, id)?;
    }
    let g = state.goals.get(goal).ok_or_else(|| {
        Refusal::error("unknown-goal", format!("there is no goal {goal}"))
            .with_hint("`loopx goal list` shows the goals")
    })?;
    if g.status == GoalStatus::Done {
        return Err(
            Refusal::rule("goal-done", format!("goal {goal} is done")).with_hint(format!(
                "a human can reopen it with `loopx goal set {goal} --status active`"
            )),
        );
    }
    if state.todos.contains_key(todo) {
        return Err(Refusal::conflict(
            "id-taken",
            format!("todo {todo} already exists"),
        ));
    }
    if let Some(missing) = after.iter().find(|id| !state.todos.contains_key(*id)) {
        return Err(Refusal::rule(
            "unknown-after",
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
            capabilities: sorted(capabilities),
            scope: sorted(scope),
            epoch: 0,
            created_at: op.at,
            created_by: op.actor.clone(),
            updated_at: op.at,
            done_at: None,
            claim: None,
            notes,
        },
    );
    Ok(Effect::new(subject))
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
    if lease.as_secs() <= 0 {
        return Err(Refusal::usage(
            "bad-ttl",
            "the lease must be longer than 0s",
        ));
    }
    // Renew: the owner claims again; the epoch stays.
    if todo.owner() == Some(&agent.id) && todo.status == TodoStatus::Claimed {
        fence(todo, epoch)?;
        let title = short(&todo.title);
        let t = todo_mut(state, id);
        let c = t.claim.as_mut().expect("owner() saw a claim");
        c.lease_until = op.at.plus(lease);
        t.updated_at = op.at;
        return Ok(Effect::new(format!("renew {id} \"{title}\"")));
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
            Effect::new(format!("steal {id} \"{title}\" from {prev}"))
        }
        None => Effect::new(format!("claim {id} \"{title}\"")),
    })
}

pub(super) fn release(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
) -> Result<Effect, Refusal> {
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
    }
    let todo = get(state, id)?;
    let Some(owner) = todo.owner() else {
        return Err(Refusal::rule("not-claimed", format!("{id} is not claimed")));
    };
    if op.actor.agent() != Some(owner) {
        return Err(Refusal::conflict(
            "claimed",
            format!("{id} is claimed by {owner}, not by {}", op.actor.name()),
        )
        .with_hint("only the owner releases a claim"));
    }
    fence(todo, epoch)?;
    let title = short(&todo.title);
    let t = todo_mut(state, id);
    t.claim = None;
    t.status = TodoStatus::Open;
    t.updated_at = op.at;
    Ok(Effect::new(format!("release {id} \"{title}\"")))
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
            Refusal::rule("todo-done", format!("{id} is done")).with_hint(format!(
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
            "bad-status",
            format!("--status {s} is set by `loopx {cmd}`, not by update"),
        ));
    }
    let note = note.map(|n| non_empty(n, "note")).transpose()?;
    if status.is_none() && note.is_none() {
        return Err(Refusal::usage(
            "nothing-to-update",
            "todo update needs --status or --note",
        ));
    }
    let title = short(&todo.title);
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
    Ok(Effect::new(format!(
        "update {id} \"{title}\" {}",
        what.join(" ")
    )))
}

pub(super) fn done(
    state: &mut State,
    op: &Op,
    id: &TodoId,
    epoch: u64,
    note: Option<&str>,
) -> Result<Effect, Refusal> {
    let todo = writable(state, op, id, epoch, "complete")?;
    if todo.status == TodoStatus::Done {
        return Err(Refusal::rule("todo-done", format!("{id} is already done")));
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
    Ok(Effect::new(format!("done {id} \"{title}\"")))
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
            "claimed",
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
        "stale-epoch",
        format!(
            "{} changed hands since epoch {epoch} was read: {now}",
            todo.id
        ),
    )
    .with_hint(format!("look again with `loopx todo show {}`", todo.id)))
}

fn get<'s>(state: &'s State, id: &TodoId) -> Result<&'s Todo, Refusal> {
    state.todos.get(id).ok_or_else(|| {
        Refusal::error("unknown-todo", format!("there is no todo {id}"))
            .with_hint("`loopx todo list` shows the todos")
    })
}

fn todo_mut<'s>(state: &'s mut State, id: &TodoId) -> &'s mut Todo {
    state
        .todos
        .get_mut(id)
        .expect("checked by get() before mutating")
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v: Vec<String> = v
        .iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    v.sort();
    v.dedup();
    v
}

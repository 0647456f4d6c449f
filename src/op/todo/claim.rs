//! Rules for who holds a todo: claim (renew, steal an expired lease),
//! release, renew, handoff, and the fencing every op on a todo passes.

use super::{get, todo_mut};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{Actor, Claim, State, Todo, TodoStatus};
use crate::op::{
    Effect, Happened, Op,
    rules::{self, non_empty},
    short,
};
use crate::op::{TodoClaim, TodoHandoff, TodoRelease, TodoRenew};
use crate::time::Span;

/// The notes a steal and a forced release leave on the todo, which name
/// the holder that lost it ([`lost_by`]).
const STOLE: &str = "stole the expired lease of ";
const FORCED: &str = "released the claim of ";
const FORCED_END: &str = " by force";

/// The holder a claim taken over (a steal) or a forced release at `at` by
/// `by` took the todo from, read from the note the op left on it.
pub fn lost_by<'t>(todo: &'t Todo, at: crate::time::Timestamp, by: &Actor) -> Option<&'t str> {
    todo.notes
        .iter()
        .filter(|n| n.at == at && n.by == *by)
        .find_map(|n| {
            n.text.strip_prefix(STOLE).or_else(|| {
                n.text
                    .strip_prefix(FORCED)
                    .and_then(|r| r.strip_suffix(FORCED_END))
            })
        })
}

pub(in crate::op) fn claim(state: &mut State, op: &Op, c: &TodoClaim) -> Result<Effect, Refusal> {
    let &TodoClaim {
        todo: ref id,
        epoch,
        lease,
    } = c;
    let agent = rules::acting_agent(state, &op.actor, "claim a todo")?.clone();
    let todo = get(state, id)?;
    if let Some(goal) = state.goals.get(&todo.goal) {
        let standing = crate::op::park::standing(state, &agent, goal, op.at);
        if let Some(r) = crate::op::park::refusal(&standing, &agent.id, &goal.id) {
            return Err(r);
        }
    }
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
            t.add_note(op.at, &op.actor, format!("{STOLE}{prev}"));
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

pub(in crate::op) fn release(
    state: &mut State,
    op: &Op,
    c: &TodoRelease,
) -> Result<Effect, Refusal> {
    let &TodoRelease {
        todo: ref id,
        epoch,
        force,
    } = c;
    if let Actor::Agent(a) = &op.actor {
        rules::registered(state, a)?;
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
            Hint::new(
                format!("only the owner releases a claim; a human can free it with {N}"),
                [Next::ForceRelease(id.to_string())],
            )
        } else {
            "only the owner releases a claim".into()
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
        t.add_note(op.at, &op.actor, format!("{FORCED}{owner}{FORCED_END}"));
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
pub(in crate::op) fn renew(state: &mut State, op: &Op, c: &TodoRenew) -> Result<Effect, Refusal> {
    let &TodoRenew {
        todo: ref id,
        epoch,
        lease,
    } = c;
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
            .with_hint(Hint::new(
                format!("your lease was taken over; pick other work with {N}"),
                [Next::ReadyTodos],
            )));
        }
        None => {
            return Err(
                Refusal::rule(Code::NotClaimed, format!("{id} is not claimed by {agent}"))
                    .with_hint(Hint::new(
                        format!("claim it with {N}"),
                        [Next::ClaimTodo(id.to_string())],
                    )),
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
pub(in crate::op) fn handoff(
    state: &mut State,
    op: &Op,
    c: &TodoHandoff,
) -> Result<Effect, Refusal> {
    let &TodoHandoff {
        todo: ref id,
        epoch,
        ref to,
        lease,
        ref note,
    } = c;
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
        .with_hint(Hint::new(
            format!("{to} can claim it with {N}"),
            [Next::ClaimTodo(id.to_string())],
        )));
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
    t.add_note(
        op.at,
        &op.actor,
        format!("handoff from {owner} to {to}: {note}"),
    );
    Ok(Effect::new(
        Happened::HandedOff {
            todo: id.clone(),
            to: to.clone(),
        },
        format!("handoff {id} \"{title}\" from {owner} to {to}"),
    ))
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
pub(super) fn fence(todo: &Todo, epoch: u64) -> Result<(), Refusal> {
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
    .with_hint(Hint::new(
        format!("look again with {N}"),
        [Next::ShowTodo(todo.id.to_string())],
    )))
}

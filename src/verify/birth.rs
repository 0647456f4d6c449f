//! Which new goal ref a guarded hub takes (format 6, docs/scale.md "A ref
//! per goal"): only the goal-ref half of a split whose other half the hub
//! holds. Every tick of a copy of another goal's ref, of the shared ref's
//! chain or of a state with its own root is a valid tick, so the chain
//! check alone would take it, and the hub would hold a goal on two refs
//! (two clones could claim one todo, one on each) or a state nobody split.

use anyhow::Result;

use crate::op::{Change, GoalSplit, message};
use crate::store::{Oid, Store};
use crate::tx::goalref::{self, GOALS, SHARED};

/// Why the new ref `name` (`refs/loopx/goals/<goal>`) at `tip` is not the
/// goal-ref half of a split this hub holds the other half of; None when
/// it is, or when `name` is not a goal ref.
///
/// Its first tick as a goal ref (its *birth*) is the newest tick of its
/// first-parent chain that keeps one goal (`goal.split` with a goal): a
/// goal ref's later ticks never keep one (a goal moved off it is a
/// `moved` tick). The birth must keep the goal the ref is named after, and
/// its other half must be here:
/// - at the first split (its parent a single-ref tick), the shared ref's
///   split of the same tick, on this hub's `refs/loopx/state` (the goal was
///   recorded on the shared ref until then);
/// - for a goal moved off a goal ref later (its parent a goal ref's tick),
///   the tick dropping it there (`goal.split` with `moved`), on top of the
///   same parent, on one of this hub's goal refs.
pub(super) fn stray(store: &Store, name: &str, tip: Oid) -> Result<Option<String>> {
    let Some(goal) = name.strip_prefix(GOALS).filter(|g| !g.is_empty()) else {
        return Ok(None);
    };
    let mut birth = None;
    for entry in store.history(tip) {
        let entry = entry?;
        if let Some(kept) = kept_goal(&entry.message) {
            birth = Some((entry, kept));
            break;
        }
    }
    let Some((birth, kept)) = birth else {
        return Ok(Some(
            "no tick of its history splits a goal off onto a ref of its own (a state with its own root, or a copy of a ref that is not a goal's)".to_owned(),
        ));
    };
    if kept != goal {
        return Ok(Some(format!(
            "its first tick as a goal ref keeps goal {kept}, not {goal} (a copy of goal {kept}'s ref under another name)"
        )));
    }
    let Some(parent) = birth.parent else {
        return Ok(Some("its split has no parent".to_owned()));
    };
    if goalref::pin_of(store, &store.message(parent)?).is_some() {
        return Ok((!moved_here(store, parent, goal)?).then(|| {
            format!(
                "it moves goal {goal} off another goal ref, and the other half of that split (the tick dropping the goal there) is not on this hub: push that ref first (`loopx sync` does)"
            )
        }));
    }
    let shared = store.resolve(SHARED)?.map(|t| t.commit);
    let split_here = match (goalref::pin_of(store, &birth.message), shared) {
        (Some(pin), Some(shared)) => {
            (pin == shared || store.is_ancestor(pin, shared)?)
                && store.first_parent(pin)? == Some(parent)
                && is_shared_split(&store.message(pin)?)
        }
        _ => false,
    };
    Ok((!split_here).then(|| {
        format!(
            "it splits goal {goal} off, and the shared ref's half of that split is not on this hub's {SHARED}: push the shared ref first (`loopx sync` does)"
        )
    }))
}

/// The goal a `goal.split` tick keeps, if `message` is one.
fn kept_goal(message: &str) -> Option<String> {
    match message::parse(message).ok()?.op.change {
        Change::GoalSplit(GoalSplit { goal: Some(g), .. }) => Some(g.to_string()),
        _ => None,
    }
}

/// Whether `message` is the shared ref's `goal.split` (no goal kept).
fn is_shared_split(message: &str) -> bool {
    message::parse(message).is_ok_and(|p| {
        matches!(
            p.op.change,
            Change::GoalSplit(GoalSplit {
                goal: None,
                moved: None
            })
        )
    })
}

/// Whether one of this hub's goal refs holds the tick that moved `goal`
/// off the ref at `parent`: `goal.split` with `moved`, whose first parent
/// is `parent`.
fn moved_here(store: &Store, parent: Oid, goal: &str) -> Result<bool> {
    for (_, tip) in goalref::goal_refs(store)? {
        if tip == parent || !store.is_ancestor(parent, tip)? {
            continue;
        }
        for entry in store.history(tip) {
            let entry = entry?;
            if entry.commit == parent {
                break;
            }
            if entry.parent != Some(parent) {
                continue;
            }
            let moved = message::parse(&entry.message).is_ok_and(|p| {
                matches!(
                    &p.op.change,
                    Change::GoalSplit(GoalSplit { goal: None, moved: Some(g) }) if g.as_str() == goal
                )
            });
            if moved {
                return Ok(true);
            }
            break;
        }
    }
    Ok(false)
}

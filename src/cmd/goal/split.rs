//! `loopx goal split`: the one-command migration of a single-ref state to a
//! ref per goal (format 6, docs/scale.md "A ref per goal"). On top of the
//! current tip it writes a `goal.split` tick on `refs/loopx/state` (the
//! shared parts stay) and one on `refs/loopx/goals/<goal>` for every goal
//! (that goal stays), pinning the first. All refs move in one transaction
//! through the store's writer (`tx::goalref::land`): every lock taken and
//! every expected value checked before any ref moves, the shared ref's
//! compare-and-swap last, as the split's one commit point. Goal refs the
//! shared state does not name as split count for no reader, so a state is
//! never seen split without its goal refs, nor half split.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx::{self, goalref};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::GoalId;
use crate::op::Change;
use crate::store::{Oid, RefMove};
use crate::tx::goalref::LandError;

/// Move each goal onto its own ref, the shared parts staying on
/// refs/loopx/state (humans only; format 6)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// On a state already split: move this goal, added later to another
    /// goal's ref, onto a ref of its own (its todos and gates go with it)
    #[arg(conflicts_with = "list")]
    goal: Option<String>,
    /// Change nothing: list the goal refs of a split state
    #[arg(long)]
    list: bool,
}

#[derive(Serialize, Clone)]
struct Moved {
    goal: Option<GoalId>,
    #[serde(rename = "ref")]
    name: String,
    commit: String,
}

#[derive(Serialize)]
struct Wire {
    split: bool,
    refs: Vec<Moved>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let store = ctx.store()?;
    if args.list {
        let refs: Vec<Moved> = goalref::goal_refs(store)?
            .into_iter()
            .map(|(name, id)| Moved {
                goal: name
                    .strip_prefix(goalref::GOALS)
                    .and_then(|g| GoalId::new(g).ok()),
                name,
                commit: id.to_string(),
            })
            .collect();
        return emit(ctx, false, refs);
    }
    crate::cmd::tx::not_bare(ctx)?;
    if let Some(goal) = &args.goal {
        let goal = GoalId::new(goal).map_err(|e| Refusal::usage(Code::BadId, e))?;
        return move_goal(ctx, &goal);
    }
    if ctx.state_ref() != goalref::SHARED {
        return Err(Refusal::usage(
            Code::WrongRef,
            format!(
                "`goal split` moves the goals off {}, and this clone's state ref is {}",
                goalref::SHARED,
                ctx.state_ref()
            ),
        )
        .with_hint("run it without git config loopx.ref (or LOOPX_REF) set")
        .into());
    }
    let snap = tx::load(ctx)?;
    if snap.state.meta.goal_refs {
        return Err(Refusal::rule(
            Code::AlreadySplit,
            "the state is already split into a ref per goal",
        )
        .with_hint("`loopx goal split --list` names the goal refs")
        .into());
    }
    let goals: Vec<GoalId> = snap.state.goals.keys().cloned().collect();
    if goals.is_empty() {
        return Err(Refusal::rule(Code::NoGoal, "there is no goal to split off")
            .with_hint("add one with `loopx goal add`")
            .into());
    }
    for g in &goals {
        let name = goalref::goal_ref(g);
        if store.resolve(&name)?.is_some() {
            return Err(Refusal::rule(
                Code::AlreadySplit,
                format!("{name} exists already, from another state or an earlier split"),
            )
            .with_hint(format!(
                "a split that did not land leaves such refs: `loopx doctor --fix` removes them; else look at it with `git log {name}` and remove it with `git update-ref -d {name}` if it is not wanted, then run this again"
            ))
            .into());
        }
    }
    let committer = ctx.committer();
    let mut seal = crate::trust::Seal::default();
    let _turn = crate::queue::wait(store.common_dir(), crate::queue::PATIENCE);
    let mut write = |goal: Option<&GoalId>, extra: &[(&str, String)]| -> Result<Oid> {
        let mut op = tx::op(
            ctx,
            Change::GoalSplit(crate::op::GoalSplit {
                goal: goal.cloned(),
                moved: None,
            }),
        )?;
        seal.seal(
            ctx.repo()?,
            ctx.caller(),
            Some(snap.tip.commit),
            &snap.state,
            &mut op,
        )?;
        let written = tx::Tick::new(store, Some(&snap.tip), &snap.state, &op, &committer)
            .extra(extra)
            .write()?;
        Ok(written.tip.expect("an empty tick is written").commit)
    };
    let shared = write(None, &[])?;
    let mut moved = Vec::new();
    for g in &goals {
        let commit = write(Some(g), &[(goalref::TRAILER, shared.to_string())])?;
        moved.push((g.clone(), commit));
    }
    // One transaction: every goal ref is created and the shared ref moves
    // last, its compare-and-swap the split's one commit point.
    let created: Vec<(String, Oid)> = moved
        .iter()
        .map(|(g, commit)| (goalref::goal_ref(g), *commit))
        .collect();
    let point = RefMove {
        name: goalref::SHARED.to_owned(),
        new: Some(shared),
        expected: Some(snap.tip.commit),
    };
    goalref::land(
        store,
        &created,
        point,
        "loopx: split the goals onto their own refs",
        &committer,
    )
    .map_err(|e| not_landed(goalref::SHARED, e))?;
    let mut refs = vec![Moved {
        goal: None,
        name: goalref::SHARED.to_owned(),
        commit: shared.to_string(),
    }];
    refs.extend(moved.into_iter().map(|(g, c)| Moved {
        name: goalref::goal_ref(&g),
        goal: Some(g),
        commit: c.to_string(),
    }));
    emit(ctx, true, refs)
}

/// `goal split GOAL` on a split state: the goal ref that holds `goal` with
/// other goals gets a `goal.split` tick dropping it (`moved`), and the new
/// `refs/loopx/goals/<goal>` a first tick keeping only it, both on top of
/// that ref's tip and pinning the shared tip of now. Both move in one
/// transaction, the old ref last (the commit point): if it moved
/// meanwhile, nothing moved.
fn move_goal(ctx: &Ctx, goal: &GoalId) -> Result<Exit> {
    let store = ctx.store()?;
    let name = goalref::goal_ref(goal);
    let shared = store.for_ref(goalref::SHARED);
    let split = match shared.tip()? {
        Some(t) => tx::snapshot(&shared, t)?.state.meta.goal_refs,
        None => false,
    };
    if !split {
        return Err(Refusal::rule(
            Code::NotSplit,
            format!(
                "the state is not split into a ref per goal, so goal {goal} has no ref to leave"
            ),
        )
        .with_hint("`loopx goal split` (without a goal) splits every goal onto its own ref")
        .into());
    }
    if store.resolve(&name)?.is_some() {
        return Err(Refusal::rule(
            Code::AlreadySplit,
            format!("{name} exists already: goal {goal} has a ref of its own"),
        )
        .with_hint("`loopx goal split --list` names the goal refs; `loopx doctor --fix` removes one a move that did not land left behind")
        .into());
    }
    // The goal ref that holds it.
    let mut source = None;
    for (from, commit) in goalref::goal_refs(store)? {
        let from_store = store.for_ref(&from);
        let snap = tx::snapshot(&from_store, from_store.tip_at(commit)?)?;
        if snap.state.goals.contains_key(goal) {
            source = Some((from, from_store, snap));
            break;
        }
    }
    let Some((from, from_store, snap)) = source else {
        return Err(Refusal::rule(
            Code::UnknownGoal,
            format!("no goal ref here holds goal {goal}"),
        )
        .with_hint("`loopx sync` brings the team's goal refs; `loopx goal split --list` names them")
        .into());
    };
    let committer = ctx.committer();
    let mut seal = crate::trust::Seal::default();
    let _turn = crate::queue::wait(store.common_dir(), crate::queue::PATIENCE);
    // Both ticks pin the shared tip of now, on top of the same parent.
    let pin = goalref::for_write(&from_store, Some(&snap.tip), &snap.state)?
        .expect("a split state's goal ref pins");
    let mut before = snap.state.clone();
    let refresh = goalref::overlay(&mut before, &pin);
    let extra = [pin.trailer()];
    let mut write = |at: &crate::store::Store, change: crate::op::GoalSplit| -> Result<Oid> {
        let mut op = tx::op(ctx, Change::GoalSplit(change))?;
        seal.seal(
            ctx.repo()?,
            ctx.caller(),
            Some(snap.tip.commit),
            &before,
            &mut op,
        )?;
        let written = tx::Tick::new(at, Some(&snap.tip), &before, &op, &committer)
            .extra(&extra)
            .refresh(&refresh)
            .write()?;
        Ok(written.tip.expect("an empty tick is written").commit)
    };
    let new_store = store.for_ref(&name);
    let own = write(
        &new_store,
        crate::op::GoalSplit {
            goal: Some(goal.clone()),
            moved: None,
        },
    )?;
    let left = write(
        &from_store,
        crate::op::GoalSplit {
            goal: None,
            moved: Some(goal.clone()),
        },
    )?;
    // One transaction: the new ref is created and the ref the goal leaves
    // moves last, its compare-and-swap the move's one commit point.
    let point = RefMove {
        name: from.clone(),
        new: Some(left),
        expected: Some(snap.tip.commit),
    };
    goalref::land(
        store,
        &[(name.clone(), own)],
        point,
        &format!("loopx: moved goal {goal} onto its own ref"),
        &committer,
    )
    .map_err(|e| not_landed(&from, e))?;
    let refs = vec![
        Moved {
            goal: None,
            name: from,
            commit: left.to_string(),
        },
        Moved {
            goal: Some(goal.clone()),
            name,
            commit: own.to_string(),
        },
    ];
    emit(ctx, true, refs)
}

/// The error of a split whose refs did not all move: nothing moved, or
/// what the failed move left behind.
fn not_landed(name: &str, e: LandError) -> anyhow::Error {
    match e {
        LandError::Moved => Refusal::conflict(
            Code::RetriesExhausted,
            format!("{name} moved while the state was being split; nothing was split"),
        )
        .with_hint("run `loopx goal split` again")
        .into(),
        LandError::Failed { error, left } if left.is_empty() => {
            error.context(format!("{name} did not move; nothing was split"))
        }
        LandError::Failed { error, left } => error.context(format!(
            "{name} did not move, so nothing was split, but {} could not be removed again (no reader counts it; `loopx doctor --fix` removes it)",
            left.join(", ")
        )),
    }
}

fn emit(ctx: &Ctx, split: bool, refs: Vec<Moved>) -> Result<Exit> {
    let text = || {
        let mut out = String::new();
        if split {
            out.push_str("Split the state into a ref per goal (format 6):\n");
        }
        for r in &refs {
            out.push_str(&format!(
                "  {}  {}{}\n",
                r.name,
                &r.commit[..8.min(r.commit.len())],
                r.goal
                    .as_ref()
                    .map_or(" (shared: settings, signers, machines)".to_owned(), |g| {
                        format!(" (goal {g})")
                    })
            ));
        }
        if split {
            out.push_str("Point each clone at its goal: `git config loopx.ref refs/loopx/goals/GOAL`; `loopx sync` pushes every ref.");
        } else if refs.is_empty() {
            out.push_str("No goal refs: the state is on one ref.");
        }
        out.trim_end().to_owned()
    };
    ctx.out.emit(
        &Wire {
            split,
            refs: refs.clone(),
        },
        text,
    )?;
    Ok(Exit::Ok)
}

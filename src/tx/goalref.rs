//! A ref per goal (format 6, docs/scale.md "A ref per goal"): after
//! `goal.split`, `refs/loopx/state` holds the shared parts (`loopx.toml`,
//! signers, machines) and each goal lives on `refs/loopx/goals/<goal>`.
//! Every tick on a goal ref names the shared tip it was applied against in
//! a `Loopx-Shared` trailer (its *pin*); its tree carries that tip's shared
//! files, so each goal ref is a whole state every single-ref reader can
//! read. The writer (`tx::Commit`) and `verify` (`verify::check`) both
//! apply a goal tick to (its parent's goal state, the pinned shared parts)
//! through [`overlay`], so the one definition of a valid tick still holds.

use std::cell::{Cell, RefCell};

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::model::{GoalId, State, files};
use crate::op::{Change, Op};
use crate::store::{Oid, Store, Tip};

/// The folder of the goal refs.
pub const GOALS: &str = "refs/loopx/goals/";
/// The shared ref of a split state.
pub const SHARED: &str = crate::store::DEFAULT_REF;
/// The trailer that pins a goal tick's shared tip.
pub const TRAILER: &str = "Loopx-Shared";

/// The ref of one goal of a split state.
pub fn goal_ref(goal: &GoalId) -> String {
    format!("{GOALS}{goal}")
}

/// Whether `name` is a goal ref.
pub fn is_goal_ref(name: &str) -> bool {
    name.strip_prefix(GOALS).is_some_and(|g| !g.is_empty())
}

/// Whether a state is a goal ref's: split, and holding a goal.
pub fn is_goal_state(s: &State) -> bool {
    s.meta.goal_refs && !s.goals.is_empty()
}

/// Whether a state is the shared ref's of a split state: split, no goal.
pub fn is_shared_state(s: &State) -> bool {
    s.meta.goal_refs && s.goals.is_empty()
}

/// The shared parts of a pinned shared tip.
pub struct Pin {
    pub commit: Oid,
    pub shared: State,
}

impl Pin {
    /// The trailer a goal tick carries.
    pub fn trailer(&self) -> (&'static str, String) {
        (TRAILER, self.commit.to_string())
    }
}

/// Only the shared parts of a state.
fn shared_only(s: &State) -> State {
    State {
        meta: s.meta.clone(),
        signers: s.signers.clone(),
        machines: s.machines.clone(),
        ..State::default()
    }
}

/// Puts the pinned shared parts into `before` (the parent's goal state)
/// and returns the files that change in the parent's tree for it (none
/// when the pin did not move).
pub fn overlay(before: &mut State, pin: &Pin) -> Vec<files::Change> {
    if before.same_shared(&pin.shared) {
        return Vec::new();
    }
    let refresh = files::changes(
        &shared_only(before),
        &shared_only(&pin.shared),
        &files::Records::default(),
    );
    before.shared_from(&pin.shared);
    refresh
}

thread_local! {
    /// The last shared state read, by commit: a chain's ticks mostly pin
    /// one tip, so verify reads it once.
    static LAST: RefCell<Option<(Oid, State)>> = const { RefCell::new(None) };
}

thread_local! {
    /// Set by a hub's guard for the push it checks: pins count only on the
    /// hub's own shared ref ([`hub_guard`]).
    static HUB_GUARD: Cell<bool> = const { Cell::new(false) };
}

/// For the hub's guard: from now on in this thread a pin counts only on
/// this repository's own `refs/loopx/state`. On a hub anyone who may push
/// can write any `refs/loopx/*` ref that is a valid chain, a
/// `refs/loopx/verified/<name>` too, so such a ref proves nothing about
/// the shared chain; and a shared tip the same push brings is not there
/// yet either (git may take the goal ref of a plain push and refuse its
/// shared ref, which lost a race after the guard said yes). The shared ref
/// is pushed first, alone (`loopx sync` does).
pub fn hub_guard() {
    HUB_GUARD.with(|g| g.set(true));
}

thread_local! {
    /// Shared ticks a sync replayed that its own goal ticks still pin
    /// ([`accepting`]).
    static REPLACED: RefCell<Vec<Oid>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with pins on `commits` (or on any tick before them) taken as
/// on the shared chain, and only for the time of `f`: a sync verifying its
/// own goal ticks whose pins [`replaced_pin`] names, before it replays
/// them. Never used by the hub's guard.
pub fn accepting<T>(commits: &[Oid], f: impl FnOnce() -> T) -> T {
    let before = REPLACED.with(|p| {
        let mut p = p.borrow_mut();
        let n = p.len();
        p.extend_from_slice(commits);
        n
    });
    let out = f();
    REPLACED.with(|p| p.borrow_mut().truncate(before));
    out
}

/// Whether a goal tick's pin `pin` is a shared tick that a sync replayed
/// or refused: a commit of the shared ref's chain (it shares history with
/// this clone's shared ref) that is not on it any more. The hub only moves
/// its shared ref forward, so the ticks from where the two chains parted
/// up to the pin were never on the hub: this clone's own shared ticks,
/// which its sync wrote again on top of another clone's (the same op ids)
/// or refused. A goal tick pinning one is replayed (docs/sync.md), which
/// applies and checks its op again on the shared parts of now and pins
/// them: an op that needed what was refused (a key, a setting) becomes a
/// rejection record, never a tick on a pin the hub lacks. Verification
/// still requires the pin to be a shared state ([`for_check`]).
pub fn replaced_pin(store: &Store, pin: Oid) -> Result<bool> {
    let Some(tip) = store.resolve(SHARED)?.map(|t| t.commit) else {
        return Ok(false);
    };
    if pin == tip || !store.has_object(pin) || store.is_ancestor(pin, tip)? {
        return Ok(false);
    }
    Ok(store.merge_base(pin, tip)?.is_some())
}

/// Why a tick's pin does not hold ([`for_check`]), or why it could not be
/// checked.
#[derive(Debug)]
pub enum PinError {
    /// The pin breaks a rule: what is wrong, in words.
    Invalid(String),
    /// Reading the repository failed: nothing is decided.
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for PinError {
    fn from(e: anyhow::Error) -> Self {
        PinError::Failed(e)
    }
}

/// The shared state at `commit`, which must be a split state's shared tip.
fn shared_at(store: &Store, commit: Oid) -> std::result::Result<State, PinError> {
    if let Some(s) = LAST.with(|l| {
        l.borrow()
            .as_ref()
            .filter(|(c, _)| *c == commit)
            .map(|(_, s)| s.clone())
    }) {
        return Ok(s);
    }
    if !store.has_object(commit) {
        return Err(PinError::Invalid(format!(
            "its pinned shared tip {} is not in this repository (sync the shared ref {SHARED} first)",
            commit.short(8)
        )));
    }
    let state = super::snapshot(store, store.tip_at(commit)?)?.state;
    if !is_shared_state(&state) {
        return Err(PinError::Invalid(format!(
            "its pinned shared tip {} is not the shared state of a split state",
            commit.short(8)
        )));
    }
    LAST.with(|l| *l.borrow_mut() = Some((commit, state.clone())));
    Ok(state)
}

/// The pin of a tick's message, if it has one.
pub fn pin_of(store: &Store, message: &str) -> Option<Oid> {
    crate::trailer::value(message, TRAILER).and_then(|v| store.oid(v.trim()).ok())
}

/// For a writer on a goal ref: the shared tip to pin (`refs/loopx/state`
/// here, else the parent's pin) and its state. None off goal refs.
pub fn for_write(store: &Store, parent: Option<&Tip>, before: &State) -> Result<Option<Pin>> {
    if !is_goal_ref(store.state_ref()) || !is_goal_state(before) {
        return Ok(None);
    }
    // The newer of this clone's shared tip and the parent's pin: pins
    // never move back, even onto a parent a sync took from a clone that
    // had seen a newer shared tip than this one.
    let local = store.resolve(SHARED)?.map(|t| t.commit);
    let before = parent
        .and_then(|p| store.message(p.commit).ok())
        .and_then(|m| pin_of(store, &m));
    let commit = match (local, before) {
        (Some(l), Some(p)) if l != p && !store.is_ancestor(p, l)? => p,
        (Some(l), _) => l,
        (None, Some(p)) => p,
        (None, None) => return Err(no_shared(store)),
    };
    match shared_at(store, commit) {
        Ok(shared) => Ok(Some(Pin { commit, shared })),
        Err(PinError::Failed(e)) => Err(e),
        Err(PinError::Invalid(why)) => Err(Refusal::error(
            Code::CorruptState,
            format!("{SHARED} cannot be pinned: {why}"),
        )
        .with_hint("`loopx sync` brings the team's shared ref; `loopx verify` checks it")
        .into()),
    }
}

fn no_shared(store: &Store) -> anyhow::Error {
    Refusal::error(
        Code::NoState,
        format!(
            "{} is a goal ref, but there is no shared ref {SHARED} to pin",
            store.state_ref()
        ),
    )
    .with_hint("`loopx sync` brings it from the hub")
    .into()
}

/// A writer's rule on a split state: a goal ref's tick changes no shared
/// part, and the shared ref's changes no goal part.
pub fn check_write(state_ref: &str, before: &State, after: &State) -> Result<(), Refusal> {
    if !before.meta.goal_refs {
        return Ok(());
    }
    if is_goal_ref(state_ref) && !after.same_shared(before) {
        return Err(Refusal::rule(
            Code::WrongRef,
            format!(
                "this op changes settings, signers or machines, which live on the shared ref {SHARED}, and this clone writes the goal ref {state_ref}"
            ),
        )
        .with_hint(format!(
            "run it against the shared ref: `LOOPX_REF={SHARED} loopx …` (then `loopx sync` with the same setting); nothing was written"
        )));
    }
    if !is_goal_ref(state_ref) && !goal_parts_empty(after) {
        return Err(Refusal::rule(
            Code::WrongRef,
            format!(
                "the state is split into a ref per goal: goals, agents, todos, gates and quota live on {GOALS}<goal>, not on {state_ref}"
            ),
        )
        .with_hint(
            "point this clone at a goal's ref: `git config loopx.ref refs/loopx/goals/GOAL` (or LOOPX_REF=…); nothing was written",
        ));
    }
    Ok(())
}

/// Whether a state holds no goal part (a split state's shared ref).
pub fn goal_parts_empty(s: &State) -> bool {
    s.goals.is_empty()
        && s.agents.is_empty()
        && s.todos.is_empty()
        && s.gates.is_empty()
        && s.quota.is_empty()
}

/// Whether `op` is a goal ref's first tick at the first split: a
/// `goal.split` keeping one goal, on a parent that is not a goal ref's
/// (a goal moved off a split state's goal ref later is an ordinary goal
/// tick: it pins the shared tip of its time, and applies against it).
pub fn first_split_off(op: &Op, parent: Option<&State>) -> bool {
    matches!(
        op.change,
        Change::GoalSplit(crate::op::GoalSplit { goal: Some(_), .. })
    ) && !parent.is_some_and(is_goal_state)
}

/// What `verify` requires of a tick's pin, given its parent (None: the
/// first tick) and its op: the pin to apply it against (None where a tick
/// pins nothing), or why the tick is not valid.
pub fn for_check(
    store: &Store,
    parent: Option<(&Tip, &State)>,
    op: &Op,
    message: &str,
) -> std::result::Result<Option<Pin>, PinError> {
    let pinned = crate::trailer::value(message, TRAILER);
    let splitting_off = first_split_off(op, parent.map(|(_, s)| s));
    let on_goal_ref = parent.is_some_and(|(_, s)| is_goal_state(s));
    let needs = splitting_off || on_goal_ref;
    let Some(pinned) = pinned else {
        return if needs {
            Err(PinError::Invalid(format!(
                "it is a tick on a goal ref and names no shared tip ({TRAILER})"
            )))
        } else {
            Ok(None)
        };
    };
    if !needs {
        return Err(PinError::Invalid(format!(
            "it pins a shared tip ({TRAILER}) but is not a tick on a goal ref"
        )));
    }
    let Ok(commit) = store.oid(pinned.trim()) else {
        return Err(PinError::Invalid(format!(
            "its {TRAILER} {pinned:?} is not a commit id"
        )));
    };
    let shared = shared_at(store, commit)?;
    // On the shared ref's chain as this repository verified it: the last
    // verified tip of its own `refs/loopx/state` (the mark outside `refs/`
    // that `verify::current` brings up to the tip before a goal ref is
    // checked; on a hub, its own ref, which only guarded pushes move) or
    // the shared ref as verified from a remote
    // (`refs/loopx/verified/<remote>`). Never the ref itself on a clone (a
    // plain fetch or `update-ref` moves it unverified), nor a
    // remote-tracking copy: a forged shared state (another signing policy,
    // a machine admitted by nobody) could be pinned through it.
    let hub = HUB_GUARD.with(Cell::get);
    let own = if hub {
        store.resolve(SHARED)?.map(|t| t.commit)
    } else {
        store.verified_mark(SHARED)
    };
    let mut tips: Vec<Oid> = own.into_iter().collect();
    if !hub {
        tips.extend(
            store
                .refs_under("refs/loopx/verified/")?
                .into_iter()
                .filter(|(n, _)| !n.contains('@'))
                .map(|(_, id)| id),
        );
    }
    // And a shared tick this clone's sync replayed, while it verifies its
    // own goal ticks that pin it, before replaying them ([`accepting`]).
    tips.extend(REPLACED.with(|p| p.borrow().clone()));
    let mut on_chain = false;
    for t in tips {
        if t == commit || store.is_ancestor(commit, t)? {
            on_chain = true;
            break;
        }
    }
    if !on_chain {
        return Err(PinError::Invalid(format!(
            "its pinned shared tip {} is not on the shared ref {SHARED}",
            commit.short(8)
        )));
    }
    if let Some((p, _)) = parent {
        if splitting_off {
            // Both sides of the split start from the same single-ref tick.
            let first = store.first_parent(commit)?;
            if first != Some(p.commit) {
                return Err(PinError::Invalid(format!(
                    "it splits a goal off, but its pinned shared tip {} is not the split of the same tick",
                    commit.short(8)
                )));
            }
        } else if let Some(before) = pin_of(store, &store.message(p.commit)?)
            && before != commit
            && !store.is_ancestor(before, commit)?
        {
            return Err(PinError::Invalid(format!(
                "its pinned shared tip {} is older than its parent's ({}): pins never move back",
                commit.short(8),
                before.short(8)
            )));
        }
    }
    Ok(Some(Pin { commit, shared }))
}

/// Every goal ref here that counts, with its tip: none unless the shared
/// ref's state is split. `goal split` moves the shared ref last, as its
/// one commit point, so the goal refs of a split that did not land (a
/// crash between its ref moves) are ignored by every reader; `loopx
/// doctor` names them ([`orphans`]) and `--fix` removes them.
pub fn goal_refs(store: &Store) -> Result<Vec<(String, Oid)>> {
    let all = store.refs_under(GOALS)?;
    if all.is_empty() || !shared_is_split(store)? {
        return Ok(Vec::new());
    }
    Ok(all)
}

/// Whether `refs/loopx/state` holds a split state (read from its settings
/// file alone: `goal_refs = true`).
fn shared_is_split(store: &Store) -> Result<bool> {
    let Some(tip) = store.resolve(SHARED)? else {
        return Ok(false);
    };
    Ok(store.read_file(tip.tree, files::META)?.is_some_and(|b| {
        String::from_utf8_lossy(&b)
            .lines()
            .any(|l| l.trim() == "goal_refs = true")
    }))
}

/// Goal refs no reader counts, left by a split that did not land: every
/// goal ref while the shared state is not split (a `goal split` stopped
/// before its shared ref moved), and on a split state a goal ref
/// `refs/loopx/goals/<g>` while another goal ref still holds goal `g` (a
/// `goal split <g>` stopped before the ref it leaves moved). With their
/// tips, in name order.
pub fn orphans(store: &Store) -> Result<Vec<(String, Oid)>> {
    let all = store.refs_under(GOALS)?;
    if all.is_empty() || !shared_is_split(store)? {
        return Ok(all);
    }
    let mut holders: Vec<(String, Vec<GoalId>)> = Vec::with_capacity(all.len());
    for (name, tip) in &all {
        let state = super::snapshot(store, store.tip_at(*tip)?)?.state;
        holders.push((name.clone(), state.goals.keys().cloned().collect()));
    }
    Ok(all
        .into_iter()
        .filter(|(name, _)| is_moved_half(name, &holders))
        .collect())
}

/// Whether goal ref `name` is the new half of a move whose other half did
/// not land: another goal ref (of `holders`: each ref's goals) still holds
/// its goal.
fn is_moved_half(name: &str, holders: &[(String, Vec<GoalId>)]) -> bool {
    let Some(goal) = name.strip_prefix(GOALS) else {
        return false;
    };
    holders
        .iter()
        .any(|(other, goals)| other != name && goals.iter().any(|g| g.as_str() == goal))
}

/// Why a split's refs did not all move ([`land`]).
#[derive(Debug)]
pub enum LandError {
    /// A ref had moved, or its lock was busy, when the transaction checked:
    /// nothing moved.
    Moved,
    /// The transaction failed while moving; the goal refs it created were
    /// removed again, except `left` (the commit point did not move, so no
    /// reader counts them; `loopx doctor --fix` removes them).
    Failed {
        error: anyhow::Error,
        left: Vec<String>,
    },
}

/// Lands a split: creates the goal refs `created` (name, first tick) and
/// moves `commit_point` (the shared ref at the first split; the goal ref a
/// goal leaves later), in one transaction through the store's writer:
/// every lock is taken and every expected value checked before any ref
/// moves, and the commit point moves last. Should the move itself fail
/// half way, the goal refs it made are removed again (only while they
/// still name this split's ticks), and whatever could not be removed is
/// said ([`LandError::Failed`]).
pub fn land(
    store: &Store,
    created: &[(String, Oid)],
    commit_point: crate::store::RefMove,
    reflog: &str,
    committer: &crate::store::Person,
) -> std::result::Result<(), LandError> {
    use crate::store::{CasError, RefMove};
    let point = (commit_point.name.clone(), commit_point.new);
    let mut moves: Vec<RefMove> = created
        .iter()
        .map(|(name, tip)| RefMove {
            name: name.clone(),
            new: Some(*tip),
            expected: None,
        })
        .collect();
    let point_from = commit_point.expected;
    let on_verified = point_from.is_none() || store.verified_mark(&point.0) == point_from;
    moves.push(commit_point);
    let writer = store.writer();
    let mut tries = 0;
    let error = loop {
        tries += 1;
        match writer.transaction(&moves, reflog, committer) {
            Ok(()) => {
                // Ticks loopx wrote on a verified tip: their marks move too.
                if on_verified {
                    for (name, tip) in created {
                        store.mark_verified(name, *tip);
                    }
                    if let Some(new) = point.1 {
                        store.mark_verified(&point.0, new);
                    }
                }
                return Ok(());
            }
            // A lock whose writer is gone (killed mid-move) is taken back.
            Err(CasError::Locked { lock, .. }) if tries < 4 && writer.recover_lock(&lock) => {}
            Err(CasError::Moved | CasError::Locked { .. }) => return Err(LandError::Moved),
            Err(CasError::Other(e)) => break e,
        }
    };
    // The commit point moves last: where it moved, every goal ref did.
    if point.1.is_some() && store.resolve(&point.0).ok().flatten().map(|t| t.commit) == point.1 {
        return Ok(());
    }
    let mut left = Vec::new();
    for (name, tip) in created {
        match store.resolve(name) {
            Ok(Some(t)) if t.commit == *tip => {
                if writer.delete_ref(name, Some(*tip)).is_err() {
                    left.push(name.clone());
                }
            }
            Ok(_) => {}
            Err(_) => left.push(name.clone()),
        }
    }
    Err(LandError::Failed { error, left })
}

/// What a reader of the shared ref shows of a split state: the shared
/// parts with every goal ref's goals, todos, gates, agents and quota as
/// this clone last wrote or fetched them. An agent (or quota ledger) on
/// more than one goal ref shows its record with the latest turn. Any other
/// state is returned as it is.
pub fn union(store: &Store, mut state: State) -> Result<State> {
    if !is_shared_state(&state) || store.state_ref() != SHARED {
        return Ok(state);
    }
    let mut states = Vec::new();
    for (name, tip) in goal_refs(store)? {
        states.push((name, super::snapshot(store, store.tip_at(tip)?)?.state));
    }
    // The new half of a `goal split <g>` whose other half did not land
    // counts for nothing ([`orphans`]).
    let holders: Vec<(String, Vec<GoalId>)> = states
        .iter()
        .map(|(n, g)| (n.clone(), g.goals.keys().cloned().collect()))
        .collect();
    states.retain(|(name, _)| !is_moved_half(name, &holders));
    for (_, g) in states {
        for (k, v) in g.goals.iter() {
            state.goals.insert(k.clone(), v.clone());
        }
        for (k, v) in g.todos.iter() {
            state.todos.insert(k.clone(), v.clone());
        }
        for (k, v) in g.gates.iter() {
            state.gates.insert(k.clone(), v.clone());
        }
        for (k, v) in g.agents.iter() {
            let newer = state.agents.get(k).is_none_or(|a| {
                a.last_turn.as_ref().map(|t| t.at) < v.last_turn.as_ref().map(|t| t.at)
            });
            if newer {
                state.agents.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in g.quota.iter() {
            if !state.quota.contains_key(k) {
                state.quota.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(state)
}

/// The tips a reader of `start` walks: `start` alone, or on the shared ref
/// with goal refs here, `start` and every goal ref's tip.
pub fn view_tips(store: &Store, start: Oid) -> Result<Vec<Oid>> {
    let mut tips = vec![start];
    if store.state_ref() != SHARED {
        return Ok(tips);
    }
    let goals = goal_refs(store)?;
    // Only a split state's (goal refs made for states of their own, with
    // git config loopx.ref, stay apart).
    let split = !goals.is_empty()
        && store
            .read_file(store.tip_at(start)?.tree, files::META)?
            .is_some_and(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .any(|l| l.trim() == "goal_refs = true")
            });
    if split {
        tips.extend(goals.into_iter().map(|(_, id)| id));
    }
    Ok(tips)
}

/// The first-parent chains of several tips merged newest first (by commit
/// time), each commit once: the ticks before a split are on every chain.
pub struct Merged<'s> {
    heads: Vec<(Option<crate::store::Entry>, crate::store::FirstParents<'s>)>,
    seen: std::collections::HashSet<Oid>,
}

impl Iterator for Merged<'_> {
    type Item = Result<crate::store::Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            for (head, rest) in &mut self.heads {
                if head.is_none() {
                    match rest.next() {
                        Some(Ok(e)) => *head = Some(e),
                        Some(Err(e)) => return Some(Err(e)),
                        None => {}
                    }
                }
            }
            let newest = self
                .heads
                .iter()
                .enumerate()
                .filter_map(|(i, (h, _))| h.as_ref().map(|e| (e.time, i)))
                .max_by_key(|(t, i)| (*t, std::cmp::Reverse(*i)))?
                .1;
            let e = self.heads[newest].0.take().expect("a head");
            if self.seen.insert(e.commit) {
                return Some(Ok(e));
            }
        }
    }
}

/// [`Merged`] over `tips`.
pub fn walk<'s>(store: &'s Store, tips: &[Oid]) -> Merged<'s> {
    Merged {
        heads: tips.iter().map(|t| (None, store.history(*t))).collect(),
        seen: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Goal, Signer, SignerName};

    fn split_state(goal: Option<&str>) -> State {
        let mut s = State::default();
        s.meta.format = crate::model::FORMAT;
        s.meta.goal_refs = true;
        if let Some(g) = goal {
            let id = GoalId::new(g).unwrap();
            let goal: Goal = toml::from_str(&format!(
                "id = \"{g}\"\nobjective = \"x\"\nstatus = \"active\"\ncreated_at = \"2026-01-01T09:00:00Z\"\ncreated_by = \"human:Ada <ada@example.com>\"\nupdated_at = \"2026-01-01T09:00:00Z\"\n[quota]\nslots = 1\nwindow = \"1d\"\n"
            ))
            .unwrap();
            s.goals.insert(id, goal);
        }
        s
    }

    fn signer(s: &mut State, name: &str) {
        let signer: Signer = toml::from_str(&format!(
            "name = \"{name}\"\nkey = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDq1\"\nannounced_by = \"human:Ada <ada@example.com>\"\nannounced_at = \"2026-01-01T09:00:00Z\"\n"
        ))
        .unwrap();
        s.signers.insert(SignerName::new(name).unwrap(), signer);
    }

    #[test]
    fn names_and_kinds_of_refs_and_states() {
        assert!(is_goal_ref("refs/loopx/goals/api"));
        assert!(!is_goal_ref("refs/loopx/goals/"));
        assert!(!is_goal_ref(SHARED));
        assert!(is_goal_state(&split_state(Some("api"))));
        assert!(is_shared_state(&split_state(None)));
        assert!(!is_shared_state(&State::default()));
    }

    #[test]
    fn an_overlay_writes_the_shared_files_only_when_the_pin_moved() {
        let mut goal = split_state(Some("api"));
        let mut shared = split_state(None);
        let same = Pin {
            commit: Oid::from_hex_for_tests(1),
            shared: shared.clone(),
        };
        assert!(overlay(&mut goal, &same).is_empty());
        signer(&mut shared, "ada");
        let moved = Pin {
            commit: Oid::from_hex_for_tests(2),
            shared,
        };
        let refresh = overlay(&mut goal, &moved);
        let paths: Vec<&str> = refresh.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["signers/ada.toml"]);
        assert!(goal.same_shared(&moved.shared));
        assert_eq!(goal.goals.len(), 1, "the goal's parts stay");
    }

    #[test]
    fn a_goal_ref_writes_no_shared_part_and_the_shared_ref_no_goal_part() {
        let before = split_state(Some("api"));
        let mut after = before.clone();
        signer(&mut after, "ada");
        let r = check_write("refs/loopx/goals/api", &before, &after).unwrap_err();
        assert_eq!(r.code.as_str(), "wrong-ref");
        assert!(check_write(SHARED, &split_state(None), &after).is_err());
        let mut shared_after = split_state(None);
        signer(&mut shared_after, "ada");
        assert!(check_write(SHARED, &split_state(None), &shared_after).is_ok());
        // A state that is not split is not judged.
        assert!(check_write(SHARED, &State::default(), &after).is_ok());
    }
}

//! Step 2 of a round: what is there, as a plain value. The tips (the last
//! synced one read before the local one, so that another sync in this
//! clone moving both in between never looks like a rewrite), how they
//! relate, and the ticks on each side of their merge base, each verified
//! once through `crate::verify` (signatures included) before anything may
//! take them: the remote's from the last tip verified for that remote, the
//! local ones before they are pushed or replayed. A bad commit is recorded
//! here as a finding, for [`super::decide`] to report.

use std::collections::HashMap;

use anyhow::Result;

use crate::op::{Change, GoalSplit, message};
use crate::repo::Repo;
use crate::store::{Oid, Tip};
use crate::tx::goalref;
use crate::verify::{self, Finding, Unverified, Verified};

use super::{Names, Options, Progress};

/// A side's ticks as verified: or the first commit that is not a valid
/// tick.
pub(super) type Side<T> = std::result::Result<T, Finding>;

/// A side as checked: the verified side or its finding, for `decide`; a
/// failure to read the repository returns from the enclosing function
/// (the round stops, as on any I/O error).
macro_rules! side {
    ($checked:expr) => {
        match $checked {
            Ok(v) => Ok(v),
            Err(Unverified::Invalid(f)) => Err(f),
            Err(Unverified::Failed(e)) => return Err(e),
        }
    };
}

/// How the local and remote tips relate, each shape with the tips it
/// relates and the sides observe verified for it (so deciding never
/// unpacks an optional tip).
pub(super) enum Shape {
    /// Neither side has a state.
    Empty,
    /// Both hold the same tip.
    Same { tip: Tip },
    /// Only this clone has a state, and it never synced: how its first
    /// push goes.
    LocalOnly { local: Tip, first: First },
    /// Only this clone has a state, although it synced `synced` with the
    /// remote: the remote lost it.
    RemoteGone { synced: Tip },
    /// Only the remote has a state: a first sync.
    RemoteOnly {
        remote: Tip,
        theirs: Side<RemoteSide>,
    },
    /// The fetched remote tip is older than one this clone already synced
    /// with (another sync here fetched later and finished first).
    StaleFetch,
    /// The remote no longer contains the tip last synced with it;
    /// `theirs` is verified only to adopt it (`--adopt-remote`).
    Rewritten {
        local: Tip,
        remote: Tip,
        synced: Tip,
        theirs: Option<Side<RemoteSide>>,
    },
    /// The two states share no history; `theirs` as for `Rewritten`.
    Unrelated {
        local: Tip,
        remote: Tip,
        theirs: Option<Side<RemoteSide>>,
    },
    /// The local tip is the merge base: fast-forward.
    Behind {
        local: Tip,
        remote: Tip,
        theirs: Side<RemoteSide>,
    },
    /// The remote tip is the merge base: push.
    Ahead {
        local: Tip,
        remote: Tip,
        ours: Side<LocalSide>,
    },
    /// Both have ticks beyond the merge base `base`: replay (also a goal
    /// ref ahead whose ticks pin shared ticks a sync replayed, which are
    /// replayed to pin the shared tip of now).
    Diverged {
        local: Tip,
        remote: Tip,
        base: Oid,
        sides: Side<Both>,
    },
}

/// How a never-synced local state goes to the remote.
pub(super) enum First {
    /// A goal ref made by `goal split` here ([`Fresh`]).
    Fresh(Fresh),
    /// As it is.
    Push(Side<LocalSide>),
}

/// Both sides of a replay: the local ticks verified, and then the
/// remote's.
pub(super) struct Both {
    pub(super) ours: LocalSide,
    pub(super) theirs: Side<RemoteSide>,
}

impl Shape {
    /// The remote tip, when this shape verified the remote's ticks up to
    /// it (sync records it as verified).
    pub(super) fn verified_remote(&self) -> Option<Oid> {
        match self {
            Shape::RemoteOnly {
                remote,
                theirs: Ok(_),
            }
            | Shape::Behind {
                remote,
                theirs: Ok(_),
                ..
            }
            | Shape::Rewritten {
                remote,
                theirs: Some(Ok(_)),
                ..
            }
            | Shape::Unrelated {
                remote,
                theirs: Some(Ok(_)),
                ..
            }
            | Shape::Diverged {
                remote,
                sides: Ok(Both { theirs: Ok(_), .. }),
                ..
            } => Some(remote.commit),
            _ => None,
        }
    }
}

/// The remote's ticks beyond the merge base, verified.
pub(super) struct RemoteSide {
    /// The state at the remote's tip.
    pub(super) verified: Verified,
    /// Commits beyond the base.
    pub(super) commits: usize,
    /// Their op ids, each with the content hash of its op
    /// (`trust::op_digest`): a replay does not apply an op the remote has,
    /// and refuses one whose id the remote holds with other content.
    pub(super) ops: HashMap<String, String>,
    /// The remote chain's identity (its root commit), which a replayed
    /// signature must bind (format 4).
    pub(super) state_id: Option<String>,
}

/// The local ticks beyond the merge base, verified and parsed, oldest
/// first.
pub(super) struct LocalSide {
    pub(super) ticks: Vec<(Oid, message::Parsed)>,
}

/// Everything a round decides from.
pub(super) struct Observed {
    pub(super) shape: Shape,
}

/// How a goal ref the remote has never had goes there. `goal split`
/// writes two halves, on top of one tick: the new goal ref's first tick
/// (keeping the goal) and the other half, on the ref it leaves (a tick
/// dropping it, `moved`) or at the first split on the shared ref. The
/// other half goes first: until it is on the remote, the goal is still on
/// the ref it leaves there, and the new ref would put it on two refs at
/// once (two clones could claim one todo on both). Pushed in that order,
/// a sync cut off between the two leaves the goal on neither ref of the
/// remote, with nothing lost here, and the next sync pushes the new ref.
pub(super) enum Fresh {
    /// The other half is not on the remote yet: push nothing this round.
    Wait(String),
    /// The other half landed on another parent (a sync replayed it onto
    /// ticks it did not know), or the new ref's ticks pin shared ticks a
    /// sync replayed or refused: write the new ref's ticks again, from its
    /// first, on top of `onto` (the other half's parent on the remote), and
    /// push that as the ref's first state.
    Rebuild {
        onto: Box<crate::tx::Snapshot>,
        state_id: Option<String>,
        side: std::result::Result<LocalSide, Finding>,
        /// At the first split, the pin of the new first tick: the shared
        /// ref's split tick, whose parent is `onto` (`verify`'s rule).
        first_pin: Option<Oid>,
    },
}

/// Reads the tips, relates them, and verifies what the round may take or
/// send. Writes nothing.
pub(super) fn observe(
    repo: &Repo,
    names: &Names,
    remote: Option<Tip>,
    opts: &Options,
    refetched: bool,
    progress: Progress,
) -> Result<Observed> {
    let store = repo.store();
    // The synced tip first: it only moves after the local ref has, so a
    // local tip read after it always contains it.
    let synced = store.resolve(&names.synced)?;
    let local = store.tip()?;
    let shape = |shape| Ok(Observed { shape });
    let (local, remote) = match (local, remote) {
        (None, None) => return shape(Shape::Empty),
        (Some(local), None) => {
            if let Some(synced) = synced {
                return shape(Shape::RemoteGone { synced });
            }
            let first = match fresh_goal_ref(repo, opts, &local, progress)? {
                Some(fresh) => First::Fresh(fresh),
                None => First::Push(side!(local_side(repo, None, &local, progress))),
            };
            return shape(Shape::LocalOnly { local, first });
        }
        (None, Some(remote)) => {
            let theirs = side!(remote_side(repo, names, None, &remote, progress));
            return shape(Shape::RemoteOnly { remote, theirs });
        }
        (Some(l), Some(r)) => (l, r),
    };
    if local.commit == remote.commit {
        return shape(Shape::Same { tip: remote });
    }
    let base = store.merge_base(local.commit, remote.commit)?;
    if let Some(s) = &synced
        && !refetched
        && s.commit != remote.commit
        && store.is_ancestor(remote.commit, s.commit)?
        && store.is_ancestor(s.commit, local.commit)?
    {
        return shape(Shape::StaleFetch);
    }
    let rewritten = match &synced {
        Some(s) => !store.is_ancestor(s.commit, remote.commit)?,
        None => false,
    };
    let adopt = |base: Option<Oid>, remote: &Tip| -> Result<Option<Side<RemoteSide>>> {
        if !opts.adopt_remote {
            return Ok(None);
        }
        Ok(Some(side!(remote_side(
            repo, names, base, remote, progress
        ))))
    };
    let base = match (base, synced) {
        (base, Some(synced)) if rewritten => {
            let theirs = adopt(base, &remote)?;
            return shape(Shape::Rewritten {
                local,
                remote,
                synced,
                theirs,
            });
        }
        (None, _) => {
            let theirs = adopt(None, &remote)?;
            return shape(Shape::Unrelated {
                local,
                remote,
                theirs,
            });
        }
        (Some(b), _) => b,
    };
    if base == local.commit {
        let theirs = side!(remote_side(repo, names, Some(base), &remote, progress));
        return shape(Shape::Behind {
            local,
            remote,
            theirs,
        });
    }
    // The local ticks first, so a commit loopx did not write is named the
    // same way wherever it is.
    let replaced = replaced_pins(repo, Some(base), &local)?;
    let ours = side!(goalref::accepting(&replaced, || {
        local_side(repo, Some(base), &local, progress)
    }));
    let ahead = base == remote.commit;
    if ahead && (replaced.is_empty() || ours.is_err()) {
        return shape(Shape::Ahead {
            local,
            remote,
            ours,
        });
    }
    let sides = match ours {
        Ok(ours) => Ok(Both {
            ours,
            theirs: side!(remote_side(repo, names, Some(base), &remote, progress)),
        }),
        Err(f) => Err(f),
    };
    shape(Shape::Diverged {
        local,
        remote,
        base,
        sides,
    })
}

/// The local tip as it stands against the last synced one, when it
/// descends from it: shaped as "ahead" of a hub assumed unmoved, the local
/// ticks since the synced tip verified. None when there is nothing to push
/// that way (never synced, up to date, or not a descendant).
pub(super) fn ahead_of_synced(
    repo: &Repo,
    names: &Names,
    progress: Progress,
) -> Result<Option<Observed>> {
    let store = repo.store();
    let Some(synced) = store.resolve(&names.synced)? else {
        return Ok(None);
    };
    let Some(local) = store.tip()? else {
        return Ok(None);
    };
    if local.commit == synced.commit || !store.is_ancestor(synced.commit, local.commit)? {
        return Ok(None);
    }
    // Goal ticks pinning replaced shared ticks go through a round, which
    // replays them.
    if !replaced_pins(repo, Some(synced.commit), &local)?.is_empty() {
        return Ok(None);
    }
    let ours = side!(local_side(repo, Some(synced.commit), &local, progress));
    Ok(Some(Observed {
        shape: Shape::Ahead {
            local,
            remote: synced,
            ours,
        },
    }))
}

/// For a goal ref the remote has never had ([`Fresh`]): None to push it as
/// it is (its split's other half is on the remote, on the same parent, and
/// no tick of it pins a replaced shared tick; or it was not made by a
/// split here).
fn fresh_goal_ref(
    repo: &Repo,
    opts: &Options,
    local: &Tip,
    progress: Progress,
) -> Result<Option<Fresh>> {
    let store = repo.store();
    let name = repo.state_ref().to_owned();
    let Some(goal) = name.strip_prefix(goalref::GOALS) else {
        return Ok(None);
    };
    let is_split = |e: &crate::store::Entry, keep: Option<&str>, moved: Option<&str>| {
        message::parse(&e.message).is_ok_and(|p| {
            matches!(&p.op.change, Change::GoalSplit(GoalSplit { goal: g, moved: m })
                if g.as_ref().map(|g| g.as_str()) == keep && m.as_ref().map(|m| m.as_str()) == moved)
        })
    };
    // This ref's first tick: the split keeping its goal. The ref was never
    // synced, so its whole history is walked (once it has landed, never
    // again), however many ticks it carries.
    let mut split = None;
    for e in store.history(local.commit) {
        let e = e?;
        if is_split(&e, Some(goal), None) {
            split = Some(e);
            break;
        }
    }
    let Some(split) = split else {
        return Ok(None);
    };
    let Some(parent) = split.parent else {
        return Ok(None);
    };
    let first = !goalref::is_goal_state(&crate::tx::snapshot(store, store.tip_at(parent)?)?.state);
    // The other half: the shared ref's split, or the tick that moved the
    // goal off another goal ref.
    let candidates: Vec<String> = if first {
        vec![goalref::SHARED.to_owned()]
    } else {
        goalref::goal_refs(store)?
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| *n != name)
            .collect()
    };
    let mut other = None;
    for r in candidates {
        let Some(tip) = store.resolve(&r)? else {
            continue;
        };
        // The half is a child of the split's parent, or its replay on top
        // of ticks after it: walked back to that parent, whatever the
        // number of ticks since.
        for e in store.history(tip.commit) {
            let e = e?;
            if e.commit == parent {
                break;
            }
            let half = if first {
                is_split(&e, None, None)
            } else {
                is_split(&e, None, Some(goal))
            };
            if half {
                other = Some((r.clone(), e));
                break;
            }
        }
        if other.is_some() {
            break;
        }
    }
    // Made by a split, and the other half is nowhere here: never pushed as
    // it is (the hub could hold its goal on two refs, or lose a todo the
    // other half would have carried).
    let Some((other_ref, half)) = other else {
        return Ok(Some(Fresh::Wait(format!(
            "{name} was made by a split ({}) whose other half is on no ref of this clone; it is not pushed until it is",
            split.commit.short(8)
        ))));
    };
    let other_names = super::names(&repo.for_ref(&other_ref), opts.remote.as_deref())?;
    let landed = match store.resolve(&other_names.synced)? {
        Some(t) => t.commit == half.commit || store.is_ancestor(half.commit, t.commit)?,
        None => false,
    };
    if !landed {
        return Ok(Some(Fresh::Wait(format!(
            "{other_ref} carries the other half of goal {goal}'s split ({}), which {} does not hold yet; {name} goes after it",
            half.commit.short(8),
            other_names.remote
        ))));
    }
    let Some(onto) = half.parent else {
        return Ok(None);
    };
    let replaced = replaced_pins(repo, Some(parent), local)?;
    if onto == parent && replaced.is_empty() {
        return Ok(None);
    }
    let side = side!(goalref::accepting(&replaced, || {
        local_side(repo, Some(parent), local, progress)
    }));
    let snap = crate::tx::snapshot(store, store.tip_at(onto)?)?;
    Ok(Some(Fresh::Rebuild {
        state_id: crate::trust::lineage::state_id(store, Some(onto))?,
        onto: Box::new(snap),
        side,
        first_pin: first.then_some(half.commit),
    }))
}

/// Verifies the remote's commits after `base` (None: all of them) up to
/// `remote`, starting from the last tip verified for this remote when it
/// lies between them.
fn remote_side(
    repo: &Repo,
    names: &Names,
    base: Option<Oid>,
    remote: &Tip,
    progress: Progress,
) -> std::result::Result<RemoteSide, Unverified> {
    let store = repo.store();
    let mut start = base;
    if let Some(v) = store.resolve(&names.verified)?
        && store.is_ancestor(v.commit, remote.commit)?
        && match base {
            Some(b) => store.is_ancestor(b, v.commit)?,
            None => true,
        }
    {
        start = Some(v.commit);
    }
    let what = format!("{}'s history", names.remote);
    let verified = chain(repo, start, remote.commit, &what, progress)?;
    let base_tick = match base {
        Some(b) => store.tip_at(b)?.tick,
        None => 0,
    };
    let mut ops = HashMap::new();
    if base.is_some() {
        for e in store.chain_since(remote.commit, base)? {
            if let Ok(p) = message::parse(&e.message) {
                ops.insert(p.op.id.to_string(), crate::trust::op_digest(&p.op));
            }
        }
    }
    let state_id = crate::trust::lineage::state_id(store, Some(remote.commit))?;
    Ok(RemoteSide {
        state_id,
        verified,
        commits: usize::try_from(remote.tick.saturating_sub(base_tick)).unwrap_or(usize::MAX),
        ops,
    })
}

/// On a goal ref, the pins of the local ticks after `base` up to `local`
/// that name shared ticks a sync replayed ([`goalref::replaced_pin`]):
/// verified as pins on the shared chain, then replayed, not pushed as
/// they are (the hub and every other clone would refuse them).
fn replaced_pins(repo: &Repo, base: Option<Oid>, local: &Tip) -> Result<Vec<Oid>> {
    let store = repo.store();
    let mut out = Vec::new();
    if !goalref::is_goal_ref(repo.state_ref()) {
        return Ok(out);
    }
    for e in store.chain_since(local.commit, base)? {
        if let Some(pin) = goalref::pin_of(store, &e.message)
            && !out.contains(&pin)
            && goalref::replaced_pin(store, pin)?
        {
            out.push(pin);
        }
    }
    Ok(out)
}

/// Verifies the local commits after `base` up to `local` and parses their
/// ops.
fn local_side(
    repo: &Repo,
    base: Option<Oid>,
    local: &Tip,
    progress: Progress,
) -> std::result::Result<LocalSide, Unverified> {
    chain(repo, base, local.commit, "the local history", progress)?;
    let mut ticks = Vec::new();
    for e in repo.store().chain_since(local.commit, base)? {
        // Verified just now, so every message parses.
        let parsed = message::parse(&e.message)
            .map_err(|why| anyhow::anyhow!("commit {} stopped parsing: {why}", e.commit))?;
        ticks.push((e.commit, parsed));
    }
    Ok(LocalSide { ticks })
}

/// Verifies `start`..`tip`, trusting the state at `start` as it is.
fn chain(
    repo: &Repo,
    start: Option<Oid>,
    tip: Oid,
    what: &str,
    progress: Progress,
) -> verify::Checked {
    let base = match start {
        Some(s) => {
            let v = verify::trusted_at(repo.store(), s)?;
            if s == tip {
                return Ok(v);
            }
            Some(v)
        }
        None => None,
    };
    let what = format!("Verifying {what}");
    let mut report = |done: usize, total: usize| (progress.ticks)(&what, done, total);
    verify::chain(repo, base, tip, &mut report).0
}

//! One round's decision: compare the local tip with the remote's and
//! fast-forward, push, replay, or report a rewritten or unrelated remote
//! (with `--adopt-remote`, follow it). Every commit taken from the remote
//! is verified first.

use std::collections::HashMap;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::{Code, Refusal};
use crate::op::message;
use crate::store::{CasError, Entry, Oid, Tip};
use crate::tx::{self, Snapshot};

use super::replay::replay;
use super::trust;
use super::{FIRST_BACKOFF, Names, Options, Outcome, Rejected, Replayed, pause};

/// What one round decided.
pub(super) enum Plan {
    /// Finished without a push; the local ref is at `tip`, which the remote
    /// has.
    Done {
        outcome: Outcome,
        tip: Tip,
        pulled: usize,
        backup: Option<String>,
    },
    /// Push `tip`, then move the local ref to it.
    Push(Push),
    /// The local ref moved while deciding; decide again.
    Again,
    /// The fetched tip is older than one this clone already synced with
    /// (another sync here fetched later and finished first): fetch again.
    Refetch,
}

pub(super) struct Push {
    pub(super) outcome: Outcome,
    pub(super) tip: Tip,
    /// The local tip the replay started from (None: push the local tip as
    /// it is).
    pub(super) local: Option<Oid>,
    /// Commits the remote gets.
    pub(super) count: usize,
    pub(super) pulled: usize,
    pub(super) replays: Vec<Replayed>,
    pub(super) rejected: Vec<Rejected>,
}

/// Compares the local tip with the remote's and decides the round.
pub(super) fn plan(
    ctx: &Ctx,
    names: &Names,
    remote: Option<&Tip>,
    opts: &Options,
    refetched: bool,
) -> Result<Plan> {
    let local = ctx.store()?.tip()?;
    let synced = ctx.store()?.resolve(&names.synced)?;
    let (local, remote) = match (local, remote) {
        (None, None) => {
            return Err(Refusal::error(
                Code::NoState,
                format!("there is no loopx state here or on {}", names.remote),
            )
            .with_hint("create one with `loopx init`; `loopx sync` then shares it")
            .into());
        }
        (Some(local), None) => {
            if let Some(s) = synced {
                return Err(Refusal::error(
                    Code::RemoteRewritten,
                    format!(
                        "{} no longer has a loopx state, though this machine synced tick {} ({}) with it",
                        names.remote,
                        s.tick,
                        s.commit.short(8)
                    ),
                )
                .with_hint(format!(
                    "nothing was changed; if its removal was intended and this state should go there again, forget the old sync with `git update-ref -d {}` and run `loopx sync` again",
                    names.synced
                ))
                .into());
            }
            trust::local(ctx, names, &local, None)?;
            return Ok(Plan::Push(Push {
                outcome: Outcome::Pushed,
                count: usize::try_from(local.tick).unwrap_or(usize::MAX),
                tip: local,
                local: None,
                pulled: 0,
                replays: Vec::new(),
                rejected: Vec::new(),
            }));
        }
        (None, Some(remote)) => {
            // A first sync: adopt the remote's state.
            let side = remote_side(ctx, names, remote, None, false)?;
            return Ok(if move_state(ctx, remote.commit, None, "loopx: sync")? {
                Plan::Done {
                    outcome: Outcome::Pulled,
                    tip: remote.clone(),
                    pulled: side.commits,
                    backup: None,
                }
            } else {
                Plan::Again
            });
        }
        (Some(local), Some(remote)) => (local, remote.clone()),
    };
    if local.commit == remote.commit {
        return Ok(Plan::Done {
            outcome: Outcome::UpToDate,
            tip: remote,
            pulled: 0,
            backup: None,
        });
    }
    let base = ctx.store()?.merge_base(local.commit, remote.commit)?;
    if let Some(s) = &synced
        && !refetched
        && s.commit != remote.commit
        && ctx.store()?.is_ancestor(remote.commit, s.commit)?
        && ctx.store()?.is_ancestor(s.commit, local.commit)?
    {
        return Ok(Plan::Refetch);
    }
    if let Some(s) = &synced
        && !ctx.store()?.is_ancestor(s.commit, remote.commit)?
    {
        if opts.adopt_remote {
            return adopt(ctx, names, &local, &remote, base);
        }
        return Err(rewritten(ctx, names, s, &remote).into());
    }
    let Some(base) = base else {
        if opts.adopt_remote {
            return adopt(ctx, names, &local, &remote, None);
        }
        return Err(Refusal::error(
            Code::UnrelatedStates,
            format!(
                "the local state and {}'s share no history: each was made by its own `loopx init`",
                names.remote
            ),
        )
        .with_hint(format!(
            "nothing was changed; keep one: `loopx sync {} --adopt-remote` takes {}'s state and keeps this one under refs/loopx/backup/{}/…",
            names.remote, names.remote, names.remote
        ))
        .into());
    };
    if base == local.commit {
        // Behind: fast-forward.
        let side = remote_side(ctx, names, &remote, Some(base), false)?;
        return Ok(
            if move_state(ctx, remote.commit, Some(local.commit), "loopx: sync")? {
                Plan::Done {
                    outcome: Outcome::Pulled,
                    tip: remote,
                    pulled: side.commits,
                    backup: None,
                }
            } else {
                Plan::Again
            },
        );
    }
    if base == remote.commit {
        // Ahead: push as it is, once it verifies.
        trust::local(ctx, names, &local, Some(base))?;
        let count = ctx.store()?.chain_since(local.commit, Some(base))?.len();
        return Ok(Plan::Push(Push {
            outcome: Outcome::Pushed,
            tip: local,
            local: None,
            count,
            pulled: 0,
            replays: Vec::new(),
            rejected: Vec::new(),
        }));
    }
    // Diverged: replay (the local ticks are checked first, so a commit
    // loopx did not write is named the same way wherever it is).
    trust::local(ctx, names, &local, Some(base))?;
    let side = remote_side(ctx, names, &remote, Some(base), true)?;
    let replay = replay(ctx, names, &local, side.snapshot, base, &side.ops)?;
    if replay.written == 0 {
        // Every local op is already on the remote: a fast-forward.
        return Ok(
            if move_state(ctx, remote.commit, Some(local.commit), "loopx: sync")? {
                Plan::Done {
                    outcome: Outcome::Pulled,
                    tip: remote,
                    pulled: side.commits.saturating_sub(replay.already),
                    backup: None,
                }
            } else {
                Plan::Again
            },
        );
    }
    Ok(Plan::Push(Push {
        outcome: Outcome::Replayed,
        tip: replay.tip,
        local: Some(local.commit),
        count: replay.written,
        pulled: side.commits.saturating_sub(replay.already),
        replays: replay.replays,
        rejected: replay.rejected,
    }))
}

fn rewritten(ctx: &Ctx, names: &Names, synced: &Tip, remote: &Tip) -> Refusal {
    Refusal::error(
        Code::RemoteRewritten,
        format!(
            "{}'s history was rewritten: its state (tick {}, {}) no longer contains tick {} ({}), which this machine synced with it",
            names.remote,
            remote.tick,
            remote.commit.short(8),
            synced.tick,
            synced.commit.short(8)
        ),
    )
    .with_hint(format!(
        "nothing was changed here. If the rewrite was meant, `loopx sync {r} --adopt-remote` follows it and keeps this state under refs/loopx/backup/{r}/…; if not, put the remote back with `git push --force-with-lease={s}:{c} {r} {synced}:{s}`, then sync again",
        r = names.remote,
        s = ctx.state_ref(),
        c = remote.commit,
        synced = names.synced,
    ))
}

/// Follows the remote's history: keeps the local tip under a backup ref,
/// then moves the local ref to the remote's tip.
fn adopt(ctx: &Ctx, names: &Names, local: &Tip, remote: &Tip, base: Option<Oid>) -> Result<Plan> {
    let side = remote_side(ctx, names, remote, base, false)?;
    let backup = format!(
        "refs/loopx/backup/{}/{}-{}",
        names.remote,
        local.tick,
        local.commit.short(8)
    );
    let committer = ctx.committer();
    match ctx.store()?.cas_ref(
        &backup,
        local.commit,
        None,
        "loopx: sync --adopt-remote",
        &committer,
    ) {
        Ok(()) => {}
        Err(CasError::Moved)
            if ctx.store()?.resolve(&backup)?.map(|t| t.commit) == Some(local.commit) => {}
        Err(CasError::Moved | CasError::Locked { .. }) => return Ok(Plan::Again),
        Err(CasError::Other(e)) => return Err(e),
    }
    Ok(
        if move_state(
            ctx,
            remote.commit,
            Some(local.commit),
            "loopx: sync --adopt-remote",
        )? {
            Plan::Done {
                outcome: Outcome::Adopted,
                tip: remote.clone(),
                pulled: side.commits,
                backup: Some(backup),
            }
        } else {
            Plan::Again
        },
    )
}

/// Moves the state ref from `expected` to `new` by compare-and-swap;
/// false when it moved meanwhile (or its lock was busy): decide again. A
/// stale lock stops the sync, as it stops a tick.
pub(super) fn move_state(ctx: &Ctx, new: Oid, expected: Option<Oid>, reflog: &str) -> Result<bool> {
    match ctx.store()?.cas(new, expected, reflog, &ctx.committer()) {
        Ok(()) => Ok(true),
        Err(CasError::Moved) => Ok(false),
        Err(CasError::Locked { lock, age }) => {
            if age.is_some_and(|a| a >= tx::STALE_LOCK) {
                return Err(tx::stale_lock(&lock, age).into());
            }
            pause(FIRST_BACKOFF);
            Ok(false)
        }
        Err(CasError::Other(e)) => Err(e),
    }
}

/// The remote's side of a sync: its ticks since the base, and its state.
pub(super) struct RemoteSide {
    pub(super) snapshot: Snapshot,
    /// Commits since the base.
    pub(super) commits: usize,
    /// The op ids of those commits, each with the content hash of its op
    /// (`trust::op_digest`).
    pub(super) ops: HashMap<String, String>,
}

/// Verifies the remote's commits since `base` (None: all of them), then
/// returns the state at its tip and, when `want_ops`, the op ids of those
/// commits (a replay skips ops the remote already has).
pub(super) fn remote_side(
    ctx: &Ctx,
    names: &Names,
    remote: &Tip,
    base: Option<Oid>,
    want_ops: bool,
) -> Result<RemoteSide> {
    let base_tick = match base {
        Some(b) => ctx.store()?.tip_at(b)?.tick,
        None => 0,
    };
    let chain = ctx.store()?.chain_since(remote.commit, base)?;
    // Human acts taken from the remote must carry a signature this machine
    // trusts (when it trusts anyone), as a live tick's would.
    crate::trust::incoming::check(ctx, &names.remote, &chain)?;
    // Then every commit is re-applied and compared (docs/sync.md, "What a
    // clone trusts").
    let verified = trust::remote(ctx, names, remote, base)?;
    let mut ops = HashMap::new();
    if want_ops {
        for e in &chain {
            if let Ok(p) = message::parse(&e.message) {
                ops.insert(p.op.id.to_string(), crate::trust::op_digest(&p.op));
            }
        }
    }
    Ok(RemoteSide {
        snapshot: Snapshot {
            tip: verified.tip,
            state: verified.state,
        },
        commits: usize::try_from(remote.tick.saturating_sub(base_tick)).unwrap_or(usize::MAX),
        ops,
    })
}

pub(super) fn remote_corrupt(names: &Names, tip: Option<&Tip>, why: &str) -> Refusal {
    let at = tip.map_or(String::new(), |t| {
        format!(" (tick {}, {})", t.tick, t.commit.short(8))
    });
    Refusal::error(
        Code::InvalidTick,
        format!("the loopx state on {}{at} is corrupt: {why}", names.remote),
    )
    .with_hint(format!(
        "nothing was changed here; whoever pushed it must repair it (`loopx doctor` there names the file) and push the fix; `git log {}` shows who. Then run `loopx sync` again",
        names.tracking
    ))
}

pub(super) fn unknown_op(whose: &str, e: &Entry, kind: &str) -> Refusal {
    Refusal::error(
        Code::UnknownOp,
        format!(
            "{whose} tick {} holds the op {kind:?}, which this loopx does not know",
            e.commit.short(8)
        ),
    )
    .with_hint("upgrade loopx, then run `loopx sync` again; nothing was changed")
}

//! Step 4 of a round: carries out a plan. The one place a sync writes a
//! commit (a replay, through the one tick writer) or moves a ref: the state
//! ref (by compare-and-swap against the tip the plan started from), the
//! backup ref of `--adopt-remote`, the synced and verified refs, and the
//! remote's state ref (a push naming the fetched remote tip as the
//! expected tip: the pushed tip descends from it by construction, so that
//! is a compare-and-swap, never a force, and git skips its client-side
//! ancestry walk).

use anyhow::{Context, Result};

use crate::error::Refusal;
use crate::git::{self, NetworkError, Pushed};
use crate::repo::Repo;
use crate::store::{CasError, Oid, Tip};
use crate::tx::{self, Snapshot};

use super::decide::{Plan, outcome};
use super::replay::Step as ReplayStep;
use super::{FIRST_BACKOFF, Names, Outcome, Rejected, Replayed, advance_ref, pause};

/// What a round's execution counted.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) pushed: usize,
    pub(super) pulled: usize,
    pub(super) replays: Vec<Replayed>,
    pub(super) rejected: Vec<Rejected>,
    pub(super) backup: Option<String>,
}

/// How a round ended.
pub(super) enum Step {
    /// The local ref is at `tip`, which the remote has.
    Done {
        outcome: Outcome,
        tip: Tip,
        counts: Counts,
    },
    /// The remote took the push, but the local ref moved meanwhile: fetch
    /// and go again.
    Moved(Counts),
    /// The local ref moved while deciding: decide again against the same
    /// remote tip.
    Again,
    /// Fetch again (the fetched tip was older than one synced here).
    Refetch,
    /// The remote refused the push: another machine pushed first.
    Refused(String),
}

/// Carries out `plan`; `verified` is the remote tip whose every commit was
/// just verified.
pub(super) fn execute(
    repo: &Repo,
    names: &Names,
    plan: Plan,
    verified: Option<Oid>,
) -> Result<Step> {
    if let Some(v) = verified {
        advance_ref(repo, &names.verified, v, true, "loopx: sync")?;
    }
    let outcome = outcome(&plan);
    match plan {
        Plan::Refetch => Ok(Step::Refetch),
        Plan::UpToDate { tip } => done(repo, names, Outcome::UpToDate, tip, Counts::default()),
        Plan::Pull { from, to, pulled } => {
            if !move_state(repo, to.commit, from, "loopx: sync")? {
                return Ok(Step::Again);
            }
            let counts = Counts {
                pulled,
                ..Counts::default()
            };
            done(repo, names, Outcome::Pulled, to, counts)
        }
        Plan::Adopt { from, to, pulled } => {
            let backup = format!(
                "refs/loopx/backup/{}/{}-{}",
                names.remote,
                from.tick,
                from.commit.short(8)
            );
            match repo.store().cas_ref(
                &backup,
                from.commit,
                None,
                "loopx: sync --adopt-remote",
                repo.committer(),
            ) {
                Ok(()) => {}
                Err(CasError::Moved)
                    if repo.store().resolve(&backup)?.map(|t| t.commit) == Some(from.commit) => {}
                Err(CasError::Moved | CasError::Locked { .. }) => return Ok(Step::Again),
                Err(CasError::Other(e)) => return Err(e),
            }
            if !move_state(
                repo,
                to.commit,
                Some(from.commit),
                "loopx: sync --adopt-remote",
            )? {
                return Ok(Step::Again);
            }
            let counts = Counts {
                pulled,
                backup: Some(backup),
                ..Counts::default()
            };
            done(repo, names, Outcome::Adopted, to, counts)
        }
        Plan::Push {
            tip,
            expected,
            count,
        } => {
            let counts = Counts {
                pushed: count,
                ..Counts::default()
            };
            push(repo, names, tip, expected, None, counts, Outcome::Pushed)
        }
        Plan::Replay {
            onto,
            local,
            steps,
            rejected,
            pulled,
        } => {
            let expected = Some(onto.tip.commit);
            let (tip, replays, written) = write_replay(repo, *onto, steps)?;
            let counts = Counts {
                pushed: written,
                pulled,
                replays,
                rejected,
                backup: None,
            };
            push(
                repo,
                names,
                tip,
                expected,
                Some(local),
                counts,
                outcome.unwrap_or(Outcome::Replayed),
            )
        }
    }
}

/// Records the synced tip and ends the sync.
fn done(repo: &Repo, names: &Names, outcome: Outcome, tip: Tip, counts: Counts) -> Result<Step> {
    advance_ref(repo, &names.synced, tip.commit, true, "loopx: sync")?;
    Ok(Step::Done {
        outcome,
        tip,
        counts,
    })
}

/// Pushes `tip` expecting the remote at `expected`, then moves the local
/// ref from `local` (None: it is at `tip` already).
fn push(
    repo: &Repo,
    names: &Names,
    tip: Tip,
    expected: Option<Oid>,
    local: Option<Oid>,
    counts: Counts,
    outcome: Outcome,
) -> Result<Step> {
    let sent = git::push_expecting(
        repo.store().common_dir(),
        &names.remote,
        &tip.commit.to_string(),
        repo.state_ref(),
        expected.map(|e| e.to_string()).as_deref(),
        repo.config().sync_timeout,
    )
    .map_err(|e| push_failed(names, e))?;
    if let Pushed::Behind(why) = sent {
        return Ok(Step::Refused(why));
    }
    let _ = advance_ref(repo, &names.tracking, tip.commit, false, "loopx: sync");
    let moved = match local {
        Some(from) if from != tip.commit => {
            move_state(repo, tip.commit, Some(from), "loopx: sync")?
        }
        _ => true,
    };
    if !moved {
        return Ok(Step::Moved(counts));
    }
    done(repo, names, outcome, tip, counts)
}

/// Writes the replay's steps on top of the remote's state with the one
/// tick writer (which applies each op again, to the same states, with the
/// same result). Moves no ref.
pub(super) fn write_replay(
    repo: &Repo,
    onto: Snapshot,
    steps: Vec<ReplayStep>,
) -> Result<(Tip, Vec<Replayed>, usize)> {
    let Snapshot { mut tip, mut state } = onto;
    let mut replays = Vec::new();
    let mut written = 0;
    for step in steps {
        // On a goal ref a replayed tick pins the shared tip it is written
        // against now, not the one it first pinned (`tx::goalref`).
        let pin = tx::goalref::for_write(repo.store(), Some(&tip), &state)?;
        let mut extra: Vec<(&str, String)> = step
            .extra
            .iter()
            .filter(|(k, _)| pin.is_none() || k != tx::goalref::TRAILER)
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let refresh = match &pin {
            Some(p) => {
                extra.push(p.trailer());
                tx::goalref::overlay(&mut state, p)
            }
            None => Vec::new(),
        };
        // A record of a lost op is new, made here in its agent's name:
        // signed with this clone's machine key (replayed ops keep theirs).
        let mut op = step.op;
        if step.replayed_from.is_none() {
            crate::trust::machine::sign_record(repo.store(), &tip, &state, &mut op)?;
        }
        let w = tx::write_tick_with(
            repo.store(),
            Some(&tip),
            &state,
            &op,
            &extra,
            &refresh,
            repo.committer(),
            tx::Empty::Write,
        )
        .context("writing a replayed tick")?
        .map_err(|r| {
            anyhow::anyhow!(
                "replaying {} failed on the second apply: {}",
                op.id,
                r.message
            )
        })?;
        tip = w.tip.expect("a replay writes every op");
        written += 1;
        if let Some(from) = step.replayed_from {
            replays.push(Replayed {
                op: op.id.clone(),
                from,
                to: tip.clone(),
                subject: w.effect.subject,
            });
        }
        state = w.state;
    }
    Ok((tip, replays, written))
}

/// Moves the state ref from `expected` to `new` by compare-and-swap;
/// false when it moved meanwhile (or its lock was busy): decide again. A
/// lock whose writer is gone is taken back; one held too long stops the
/// sync, as it stops a tick.
pub(super) fn move_state(
    repo: &Repo,
    new: Oid,
    expected: Option<Oid>,
    reflog: &str,
) -> Result<bool> {
    match repo.store().cas(new, expected, reflog, repo.committer()) {
        Ok(()) => Ok(true),
        Err(CasError::Moved) => Ok(false),
        Err(CasError::Locked { lock, age }) => {
            if tx::recover_lock(repo.store(), &lock, age)? {
                return Ok(false);
            }
            pause(FIRST_BACKOFF);
            Ok(false)
        }
        Err(CasError::Other(e)) => Err(e),
    }
}

pub(super) fn push_failed(names: &Names, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<NetworkError>() {
        // Never reached: the same refusal as a fetch that cannot reach it.
        Some(n) if !n.answered => Refusal::error(
            crate::error::Code::RemoteUnreachable,
            format!(
                "cannot push the loopx state to {}: {}",
                names.remote, n.stderr
            ),
        )
        .with_hint(format!(
            "nothing was changed here and no tick is lost; check the remote's URL (`git remote get-url {}`), the network and your credentials, then run `loopx sync` again",
            names.remote
        ))
        .into(),
        Some(n) => Refusal::error(
            crate::error::Code::PushFailed,
            format!("{} did not take the push: {}", names.remote, n.stderr),
        )
        .with_hint(
            "nothing was changed here and no tick is lost; check your push access to the remote (and any server-side hook), then run `loopx sync` again",
        )
        .into(),
        None => e,
    }
}

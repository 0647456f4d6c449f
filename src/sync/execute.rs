//! Step 4 of a round: carries out a plan. The one place a sync writes a
//! commit (a replay, through the one tick writer) or moves a ref: the state
//! ref (by compare-and-swap against the tip the plan started from), the
//! backup ref of `--adopt-remote`, the synced and verified refs, and the
//! remote's state ref (a push naming the fetched remote tip as the
//! expected tip: the pushed tip descends from it by construction, so that
//! is a compare-and-swap, never a force, and git skips its client-side
//! ancestry walk).

use anyhow::Result;

use crate::error::Refusal;
use crate::git::{self, NetworkError, Pushed};
use crate::repo::Repo;
use crate::store::{CasError, Oid, Tip};
use crate::tx::{self, Snapshot};

use super::decide::{Plan, outcome};
use super::fetch::{Brought, Tips, remote_corrupt};
use super::replay::Step as ReplayStep;
use super::{FIRST_BACKOFF, Names, Outcome, Rejected, Replayed, pause};

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

/// A round's push, ready to go: `tip` to the remote, expecting it at
/// `expected`; once taken, the local ref moves from `local` (None: it is
/// at `tip` already).
pub(super) struct Outgoing {
    tip: Tip,
    expected: Option<Oid>,
    local: Option<Oid>,
    counts: Counts,
    outcome: Outcome,
}

impl Outgoing {
    /// Whether the local ref moves once the push is taken (a replay): a
    /// goal ref's tick written meanwhile would pin a shared tip that is
    /// about to be replaced.
    pub(super) fn moves_local(&self) -> bool {
        self.local.is_some_and(|l| l != self.tip.commit)
    }
}

/// What [`prepare`] left to do.
pub(super) enum Ready {
    /// The round ended without a push.
    Step(Step),
    /// The round ends with this push ([`push_all`], then [`land`]).
    Push(Outgoing),
}

/// Carries out `plan` up to its push (a replay's ticks are written, no ref
/// moves before the push is taken); a plan without a push is done.
pub(super) fn prepare(
    repo: &Repo,
    names: &Names,
    plan: Plan,
    verified: Option<Oid>,
) -> Result<Ready> {
    let step = |s: Result<Step>| s.map(Ready::Step);
    if let Some(v) = verified {
        advance_ref(repo, &names.verified, v, true, "loopx: sync")?;
    }
    let outcome = outcome(&plan);
    match plan {
        Plan::Refetch => step(Ok(Step::Refetch)),
        Plan::Wait(why) => step(Ok(Step::Refused(why))),
        Plan::UpToDate { tip } => {
            step(done(repo, names, Outcome::UpToDate, tip, Counts::default()))
        }
        Plan::Pull { from, to, pulled } => {
            if !move_state(repo, to.commit, from, "loopx: sync")? {
                return step(Ok(Step::Again));
            }
            let counts = Counts {
                pulled,
                ..Counts::default()
            };
            step(done(repo, names, Outcome::Pulled, to, counts))
        }
        Plan::Adopt { from, to, pulled } => {
            let backup = format!(
                "refs/loopx/backup/{}/{}-{}",
                names.remote,
                from.tick,
                from.commit.short(8)
            );
            if !keep_backup(repo, &backup, from.commit, "loopx: sync --adopt-remote")? {
                return step(Ok(Step::Again));
            }
            if !move_state(
                repo,
                to.commit,
                Some(from.commit),
                "loopx: sync --adopt-remote",
            )? {
                return step(Ok(Step::Again));
            }
            let counts = Counts {
                pulled,
                backup: Some(backup),
                ..Counts::default()
            };
            step(done(repo, names, Outcome::Adopted, to, counts))
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
            Ok(Ready::Push(Outgoing {
                tip,
                expected,
                local: None,
                counts,
                outcome: Outcome::Pushed,
            }))
        }
        Plan::Replay {
            expected,
            onto,
            local,
            steps,
            rejected,
            pulled,
        } => {
            let (tip, replays, written) = write_replay(repo, *onto, steps)?;
            let counts = Counts {
                pushed: written,
                pulled,
                replays,
                rejected,
                backup: None,
            };
            Ok(Ready::Push(Outgoing {
                tip,
                expected,
                local: Some(local),
                counts,
                outcome: outcome.unwrap_or(Outcome::Replayed),
            }))
        }
    }
}

/// Records the synced tip and ends the sync.
fn done(repo: &Repo, names: &Names, outcome: Outcome, tip: Tip, counts: Counts) -> Result<Step> {
    advance_ref(repo, &names.synced, tip.commit, true, "loopx: sync")?;
    super::synced_at::mark(repo, names);
    Ok(Step::Done {
        outcome,
        tip,
        counts,
    })
}

/// After the remote answered `sent` to `out`: on a lost race, try again;
/// taken, the tracking ref and then the local ref move.
pub(super) fn land(repo: &Repo, names: &Names, out: Outgoing, sent: Pushed) -> Result<Step> {
    let Outgoing {
        tip,
        local,
        counts,
        outcome,
        ..
    } = out;
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

/// The pushes of several refs of one split state, to one remote, and
/// where each landed (in the same order). Goal refs alone go in one
/// `git push`, each taken or refused on its own. With the shared ref among
/// them it goes first, alone, and the goal refs follow in a second push
/// only once it was taken (else they are behind for this round): a goal
/// tick may pin the shared tip pushed with it, and a hub's guard accepts a
/// pin only on its own shared ref. (One `--atomic` push of both would
/// save the round trip, but a guard cannot tell an atomic push from a
/// plain one, in which the goal ref could land while the shared ref loses
/// its race: a pin on nothing the hub has.)
pub(super) fn push_all(sides: Vec<(&Repo, &Names, Outgoing)>) -> Result<Vec<Result<Step>>> {
    let Some((first, names, _)) = sides.first() else {
        return Ok(Vec::new());
    };
    let (dir, remote, limit) = (
        super::local(first),
        names.remote.clone(),
        first.config().sync_timeout,
    );
    let wire = |(repo, _, out): &(&Repo, &Names, Outgoing)| git::Push {
        commit: out.tip.commit.to_string(),
        dst: repo.state_ref().to_owned(),
        expected: Some(out.expected.map(|e| e.to_string()).unwrap_or_default()),
    };
    let all: Vec<git::Push> = sides.iter().map(wire).collect();
    let shared = sides
        .iter()
        .position(|(r, _, _)| r.state_ref() == crate::tx::goalref::SHARED);
    let answers = match shared {
        Some(s) if sides.len() > 1 => {
            let shared_answer = git::push_refs(dir, &remote, &all[s..=s], limit)
                .map_err(|e| push_failed(names, e))?
                .pop()
                .expect("one answer per ref");
            let rest: Vec<git::Push> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != s)
                .map(|(_, p)| p.clone())
                .collect();
            let mut rest_answers =
                if matches!(shared_answer, Ok(Pushed::Accepted | Pushed::UpToDate)) {
                    git::push_refs(dir, &remote, &rest, limit).map_err(|e| push_failed(names, e))?
                } else {
                    rest.iter()
                        .map(|_| {
                            Ok(Pushed::Behind(
                                "the shared ref, pushed first, was not taken".to_owned(),
                            ))
                        })
                        .collect()
                }
                .into_iter();
            let mut shared_answer = Some(shared_answer);
            (0..all.len())
                .map(|i| {
                    if i == s {
                        shared_answer.take().expect("the shared ref once")
                    } else {
                        rest_answers.next().expect("one answer per ref")
                    }
                })
                .collect()
        }
        _ => git::push_refs(dir, &remote, &all, limit).map_err(|e| push_failed(names, e))?,
    };
    // Every ref the remote took lands before a refusal of another is
    // reported: its tracking ref and local ref must say what the remote
    // now holds.
    let mut steps = Vec::with_capacity(sides.len());
    for ((repo, names, out), sent) in sides.into_iter().zip(answers) {
        steps.push(match sent {
            Ok(sent) => Ok(land(repo, names, out, sent)?),
            Err(e) => Err(push_failed(names, e)),
        });
    }
    Ok(steps)
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
        // A record of a lost op is new, made here in its actor's name: an
        // agent's is signed with this clone's machine key (replayed ops
        // keep theirs).
        let mut op = step.op;
        if step.replayed_from.is_none() {
            crate::trust::sign_record(repo, &tip, &state, &mut op)?;
        }
        let w = tx::Tick::new(repo.store(), Some(&tip), &state, &op, repo.committer())
            .extra(&extra)
            .refresh(&refresh)
            .write()
            .map_err(|e| match e {
                tx::TickError::Refused(r) => anyhow::anyhow!(
                    "replaying {} failed on the second apply: {}",
                    op.id,
                    r.message
                ),
                tx::TickError::Failed(e) => e.context("writing a replayed tick"),
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

/// Creates the backup ref `name` at `commit`: true when it holds it now
/// (made here, or there already), false when it holds another commit or
/// its lock is busy.
pub(super) fn keep_backup(repo: &Repo, name: &str, commit: Oid, reflog: &str) -> Result<bool> {
    match repo
        .store()
        .writer()
        .cas_ref(name, commit, None, reflog, repo.committer())
    {
        Ok(()) => Ok(true),
        Err(CasError::Moved) => Ok(repo.store().resolve(name)?.map(|t| t.commit) == Some(commit)),
        Err(CasError::Locked { .. }) => Ok(false),
        Err(CasError::Other(e)) => Err(e),
    }
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
    match repo
        .store()
        .writer()
        .cas(new, expected, reflog, repo.committer())
    {
        Ok(()) => {
            // Every tick a round moves the state to was verified in observe
            // (or written on verified ones).
            repo.store().advance_mark(repo.state_ref(), expected, new);
            Ok(true)
        }
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

/// Moves a ref loopx owns to `commit` by compare-and-swap, retrying while
/// another writer here moves it or holds its lock. `forward_only`: leave it
/// where it is when it already holds `commit` or a descendant (the synced
/// and verified refs); else it mirrors whatever it is given (the tracking
/// ref). Gives up quietly, after a few tries, only for a mirror.
pub(super) fn advance_ref(
    repo: &Repo,
    name: &str,
    commit: Oid,
    forward_only: bool,
    reflog: &str,
) -> Result<()> {
    for _ in 0..8 {
        let current = repo.store().resolve(name)?.map(|t| t.commit);
        if current == Some(commit) {
            return Ok(());
        }
        if forward_only
            && let Some(c) = current
            && repo.store().is_ancestor(commit, c)?
        {
            return Ok(());
        }
        match repo
            .store()
            .writer()
            .cas_ref(name, commit, current, reflog, repo.committer())
        {
            Ok(()) => return Ok(()),
            Err(CasError::Moved | CasError::Locked { .. }) => {}
            Err(CasError::Other(e)) => return Err(e),
        }
    }
    if forward_only {
        return Err(anyhow::anyhow!("{name} kept moving while sync recorded it"));
    }
    Ok(())
}

/// Reads the tips a fetch brought into its scratch refs (one per side),
/// removes the scratch refs, and points each remote-tracking ref at its
/// tip (a mirror of the remote, for people and `git log`; sync decides on
/// its own fetch). [`Tips::Busy`] when another fetch here got in the way.
pub(super) fn take_fetched(sides: &[(&Repo, &Names)], brought: Brought) -> Result<Tips> {
    let (into, busy) = match brought {
        Brought::Unchanged(tips) => return Ok(Tips::Fetched(tips)),
        Brought::Fetched { into, busy } => (into, busy),
    };
    let mut tips = Vec::with_capacity(sides.len());
    for ((repo, names), fetching) in sides.iter().zip(into) {
        let Some(fetching) = fetching else {
            tips.push(None);
            continue;
        };
        let tip = repo.store().resolve(&fetching);
        let _ = repo.store().writer().delete_ref(&fetching, None);
        let tip =
            tip.map_err(|e| anyhow::Error::from(remote_corrupt(names, None, &format!("{e:#}"))))?;
        if let Some(t) = &tip {
            advance_ref(repo, &names.tracking, t.commit, false, "loopx: sync fetch")?;
        }
        tips.push(tip);
    }
    Ok(match busy {
        Some(why) => Tips::Busy(why),
        None => Tips::Fetched(tips),
    })
}

/// Moves a round-1 clone's tracking ref (`legacy`, `remote::migrate`
/// found it) to [`Names::tracking`].
pub(super) fn adopt_legacy_tracking(repo: &Repo, names: &Names, legacy: Oid) -> Result<()> {
    advance_ref(
        repo,
        &names.tracking,
        legacy,
        false,
        "loopx: sync (tracking ref moved)",
    )?;
    repo.store()
        .writer()
        .delete_ref(&names.legacy_tracking, Some(legacy))
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

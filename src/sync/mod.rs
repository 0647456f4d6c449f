//! Sync across machines through an ordinary git remote (DESIGN §5).
//!
//! A round fetches the remote's state ref into its remote-tracking ref
//! (`refs/remotes/<remote>/loopx/state`) with the system git, then compares
//! it with the local tip: equal, nothing to do; behind, fast-forward; ahead,
//! push; diverged, **replay** the local-only ticks' ops, in order, through
//! [`op::apply`](crate::op::apply) on top of the remote tip, and push that. A push is
//! fast-forward only (never `+`); when another machine pushed first, the
//! next round fetches again, after a backoff, a bounded number of times.
//!
//! Replay is a pure function of the remote tip and the local ops. Each op
//! keeps its id, time and actor; a survivor is written again with a
//! `Loopx-Replayed-From` trailer; a refused op becomes a `sync-rejected`
//! evidence record whose id, time and actor derive from that op alone. So
//! two machines replaying the same ops onto the same tip write the same
//! trees (commit ids differ only by who committed). TOML is never merged
//! line by line. An op already on the remote (same op id) is not applied
//! twice.
//!
//! The replayed chain is pushed first and the local ref moved after (by
//! compare-and-swap against the tip the replay started from), so a refused
//! push or an unreachable remote leaves the local state as it was.
//!
//! `refs/loopx/synced/<remote>` remembers the remote tip last synced with
//! (`…/<remote>@<ref>` for a state ref other than the default).
//! A remote whose history no longer contains it was rewritten: sync reports
//! it and changes nothing, unless told to adopt it (`--adopt-remote`), which
//! keeps the local tip reachable under `refs/loopx/backup/<remote>/…`.

mod plan;
mod remote;
pub mod repair;
mod replay;
mod trust;

use plan::{Plan, move_state, plan, remote_corrupt};
pub use remote::{Names, default_remote, hub, names, setup};
pub use replay::{rejection, rejection_id};

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::git::{self, Fetched, NetworkError, Pushed};
use crate::model::{Actor, AgentId, EvidenceId, OpId, TodoId};
use crate::store::{CasError, Oid, Tip};

/// Rounds (fetch, reconcile, push) before sync gives up with exit 4.
pub const MAX_ROUNDS: u32 = 12;
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What to sync with, and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A configured git remote; None for [`default_remote`].
    pub remote: Option<String>,
    /// Follow a rewritten (or unrelated) remote history, keeping the local
    /// tip under a backup ref.
    pub adopt_remote: bool,
    /// Take the remote's ticks (replaying local ones on top of them, here
    /// only) but push nothing: a claim decides on the freshest state, and
    /// its own push then carries every local tick at once.
    pub no_push: bool,
}

/// How a sync ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Both sides held the same tip.
    UpToDate,
    /// The local state took the remote's: a fast-forward, or a first sync.
    Pulled,
    /// The remote took the local ticks as they were.
    Pushed,
    /// Local ticks were replayed onto the remote's, then pushed.
    Replayed,
    /// A rewritten remote history was adopted (`--adopt-remote`).
    Adopted,
}

/// A local op that lost to the remote's history.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub op: OpId,
    pub kind: &'static str,
    pub actor: Actor,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub todo: Option<TodoId>,
    /// The refusal's stable code (`claimed`, `stale-epoch`, …).
    pub code: Code,
    /// Why `apply` refused it on the remote's state.
    pub reason: String,
    /// The agent holding the todo instead, when the op was about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winner: Option<AgentId>,
    /// The `sync-rejected` record written for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceId>,
    /// The local commit that held the op.
    pub commit: String,
    /// The exit status the refusal carried.
    #[serde(skip)]
    pub exit: Exit,
}

/// A local op that survived a replay, and the commit it now is.
#[derive(Clone, Debug)]
pub struct Replayed {
    pub op: OpId,
    pub from: Oid,
    pub to: Tip,
    pub subject: String,
}

/// What a sync did.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub remote: String,
    pub outcome: Outcome,
    /// Ticks taken from the remote.
    pub pulled: usize,
    /// Ticks the remote took from here.
    pub pushed: usize,
    /// Local ops written again on top of the remote's ticks.
    pub replayed: usize,
    pub rejected: Vec<Rejected>,
    /// The state's tip after the sync.
    pub tick: u64,
    pub commit: String,
    /// Where `--adopt-remote` kept the old local tip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// Fetch-and-push rounds it took.
    pub rounds: u32,
    #[serde(skip)]
    pub replays: Vec<Replayed>,
}

impl Report {
    /// The rejection of one op, if it lost.
    pub fn rejection_of(&self, op: &OpId) -> Option<&Rejected> {
        self.rejected.iter().find(|r| &r.op == op)
    }

    /// Where one op landed, if it was replayed.
    pub fn replay_of(&self, op: &OpId) -> Option<&Replayed> {
        self.replays.iter().find(|r| &r.op == op)
    }

    /// Whether any op of `actor` was rejected (`loopx sync` then exits 4).
    pub fn rejected_any_of(&self, actor: &Actor) -> bool {
        self.rejected.iter().any(|r| &r.actor == actor)
    }
}

/// Syncs the state with `remote` (None: [`default_remote`]). This is the
/// entry point for commands that sync around their own work (`claim
/// --sync`, and the turn commands).
pub fn run(ctx: &Ctx, remote: Option<&str>) -> Result<Report> {
    run_with(
        ctx,
        &Options {
            remote: remote.map(str::to_owned),
            ..Options::default()
        },
    )
}

/// Brings the remote's ticks into the local state without pushing: local
/// ticks the remote lacks are replayed on top of its tip here, and go with
/// the next [`run`]. For a command that decides on the freshest state and
/// pushes once afterwards (`todo claim`).
pub fn pull(ctx: &Ctx, remote: Option<&str>) -> Result<Report> {
    run_with(
        ctx,
        &Options {
            remote: remote.map(str::to_owned),
            no_push: true,
            ..Options::default()
        },
    )
}

/// Syncs with the remote until the remote holds every local tick (replayed
/// or recorded as rejected) and the local state holds every remote tick.
pub fn run_with(ctx: &Ctx, opts: &Options) -> Result<Report> {
    let names = names(ctx, opts.remote.as_deref())?;
    let mut tally = Tally::default();
    let mut backoff = FIRST_BACKOFF;
    let mut fetched: Option<Option<Tip>> = None;
    let mut last_refusal = String::new();
    let mut refetched = false;
    for round in 1..=MAX_ROUNDS {
        tally.rounds = round;
        let remote_tip = match fetched.take() {
            Some(tip) => tip,
            None => match fetch(ctx, &names)? {
                Ok(tip) => tip,
                Err(busy) => {
                    last_refusal = busy;
                    pause(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
        };
        match plan(ctx, &names, remote_tip.as_ref(), opts, refetched)? {
            Plan::Refetch => {
                // Once: plan reads a second fetch that is as old as a real
                // rewind.
                refetched = true;
            }
            Plan::Again => {
                // A local tick landed meanwhile: decide again against the
                // same remote tip.
                fetched = Some(remote_tip);
            }
            Plan::Done {
                outcome,
                tip,
                pulled,
                backup,
            } => {
                remember(ctx, &names.synced, tip.commit)?;
                tally.pulled = pulled;
                tally.backup = backup;
                return Ok(tally.report(&names, outcome, &tip));
            }
            Plan::Push(push) if opts.no_push => {
                // Keep the replayed chain here; the remote tip it sits on
                // is the one last synced with.
                if let Some(from) = push.local
                    && from != push.tip.commit
                    && !move_state(ctx, push.tip.commit, Some(from), "loopx: sync")?
                {
                    continue;
                }
                if let Some(r) = &remote_tip {
                    remember(ctx, &names.synced, r.commit)?;
                }
                tally.pulled = push.pulled;
                tally.replays.extend(push.replays);
                tally.rejected.extend(push.rejected);
                let outcome = if tally.replays.is_empty() && tally.rejected.is_empty() {
                    if tally.pulled > 0 {
                        Outcome::Pulled
                    } else {
                        Outcome::UpToDate
                    }
                } else {
                    Outcome::Replayed
                };
                return Ok(tally.report(&names, outcome, &push.tip));
            }
            Plan::Push(push) => {
                let sent = git::push(
                    ctx.store()?.common_dir(),
                    &names.remote,
                    &push.tip.commit.to_string(),
                    ctx.state_ref(),
                    ctx.config()?.sync_timeout,
                )
                .map_err(|e| push_failed(&names, e))?;
                if let Pushed::Behind(why) = sent {
                    last_refusal = why;
                    pause(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
                let _ = remember(ctx, &names.tracking, push.tip.commit);
                tally.pushed += push.count;
                tally.pulled = push.pulled;
                tally.replays.extend(push.replays);
                tally.rejected.extend(push.rejected);
                let moved = match push.local {
                    Some(from) if from != push.tip.commit => {
                        move_state(ctx, push.tip.commit, Some(from), "loopx: sync")?
                    }
                    _ => true,
                };
                if !moved {
                    // The remote has the replayed chain, but a local tick
                    // landed meanwhile: the next round replays that tick
                    // (ops already on the remote are not applied again).
                    continue;
                }
                remember(ctx, &names.synced, push.tip.commit)?;
                return Ok(tally.report(&names, push.outcome, &push.tip));
            }
        }
    }
    let last = if last_refusal.is_empty() {
        format!("{} kept moving", ctx.state_ref())
    } else {
        format!("the last attempt got: {last_refusal}")
    };
    Err(Refusal::conflict(
        Code::SyncRetriesExhausted,
        format!(
            "{} kept moving: gave up after {MAX_ROUNDS} rounds of fetch and push ({last})",
            names.remote
        ),
    )
    .with_hint(
        "other machines are pushing very often; nothing was lost here, run `loopx sync` again",
    )
    .into())
}

/// What the rounds so far did.
#[derive(Default)]
struct Tally {
    pulled: usize,
    pushed: usize,
    replays: Vec<Replayed>,
    rejected: Vec<Rejected>,
    rounds: u32,
    backup: Option<String>,
}

impl Tally {
    fn report(self, names: &Names, outcome: Outcome, tip: &Tip) -> Report {
        Report {
            remote: names.remote.clone(),
            outcome,
            pulled: self.pulled,
            pushed: self.pushed,
            replayed: self.replays.len(),
            rejected: self.rejected,
            tick: tip.tick,
            commit: tip.commit.to_string(),
            backup: self.backup,
            rounds: self.rounds,
            replays: self.replays,
        }
    }
}

/// Fetches the remote's tip, trying again while another fetch here is in
/// the way.
pub(super) fn fetch_tip(ctx: &Ctx, names: &Names) -> Result<Option<Tip>> {
    let mut backoff = FIRST_BACKOFF;
    for _ in 0..MAX_ROUNDS {
        match fetch(ctx, names)? {
            Ok(tip) => return Ok(tip),
            Err(_) => {
                pause(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
    Err(Refusal::conflict(
        Code::SyncRetriesExhausted,
        format!(
            "could not fetch from {}: other fetches kept getting in the way",
            names.remote
        ),
    )
    .with_hint("run it again")
    .into())
}

/// Fetches the remote's state into the tracking ref and resolves it;
/// `Ok(Err(why))` when another fetch on this machine got in the way.
fn fetch(ctx: &Ctx, names: &Names) -> Result<Result<Option<Tip>, String>> {
    // Into a ref of this sync's own, then read from there: two syncs on one
    // clone each see the tip their own fetch brought, never an older one
    // that a slower fetch wrote into the tracking ref afterwards.
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    let fetching = format!(
        "refs/loopx/fetching/{}-{}-{:08x}",
        names.remote.replace('/', "-"),
        std::process::id(),
        u32::from_le_bytes(b)
    );
    let found = git::fetch(
        ctx.store()?.common_dir(),
        &names.remote,
        ctx.state_ref(),
        &fetching,
        ctx.config()?.sync_timeout,
    )
    .map_err(|e| match e.downcast_ref::<NetworkError>() {
        Some(n) => Refusal::error(
            Code::RemoteUnreachable,
            format!(
                "cannot fetch the loopx state from {}: {}",
                names.remote, n.stderr
            ),
        )
        .with_hint(format!(
            "nothing was changed here; check the remote's URL (`git remote get-url {}`), the network and your credentials, then run `loopx sync` again",
            names.remote
        ))
        .into(),
        None => e,
    })?;
    match found {
        Fetched::NoState => Ok(Ok(None)),
        Fetched::Busy(why) => Ok(Err(why)),
        Fetched::State => {
            let tip = ctx.store()?.resolve(&fetching);
            let _ = ctx.store()?.delete_ref(&fetching);
            let tip = tip
                .map_err(|e| anyhow::Error::from(remote_corrupt(names, None, &format!("{e:#}"))))?;
            if let Some(t) = &tip {
                track_ref(ctx, &names.tracking, t.commit)?;
            }
            Ok(Ok(tip))
        }
    }
}

pub(super) fn push_failed(names: &Names, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<NetworkError>() {
        Some(n) => Refusal::error(
            Code::PushFailed,
            format!("{} did not take the push: {}", names.remote, n.stderr),
        )
        .with_hint(
            "nothing was changed here and no tick is lost; check your push access to the remote (and any server-side hook), then run `loopx sync` again",
        )
        .into(),
        None => e,
    }
}

/// Moves a ref loopx owns forward to `commit`; leaves it where it is when
/// it already holds `commit` or a descendant of it.
pub(super) fn remember(ctx: &Ctx, name: &str, commit: Oid) -> Result<()> {
    let committer = ctx.committer();
    for _ in 0..8 {
        let current = ctx.store()?.resolve(name)?.map(|t| t.commit);
        if let Some(c) = current
            && (c == commit || ctx.store()?.is_ancestor(commit, c)?)
        {
            return Ok(());
        }
        match ctx
            .store()?
            .cas_ref(name, commit, current, "loopx: sync", &committer)
        {
            Ok(()) => return Ok(()),
            Err(CasError::Moved | CasError::Locked { .. }) => {}
            Err(CasError::Other(e)) => return Err(e),
        }
    }
    Err(anyhow::anyhow!("{name} kept moving while sync recorded it"))
}

/// Points the remote-tracking ref at what a fetch brought (a mirror of
/// the remote, for people and `git log`; sync decides on its own fetch).
pub(super) fn track_ref(ctx: &Ctx, name: &str, commit: Oid) -> Result<()> {
    let committer = ctx.committer();
    for _ in 0..8 {
        let current = ctx.store()?.resolve(name)?.map(|t| t.commit);
        if current == Some(commit) {
            return Ok(());
        }
        match ctx
            .store()?
            .cas_ref(name, commit, current, "loopx: sync fetch", &committer)
        {
            Ok(()) => return Ok(()),
            Err(CasError::Moved | CasError::Locked { .. }) => {}
            Err(CasError::Other(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Sleeps for about `backoff` (between half and one and a half times it).
fn pause(backoff: Duration) {
    std::thread::sleep(backoff.mul_f64(0.5 + crate::tx::jitter()));
}

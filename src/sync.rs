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

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal, refusal_of};
use crate::git::{self, Fetched, NetworkError, Pushed};
use crate::model::{
    Actor, AgentId, EvidenceId, EvidenceKind, GoalId, OpId, State, TodoId, id::RANDOM_HEX,
};
use crate::op::{Change, Op, message};
use crate::store::{CasError, Entry, Oid, Person, Store, Tip};
use crate::tx::{self, Snapshot};

/// Rounds (fetch, reconcile, push) before sync gives up with exit 4.
pub const MAX_ROUNDS: u32 = 12;
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The remote `loopx sync` uses when none is named: git config
/// `loopx.remote`, else `origin`.
pub fn default_remote(ctx: &Ctx) -> String {
    ctx.config()
        .map_or_else(|_| "origin".to_owned(), |c| c.remote.clone())
}

/// What to sync with, and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A configured git remote; None for [`default_remote`].
    pub remote: Option<String>,
    /// Follow a rewritten (or unrelated) remote history, keeping the local
    /// tip under a backup ref.
    pub adopt_remote: bool,
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
            adopt_remote: false,
        },
    )
}

/// The refs one remote's sync uses.
#[derive(Clone, Debug)]
pub struct Names {
    pub remote: String,
    /// The remote-tracking copy of the remote's state ref.
    pub tracking: String,
    /// The remote tip last synced with.
    pub synced: String,
}

/// Checks that `remote` is a configured git remote and names its refs.
pub fn names(ctx: &Ctx, remote: Option<&str>) -> Result<Names, Refusal> {
    let named = remote.is_some();
    let remote = remote.map_or_else(|| default_remote(ctx), str::to_owned);
    if ctx
        .store()
        .ok()
        .and_then(|s| s.config(&format!("remote.{remote}.url")))
        .is_none()
    {
        let hint = if named {
            format!("add it with `git remote add {remote} URL`; `git remote -v` lists the remotes")
        } else {
            format!(
                "add the team's remote with `git remote add {remote} URL`, or name another: `loopx sync REMOTE` (git config loopx.remote sets the default)"
            )
        };
        return Err(Refusal::error(
            Code::NoRemote,
            format!("there is no git remote named {remote}"),
        )
        .with_hint(hint));
    }
    let state_ref = ctx.state_ref();
    let rest = state_ref.strip_prefix("refs/").unwrap_or(state_ref);
    // The default state ref is remembered under refs/loopx/synced/<remote>;
    // another one (git config loopx.ref, e.g. one ref per goal) under a name
    // of its own, so two states synced with one remote never share it.
    let synced = if state_ref == crate::store::DEFAULT_REF {
        format!("refs/loopx/synced/{remote}")
    } else {
        format!("refs/loopx/synced/{remote}@{}", rest.replace('/', "-"))
    };
    let names = Names {
        tracking: format!("refs/remotes/{remote}/{rest}"),
        synced,
        remote,
    };
    if !Store::is_ref_name(&names.tracking) || !Store::is_ref_name(&names.synced) {
        return Err(Refusal::usage(
            Code::BadRemote,
            format!(
                "the remote name {:?} cannot be part of a ref name",
                names.remote
            ),
        )
        .with_hint("rename the remote with `git remote rename`"));
    }
    Ok(names)
}

/// Syncs with the remote until the remote holds every local tick (replayed
/// or recorded as rejected) and the local state holds every remote tick.
pub fn run_with(ctx: &Ctx, opts: &Options) -> Result<Report> {
    let names = names(ctx, opts.remote.as_deref())?;
    let mut tally = Tally::default();
    let mut backoff = FIRST_BACKOFF;
    let mut fetched: Option<Option<Tip>> = None;
    let mut last_refusal = String::new();
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
        match plan(ctx, &names, remote_tip.as_ref(), opts)? {
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
            Plan::Push(push) => {
                let sent = git::push(
                    ctx.store()?.common_dir(),
                    &names.remote,
                    &push.tip.commit.to_string(),
                    ctx.state_ref(),
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

/// What one round decided.
enum Plan {
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
}

struct Push {
    outcome: Outcome,
    tip: Tip,
    /// The local tip the replay started from (None: push the local tip as
    /// it is).
    local: Option<Oid>,
    /// Commits the remote gets.
    count: usize,
    pulled: usize,
    replays: Vec<Replayed>,
    rejected: Vec<Rejected>,
}

/// Fetches the remote's state into the tracking ref and resolves it;
/// `Ok(Err(why))` when another fetch on this machine got in the way.
fn fetch(ctx: &Ctx, names: &Names) -> Result<Result<Option<Tip>, String>> {
    let found = git::fetch(
        ctx.store()?.common_dir(),
        &names.remote,
        ctx.state_ref(),
        &names.tracking,
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
        Fetched::State => ctx
            .store()?
            .resolve(&names.tracking)
            .map(Ok)
            .map_err(|e| remote_corrupt(names, None, &format!("{e:#}")).into()),
    }
}

fn push_failed(names: &Names, e: anyhow::Error) -> anyhow::Error {
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

/// Compares the local tip with the remote's and decides the round.
fn plan(ctx: &Ctx, names: &Names, remote: Option<&Tip>, opts: &Options) -> Result<Plan> {
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
            let side = remote_side(ctx, names, remote, None)?;
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
        let side = remote_side(ctx, names, &remote, Some(base))?;
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
        // Ahead: push as it is.
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
    // Diverged: replay.
    let side = remote_side(ctx, names, &remote, Some(base))?;
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
    let side = remote_side(ctx, names, remote, base)?;
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
fn move_state(ctx: &Ctx, new: Oid, expected: Option<Oid>, reflog: &str) -> Result<bool> {
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
struct RemoteSide {
    snapshot: Snapshot,
    /// Commits since the base.
    commits: usize,
    /// The op ids of those commits.
    ops: HashSet<String>,
}

/// Reads the remote's commits since `base` (refusing ops this binary does
/// not know) and the state at its tip (refusing a corrupt one).
fn remote_side(ctx: &Ctx, names: &Names, remote: &Tip, base: Option<Oid>) -> Result<RemoteSide> {
    let chain = ctx.store()?.chain_since(remote.commit, base)?;
    let mut ops = HashSet::new();
    for e in &chain {
        if let Some(kind) = message::kind_of(&e.message)
            && !Change::KINDS.contains(&kind)
        {
            return Err(unknown_op(&format!("{}'s", names.remote), e, kind).into());
        }
        if let Some(id) = message::op_id_of(&e.message) {
            ops.insert(id.to_owned());
        }
    }
    // Human acts taken from the remote must carry a signature this machine
    // trusts (when it trusts anyone), as a live tick's would.
    crate::trust::incoming::check(ctx, &names.remote, &chain)?;
    let snapshot = tx::load_at(ctx, remote.clone()).map_err(|e| {
        match refusal_of(&e) {
            // A newer format says "upgrade loopx" by itself.
            Some(r) if r.code == Code::FormatTooNew => e.context(format!(
                "reading {}'s state (commit {})",
                names.remote, remote.commit
            )),
            Some(r) => remote_corrupt(names, Some(remote), &r.message).into(),
            None => remote_corrupt(names, Some(remote), &format!("{e:#}")).into(),
        }
    })?;
    Ok(RemoteSide {
        snapshot,
        commits: chain.len(),
        ops,
    })
}

fn remote_corrupt(names: &Names, tip: Option<&Tip>, why: &str) -> Refusal {
    let at = tip.map_or(String::new(), |t| {
        format!(" (tick {}, {})", t.tick, t.commit.short(8))
    });
    Refusal::error(
        Code::RemoteCorrupt,
        format!("the loopx state on {}{at} is corrupt: {why}", names.remote),
    )
    .with_hint(format!(
        "nothing was changed here; whoever pushed it must repair it (`loopx doctor` there names the file) and push the fix; `git log {}` shows who. Then run `loopx sync` again",
        names.tracking
    ))
}

fn unknown_op(whose: &str, e: &Entry, kind: &str) -> Refusal {
    Refusal::error(
        Code::UnknownOp,
        format!(
            "{whose} tick {} holds the op {kind:?}, which this loopx does not know",
            e.commit.short(8)
        ),
    )
    .with_hint("upgrade loopx, then run `loopx sync` again; nothing was changed")
}

/// The result of replaying the local ops on the remote's state.
struct Replay {
    tip: Tip,
    written: usize,
    /// Local ops the remote already had (same op id), not applied again.
    already: usize,
    replays: Vec<Replayed>,
    rejected: Vec<Rejected>,
}

/// Replays the local-only ticks (`base`..`local`) on top of the remote's
/// snapshot, writing commits but moving no ref.
fn replay(
    ctx: &Ctx,
    names: &Names,
    local: &Tip,
    remote: Snapshot,
    base: Oid,
    on_remote: &HashSet<String>,
) -> Result<Replay> {
    // Read and check every local tick before writing anything.
    let mut ticks = Vec::new();
    for e in ctx.store()?.chain_since(local.commit, Some(base))? {
        if let Some(kind) = message::kind_of(&e.message)
            && !Change::KINDS.contains(&kind)
        {
            return Err(unknown_op("the local", &e, kind).into());
        }
        let parsed = message::parse(&e.message).map_err(|why| {
            let parent = e.parent.map_or_else(|| "<parent>".to_owned(), |p| p.to_string());
            Refusal::error(
                Code::NotATick,
                format!(
                    "commit {} on {} is not a loopx tick ({why}), so sync cannot replay it onto {}'s state",
                    e.commit.short(8),
                    ctx.state_ref(),
                    names.remote
                ),
            )
            .with_hint(format!(
                "it was made by hand; move the ref back with `git update-ref {} {parent}`, redo the change with loopx commands, then sync again; nothing was changed",
                ctx.state_ref()
            ))
        })?;
        ticks.push((e, parsed));
    }
    let committer = ctx.committer();
    let signers = crate::trust::AllowedSigners::load(ctx)?;
    let Snapshot {
        tip: mut parent,
        mut state,
    } = remote;
    let mut out = Replay {
        tip: parent.clone(),
        written: 0,
        already: 0,
        replays: Vec::new(),
        rejected: Vec::new(),
    };
    for (entry, parsed) in ticks {
        let op = parsed.op;
        // Already on the remote: the op itself, or the record of its
        // rejection (a sync that pushed, then stopped before it moved the
        // local ref).
        if on_remote.contains(op.id.as_str()) || on_remote.contains(rejection_id(&op.id).as_str()) {
            out.already += 1;
            continue;
        }
        let mut extra: Vec<(String, String)> = parsed
            .trailers
            .iter()
            .filter(|(k, _)| !message::OWN_TRAILERS.contains(&k.as_str()))
            .cloned()
            .collect();
        if !extra.iter().any(|(k, _)| k == message::REPLAYED_FROM) {
            extra.push((message::REPLAYED_FROM.to_owned(), entry.commit.to_string()));
        }
        // The same rules a live tick applies, signatures included.
        let checked = crate::trust::check_op(&state, &op, &signers);
        let written = match checked {
            Ok(_) => write(ctx, &parent, &state, &op, &extra, &committer)?,
            Err(refusal) => Err(refusal),
        };
        match written {
            Ok(written) => {
                parent = written.tip.expect("a replay writes every op");
                out.written += 1;
                if !is_sync_record(&op) {
                    out.replays.push(Replayed {
                        op: op.id.clone(),
                        from: entry.commit,
                        to: parent.clone(),
                        subject: written.effect.subject,
                    });
                }
                state = written.state;
            }
            Err(refusal) => {
                let mut rejected = Rejected {
                    op: op.id.clone(),
                    kind: op.change.kind(),
                    actor: op.actor.clone(),
                    todo: op.change.todo().cloned(),
                    code: refusal.code,
                    reason: refusal.message.clone(),
                    winner: op
                        .change
                        .todo()
                        .and_then(|t| state.todos.get(t))
                        .and_then(|t| t.owner())
                        .filter(|owner| op.actor.agent() != Some(*owner))
                        .cloned(),
                    evidence: None,
                    commit: entry.commit.to_string(),
                    exit: refusal.exit,
                };
                let record = if is_sync_record(&op) {
                    // A record of an earlier rejection that no longer fits
                    // (its todo is gone): keep it, without the todo.
                    without_todo(&op)
                } else {
                    rejection(&op, &refusal, &state)
                };
                if let Some(record) = record {
                    let extra = [(message::REJECTED_FROM.to_owned(), entry.commit.to_string())];
                    if let Ok(written) = write(ctx, &parent, &state, &record, &extra, &committer)? {
                        parent = written.tip.expect("a replay writes every op");
                        out.written += 1;
                        if let Change::EvidenceAdd { evidence, .. } = &record.change {
                            rejected.evidence = Some(evidence.clone());
                        }
                        state = written.state;
                    }
                }
                if !is_sync_record(&op) {
                    out.rejected.push(rejected);
                }
            }
        }
    }
    out.tip = parent;
    Ok(out)
}

/// Writes one replayed tick on top of `parent` with the one tick writer.
fn write(
    ctx: &Ctx,
    parent: &Tip,
    before: &State,
    op: &Op,
    extra: &[(String, String)],
    committer: &Person,
) -> Result<Result<tx::Written, Refusal>> {
    let extra: Vec<(&str, String)> = extra.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    tx::write_tick(
        ctx.store()?,
        Some(parent),
        before,
        op,
        &extra,
        committer,
        tx::Empty::Write,
    )
    .context("writing a replayed tick")
}

/// Whether an op is a `sync-rejected` record that sync wrote.
fn is_sync_record(op: &Op) -> bool {
    matches!(
        op.change,
        Change::EvidenceAdd {
            kind: EvidenceKind::SyncRejected,
            ..
        }
    )
}

fn without_todo(op: &Op) -> Option<Op> {
    let mut op = op.clone();
    match &mut op.change {
        Change::EvidenceAdd { todo, .. } if todo.is_some() => *todo = None,
        _ => return None,
    }
    Some(op)
}

/// The `sync-rejected` record of an op that lost: everything in it derives
/// from the op and the state it lost against (id from the op id, the op's
/// time and actor), so every machine doing the same replay writes the same
/// file. None when the state has no goal to file it under.
pub fn rejection(op: &Op, refusal: &Refusal, state: &State) -> Option<Op> {
    let goal = goal_of(op, state)?;
    let todo = op
        .change
        .todo()
        .filter(|t| state.todos.get(*t).is_some_and(|x| x.goal == goal))
        .cloned();
    // One line within the summary limit, whatever the refusal said (a
    // failed validation quotes its output).
    let summary = crate::op::limits::fit(
        &format!(
            "{} lost: {} (op {} by {})",
            op.change.kind(),
            refusal.message,
            op.id,
            op.actor.name()
        ),
        crate::op::limits::QUESTION,
    );
    Some(Op {
        id: rejection_id(&op.id),
        at: op.at,
        actor: op.actor.clone(),
        signature: None,
        change: Change::EvidenceAdd {
            evidence: EvidenceId::from_hex(&derive(
                "loopx sync-rejected evidence",
                &op.id,
                RANDOM_HEX,
            )),
            goal,
            todo,
            kind: EvidenceKind::SyncRejected,
            summary,
            code: None,
            run: None,
            artifact: None,
        },
    })
}

/// The op id of the `sync-rejected` record of op `id`.
pub fn rejection_id(id: &OpId) -> OpId {
    OpId::from_hex(&derive("loopx sync-rejected op", id, 16))
}

/// The goal an op is about, else the state's only active goal, else its
/// first goal.
fn goal_of(op: &Op, state: &State) -> Option<GoalId> {
    let named = match &op.change {
        Change::GoalAdd { goal, .. }
        | Change::GoalSet { goal, .. }
        | Change::TodoAdd { goal, .. }
        | Change::GateOpen { goal, .. }
        | Change::EvidenceAdd { goal, .. }
        | Change::RefreshState { goal, .. }
        | Change::QuotaSpend { goal, .. } => Some(goal.clone()),
        Change::GateAnswer { gate, .. } | Change::GateWithdraw { gate } => {
            state.gates.get(gate).map(|g| g.goal.clone())
        }
        Change::Init { goal, .. } => goal.clone(),
        _ => None,
    };
    let from_todo = op
        .change
        .todo()
        .and_then(|t| state.todos.get(t))
        .map(|t| t.goal.clone());
    from_todo
        .into_iter()
        .chain(named)
        .find(|g| state.goals.contains_key(g))
        .or_else(|| state.default_goal().ok().map(|g| g.id.clone()))
        .or_else(|| state.goals.keys().next().cloned())
}

/// `n` hex digits of SHA-256 over a purpose and an op id.
fn derive(purpose: &str, id: &OpId, n: usize) -> String {
    let digest = Sha256::new()
        .chain_update(purpose.as_bytes())
        .chain_update([0])
        .chain_update(id.as_str().as_bytes())
        .finalize();
    let hex = crate::model::id::hex(&digest);
    hex[..n].to_owned()
}

/// Moves a ref loopx owns forward to `commit`; leaves it where it is when
/// it already holds `commit` or a descendant of it.
fn remember(ctx: &Ctx, name: &str, commit: Oid) -> Result<()> {
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

/// Sleeps for about `backoff` (between half and one and a half times it).
fn pause(backoff: Duration) {
    std::thread::sleep(backoff.mul_f64(0.5 + tx::jitter()));
}

/// Adds the glob fetch refspec `+refs/loopx/*:refs/remotes/<remote>/loopx/*`
/// to the remote, so a plain `git fetch` brings the state too. Returns the
/// refspec and whether it was added (false: it was there already). A glob,
/// because a plain refspec makes `git fetch` fail while the remote has no
/// state yet; no push refspec, which would change what a bare `git push`
/// does.
pub fn setup(ctx: &Ctx, remote: Option<&str>) -> Result<(Names, String, bool)> {
    let names = names(ctx, remote)?;
    let refspec = format!("+refs/loopx/*:refs/remotes/{}/loopx/*", names.remote);
    let key = format!("remote.{}.fetch", names.remote);
    let dir = ctx.store()?.common_dir();
    let present = git::config_values(dir, &key)?
        .iter()
        .any(|v| v.trim() == refspec);
    if !present {
        git::output(dir, &["config", "--add", &key, &refspec])?;
    }
    Ok((names, refspec, !present))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op;
    use crate::time::{Span, Timestamp};

    fn op(actor: &str, change: Change) -> Op {
        Op {
            id: OpId::from_hex("00000000000000aa"),
            at: Timestamp::parse("2026-11-30T09:00:00Z").unwrap(),
            actor: Actor::Agent(AgentId::new(actor).unwrap()),
            signature: None,
            change,
        }
    }

    fn board() -> State {
        let mut state = State::default();
        let human = Actor::Human {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        };
        let at = Timestamp::parse("2026-11-30T08:00:00Z").unwrap();
        let mut apply = |change| {
            op::apply(
                &mut state,
                &Op {
                    id: OpId::from_hex("0000000000000001"),
                    at,
                    actor: human.clone(),
                    signature: None,
                    change,
                },
            )
            .unwrap();
        };
        apply(Change::Init {
            goal: Some(GoalId::new("main").unwrap()),
            objective: Some("Ship".into()),
        });
        apply(Change::TodoAdd {
            todo: TodoId::from_hex("000000a1"),
            goal: GoalId::new("main").unwrap(),
            title: "A".into(),
            priority: crate::model::Priority::DEFAULT,
            after: vec![],
            capabilities: vec![],
            scope: vec![],
            note: None,
            validate: None,
        });
        state
    }

    #[test]
    fn a_rejection_record_depends_only_on_the_op_and_the_state() {
        let state = board();
        let claim = op(
            "agent-a",
            Change::TodoClaim {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                lease: Span::minutes(45),
            },
        );
        let refusal = Refusal::conflict(Code::Claimed, "t-000000a1 is not ready: agent-b holds it");
        let a = rejection(&claim, &refusal, &state).unwrap();
        let b = rejection(&claim, &refusal, &state).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.at, claim.at);
        assert_eq!(a.actor, claim.actor);
        assert_ne!(a.id, claim.id);
        let Change::EvidenceAdd {
            evidence,
            goal,
            todo,
            kind,
            summary,
            ..
        } = &a.change
        else {
            panic!("an evidence op: {a:?}")
        };
        assert_eq!(evidence.hex().len(), RANDOM_HEX);
        assert_eq!(goal.as_str(), "main");
        assert_eq!(todo.as_ref().map(TodoId::as_str), Some("t-000000a1"));
        assert_eq!(*kind, EvidenceKind::SyncRejected);
        assert_eq!(
            summary,
            "todo.claim lost: t-000000a1 is not ready: agent-b holds it (op o-00000000000000aa by agent-a)"
        );
    }

    #[test]
    fn a_rejection_record_lands_even_for_an_unregistered_agent() {
        let mut state = board();
        let claim = op(
            "agent-gone",
            Change::TodoClaim {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                lease: Span::minutes(45),
            },
        );
        let refusal = op::apply(&mut state.clone(), &claim).unwrap_err();
        assert_eq!(refusal.code, Code::NotRegistered);
        let record = rejection(&claim, &refusal, &state).unwrap();
        let effect = op::apply(&mut state, &record).unwrap();
        assert_eq!(effect.evidence.len(), 1);
        assert_eq!(effect.evidence[0].kind, EvidenceKind::SyncRejected);
        assert!(
            !effect.evidence[0].passed(),
            "a lost op is no passing check"
        );
    }

    #[test]
    fn a_state_without_goals_gets_no_record() {
        let claim = op(
            "agent-a",
            Change::TodoRelease {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                force: false,
            },
        );
        let refusal = Refusal::rule(Code::Waiting, "y");
        assert!(rejection(&claim, &refusal, &State::default()).is_none());
    }
}

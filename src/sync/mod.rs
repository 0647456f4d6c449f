//! Sync across machines through an ordinary git remote (DESIGN §5).
//!
//! A round is four steps, each in its own file:
//! 1. `fetch`: the system git brings the remote's state ref (into a ref
//!    of this sync's own, then the remote-tracking ref);
//! 2. `observe`: a plain value of what is there: the local, remote and
//!    last synced tips, their merge base, and the ticks on each side of it,
//!    verified once (`crate::verify::check_tick`, signatures included);
//! 3. `decide`: a pure function from that value and the options to a
//!    plan: equal, nothing to do; behind, fast-forward; ahead, push;
//!    diverged, **replay** the local-only ticks' ops, in order, through
//!    [`op::apply`](crate::op::apply) on top of the remote tip
//!    (`replay::plan_replay`), and push that;
//! 4. `execute`: the one place a sync writes a commit (through the one
//!    tick writer) or moves a ref. A push names the fetched remote tip as
//!    the expected tip (a compare-and-swap, never `+`); when another
//!    machine pushed first, the next round fetches again, after a backoff,
//!    a bounded number of times.
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

mod decide;
mod execute;
mod fetch;
mod observe;
pub mod redate;
mod remote;
pub mod repair;
mod replay;
pub mod synced_at;

pub use remote::{Names, default_remote, hub, names};
pub use replay::{rejection, rejection_id};

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::error::{Code, Exit, Refusal};
use crate::model::{Actor, AgentId, EvidenceId, OpId, TodoId};
use crate::repo::Repo;
use crate::store::{Oid, Tip};

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

impl Options {
    /// A plain sync with `remote` (None: [`default_remote`]).
    pub fn with(remote: Option<&str>) -> Options {
        Options {
            remote: remote.map(str::to_owned),
            adopt_remote: false,
        }
    }
}

/// Where a sync reports progress: for long verifications, what is done
/// ("Verifying origin's history") and how many ticks of how many, which the
/// front end draws for a person (nothing is printed here); and whether a
/// person watches stderr on a terminal, when the first fetch from a remote
/// shows git's own progress meters there.
#[derive(Clone, Copy)]
pub struct Progress<'a> {
    pub ticks: &'a dyn Fn(&str, usize, usize),
    pub terminal: bool,
}

/// Syncs with the remote until the remote holds every local tick (replayed
/// or recorded as rejected) and the local state holds every remote tick:
/// [`run_refs`] with this one ref, so a single-ref state and a split
/// state's shared ref go through the same loop and give the same report.
///
/// When this clone holds ticks beyond the last synced tip, they are all
/// pushed first, in one push expecting the hub still at that tip (DESIGN
/// §5): accepted, the sync is done in one network call. Otherwise (nothing
/// to push, the push refused, `--adopt-remote`), rounds of fetch, observe,
/// decide, execute.
pub fn run(repo: &Repo, opts: &Options, progress: Progress) -> Result<Report> {
    let mut reports = run_refs(&[repo], &[true], opts, progress)?;
    match reports.pop() {
        Some(Ok(report)) if reports.is_empty() => Ok(report),
        // Never: a required ref reports or fails the sync.
        other => Err(anyhow::anyhow!(
            "sync of {} ended without a report ({other:?})",
            repo.state_ref()
        )),
    }
}

/// The repository as sync's network git processes run for it: its git
/// dir, and its own directory (not loopx's), where git resolves a relative
/// remote URL ([`crate::git::Local`]).
fn local(repo: &Repo) -> crate::git::Local<'_> {
    crate::git::Local {
        git_dir: repo.store().common_dir(),
        work_dir: repo.store().root(),
    }
}

/// A sync that gave up after [`MAX_ROUNDS`].
fn exhausted(names: &Names, last: &str) -> anyhow::Error {
    Refusal::conflict(
        Code::SyncRetriesExhausted,
        format!(
            "{} kept moving: gave up after {MAX_ROUNDS} rounds of fetch and push ({last})",
            names.remote
        ),
    )
    .with_hint(
        "other machines are pushing very often; nothing was lost here, run `loopx sync` again",
    )
    .into()
}

/// How one ref of [`run_refs`] ended: its report, or why an optional ref
/// was left out.
pub type RefReport = std::result::Result<Report, String>;

/// One ref of [`run_refs`]: its handle, whether its failure fails the
/// sync (`required`; else it is left out of the reports), and how far it
/// got.
struct Side<'r> {
    repo: &'r Repo,
    names: Names,
    required: bool,
    tally: Tally,
    /// The tip the last fetch brought, not yet decided on.
    fetched: Option<Option<Tip>>,
    refetched: bool,
    last_refusal: String,
    report: Option<Report>,
    /// Why an optional ref's sync stopped (its error, said as a warning).
    dropped: Option<String>,
}

impl Side<'_> {
    fn open(&self) -> bool {
        self.report.is_none() && self.dropped.is_none()
    }

    /// Stops an optional ref's sync (its error is not the sync's), or
    /// fails the sync.
    fn fail(&mut self, e: anyhow::Error) -> Result<()> {
        if self.required {
            return Err(e);
        }
        self.dropped = Some(format!("{e:#}"));
        Ok(())
    }

    /// Takes how this ref's round ended; true when the remote refused its
    /// push (the round then backs off).
    fn take(&mut self, step: execute::Step, remote_tip: Option<Tip>) -> bool {
        match step {
            execute::Step::Refetch => self.refetched = true,
            execute::Step::Again => self.fetched = Some(remote_tip),
            execute::Step::Refused(why) => {
                self.last_refusal = why;
                return true;
            }
            execute::Step::Moved(counts) => self.tally.add(counts),
            execute::Step::Done {
                outcome,
                tip,
                counts,
            } => {
                self.tally.add(counts);
                let tally = std::mem::take(&mut self.tally);
                self.report = Some(tally.report(&self.names, outcome, &tip));
            }
        }
        false
    }
}

/// The one sync loop: syncs the state refs a clone syncs with one remote
/// at once (one ref, or a split state's shared ref and its goal refs),
/// with one `git fetch` for every ref that needs one and one `git push`
/// for every ref with something to push (the shared ref alone before the
/// others, since goal ticks may pin what it pushes). Each ref is
/// observed, decided and executed on its own, in the order given: put the
/// shared ref first, so a goal ref's replay pins the shared tip this round
/// pulled (and when the shared ref replays, the goal refs wait for the
/// next round, on the tips fetched now). `required[i]` false: a failure of
/// that ref leaves it out (a fresh clone's shared ref, when its goal ref
/// may be a state of its own). The reports come in the order of `repos`,
/// for a ref left out why it was.
pub fn run_refs(
    repos: &[&Repo],
    required: &[bool],
    opts: &Options,
    progress: Progress,
) -> Result<Vec<RefReport>> {
    let mut sides = Vec::with_capacity(repos.len());
    for (repo, required) in repos.iter().zip(required) {
        let names = names(repo, opts.remote.as_deref())?;
        migrate(repo, &names)?;
        sides.push(Side {
            repo,
            names,
            required: *required,
            tally: Tally::default(),
            fetched: None,
            refetched: false,
            last_refusal: String::new(),
            report: None,
            dropped: None,
        });
    }
    // The claim protocol (DESIGN §5), for every sync: each ref whose local
    // tip descends from its last synced one is pushed first, expecting the
    // hub still there, without a fetch. After a push-first that went out
    // (the hub moved), no kept session is asked before the fetch.
    let pushed_first = !opts.adopt_remote && push_first_all(&mut sides, progress)?;
    let mut backoff = FIRST_BACKOFF;
    let first = progress.terminal
        && sides.iter().any(|s| {
            s.repo
                .store()
                .resolve(&s.names.synced)
                .ok()
                .flatten()
                .is_none()
        });
    for round in 1..=MAX_ROUNDS {
        let open: Vec<usize> = (0..sides.len()).filter(|i| sides[*i].open()).collect();
        if open.is_empty() {
            break;
        }
        let need: Vec<usize> = open
            .iter()
            .copied()
            .filter(|i| sides[*i].fetched.is_none())
            .collect();
        if !need.is_empty() {
            let asked: Vec<(&Repo, &Names)> = need
                .iter()
                .map(|i| (sides[*i].repo, &sides[*i].names))
                .collect();
            match fetch_all(&asked, first, round == 1 && !pushed_first)? {
                fetch::Tips::Fetched(tips) => {
                    for (i, tip) in need.iter().zip(tips) {
                        sides[*i].fetched = Some(tip);
                    }
                }
                fetch::Tips::Busy(busy) => {
                    for i in &open {
                        sides[*i].tally.rounds = round;
                        sides[*i].last_refusal.clone_from(&busy);
                    }
                    pause(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            }
        }
        let mut ids = Vec::new();
        let mut outs = Vec::new();
        let mut tips = Vec::new();
        let mut refused = false;
        let mut hold = false;
        for &i in &open {
            let side = &mut sides[i];
            if hold {
                // The shared ref replays this round: a goal ref decides
                // once its new shared tip is in place (next round, on the
                // tip fetched now).
                continue;
            }
            side.tally.rounds = round;
            let remote_tip = side.fetched.take().expect("fetched above");
            let ready = (|| {
                let seen = observe::observe(
                    side.repo,
                    &side.names,
                    remote_tip.clone(),
                    opts,
                    side.refetched,
                    progress,
                )?;
                let (plan, verified) = decide::decide(seen, opts, side.repo.signers()?)
                    .map_err(|stop| decide::refusal(side.repo, &side.names, *stop))?;
                execute::prepare(side.repo, &side.names, plan, verified)
            })();
            match ready {
                Err(e) => side.fail(e)?,
                Ok(execute::Ready::Step(step)) => refused |= side.take(step, remote_tip),
                Ok(execute::Ready::Push(out)) => {
                    hold = side.repo.state_ref() == crate::tx::goalref::SHARED && out.moves_local();
                    ids.push(i);
                    outs.push(out);
                    tips.push(remote_tip);
                }
            }
        }
        if !ids.is_empty() {
            let batch = ids
                .iter()
                .zip(outs)
                .map(|(i, o)| (sides[*i].repo, &sides[*i].names, o))
                .collect();
            let steps = execute::push_all(batch)?;
            for ((i, step), tip) in ids.iter().zip(steps).zip(tips) {
                match step {
                    Ok(step) => refused |= sides[*i].take(step, tip),
                    Err(e) => sides[*i].fail(e)?,
                }
            }
        }
        if refused {
            pause(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
    let mut reports = Vec::with_capacity(sides.len());
    for side in sides {
        let last = || {
            if side.last_refusal.is_empty() {
                format!("{} kept moving", side.repo.state_ref())
            } else {
                format!("the last attempt got: {}", side.last_refusal)
            }
        };
        if side.open() && side.required {
            return Err(exhausted(&side.names, &last()));
        }
        reports.push(match (side.report, side.dropped) {
            (Some(report), _) => Ok(report),
            (None, Some(why)) => Err(why),
            (None, None) => Err(format!("{:#}", exhausted(&side.names, &last()))),
        });
    }
    Ok(reports)
}

/// Syncs `repo`'s state ref and the `extra` refs (name, required) with
/// one remote in one fetch and one push ([`run_refs`]; the extra refs
/// first, the shared ref before goal refs): the report of `repo`'s own
/// ref, and for each extra ref its report or why it was left out.
pub fn run_with(
    repo: &Repo,
    extra: &[(String, bool)],
    opts: &Options,
    progress: Progress,
) -> Result<(Report, Vec<(String, RefReport)>)> {
    if extra.is_empty() {
        return Ok((run(repo, opts, progress)?, Vec::new()));
    }
    let handles: Vec<Repo> = extra.iter().map(|(n, _)| repo.for_ref(n)).collect();
    // The shared ref first (it is first in `extra` when it is there), the
    // command's own ref where it belongs: after the shared ref, before the
    // goal refs a shared clone takes.
    let own_first = repo.state_ref() == crate::tx::goalref::SHARED;
    let mut order: Vec<&Repo> = Vec::new();
    let mut required = Vec::new();
    if own_first {
        order.push(repo);
        required.push(true);
    }
    for (h, (_, req)) in handles.iter().zip(extra) {
        order.push(h);
        required.push(*req);
    }
    if !own_first {
        order.push(repo);
        required.push(true);
    }
    let mut reports = run_refs(&order, &required, opts, progress)?;
    let own = if own_first {
        reports.remove(0)
    } else {
        reports.pop().expect("the command's own ref")
    }
    .expect("a required ref has a report");
    let others = extra
        .iter()
        .zip(reports)
        .map(|((name, _), r)| (name.clone(), r))
        .collect();
    Ok((own, others))
}

/// The claim protocol's first push for every ref of [`run_refs`] that is
/// ahead of its last synced tip, in one push: whether a push went out and
/// was not taken.
fn push_first_all(sides: &mut [Side], progress: Progress) -> Result<bool> {
    let mut ids = Vec::new();
    let mut outs = Vec::new();
    for (i, side) in sides.iter_mut().enumerate() {
        let Some(seen) = observe::ahead_of_synced(side.repo, &side.names, progress)? else {
            continue;
        };
        let (plan, _) = match decide::decide(seen, &Options::default(), side.repo.signers()?) {
            Ok(p) => p,
            Err(stop) => {
                side.fail(decide::refusal(side.repo, &side.names, *stop))?;
                continue;
            }
        };
        match execute::prepare(side.repo, &side.names, plan, None)? {
            execute::Ready::Push(out) => {
                ids.push(i);
                outs.push(out);
            }
            execute::Ready::Step(step) => {
                side.tally.rounds = 1;
                side.take(step, None);
            }
        }
    }
    if ids.is_empty() {
        return Ok(false);
    }
    // The refs with nothing to push are fetched while the others push.
    let idle: Vec<usize> = (0..sides.len())
        .filter(|i| sides[*i].open() && !ids.contains(i))
        .collect();
    let (fetched, steps) = {
        let asked: Vec<(&Repo, &Names)> = idle
            .iter()
            .map(|i| (sides[*i].repo, &sides[*i].names))
            .collect();
        let batch = ids
            .iter()
            .zip(outs)
            .map(|(i, o)| (sides[*i].repo, &sides[*i].names, o))
            .collect();
        let (brought, steps) =
            fetch::fetch_all_while(&asked, false, true, || execute::push_all(batch));
        (
            brought.and_then(|b| execute::take_fetched(&asked, b)),
            steps,
        )
    };
    let steps = steps?;
    // A busy fetch is left to the rounds.
    if let fetch::Tips::Fetched(tips) = fetched? {
        for (i, tip) in idle.iter().zip(tips) {
            sides[*i].fetched = Some(tip);
        }
    }
    let mut refused = false;
    for (i, step) in ids.into_iter().zip(steps) {
        // Only a push taken as it was ends a ref here; anything else goes
        // through a full round.
        match step {
            Ok(step @ execute::Step::Done { .. }) => {
                sides[i].tally.rounds = 1;
                sides[i].take(step, None);
            }
            Ok(_) => refused = true,
            Err(e) => {
                sides[i].fail(e)?;
                refused = true;
            }
        }
    }
    Ok(refused)
}

/// The remote tip this clone last synced with (None: never synced with
/// `remote`), for a claim deciding from the last synced state.
pub fn synced_tip(repo: &Repo, remote: Option<&str>) -> Result<Option<Tip>> {
    let names = names(repo, remote)?;
    repo.store().resolve(&names.synced)
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
    fn add(&mut self, c: execute::Counts) {
        self.pushed += c.pushed;
        self.pulled = c.pulled;
        self.replays.extend(c.replays);
        self.rejected.extend(c.rejected);
        if c.backup.is_some() {
            self.backup = c.backup;
        }
    }

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

/// A round-1 clone's settings and tracking ref moved to today's names
/// (`remote::migrate`; the ref through execute's writer).
fn migrate(repo: &Repo, names: &Names) -> Result<()> {
    if let Some(legacy) = remote::migrate(repo, names)?.legacy {
        execute::adopt_legacy_tracking(repo, names, legacy)?;
    }
    Ok(())
}

/// Adds the glob fetch refspec to the remote, so a plain `git fetch`
/// brings the state too (`remote::setup`). Returns the refspec and whether
/// it was added (false: it was there already).
pub fn setup(repo: &Repo, remote: Option<&str>) -> Result<(Names, String, bool)> {
    let (names, refspec, added, legacy) = remote::setup(repo, remote)?;
    if let Some(legacy) = legacy {
        execute::adopt_legacy_tracking(repo, &names, legacy)?;
    }
    Ok((names, refspec, added))
}

/// Fetches the remote's tip, trying again while another fetch here is in
/// the way.
pub(super) fn fetch_tip(repo: &Repo, names: &Names) -> Result<Option<Tip>> {
    let mut backoff = FIRST_BACKOFF;
    for _ in 0..MAX_ROUNDS {
        match fetch_all(&[(repo, names)], false, true)? {
            fetch::Tips::Fetched(mut tips) => return Ok(tips.pop().flatten()),
            fetch::Tips::Busy(_) => {
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

/// Fetches several state refs from one remote in one `git fetch` (a split
/// state's shared ref and goal refs: `repo` and `names` of each;
/// `fetch::fetch_all_while`), resolves them, and points each
/// remote-tracking ref at its tip (`execute::take_fetched`: a mirror of
/// the remote, for people and `git log`; sync decides on its own fetch).
/// The tips come in the same order, or [`fetch::Tips::Busy`] when another
/// fetch here got in the way of any of them. With `progress`, git's own
/// progress meters go to stderr as the fetch runs (a person at a
/// terminal). With `ask`, a kept ssh session is asked first whether there
/// is anything to fetch (not after a refused push: the hub moved, the
/// question would be an exchange for nothing).
fn fetch_all(sides: &[(&Repo, &Names)], progress: bool, ask: bool) -> Result<fetch::Tips> {
    let (brought, ()) = fetch::fetch_all_while(sides, progress, ask, || ());
    execute::take_fetched(sides, brought?)
}

/// Sleeps for about `backoff` (between half and one and a half times it).
fn pause(backoff: Duration) {
    std::thread::sleep(backoff.mul_f64(0.5 + crate::tx::jitter()));
}

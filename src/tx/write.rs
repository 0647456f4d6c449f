//! The write side of a tick: [`Commit`] (the one way into the write path),
//! [`plan_tick`] (the pure half `verify` re-runs), [`Tick`] (writing one
//! planned tick and moving the ref), and the refusals of a clock it cannot
//! write at.

use crate::cache;
use crate::error::{Code, Refusal};
use crate::ids::IdGen;
use crate::model::{Actor, Caller, OpId};
use crate::model::{State, files};
use crate::op::{self, Change, Effect, Op, message};
use crate::repo::Repo;
use crate::store::{CasError, Person, Store, Tip};
use crate::time::Timestamp;
use anyhow::Result;
use std::time::{Duration, Instant};

use super::read::unreadable_tip;
use super::retry::RETRY_FOR;
use super::*;

/// A tick that landed.
pub struct Committed {
    pub op: Op,
    pub effect: Effect,
    pub tip: Tip,
    pub state: State,
}

/// An operation made for a tick, and what the redactor took out of it.
pub struct Stamped {
    pub op: Op,
    /// The fields whose text looked like a secret and was stored with
    /// [`crate::redact::MARK`] in its place (the caller tells the writer).
    pub redacted: Vec<&'static str>,
}

/// An operation by `actor` at `at`, with a fresh op id from `ids`. Its free
/// text has been through the redactor ([`crate::op::secrets`]); what it
/// took out is named in [`Stamped::redacted`].
pub fn op(
    actor: Actor,
    at: Timestamp,
    ids: &IdGen,
    mut change: Change,
) -> Result<Stamped, Refusal> {
    let redacted = crate::op::secrets::redact(&mut change)?;
    let context = toml::to_string(&change).unwrap_or_default();
    Ok(Stamped {
        op: Op {
            id: OpId::from_hex(&ids.hex(16, context.as_bytes())),
            at,
            actor,
            signature: None,
            change,
        },
        redacted,
    })
}

/// One tick of the op `build` makes, as `caller`: the one way into the
/// write path (jj's transaction), as `Commit::new(repo, caller).run(build)`.
/// Options: the todos the op touches (`touching`: a partial read first,
/// `at`: only while the ref names that commit), or a state already read
/// (`from`). Returns what landed; never prints.
pub struct Commit<'r> {
    repo: &'r Repo,
    caller: &'r Caller,
    touching: Option<&'r [&'r str]>,
    at: Option<crate::store::Oid>,
    read: Option<Snapshot>,
}

impl<'r> Commit<'r> {
    pub fn new(repo: &'r Repo, caller: &'r Caller) -> Self {
        Commit {
            repo,
            caller,
            touching: None,
            at: None,
            read: None,
        }
    }

    /// The op is on the todos the user typed (ids or prefixes): its first
    /// attempt reads only the cache's shards that hold them
    /// (`on_shards`).
    pub fn touching(mut self, typed: &'r [&'r str]) -> Self {
        self.touching = Some(typed);
        self
    }

    /// With [`Commit::touching`]: the partial read only while the ref
    /// names `at`.
    pub fn at(mut self, at: crate::store::Oid) -> Self {
        self.at = Some(at);
        self
    }

    /// Starts from `read`, a state the caller already read, while the ref
    /// still names it (`on_read`).
    pub fn from(mut self, read: Snapshot) -> Self {
        self.read = Some(read);
        self
    }

    /// Builds, applies, writes and lands the tick, retrying as
    /// every tick does. `caller` is who runs the process: only the human
    /// signs with their configured key.
    pub fn run(self, build: impl FnMut(&State) -> Result<Op>) -> Result<Committed> {
        match self.touching {
            Some(typed) => on_shards(self.repo, self.caller, typed, self.at, build),
            None => on_read(self.repo, self.caller, self.read, build),
        }
    }
}

/// A tick starting from `read` (None: reading the tip): the state the caller already read to
/// decide what to do, so a command that reads before its tick reads the
/// state once, not twice (at 10,000 todos each read parses every todo).
/// Its first attempt uses `read` while the state ref still names its
/// commit; a moved ref or a retry reads again.
pub(super) fn on_read(
    repo: &Repo,
    caller: &Caller,
    mut read: Option<Snapshot>,
    mut build: impl FnMut(&State) -> Result<Op>,
) -> Result<Committed> {
    let whole = std::cell::Cell::new(true);
    retry(repo, caller, &whole, |repo| {
        let snap = match read.take() {
            Some(s) if repo.store().tip_id()? == Some(s.tip.commit) => s,
            _ => load(repo)?,
        };
        // The cached state of a commit that is gone (pruned under a tick)
        // must not become the parent of a new tick. Checked here, where
        // the object database is open anyway, not on every read.
        if !repo.store().has_object(snap.tip.commit) {
            return Err(unreadable_tip(
                repo,
                anyhow::anyhow!("commit {} is missing", snap.tip.commit),
            ));
        }
        let op = build(&snap.state)?;
        Ok((Some(snap.tip), snap.state, op))
    })
}

/// A tick of an op on the todos the user typed (ids or prefixes, `typed`):
/// its first attempt reads only the cache's head and the shards that hold
/// them ([`cache::read_part`]); whatever reads of that partial state could
/// have needed a todo it lacks is decided again from the whole state. It
/// reads the partial state only while the ref
/// names `at` (when given): a command that chose the todos from the cache
/// at `at` (`todo claim --next`'s pick) gets the whole state to choose
/// again from once the ref has moved.
fn on_shards(
    repo: &Repo,
    caller: &Caller,
    typed: &[&str],
    at: Option<crate::store::Oid>,
    mut build: impl FnMut(&State) -> Result<Op>,
) -> Result<Committed> {
    let whole = std::cell::Cell::new(goalref::is_goal_ref(repo.state_ref()));
    retry(repo, caller, &whole, |repo| {
        let store = repo.store();
        let part = if whole.get() {
            None
        } else {
            store
                .tip_id()?
                .filter(|id| at.is_none_or(|a| a == *id))
                .and_then(|id| cache::read_part(store, id, typed))
        };
        let snap = match part {
            Some((tip, state)) => Snapshot { tip, state },
            None => load(repo)?,
        };
        if !store.has_object(snap.tip.commit) {
            return Err(unreadable_tip(
                repo,
                anyhow::anyhow!("commit {} is missing", snap.tip.commit),
            ));
        }
        let built = build(&snap.state);
        if snap.state.todos.fell_short_of_whole() {
            whole.set(true);
            let snap = load(repo)?;
            let op = build(&snap.state)?;
            return Ok((Some(snap.tip), snap.state, op));
        }
        Ok((Some(snap.tip), snap.state, built?))
    })
}

/// The first tick: creates the ref, which must not exist yet.
pub fn init(repo: &Repo, caller: &Caller, op: Op) -> Result<Committed> {
    let whole = std::cell::Cell::new(true);
    retry(repo, caller, &whole, |repo| {
        if let Some(tip) = repo.store().tip()? {
            return Err(Refusal::rule(
                Code::AlreadyInitialized,
                format!(
                    "{} already holds a loopx state (tick {})",
                    repo.state_ref(),
                    tip.tick
                ),
            )
            .with_hint("nothing was changed; `loopx status` shows it")
            .into());
        }
        Ok((None, State::default(), op.clone()))
    })
}

/// Makes `attempt` (read, build the op) and lands its tick, retrying on a
/// moved ref or a busy lock until [`RETRY_FOR`]. `attempt` may return a
/// partial state ([`on_shards`]): when the op's apply read past what it
/// holds, `whole` is set and the attempt made again (it then reads the
/// whole state); a caller that reads whole states passes it set.
fn retry(
    repo: &Repo,
    caller: &Caller,
    whole: &std::cell::Cell<bool>,
    mut attempt: impl FnMut(&Repo) -> Result<(Option<Tip>, State, Op)>,
) -> Result<Committed> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(1);
    let mut tries = 0u32;
    let committer = repo.committer().clone();
    let mut seal = crate::trust::Seal::default();
    // A human who signs runs ssh-keygen (which may wait on a key's touch):
    // never while holding the writers' queue. Such a tick builds and signs
    // its op first, then queues, and uses that op if the tip has not moved
    // meanwhile; if it has, it lets the queue go and signs again outside.
    let signs = *caller == Caller::Human && crate::trust::sign::configured(repo).is_some();
    let mut turn: Option<crate::queue::Turn> = None;
    let mut sealed: Option<(Option<Tip>, State, Op)> = None;
    loop {
        tries += 1;
        if turn.is_none() {
            if signs {
                let (tip, before, mut op) = attempt(repo)?;
                let parent = tip.as_ref().map(|t| t.commit);
                seal.seal(repo, caller, parent, &before, &mut op)?;
                sealed = Some((tip, before, op));
            }
            // Local writers take turns from reading the tip to moving the
            // ref (src/queue.rs); the compare-and-swap below still decides.
            turn = Some(crate::queue::wait(
                repo.store().common_dir(),
                crate::queue::PATIENCE,
            ));
        }
        let (tip, mut before, mut op) = match sealed.take() {
            Some(s) if repo.store().tip_id()? == s.0.as_ref().map(|t| t.commit) => s,
            // The state moved since the signature: sign again, outside.
            _ if signs && started.elapsed() < RETRY_FOR => {
                turn = None;
                continue;
            }
            _ => attempt(repo)?,
        };
        // Never a tick this machine's own clock calls the future: no hub
        // would take it, nor any later tick of this clone.
        let (now, skew) = (repo.now(), before.meta.settings.clock_skew);
        if op.at > now.plus(skew) {
            return Err(future_tick(op.at, now, skew).into());
        }
        // Nor on a tick this machine's clock has not reached: a clock set
        // back (or a LOOPX_NOW in the past) would write history out of
        // order. An op dated earlier only because its command ran long
        // (a validation, a check) while the clock went on is written as
        // it is, as sync's replay keeps an op's time: a writer's rule only.
        if let Some(t) = &tip {
            let parent = crate::time::Timestamp::from_unix(repo.store().entry(t.commit)?.time);
            if parent > now.plus(skew) && parent > op.at.plus(skew) {
                return Err(behind_parent(now, parent, skew).into());
            }
        }
        // A human act is signed (against the state it changes; above,
        // outside the queue, so here it is only checked) and checked
        // against this machine's allowed signers.
        let parent = tip.as_ref().map(|t| t.commit);
        seal.seal(repo, caller, parent, &before, &mut op)?;
        if crate::trust::validation::writes_validation(&op) {
            // Remembered before the tick lands: this exact validation of
            // this todo, written here, runs here without further trust.
            crate::trust::validation::remember(repo, &op)?;
        }
        // On a goal ref of a split state the op applies to the shared
        // parts of the shared tip it pins (`goalref`).
        let pin = goalref::for_write(repo.store(), tip.as_ref(), &before)?;
        let refresh = match &pin {
            Some(p) => goalref::overlay(&mut before, p),
            None => Vec::new(),
        };
        let extra: Vec<(&str, String)> = pin.iter().map(goalref::Pin::trailer).collect();
        let planned = plan_tick(tip.as_ref(), &before, &op, crate::model::WRITES, &extra);
        if before.todos.fell_short_of_whole() {
            // The op read past a partial state: decide it on the whole one.
            whole.set(true);
            sealed = None;
            if signs {
                turn = None;
            }
            continue;
        }
        let Written {
            tip: new,
            effect,
            state: after,
        } = match write_planned(
            repo.store(),
            tip.as_ref(),
            planned,
            &op,
            &refresh,
            &committer,
            Empty::Skip,
        ) {
            Ok(w) => w,
            Err(TickError::Refused(r)) => return Err(r.into()),
            Err(TickError::Failed(e)) => return Err(unwritten(repo, e)),
        };
        goalref::check_write(repo.state_ref(), &before, &after)?;
        let Some(new) = new else {
            // The op changes nothing (an identical registration, a spend of
            // a turn already spent): no tick, as if it had landed before.
            return Ok(Committed {
                op,
                effect,
                tip: tip.expect("only a tick with a parent can be empty"),
                state: after,
            });
        };
        let reflog = format!("loopx: {}", effect.subject);
        match repo.store().writer().cas(
            new.commit,
            tip.as_ref().map(|t| t.commit),
            &reflog,
            &committer,
        ) {
            Ok(()) => {
                // A tick loopx wrote on a verified tip is verified.
                let store = repo.store();
                store.advance_mark(
                    store.state_ref(),
                    tip.as_ref().map(|t| t.commit),
                    new.commit,
                );
                // The next read starts from the state in hand, not the tree.
                // Written before the turn passes on, so the next queued
                // writer finds the new tip cached; with what the tick
                // touched, so the cache can be updated in place.
                let touched = files::touched(&before, &after);
                if refresh.is_empty() {
                    cache::update_from(
                        repo.store(),
                        tip.as_ref(),
                        Some(&before),
                        &new,
                        &after,
                        &touched,
                    );
                    drop(before);
                } else {
                    // The pin moved: the shared parts changed under the op.
                    cache::write(repo.store(), &new, &after);
                }
                drop(turn);
                auto_pack(repo, new.tick);
                return Ok(Committed {
                    op,
                    effect,
                    tip: new,
                    state: after,
                });
            }
            Err(CasError::Moved) => {}
            Err(CasError::Locked { lock, age }) => {
                if recover_lock(repo.store(), &lock, age)? {
                    continue;
                }
            }
            Err(CasError::Other(e)) => {
                // The ref did not move unless it now names the new tick.
                let moved = repo.store().tip_id().ok().flatten() == Some(new.commit);
                return Err(if moved { e } else { unwritten(repo, e) });
            }
        }
        if started.elapsed() >= RETRY_FOR {
            return Err(Refusal::conflict(
                Code::RetriesExhausted,
                format!(
                    "{} kept moving: gave up after {tries} attempts in {}s",
                    repo.state_ref(),
                    started.elapsed().as_secs()
                ),
            )
            .with_hint("other writers are very busy; run the command again")
            .into());
        }
        // Full jitter: anywhere up to a cap that doubles to 50 ms, so
        // writers outside the queue spread out instead of waking together.
        std::thread::sleep(backoff.mul_f64(jitter()));
        backoff = (backoff * 2).min(Duration::from_millis(50));
    }
}

/// An error from writing a tick that did not land: a full disk says so
/// plainly (the objects written so far are unreachable and harmless).
fn unwritten(repo: &Repo, e: anyhow::Error) -> anyhow::Error {
    if crate::error::is_disk_full(&e) {
        return crate::error::disk_full(
            repo.store().common_dir(),
            &format!("nothing was written ({} did not move)", repo.state_ref()),
        )
        .into();
    }
    e
}

/// A tick written to the object database (not yet on any ref).
pub struct Written {
    /// The new commit; `None` when the op changed nothing and
    /// [`Empty::Skip`] wrote no commit.
    pub tip: Option<Tip>,
    pub effect: Effect,
    /// The state after the op (without the records it wrote).
    pub state: State,
}

/// What to do with an op that changes no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Empty {
    /// Write no commit (a live tick: as if it had landed before).
    Skip,
    /// Write a commit with the parent's tree (a replay keeps every op).
    Write,
}

/// A tick as the writer makes it, before anything is written: what
/// [`Tick::write`] writes, and what `verify` requires a commit to be.
pub struct Planned {
    pub effect: Effect,
    /// The state after the op (without the records it wrote).
    pub state: State,
    /// The files that change from the parent's tree (every file for the
    /// first tick).
    pub changes: Vec<files::Change>,
    pub message: String,
    pub author: Person,
    pub tick: u64,
}

/// Applies `op` to `before` (the state at `parent`; `None` for the first
/// tick) with [`op::apply`] and makes the tick's files, message and author
/// (DESIGN §3). A refusal by `apply` is the error; nothing is written.
pub fn plan_tick(
    parent: Option<&Tip>,
    before: &State,
    op: &Op,
    format: u32,
    extra: &[(&str, String)],
) -> Result<Planned, Refusal> {
    let mut after = before.clone();
    if parent.is_none() {
        // The first tick writes `loopx.toml` with the format it is in.
        after.meta.format = format;
    }
    let effect = op::apply_as(&mut after, op, format)?;
    let changes = match parent {
        Some(_) => files::changes(
            before,
            &after,
            &files::Records {
                evidence: &effect.evidence,
                archived: Some(&effect.archived),
            },
        ),
        None => files::encode_all(&after),
    };
    // No file over the size limit (a refusal, like apply's).
    for (path, bytes) in &changes {
        if let Some(bytes) = bytes {
            op::limits::file(path, bytes.len())?;
        }
    }
    let tick = parent.map_or(0, |t| t.tick) + 1;
    let message = message::render(op, &effect, tick, format, extra);
    let author = Person {
        name: op.actor.name().to_owned(),
        email: op.actor.email(),
    };
    Ok(Planned {
        effect,
        state: after,
        changes,
        message,
        author,
        tick,
    })
}

/// Why a tick was not written: `apply` refused its op (a rule, not a
/// failure), or writing it failed.
#[derive(Debug)]
pub enum TickError {
    Refused(Refusal),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for TickError {
    fn from(e: anyhow::Error) -> Self {
        TickError::Failed(e)
    }
}

impl From<TickError> for anyhow::Error {
    fn from(e: TickError) -> Self {
        match e {
            TickError::Refused(r) => r.into(),
            TickError::Failed(e) => e,
        }
    }
}

/// The one writer of tick commits, used by live ticks, sync's replay,
/// `goal split` and the benchmark's history generator: plans the tick with
/// [`plan_tick`] and writes the changed files and a commit whose dates are
/// the op's time; the ref is never moved here. Built with what every tick
/// needs; `extra` trailers, `refresh` files (a goal tick's moved pin:
/// [`goalref::overlay`]) and `skip_empty` are optional.
pub struct Tick<'a> {
    store: &'a Store,
    parent: Option<&'a Tip>,
    before: &'a State,
    op: &'a Op,
    committer: &'a Person,
    extra: &'a [(&'a str, String)],
    refresh: &'a [files::Change],
    empty: Empty,
}

impl<'a> Tick<'a> {
    /// A tick of `op` on `before` (the state at `parent`), always written.
    pub fn new(
        store: &'a Store,
        parent: Option<&'a Tip>,
        before: &'a State,
        op: &'a Op,
        committer: &'a Person,
    ) -> Self {
        Tick {
            store,
            parent,
            before,
            op,
            committer,
            extra: &[],
            refresh: &[],
            empty: Empty::Write,
        }
    }

    /// Trailers after the op's own.
    pub fn extra(mut self, extra: &'a [(&'a str, String)]) -> Self {
        self.extra = extra;
        self
    }

    /// Shared files a goal tick's moved pin changes in its parent's tree.
    pub fn refresh(mut self, refresh: &'a [files::Change]) -> Self {
        self.refresh = refresh;
        self
    }

    /// Writes no commit when the op changes nothing ([`Empty::Skip`]).
    pub fn skip_empty(mut self) -> Self {
        self.empty = Empty::Skip;
        self
    }

    /// Plans and writes the tick.
    pub fn write(self) -> Result<Written, TickError> {
        let planned = plan_tick(
            self.parent,
            self.before,
            self.op,
            crate::model::WRITES,
            self.extra,
        );
        write_planned(
            self.store,
            self.parent,
            planned,
            self.op,
            self.refresh,
            self.committer,
            self.empty,
        )
    }
}

/// The second half of [`Tick::write`]: writes a planned tick (or passes
/// on apply's refusal).
fn write_planned(
    store: &Store,
    parent: Option<&Tip>,
    planned: Result<Planned, Refusal>,
    op: &Op,
    refresh: &[files::Change],
    committer: &Person,
    empty: Empty,
) -> Result<Written, TickError> {
    let mut planned = match planned {
        Ok(p) => p,
        Err(refusal) => return Err(TickError::Refused(refusal)),
    };
    planned.changes.extend(refresh.iter().cloned());
    if parent.is_some() && planned.changes.is_empty() && empty == Empty::Skip {
        return Ok(Written {
            tip: None,
            effect: planned.effect,
            state: planned.state,
        });
    }
    // Never write a state this binary cannot read back.
    for (path, bytes) in &planned.changes {
        if let Some(bytes) = bytes {
            files::check_file(path, bytes).map_err(|r| {
                anyhow::anyhow!(
                    "refusing to write {path}, which would not read back: {}",
                    r.message
                )
            })?;
        }
    }
    let tip = store.write_commit(
        parent,
        &planned.changes,
        &planned.message,
        &planned.author,
        committer,
        op.at.unix(),
    )?;
    Ok(Written {
        tip: Some(tip),
        effect: planned.effect,
        state: planned.state,
    })
}

/// Every `loopx.autoPack` ticks (default 200, 0 turns it off), starts a
/// geometric repack in the background, so loose objects stay bounded without
/// stalling any tick.
fn auto_pack(repo: &Repo, tick: u64) {
    let auto_pack = repo.config().auto_pack;
    if auto_pack > 0 && tick.is_multiple_of(auto_pack) {
        crate::git::spawn_detached(repo.store().common_dir(), &crate::git::REPACK);
    }
}

pub use crate::config::AUTO_PACK;

/// The refusal of an op dated beyond this machine's clock and the skew
/// margin.
pub fn future_tick(
    at: crate::time::Timestamp,
    now: crate::time::Timestamp,
    skew: crate::time::Span,
) -> Refusal {
    Refusal::rule(
        Code::FutureTick,
        format!(
            "this op is dated {at}, after this machine's clock ({now}) plus the clock-skew margin ({skew}): no other clone or hub would take the tick"
        ),
    )
    .with_hint("check this machine's clock (and LOOPX_NOW, which moves it); nothing was written")
}

/// The refusal of a tick on a parent this machine's clock has not reached
/// (by more than the skew margin).
pub fn behind_parent(
    now: crate::time::Timestamp,
    parent: crate::time::Timestamp,
    skew: crate::time::Span,
) -> Refusal {
    Refusal::rule(
        Code::ClockBehind,
        format!(
            "this machine's clock ({now}) is behind the last tick ({parent}) by more than the clock-skew margin ({skew}): a tick now would write the state's history out of order"
        ),
    )
    .with_hint("set this machine's clock right (or LOOPX_NOW to a later time); if that tick is dated in this machine's future, `loopx sync --redate` writes it again at this machine's time; nothing was written")
}

//! Verified history (DESIGN §8.1): a commit of the state ref is trusted only
//! if it is exactly the tick loopx would have written for its op.
//!
//! [`check_tick`] is the one place that decides whether one commit is a
//! valid tick on top of a trusted parent. It checks that the commit is a
//! tick (one parent, a message that parses, a format and an op this binary
//! knows), that its author and date are its op's actor and time, that the
//! op is not dated beyond the clock-skew margin in the verifying machine's
//! future, then re-applies the op to the parent's state through
//! [`tx::plan_tick`] (the first half of the one tick writer, and so the
//! same `apply` every live command uses) and requires the message and the
//! tree that a live tick would write: the same bytes, the same tree id.
//! That one comparison covers every rule `apply` enforces and every file,
//! live, evidence or archive. Evidence and the archive only grow: a tick
//! may add files there, never replace one.
//!
//! [`walk`] goes along a first-parent chain from a trusted commit, checking each
//! commit in order and carrying the state forward, so a history of `n`
//! ticks costs `n` applies and no reads of whole trees after the first.
//! `verify`, sync (before it trusts a remote's commits, and before it pushes
//! local ones) and the hub's `pre-receive` hook all go through here.
//!
//! Verification is deterministic: the same history verifies the same way on
//! every machine, except that a tick dated in the future (beyond the skew
//! margin) is refused until that time has come.

use anyhow::Result;
use serde::Serialize;

use crate::error::{Code, Refusal};
use crate::model::{FORMAT, State, files};
use crate::op::{Change, message};
use crate::repo::Repo;
use crate::store::{Entry, Oid, Scratch, Store, Tip};
use crate::time::Timestamp;
use crate::trust::lineage::{self, Lineage};
use crate::tx;

mod birth;
mod check;
use check::{check_files, check_head};

/// Which rule a commit breaks. Serialized as stable kebab-case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The message is not a loopx tick (no op, no trailers).
    NotATick,
    /// A merge commit, or a root commit in the middle of the chain.
    Parents,
    /// Written by a newer loopx (`Loopx-Format` above this binary's).
    FormatTooNew,
    /// An op kind this binary does not know.
    UnknownOp,
    /// `Loopx-Tick` is not the parent's plus one.
    TickNumber,
    /// The commit's author is not the op's actor, or its date not the op's
    /// time.
    Author,
    /// Dated beyond the clock-skew margin after this machine's clock.
    Future,
    /// `apply` refuses the op on the parent's state.
    Refused,
    /// The message is not what loopx writes for this op: unknown fields, a
    /// changed subject or trailers.
    Message,
    /// Evidence or archive files were replaced or removed.
    AppendOnly,
    /// The tree is not what the op makes of the parent's tree.
    Tree,
    /// A human act without a valid signature by a signer this machine
    /// trusts (or any op whose signature does not verify).
    Signature,
    /// An op id already used by an earlier tick of the chain.
    OpIdReused,
    /// A `Loopx-Format` lower than an earlier tick's (format 4 on).
    FormatDown,
    /// Format 6: a goal ref's tick without a valid `Loopx-Shared` pin (or
    /// one that changes the shared parts), or a shared ref's tick that
    /// changes a goal's (`tx::goalref`).
    Pin,
}

impl Rule {
    /// The rule's name, as in `--format json`.
    pub fn name(self) -> &'static str {
        match self {
            Rule::NotATick => "not-a-tick",
            Rule::Parents => "parents",
            Rule::FormatTooNew => "format-too-new",
            Rule::UnknownOp => "unknown-op",
            Rule::TickNumber => "tick-number",
            Rule::Author => "author",
            Rule::Future => "future",
            Rule::Refused => "refused",
            Rule::Message => "message",
            Rule::AppendOnly => "append-only",
            Rule::Tree => "tree",
            Rule::Signature => "signature",
            Rule::OpIdReused => "op-id-reused",
            Rule::FormatDown => "format-down",
            Rule::Pin => "pin",
        }
    }

    /// Whether upgrading loopx could make the commit verify.
    pub fn wants_upgrade(self) -> bool {
        matches!(self, Rule::FormatTooNew | Rule::UnknownOp)
    }
}

/// A commit that is not a valid tick. Every refusal for one has the code
/// `invalid-tick` (one family); the [`Rule`] says which check failed.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub commit: String,
    /// The tick number it claims (or would have).
    pub tick: u64,
    /// Its author as git records it: `Name <email>`.
    pub author: String,
    pub rule: Rule,
    /// What is wrong, in words.
    pub message: String,
    /// For [`Rule::Refused`]: the refusal's own code (`claimed`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Code>,
}

impl Finding {
    fn new(entry: &Entry, tick: u64, rule: Rule, message: impl Into<String>) -> Self {
        Finding {
            commit: entry.commit.to_string(),
            tick,
            author: format!("{} <{}>", entry.author.name, entry.author.email),
            rule,
            message: message.into(),
            refusal: None,
        }
    }

    /// The refusal a command exits with (exit 3), with `hint` saying what
    /// to do where it was found.
    pub fn refusal(&self, hint: impl Into<String>) -> Refusal {
        let short = &self.commit[..self.commit.len().min(8)];
        let hint = if self.rule.wants_upgrade() {
            format!(
                "upgrade loopx, then try again. If no newer loopx writes this, the commit is forged: {}",
                hint.into()
            )
        } else {
            hint.into()
        };
        Refusal::rule(
            Code::InvalidTick,
            format!(
                "commit {short} (tick {}, by {}) is not a valid loopx tick [{}]: {}",
                self.tick,
                self.author,
                self.rule.name(),
                self.message
            ),
        )
        .with_hint(hint)
    }
}

/// A commit whose state is trusted: verified, or taken as the start.
#[derive(Clone, Debug)]
pub struct Verified {
    pub tip: Tip,
    pub state: State,
}

/// Why a commit or a chain did not verify: a commit breaks a rule (decided
/// the same way on every machine), or the check itself could not read the
/// repository (nothing decided).
#[derive(Debug)]
pub enum Unverified {
    /// The first commit that is not a valid tick.
    Invalid(Finding),
    /// Reading the repository failed.
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Unverified {
    fn from(e: anyhow::Error) -> Self {
        Unverified::Failed(e)
    }
}

impl Unverified {
    /// The finding; a failure to read is passed on as the caller's error.
    pub fn finding(self) -> Result<Finding> {
        match self {
            Unverified::Invalid(f) => Ok(f),
            Unverified::Failed(e) => Err(e),
        }
    }
}

/// The result of checking one commit or a chain: the trusted tip it reached,
/// or why it reached none.
pub type Checked = std::result::Result<Verified, Unverified>;

/// Which signatures this machine asks of human acts (its data lives below
/// the repository handle, which caches it).
pub use crate::signing::Signing;

/// Checks that `entry` is the tick loopx writes for its op on top of
/// `parent` (None: `entry` is the first tick). `now` is this machine's
/// clock, for the one rule that reads it. A commit that breaks a rule is
/// [`Unverified::Invalid`]; an I/O error, [`Unverified::Failed`].
///
/// This is the one function that decides what a valid tick is: a further
/// check (a signature on a human act, say) belongs here, so that `verify`,
/// sync and the hub hook all make it.
/// `lineage` is the chain up to `parent` (its identity, op ids and
/// format); a tick that verifies is added to it.
pub fn check_tick(
    scratch: &Scratch,
    store: &Store,
    parent: Option<&Verified>,
    entry: &Entry,
    now: Timestamp,
    signing: &Signing,
    lineage: &mut Lineage,
) -> Checked {
    let parsed = message::parse(&entry.message);
    let head = check_head(store, parent, entry, parsed, now, signing, lineage)?;
    let parent_tree = parent.map(|p| p.tip.tree);
    if let Some(f) = check_files(
        scratch,
        parent_tree,
        entry,
        head.tick,
        &head.planned.changes,
    )? {
        return Err(Unverified::Invalid(f));
    }
    Ok(head.accept(entry, lineage))
}

/// What a chain's check found valid but worth saying (`verify` prints it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Notes {
    /// Agent ticks (format 5 on) not signed by a machine allowed to act for
    /// their agent, accepted because the signing policy did not require it
    /// then; refused once `signer require --machines` is on.
    pub unsigned_agent_ticks: Vec<u64>,
}

/// Checks every commit after `base` (None: from the first tick) up to
/// `tip`, in order, calling `progress(done, total)` as it goes, on more
/// than one thread when `threads` allows and the machine and the chain's
/// length make it worth it (`parallel`). `base` is trusted as it is.
/// Returns the verified tip or why there is none, and the chain's
/// [`Notes`] (of the ticks that passed).
pub fn walk(
    store: &Store,
    base: Option<Verified>,
    tip: Oid,
    now: Timestamp,
    signing: &Signing,
    progress: &mut dyn FnMut(usize, usize),
    threads: bool,
) -> (Checked, Notes) {
    let mut lineage = Lineage::default();
    let check = || -> Checked {
        let ids = store.chain_ids_since(tip, base.as_ref().map(|b| b.tip.commit))?;
        let total = ids.len();
        // The op ids and identity of the trusted part, from the index
        // beside the cache (a walk of the messages when it has none that
        // fits).
        if let Some(b) = &base {
            lineage = lineage::at(store, b.tip.commit)?;
        }
        let checked = if threads && parallel(total) {
            pipeline::run(store, base, ids, now, signing, &mut lineage, progress)
        } else {
            serial(store, base, ids, now, signing, &mut lineage, progress)
        };
        if checked.is_ok() && total > 0 {
            lineage::save(store, &lineage);
        }
        checked
    };
    let checked = check();
    let mut notes = Notes {
        unsigned_agent_ticks: std::mem::take(&mut lineage.unsigned_agent_ticks),
    };
    // Only ticks that passed count: the pipelined path takes a tick into
    // the lineage before its files are checked.
    if let Err(Unverified::Invalid(f)) = &checked {
        notes.unsigned_agent_ticks.retain(|t| *t < f.tick);
    }
    (checked, notes)
}

/// Chains at least this long are checked on two threads when the machine
/// has two cores or more.
const PARALLEL_FROM: usize = 64;

/// Whether to check a chain of `total` ticks on more threads: the
/// environment's `LOOPX_VERIFY_THREADS` decides when set (1: one thread;
/// more: always more, as the tests that compare both paths ask), else the
/// machine's cores and the chain's length.
fn parallel(total: usize) -> bool {
    match crate::env::Env::process()
        .get("LOOPX_VERIFY_THREADS")
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        Some(n) => n > 1,
        None => {
            total >= PARALLEL_FROM
                && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        }
    }
}

/// Checks the commits `ids` in order on this thread, each on top of the
/// one before (the first on `base`).
fn serial(
    store: &Store,
    base: Option<Verified>,
    ids: Vec<Oid>,
    now: Timestamp,
    signing: &Signing,
    lineage: &mut Lineage,
    progress: &mut dyn FnMut(usize, usize),
) -> Checked {
    let scratch = store.scratch();
    let total = ids.len();
    let mut current = base;
    for (i, id) in ids.into_iter().enumerate() {
        let entry = store.entry(id)?;
        let v = check_tick(
            &scratch,
            store,
            current.as_ref(),
            &entry,
            now,
            signing,
            lineage,
        )?;
        // The parent's state is dropped here: the new one's writes fold
        // into the base they shared, so the next tick clones no overlay
        // (`State::settle`).
        let v = current.insert(v);
        v.state.settle();
        progress(i + 1, total);
    }
    Ok(current.expect("a chain ending at a commit has at least one commit"))
}

/// The same checks as [`serial`], in three stages on three threads: one
/// reads and parses the commits ahead, this one re-applies each op on the
/// state before it ([`check_head`], the only stage that carries state),
/// and one checks the files each op writes and builds its tree
/// ([`check_files`]) while the next op is re-applied. Every rule is still
/// decided by the same functions on the same inputs, and the answer is the
/// first commit, in chain order, that any stage refuses: exactly the
/// serial answer. The other threads open the repository again (gix's
/// handles stay on one thread).
mod pipeline;
mod vouch;
pub use vouch::vouched;
mod current;
pub use current::current;

/// [`walk`] in a repository, with its clock and signing setup, on as many
/// threads as are worth it.
pub fn chain(
    repo: &Repo,
    base: Option<Verified>,
    tip: Oid,
    progress: &mut dyn FnMut(usize, usize),
) -> (Checked, Notes) {
    // A goal ref's ticks pin the shared ref as verified here: bring its
    // mark up to its tip first.
    if tx::goalref::is_goal_ref(repo.state_ref())
        && let Err(e) = current(&repo.for_ref(tx::goalref::SHARED))
    {
        return (Err(e.into()), Notes::default());
    }
    let signing = match repo.signing() {
        Ok(s) => s,
        Err(e) => return (Err(e.into()), Notes::default()),
    };
    walk(
        repo.store(),
        base,
        tip,
        // "Future" is judged by this machine's own clock, never by
        // LOOPX_NOW: a fixed clock may only lie in the past.
        crate::time::Timestamp::system_now(),
        signing,
        progress,
        true,
    )
}

/// Whether `ancestor` is on the first-parent chain of `commit`.
pub fn is_ancestor(repo: &Repo, ancestor: Oid, commit: Oid) -> Result<bool> {
    repo.store().is_ancestor(ancestor, commit)
}

/// The state at `commit`, trusted as it is (a chain's starting point).
pub fn trusted_at(store: &Store, commit: Oid) -> Result<Verified> {
    let snap = tx::snapshot(store, store.tip_at(commit)?)?;
    Ok(Verified {
        tip: snap.tip,
        state: snap.state,
    })
}

/// The state before `from`, trusted as it is (None: `from` is the first
/// tick).
pub fn trusted_parent(repo: &Repo, from: &Entry) -> Result<Option<Verified>> {
    from.parent.map(|p| trusted_at(repo.store(), p)).transpose()
}

/// Why a hub refuses one pushed update of a `refs/loopx/*` ref.
pub enum Update {
    Deletion,
    /// Not a fast-forward of what the hub holds.
    Rewrite {
        old: Oid,
        new: Oid,
    },
    Invalid(Finding),
    /// A new goal ref that is not the goal-ref half of a split whose other
    /// half the hub holds (`birth::stray`): why.
    StrayGoalRef(String),
    /// Reading the hub's repository failed: nothing is decided.
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Update {
    fn from(e: anyhow::Error) -> Self {
        Update::Failed(e)
    }
}

impl From<Unverified> for Update {
    fn from(e: Unverified) -> Self {
        match e {
            Unverified::Invalid(f) => Update::Invalid(f),
            Unverified::Failed(e) => Update::Failed(e),
        }
    }
}

/// Checks one pushed update (`old` → `new`, full hex ids, zeros for none)
/// of the `refs/loopx/*` ref `name` on a hub: never deleted, only
/// fast-forwarded, every new commit a valid tick on top of what the hub
/// held, and a new goal ref only the goal-ref half of a split
/// ([`Update::StrayGoalRef`]).
pub fn update(
    store: &Store,
    name: &str,
    old: &str,
    new: &str,
    now: Timestamp,
    signing: &Signing,
) -> std::result::Result<(), Update> {
    let zero = |id: &str| id.bytes().all(|b| b == b'0');
    if zero(new) {
        return Err(Update::Deletion);
    }
    let new = store.oid(new)?;
    let base = if zero(old) {
        None
    } else {
        let old = store.oid(old)?;
        if old == new {
            return Ok(());
        }
        if !store.is_ancestor(old, new)? {
            return Err(Update::Rewrite { old, new });
        }
        Some(trusted_at(store, old)?)
    };
    let created = base.is_none();
    // One thread: a hub's quarantined objects are seen only through this
    // store's own object directories.
    walk(store, base, new, now, signing, &mut |_, _| {}, false).0?;
    if created && let Some(why) = birth::stray(store, name, new)? {
        return Err(Update::StrayGoalRef(why));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

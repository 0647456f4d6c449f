//! The commands' side of a tick: [`crate::tx`] takes the repository handle
//! and explicit values (the caller, the actor, the time, the id source);
//! this resolves them from the command context, tries the fast start-up
//! path's cache before opening the repository, and tells the writer what
//! the redactor took out. Commands name it `tx` (`use crate::cmd::tx`); it
//! re-exports the tick's types and nothing of [`crate::tx`] that takes a
//! repository, so `tx::load(ctx)` never reads like `tx::load(repo)`.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::{Code, Refusal};
use crate::op::{AgentRegister, Change, GoalAdd, Init, Op};
use crate::store::Tip;

// The tick's types and the store-level helpers the commands share, as
// they are; every function here that reads or writes takes the context.
pub use crate::tx::{
    Claims, Commit, Committed, STALE_LOCK, Snapshot, Stamped, Tick, goalref, no_state_at, snapshot,
};

/// Starts a tick as the caller of this invocation: the command-side
/// adapter of [`crate::tx::Commit`] (jj's `start_transaction`), used as
/// `tx::start(ctx)?.run(build)`, `.touching(typed)`, `.at(commit)` or
/// `.from(snapshot)` first.
pub fn start(ctx: &Ctx) -> Result<Commit<'_>> {
    not_bare(ctx)?;
    Ok(Commit::new(ctx.repo()?, ctx.caller()))
}

/// The first tick ([`crate::tx::init`]).
pub fn init(ctx: &Ctx, op: Op) -> Result<Committed> {
    not_bare(ctx)?;
    crate::tx::init(ctx.repo()?, ctx.caller(), op)
}

/// Refuses a state write in a bare repository, a hub, unless
/// `--allow-bare` (or git config `loopx.allowBare = true`, for a bare
/// repository that is written on purpose, such as a mirror): a hub takes
/// the state clones push and guards it (`hub install`), and an act written
/// there bypasses both the clone's identity and the guard.
pub fn not_bare(ctx: &Ctx) -> Result<(), Refusal> {
    let Ok(store) = ctx.store() else {
        return Ok(());
    };
    if store.is_bare() && !ctx.allow_bare && store.config_bool("loopx.allowBare") != Some(true) {
        return Err(Refusal::rule(
            Code::BareRepository,
            "this is a hub (a bare repository): write from a clone",
        )
        .with_hint(
            "run the command in a clone that syncs with this hub (`git clone HUB`, then `loopx sync`), or pass --allow-bare (or set git config loopx.allowBare true) to write here anyway",
        ));
    }
    Ok(())
}

/// An operation by the current actor, now, with a fresh op id
/// ([`crate::tx::op`]); the writer is told on stderr when its text was
/// redacted. A new agent or goal id that looks like a secret is refused
/// (`secret_id`).
pub fn op(ctx: &Ctx, change: Change) -> Result<Op, Refusal> {
    not_bare(ctx)?;
    secret_id(&change)?;
    let actor = ctx.actor()?;
    // (A repository that does not open says so itself, at the write.)
    if crate::ctx::is_unidentified(&actor) && ctx.store().is_ok() {
        return Err(crate::ctx::no_identity());
    }
    let Stamped { op, redacted } = crate::tx::op(actor, ctx.now, &ctx.ids, change)?;
    if !redacted.is_empty() {
        ctx.out.warn(&format!(
            "the {} looked like {} a secret, which the state would replicate to every clone and the hub: stored with {} in its place (pass secrets through the environment or a file instead)",
            redacted.join(" and "),
            if redacted.len() == 1 { "it held" } else { "they held" },
            crate::redact::MARK
        ));
    }
    Ok(op)
}

/// Refuses a new agent or goal id (`agent register`, a session's first
/// start, `goal add`, `init --goal`) that has a token's shape
/// ([`crate::redact::looks_secret`]): an id is never redacted, names
/// refs, files and every tick of its agent, and the state replicates it to
/// every clone and the hub. Checked when a command makes its op, never in
/// `apply`, so older ticks replay as written. The id is not repeated in
/// the message.
fn secret_id(change: &Change) -> Result<(), Refusal> {
    let (kind, id) = match change {
        Change::AgentRegister(AgentRegister { agent, .. }) => ("agent", agent.as_str()),
        Change::GoalAdd(GoalAdd { goal, .. })
        | Change::Init(Init {
            goal: Some(goal), ..
        }) => ("goal", goal.as_str()),
        _ => return Ok(()),
    };
    if !crate::redact::looks_secret(id) {
        return Ok(());
    }
    Err(Refusal::usage(
        Code::BadId,
        format!(
            "the {kind} id looks like a secret (it has the shape of an API token): an id is never redacted, and the state would replicate it to every clone and the hub"
        ),
    )
    .with_hint(format!(
        "choose another {kind} id; if it is a real token, revoke it. Nothing was written"
    )))
}

/// Reads the current state: from the fast start-up path's cache when it
/// holds the tip (no repository opened, `crate::fast`), else
/// [`crate::tx::load`].
pub fn load(ctx: &Ctx) -> Result<Snapshot> {
    if let Some((tip, state)) = ctx.fast().and_then(crate::fast::Fast::cached) {
        return Ok(Snapshot { tip, state });
    }
    crate::tx::load(ctx.repo()?)
}

/// The state with at least every claimed todo (`should-run`'s first
/// read): the cache's head alone when the fast start-up path holds the tip
/// ([`crate::fast::Fast::cached_claims`]), else [`crate::tx::load_claims`].
pub fn load_claims(ctx: &Ctx) -> Result<Claims> {
    if let Some(claims) = ctx.fast().and_then(crate::fast::Fast::cached_claims) {
        return Ok(claims);
    }
    crate::tx::load_claims(ctx.repo()?)
}

/// `agent`'s ready list on `goal` from the cache's ready index at `tip`
/// (what the tick to `tip` just wrote), on a hit.
pub fn ready_list(
    ctx: &Ctx,
    tip: &Tip,
    agent: &crate::model::AgentId,
    goal: &crate::model::GoalId,
) -> Option<crate::op::turn::ready::ReadyList> {
    crate::tx::ready_list(ctx.repo().ok()?, tip, agent, goal)
}

/// Repairs a missing or damaged ready index from the whole state a
/// reader fell back to ([`crate::tx::repair_ready`]); silent.
pub fn repair_ready(ctx: &Ctx, snap: &Snapshot) {
    if let Ok(repo) = ctx.repo() {
        crate::tx::repair_ready(repo, snap);
    }
}

/// Reads the state at a commit.
pub fn load_at(ctx: &Ctx, tip: Tip) -> Result<Snapshot> {
    crate::tx::load_at(ctx.repo()?, tip)
}

/// Reads the archived todos of a snapshot (not part of the live state).
pub fn load_archive(
    ctx: &Ctx,
    snap: &Snapshot,
) -> Result<std::collections::BTreeMap<crate::model::TodoId, crate::model::Todo>> {
    crate::tx::load_archive(ctx.repo()?, snap)
}

/// The tip of the state ref, if there is a state.
pub fn tip(ctx: &Ctx) -> Result<Option<Tip>> {
    crate::tx::tip(ctx.repo()?)
}

/// The commit message of a tick.
pub fn message_of(ctx: &Ctx, commit: crate::store::Oid) -> Result<String> {
    crate::tx::message_of(ctx.repo()?, commit)
}

/// Every file of a tip's tree as stored, live and archived (not evidence),
/// for `doctor`'s checks.
pub fn raw_files(ctx: &Ctx, tip: &Tip) -> Result<Vec<(String, Vec<u8>)>> {
    crate::tx::raw_files(ctx.repo()?, tip)
}

/// The state ref does not exist: says how to create or fetch it.
pub fn no_state(ctx: &Ctx) -> Refusal {
    no_state_at(ctx.state_ref())
}

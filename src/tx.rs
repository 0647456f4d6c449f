//! A tick: load the tip, apply one operation, write one commit, move the ref
//! by compare-and-swap, and retry on a moved ref or a busy lock (DESIGN §3).
//!
//! The caller passes a function that builds the op from the state it sees,
//! so a retry re-decides against the new state (for example `claim --next`
//! picks again) and re-applies the same rules.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Refusal;
use crate::model::{State, files};
use crate::op::{self, Effect, Op, message};
use crate::store::{CasError, Person, Tip};

/// How long a tick keeps retrying before giving up with exit 4.
const RETRY_FOR: Duration = Duration::from_secs(30);
/// A lock file older than this is stale: its writer died.
pub const STALE_LOCK: Duration = Duration::from_secs(10);

/// The state as read, and the commit it came from.
pub struct Snapshot {
    pub tip: Tip,
    pub state: State,
}

/// A tick that landed.
pub struct Committed {
    pub op: Op,
    pub effect: Effect,
    pub tip: Tip,
    pub state: State,
}

/// Reads the state at a commit.
pub fn load_at(ctx: &Ctx, tip: Tip) -> Result<Snapshot> {
    let files = ctx.store.read_files(tip.tree)?;
    let state = files::decode(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
    Ok(Snapshot { tip, state })
}

/// Reads the archived todos of a snapshot (not part of the live state).
pub fn load_archive(
    ctx: &Ctx,
    snap: &Snapshot,
) -> Result<std::collections::BTreeMap<crate::model::TodoId, crate::model::Todo>> {
    let files = ctx.store.read_files_under(snap.tip.tree, files::ARCHIVE)?;
    Ok(files::decode_archive(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
    )?)
}

/// Reads the current state, or says how to create one.
pub fn load(ctx: &Ctx) -> Result<Snapshot> {
    match ctx.store.tip()? {
        Some(tip) => load_at(ctx, tip),
        None => Err(no_state(ctx).into()),
    }
}

/// The state ref does not exist: says how to create or fetch it.
pub fn no_state(ctx: &Ctx) -> Refusal {
    Refusal::error(
        "no-state",
        format!("there is no loopx state here ({} does not exist)", ctx.store.state_ref()),
    )
    .with_hint("create it with `loopx init`, or get a team's state with `loopx sync` (from git config loopx.remote, else origin)")
}

/// Runs one tick of the op that `build` makes from the current state.
pub fn commit(ctx: &Ctx, mut build: impl FnMut(&State) -> Result<Op>) -> Result<Committed> {
    run(ctx, |ctx| {
        let snap = load(ctx)?;
        let op = build(&snap.state)?;
        Ok((Some(snap.tip), snap.state, op))
    })
}

/// The first tick: creates the ref, which must not exist yet.
pub fn init(ctx: &Ctx, op: Op) -> Result<Committed> {
    run(ctx, |ctx| {
        if let Some(tip) = ctx.store.tip()? {
            return Err(Refusal::rule(
                "already-initialized",
                format!(
                    "{} already holds a loopx state (tick {})",
                    ctx.store.state_ref(),
                    tip.tick
                ),
            )
            .with_hint("nothing was changed; `loopx status` shows it")
            .into());
        }
        Ok((None, State::default(), op.clone()))
    })
}

fn run(
    ctx: &Ctx,
    mut attempt: impl FnMut(&Ctx) -> Result<(Option<Tip>, State, Op)>,
) -> Result<Committed> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(1);
    let mut tries = 0u32;
    let committer = ctx.committer();
    let mut seal = crate::trust::Seal::default();
    loop {
        tries += 1;
        let (tip, before, mut op) = attempt(ctx)?;
        let mut after = before.clone();
        let mut effect = op::apply(&mut after, &op)?;
        // A human act is signed here (against the state it changes, so on
        // every retry) and checked against this machine's allowed signers.
        seal.seal(ctx, &before, &mut after, &mut op, &mut effect)?;
        let changes = match &tip {
            Some(_) => files::changes(&before, &after),
            None => files::encode_all(&after),
        };
        if let Some(tip) = tip.as_ref().filter(|_| changes.is_empty()) {
            // The op changes nothing (an identical registration, a spend of
            // a turn already spent): no tick, as if it had landed before.
            return Ok(Committed {
                op,
                effect,
                tip: tip.clone(),
                state: after,
            });
        }
        // Never move the ref to a state this binary cannot read back.
        for (path, bytes) in &changes {
            if let Some(bytes) = bytes {
                files::check_file(path, bytes).map_err(|r| {
                    anyhow::anyhow!(
                        "refusing to write {path}, which would not read back: {}",
                        r.message
                    )
                })?;
            }
        }
        if crate::trust::validation::writes_validation(&op) {
            // Remembered before the tick lands: a validation written here
            // runs here without further trust.
            crate::trust::validation::remember(ctx, &op)?;
        }
        let tick = tip.as_ref().map_or(0, |t| t.tick) + 1;
        let msg = message::render(&op, &effect, tick, &[]);
        let author = Person {
            name: op.actor.name().to_owned(),
            email: op.actor.email(),
        };
        let new = ctx.store.write_commit(
            tip.as_ref(),
            &changes,
            &msg,
            &author,
            &committer,
            op.at.unix(),
        )?;
        let reflog = format!("loopx: {}", effect.subject);
        match ctx.store.cas(
            new.commit,
            tip.as_ref().map(|t| t.commit),
            &reflog,
            &committer,
        ) {
            Ok(()) => {
                auto_pack(ctx, new.tick);
                return Ok(Committed {
                    op,
                    effect,
                    tip: new,
                    state: after,
                });
            }
            Err(CasError::Moved) => {}
            Err(CasError::Locked { lock, age }) => {
                if age.is_some_and(|a| a >= STALE_LOCK) {
                    return Err(stale_lock(&lock, age).into());
                }
            }
            Err(CasError::Other(e)) => return Err(e),
        }
        if started.elapsed() >= RETRY_FOR {
            return Err(Refusal::conflict(
                "retries-exhausted",
                format!(
                    "{} kept moving: gave up after {tries} attempts in {}s",
                    ctx.store.state_ref(),
                    started.elapsed().as_secs()
                ),
            )
            .with_hint("other writers are very busy; run the command again")
            .into());
        }
        std::thread::sleep(backoff.mul_f64(0.5 + jitter()));
        backoff = (backoff * 2).min(Duration::from_millis(100));
    }
}

/// Every `loopx.autoPack` ticks (default 200, 0 turns it off), starts a
/// geometric repack in the background, so loose objects stay bounded without
/// stalling any tick.
fn auto_pack(ctx: &Ctx, tick: u64) {
    let every = ctx
        .store
        .config("loopx.autoPack")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(AUTO_PACK);
    if every > 0 && tick.is_multiple_of(every) {
        crate::git::spawn_detached(ctx.store.common_dir(), &crate::git::REPACK);
    }
}

/// Ticks between background repacks when git config says nothing.
pub const AUTO_PACK: u64 = 200;

/// A random fraction in [0, 1). Not from the seeded id source, or racing
/// test processes with the same seed would retry in lockstep.
fn jitter() -> f64 {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    f64::from(u16::from_le_bytes(b)) / 65536.0
}

/// The error for a state ref whose lock is stale (or held too long).
pub fn stale_lock(lock: &std::path::Path, age: Option<Duration>) -> Refusal {
    let age = age.map_or("of unknown age".to_owned(), |a| {
        format!("{}s old", a.as_secs())
    });
    Refusal::error(
        "stale-lock",
        format!("the state ref is locked by {} ({age})", lock.display()),
    )
    .with_hint(format!(
        "a writer died while holding it; if no loopx or git process is running, `loopx doctor --fix` removes it (or: rm {})",
        lock.display()
    ))
}

//! What sync trusts: every commit it would take from a remote is verified
//! (`crate::verify`) before the local ref moves, from the last tip verified
//! for that remote (`refs/loopx/verified/<remote>`), or from the merge base
//! with the local state, which this clone already holds. Local commits are
//! verified before they are pushed as they are. A bad commit refuses the
//! whole sync (exit 3) and changes nothing here.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Refusal;
use crate::store::{Oid, Tip};
use crate::tx;
use crate::verify::{self, Finding, Verified};

use super::{Names, remember};

/// Ranges at least this long report their progress on stderr.
const PROGRESS_FROM: usize = 2000;

/// Verifies the remote's commits after `base` (None: all of them) up to
/// `remote`, starting from the last tip verified for this remote when it
/// lies between them. Returns the state at `remote`.
pub(super) fn remote(
    ctx: &Ctx,
    names: &Names,
    remote: &Tip,
    base: Option<Oid>,
) -> Result<Verified> {
    let mut start = base;
    if let Some(v) = ctx.store()?.resolve(&names.verified)?
        && ctx.store()?.is_ancestor(v.commit, remote.commit)?
        && match base {
            Some(b) => ctx.store()?.is_ancestor(b, v.commit)?,
            None => true,
        }
    {
        start = Some(v.commit);
    }
    let what = format!("{}'s history", names.remote);
    let verified = match chain(ctx, start, remote.commit, &what)? {
        Ok(v) => v,
        Err(f) => return Err(refused_remote(names, &f).into()),
    };
    remember(ctx, &names.verified, remote.commit)?;
    Ok(verified)
}

/// Verifies local commits after `base` up to `local` before they are pushed
/// as they are.
pub(super) fn local(ctx: &Ctx, names: &Names, local: &Tip, base: Option<Oid>) -> Result<()> {
    match chain(ctx, base, local.commit, "the local history")? {
        Ok(_) => Ok(()),
        Err(f) => Err(f
            .refusal(format!(
                "nothing was pushed to {} and nothing was changed. The commit was not written by loopx (or was edited since); move {r} back to its parent with `git update-ref {r} {c}^`, redo the change with loopx commands, then sync again",
                names.remote,
                r = ctx.state_ref(),
                c = &f.commit[..f.commit.len().min(12)],
            ))
            .into()),
    }
}

/// Verifies `start`..`tip`, trusting the state at `start` as it is.
fn chain(
    ctx: &Ctx,
    start: Option<Oid>,
    tip: Oid,
    what: &str,
) -> Result<std::result::Result<Verified, Finding>> {
    let base = match start {
        Some(s) => {
            let snap = tx::load_at(ctx, ctx.store()?.tip_at(s)?)?;
            if s == tip {
                return Ok(Ok(Verified {
                    tip: snap.tip,
                    state: snap.state,
                }));
            }
            Some(Verified {
                tip: snap.tip,
                state: snap.state,
            })
        }
        None => None,
    };
    let mut progress = |done: usize, total: usize| {
        if total >= PROGRESS_FROM && done.is_multiple_of(total / 10) && done < total {
            ctx.out.status(&format!(
                "Verifying {what}: {done} of {total} ticks checked…"
            ));
        }
    };
    verify::chain(
        ctx.store()?,
        base,
        tip,
        ctx.now,
        &verify::Signing::load(ctx)?,
        &mut progress,
    )
}

/// The refusal for a remote that holds a bad commit.
fn refused_remote(names: &Names, f: &Finding) -> Refusal {
    let mut r = f.refusal(format!(
        "nothing was changed here and no local tick is lost. {r} holds a commit that loopx did not write (or a rule it breaks), pushed as {a}: ask them what happened. A human can put {r} back at this clone's last verified tick with `loopx sync {r} --repair-remote`; `loopx hub install` makes a hub you run refuse such pushes",
        r = names.remote,
        a = f.author,
    ));
    r.message = format!("{} holds an invalid tick: {}", names.remote, r.message);
    r
}

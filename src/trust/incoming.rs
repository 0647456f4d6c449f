//! Signatures of ticks that sync takes from a remote: every human act (and
//! every signed op) among them is checked with [`super::check_op`] against
//! its parent's state before the local ref moves.
//!
//! This is the signature part of verifying incoming history; `loopx
//! verify` re-applies every op and calls the same [`super::check_op`].
//! Ticks at or before git config `loopx.signaturesFrom` (a commit) are not
//! checked: history written before the team turned signing on.

use anyhow::Result;

use super::AllowedSigners;
use crate::ctx::Ctx;
use crate::error::{Code, Refusal};
use crate::op::message;
use crate::store::{Entry, Oid, PrefixMatch};
use crate::tx;

/// Kinds whose ops may be human acts (the rest are checked only when they
/// carry a signature).
const HUMAN_KINDS: &[&str] = &[
    "goal.add",
    "goal.set",
    "quota.void",
    "signer.announce",
    "signer.require",
    "todo.trust",
    "gate.answer",
    "gate.withdraw",
    "todo.release",
    "agent.retire",
    "turn.settle",
];

/// Checks the signatures of `chain` (oldest last or first, either) taken
/// from `remote`; refuses with exit 3 naming the first bad commit.
pub fn check(ctx: &Ctx, remote: &str, chain: &[Entry]) -> Result<()> {
    let signers = AllowedSigners::load(ctx)?;
    let exempt = exempt_below(ctx)?;
    // Every commit of the chain shares one root: the state's identity.
    let mut state_id: Option<Option<String>> = None;
    for e in chain {
        let signed = e.message.contains("\nsignature = \"");
        let maybe_human = message::kind_of(&e.message).is_some_and(|k| HUMAN_KINDS.contains(&k));
        // (A state that requires signatures is checked by verify, which
        // re-applies every tick right after this.)
        if !(signed || (maybe_human && signers.enforced())) {
            continue;
        }
        if let Some(x) = exempt
            && (x == e.commit || ctx.store()?.is_ancestor(e.commit, x)?)
        {
            continue;
        }
        let Ok(parsed) = message::parse(&e.message) else {
            // Not a tick: sync's own checks say so.
            continue;
        };
        let Some(parent) = e.parent else { continue };
        let before = tx::load_at(ctx, ctx.store()?.tip_at(parent)?)?;
        if state_id.is_none() {
            state_id = Some(super::lineage::state_id(ctx.store()?, Some(parent))?);
        }
        let binding = super::Binding {
            format: parsed.format,
            state: state_id.clone().flatten(),
        };
        if let Err(r) = super::check_op(&before.state, &parsed.op, &signers, &binding) {
            return Err(Refusal::rule(
                r.code,
                format!(
                    "{remote} holds commit {} (tick {}, by {}) whose human act this machine refuses: {}",
                    e.commit.short(8),
                    parsed.tick,
                    e.author.name,
                    r.message
                ),
            )
            .with_hint(format!(
                "nothing was changed here; the signer should redo the act signed, and the hub be put back to before commit {} (or, for history written before signing was turned on, `git config loopx.signaturesFrom <last commit to exempt>`)",
                e.commit.short(8)
            ))
            .into());
        }
    }
    Ok(())
}

/// The commit named by `loopx.signaturesFrom`: ticks at or before it need no
/// signature (`verify` honours it the same way).
pub fn exempt_below(ctx: &Ctx) -> Result<Option<Oid>> {
    let Some(rev) = ctx.config()?.signatures_from.clone() else {
        return Ok(None);
    };
    match ctx.store()?.commit_by_prefix(rev.trim()) {
        Ok(PrefixMatch::One(oid)) => Ok(Some(oid)),
        _ => Err(Refusal::usage(
            Code::BadConfig,
            format!(
                "git config loopx.signaturesFrom is {rev:?}, which names no single commit here"
            ),
        )
        .with_hint("set it to the full id of the last commit whose human acts need no signature")
        .into()),
    }
}

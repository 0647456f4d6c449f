//! The state ref's tip as verified, before something runs code or unlocks
//! a human-only act on it (a validation): the tip is checked from the last
//! verified tip this clone marked ([`crate::store::mark`]), so a commit
//! that reached `refs/loopx/*` by a plain `git fetch`, `git update-ref` or
//! a restored backup is never taken on trust.

use super::*;

/// Verifies the state ref's tip when it is not the marked verified tip:
/// from the mark when the tip descends from it, else from the first tick;
/// a tip that verifies becomes the mark. A tip that does not is refused,
/// `unverified-tip` (exit 3).
pub fn current(repo: &Repo) -> Result<()> {
    let store = repo.store();
    let name = store.state_ref();
    // A goal ref's ticks pin the shared ref as verified here.
    if tx::goalref::is_goal_ref(name) {
        current(&repo.for_ref(tx::goalref::SHARED))?;
    }
    let Some(tip) = store.tip()? else {
        return Ok(());
    };
    let mark = store.verified_mark(name);
    if mark == Some(tip.commit) {
        return Ok(());
    }
    let base = match mark {
        Some(m) if store.is_ancestor(m, tip.commit).unwrap_or(false) => Some(trusted_at(store, m)?),
        _ => None,
    };
    let checked = walk(
        store,
        base,
        tip.commit,
        crate::time::Timestamp::system_now(),
        repo.signing()?,
        &mut |_, _| {},
        true,
    );
    match checked.0 {
        Ok(_) => {
            store.mark_verified(name, tip.commit);
            Ok(())
        }
        Err(Unverified::Failed(e)) => Err(e),
        Err(Unverified::Invalid(f)) => Err(unverified_tip(name, mark, &f).into()),
    }
}

/// The refusal of a tip that moved outside loopx to a commit that is not a
/// valid tick.
fn unverified_tip(name: &str, mark: Option<Oid>, f: &Finding) -> Refusal {
    let back = match mark {
        Some(m) => {
            format!("`git update-ref {name} {m}` puts it back on the last tip loopx verified here")
        }
        None => "`loopx doctor` names the last good tip in the ref's reflog".to_owned(),
    };
    Refusal::rule(
        Code::UnverifiedTip,
        format!(
            "{name} was moved outside loopx (a plain `git fetch` onto refs/loopx/*, `git update-ref`, a restored backup) to a history loopx does not verify: {}",
            f.refusal("").message
        ),
    )
    .with_hint(format!(
        "nothing ran. `loopx verify` names the first bad tick; {back}, and `loopx sync` then brings the team's state"
    ))
}

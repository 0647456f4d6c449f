//! A todo's validation signed as it stands: the op the todo names as the
//! one that wrote or trusted its validation is found in the state's history
//! and its signature checked over that op (issue 44). Looking the
//! signature's key up is not enough: a todo that arrived by a path that
//! skips sync's checks (a plain `git fetch` onto `refs/loopx/*`,
//! `update-ref`, a restored backup) may carry a borrowed signature blob or
//! swapped argv.

use anyhow::Result;

use crate::model::{State, Todo, TodoId, Validation};
use crate::op::{Change, Settle, TodoAdd, TodoEdit, TodoTrust, message};
use crate::repo::Repo;
use crate::store::Tip;
use crate::trust::validation::Vouched;
use crate::trust::{AllowedSigners, Binding, lineage};
use crate::tx;

/// Whether `todo`'s validation is signed, as it stands, by the op its
/// `validate_from` names: that op is in this state's history, carries the
/// same signature, writes or trusts exactly this validation of this todo,
/// and its signature verifies over it (`trust::check_op` on the state
/// before it).
pub fn vouched(repo: &Repo, todo: &Todo, signers: &AllowedSigners) -> Result<Vouched> {
    let (Some(v), Some(from)) = (&todo.validate, &todo.validate_from) else {
        return Ok(Vouched::Not("no op vouches for it".to_owned()));
    };
    let Some(signature) = &from.signature else {
        return Ok(Vouched::Not("it is unsigned".to_owned()));
    };
    let Some(tip) = tx::tip(repo)? else {
        return Ok(Vouched::Not("there is no state".to_owned()));
    };
    let store = repo.store();
    let needle = from.op.to_string();
    let mut found = None;
    for entry in store.history(tip.commit) {
        let entry = entry?;
        if !entry.message.contains(&needle) {
            continue;
        }
        if let Ok(parsed) = message::parse(&entry.message)
            && parsed.op.id == from.op
        {
            found = Some((entry, parsed));
            break;
        }
    }
    let Some((entry, parsed)) = found else {
        return Ok(Vouched::Not(format!(
            "the op {} it names is not in this state's history",
            from.op
        )));
    };
    let op = parsed.op;
    // A human's signature, bound to this state (format 4 on): a machine's
    // signature says which clone wrote a tick, never that a human vouches
    // for the code; a signature made before format 4 binds no state.
    if !op.actor.is_human() {
        return Ok(Vouched::Not(format!(
            "op {} is an agent's: only a human's signature vouches for a validation",
            from.op
        )));
    }
    if parsed.format < crate::trust::BOUND_SINCE {
        return Ok(Vouched::Not(format!(
            "op {} is recorded in format {}, whose signatures bind no state: trust the validation again",
            from.op, parsed.format
        )));
    }
    if op.signature.as_deref() != Some(signature.as_str()) {
        return Ok(Vouched::Not(format!(
            "its signature is not the one op {} carries",
            from.op
        )));
    }
    if !covers(&op.change, &todo.id, v) {
        return Ok(Vouched::Not(format!(
            "the signed op {} is not this validation of {}",
            from.op, todo.id
        )));
    }
    let before = match entry.parent {
        None => State::default(),
        Some(parent) => {
            let p = store.entry(parent)?;
            let tick = message::parse(&p.message).map_or(0, |m| m.tick);
            tx::load_at(
                repo,
                Tip {
                    commit: parent,
                    tree: p.tree,
                    tick,
                },
            )?
            .state
        }
    };
    let binding = Binding {
        format: parsed.format,
        state: lineage::state_id(store, Some(entry.commit))?,
    };
    Ok(
        match crate::trust::check_op(&before, &op, signers, &binding) {
            Ok(Some(by)) => Vouched::Signed(by),
            Ok(None) => Vouched::Not("its signature was not checked".to_owned()),
            Err(r) => Vouched::Not(format!("its signature does not hold: {}", r.message)),
        },
    )
}

/// Whether `change` writes (or trusts) exactly `v` as `todo`'s validation.
fn covers(change: &Change, todo: &TodoId, v: &Validation) -> bool {
    match change {
        Change::TodoAdd(TodoAdd {
            todo: t,
            validate: Some(w),
            ..
        })
        | Change::TodoEdit(TodoEdit {
            todo: t,
            validate: Some(w),
            ..
        }) => t == todo && w == v,
        Change::TodoTrust(TodoTrust { todo: t, digest }) => {
            t == todo && *digest == crate::op::signer::validation_digest(v)
        }
        Change::Settle(Settle { steps, .. }) => steps.iter().any(|s| covers(s, todo, v)),
        _ => false,
    }
}

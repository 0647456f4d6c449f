//! The read side of a tick: the state at the tip or at a commit, from the
//! local cache when it holds the tip, and the refusals of a state that is
//! missing or unreadable.

use crate::cache;
use crate::error::{Code, Refusal};
use crate::model::{State, files};
use crate::repo::Repo;
use crate::store::{Store, Tip};
use anyhow::Result;

/// The state as read, and the commit it came from.
pub struct Snapshot {
    pub tip: Tip,
    pub state: State,
}

/// Reads the state at a commit.
pub fn load_at(repo: &Repo, tip: Tip) -> Result<Snapshot> {
    snapshot(repo.store(), tip)
}

/// Reads the state at a commit of any store (a hub's, in its hook).
/// Each file is parsed as it is read and dropped, so the bytes of every
/// file are never held at once beside the state.
pub fn snapshot(store: &Store, tip: Tip) -> Result<Snapshot> {
    let meta = store.read_file(tip.tree, files::META)?;
    let mut decoder = files::Decoder::new(meta.as_deref())?;
    let mut refused = None;
    let walked = store.visit_files(tip.tree, &mut |path, bytes| {
        decoder.file(path, &bytes).map_err(|r| {
            refused = Some(r);
            anyhow::anyhow!("refused")
        })
    });
    if let Some(r) = refused {
        return Err(r.into());
    }
    walked?;
    Ok(Snapshot {
        tip,
        state: decoder.finish(),
    })
}

/// Reads the archived todos of a snapshot (not part of the live state).
pub fn load_archive(
    repo: &Repo,
    snap: &Snapshot,
) -> Result<std::collections::BTreeMap<crate::model::TodoId, crate::model::Todo>> {
    let files = repo
        .store()
        .read_files_under(snap.tip.tree, files::ARCHIVE)?;
    Ok(files::decode_archive(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
    )?)
}

/// The tip of the state ref, if there is a state.
pub fn tip(repo: &Repo) -> Result<Option<Tip>> {
    repo.store().tip()
}

/// The commit message of a tick.
pub fn message_of(repo: &Repo, commit: crate::store::Oid) -> Result<String> {
    repo.store().message(commit)
}

/// Every file of a tip's tree as stored, live and archived (not evidence),
/// for `doctor`'s checks.
pub fn raw_files(repo: &Repo, tip: &Tip) -> Result<Vec<(String, Vec<u8>)>> {
    let store = repo.store();
    let mut all = store.read_files(tip.tree)?;
    all.extend(store.read_files_under(tip.tree, files::ARCHIVE)?);
    Ok(all)
}

/// Reads the current state, or says how to create one: from the local
/// cache when it holds the tip's commit, else from the tree (and then the
/// cache is written). Only the tip of the live ref goes through the cache;
/// `load_at` and `snapshot` always read the tree, for `verify` and sync.
/// (The commands try the fast start-up path's cache first, without opening
/// the repository: `cmd::tx::load`.)
pub fn load(repo: &Repo) -> Result<Snapshot> {
    let store = repo.store();
    let Some(id) = store.tip_id()? else {
        return Err(no_state_at(repo.state_ref()).into());
    };
    if let Some((tip, state)) = cache::read(store, id) {
        return Ok(Snapshot { tip, state });
    }
    let Some(tip) = store.tip().map_err(|e| unreadable_tip(repo, e))? else {
        return Err(no_state_at(repo.state_ref()).into());
    };
    let snap = snapshot(store, tip)?;
    cache::write(store, &snap.tip, &snap.state);
    Ok(snap)
}

/// What [`load_claims`] reads: the state with at least its claimed todos.
pub use crate::cache::Claims;

/// [`load`] for a reader that needs only the claimed todos first
/// (`should-run`, `status`): the cache's head alone when it holds the tip
/// ([`cache::read_claims`]), else the whole state as [`load`] reads it.
pub fn load_claims(repo: &Repo) -> Result<cache::Claims> {
    if let Some(id) = repo.store().tip_id()?
        && let Some(claims) = cache::read_claims(repo.store(), id)
    {
        return Ok(claims);
    }
    let Snapshot { tip, state } = load(repo)?;
    Ok(cache::Claims::whole(tip, state))
}

/// `agent`'s ready list on `goal` from the cache's ready index at `tip`
/// (`crate::op::turn::ready`), on a hit: what a tick just wrote, for the
/// brief it prints.
pub fn ready_list(
    repo: &Repo,
    tip: &Tip,
    agent: &crate::model::AgentId,
    goal: &crate::model::GoalId,
) -> Option<crate::op::turn::ready::ReadyList> {
    cache::ready_list(repo.store(), tip.commit, agent, goal)
}

/// After a reader of the cache's head fell back to the whole state `snap`
/// (the ready index could not answer), writes the index again when it was
/// missing or damaged ([`cache::repair_ready`]), so the next reader is
/// fast again. Silent, as every cache write.
pub fn repair_ready(repo: &Repo, snap: &Snapshot) {
    cache::repair_ready(repo.store(), &snap.tip, &snap.state);
}

/// The state ref names a commit that cannot be read: says how to put back
/// the last good one.
pub(super) fn unreadable_tip(repo: &Repo, e: anyhow::Error) -> anyhow::Error {
    Refusal::error(
        Code::CorruptState,
        format!("{} names a commit that cannot be read: {e:#}", repo.state_ref()),
    )
    .with_hint("nothing was written; `loopx doctor` names the last good tip in the state ref's reflog, and `loopx doctor --fix` puts it back")
    .into()
}

/// The state ref (named `state_ref`) does not exist: says how to create
/// or fetch it.
pub fn no_state_at(state_ref: &str) -> Refusal {
    Refusal::error(
        Code::NoState,
        format!("there is no loopx state here ({state_ref} does not exist)"),
    )
    .with_hint("create it with `loopx init`, or get a team's state with `loopx sync` (from git config loopx.remote, else origin)")
}

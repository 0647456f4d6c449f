//! Step 1 of a round: the system git brings the remote's state ref.

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::git::{self, Fetched, NetworkError};
use crate::repo::Repo;
use crate::store::Tip;

use super::{FIRST_BACKOFF, MAX_BACKOFF, MAX_ROUNDS, Names, advance_ref, pause};

/// Fetches the remote's tip, trying again while another fetch here is in
/// the way.
pub(super) fn fetch_tip(repo: &Repo, names: &Names) -> Result<Option<Tip>> {
    let mut backoff = FIRST_BACKOFF;
    for _ in 0..MAX_ROUNDS {
        match fetch(repo, names, false, true)? {
            Ok(tip) => return Ok(tip),
            Err(_) => {
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

/// Fetches the remote's state, resolves it, and points the remote-tracking
/// ref at it (a mirror of the remote, for people and `git log`; sync
/// decides on its own fetch). `Ok(Err(why))` when another fetch on this
/// machine got in the way. With `progress`, git's own progress meters
/// go to stderr as the fetch runs (a person at a terminal). With `ask`,
/// a kept ssh session is asked first whether there is anything to fetch
/// (not after a refused push: the hub moved, the question would be an
/// exchange for nothing).
pub(super) fn fetch(
    repo: &Repo,
    names: &Names,
    progress: bool,
    ask: bool,
) -> Result<Result<Option<Tip>, String>> {
    Ok(fetch_all(&[(repo, names)], progress, ask)?
        .map(|mut tips| tips.pop().expect("one tip per ref")))
}

/// The tips of a fetch of several refs, in order; `Err(why)` when another
/// fetch here got in the way.
pub(super) type Tips = Result<Vec<Option<Tip>>, String>;

/// [`fetch`] of several state refs from one remote in one `git fetch`
/// (a split state's shared ref and goal refs: `repo` and `names` of each),
/// their tips in the same order. `Ok(Err(why))` when another fetch here
/// got in the way of any of them.
pub(super) fn fetch_all(sides: &[(&Repo, &Names)], progress: bool, ask: bool) -> Result<Tips> {
    fetch_all_while(sides, progress, ask, || ()).0
}

/// [`fetch_all`], its `git fetch` running while `meanwhile` runs here
/// (the push of the refs that had something to push, so a sync's one
/// fetch and one push take the time of one).
pub(super) fn fetch_all_while<R>(
    sides: &[(&Repo, &Names)],
    progress: bool,
    ask: bool,
    meanwhile: impl FnOnce() -> R,
) -> (Result<Tips>, R) {
    let Some((first, first_names)) = sides.first() else {
        return (Ok(Ok(Vec::new())), meanwhile());
    };
    let (dir, remote, limit) = (
        first.store().common_dir(),
        first_names.remote.as_str(),
        first.config().sync_timeout,
    );
    let url = git::fetch_url(dir, remote);
    if ask && let Some(tips) = unchanged(sides, &url) {
        return (Ok(Ok(tips)), meanwhile());
    }
    // Into refs of this sync's own, then read from there: two syncs on one
    // clone each see the tips their own fetch brought, never older ones
    // that a slower fetch wrote into the tracking refs afterwards.
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    let scratch = |i: usize| {
        format!(
            "refs/loopx/fetching/{}-{}-{:08x}-{i}",
            first_names.remote.replace('/', "-"),
            std::process::id(),
            u32::from_le_bytes(b)
        )
    };
    let fetching: Vec<String> = (0..sides.len()).map(scratch).collect();
    let refs: Vec<(&str, &str)> = sides
        .iter()
        .zip(&fetching)
        .map(|((repo, _), dst)| (repo.state_ref(), dst.as_str()))
        .collect();
    let (found, during) = std::thread::scope(|s| {
        let local = super::local(first);
        let git =
            s.spawn(move || git::fetch_refs_from(local, &url, remote, &refs, limit, progress));
        let during = meanwhile();
        let found = git
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the fetch's thread panicked")));
        (found, during)
    });
    (resolve(sides, &fetching, found), during)
}

/// The tips of the remote-tracking refs, when a kept ssh session
/// (`git::kept_tips`) says the remote holds exactly those: what a fetch
/// would bring, without one. None (fetch) when there is nothing to ask,
/// no answer, or any ref differs or is missing on either side.
fn unchanged(sides: &[(&Repo, &Names)], url: &str) -> Option<Vec<Option<Tip>>> {
    let (first, _) = sides.first()?;
    // Only when every ref was fetched before (a first sync fetches).
    let tracked: Vec<Tip> = sides
        .iter()
        .map(|(repo, names)| repo.store().resolve(&names.tracking).ok()?)
        .collect::<Option<_>>()?;
    let srcs: Vec<&str> = sides.iter().map(|(repo, _)| repo.state_ref()).collect();
    let (dir, limit) = (first.store().common_dir(), first.config().sync_timeout);
    let found = git::kept_tips(dir, url, &srcs, limit)?;
    tracked
        .into_iter()
        .zip(found)
        .map(|(tip, hub)| (Some(tip.commit.to_string()) == hub).then_some(Some(tip)))
        .collect()
}

/// Reads the tips a fetch brought into `fetching` (one per side) and
/// mirrors them into the tracking refs.
fn resolve(
    sides: &[(&Repo, &Names)],
    fetching: &[String],
    found: Result<Vec<Fetched>>,
) -> Result<Tips> {
    let names = sides.first().map(|(_, n)| *n).expect("a side");
    let found = found.map_err(|e| match e.downcast_ref::<NetworkError>() {
        Some(n) => Refusal::error(
            Code::RemoteUnreachable,
            format!(
                "cannot fetch the loopx state from {}: {}",
                names.remote, n.stderr
            ),
        )
        .with_hint(format!(
            "nothing was changed here; check the remote's URL (`git remote get-url {}`), the network and your credentials, then run `loopx sync` again",
            names.remote
        ))
        .into(),
        None => e,
    })?;
    let mut tips = Vec::with_capacity(sides.len());
    let mut busy = None;
    for (((repo, names), fetching), found) in sides.iter().zip(fetching).zip(found) {
        match found {
            Fetched::NoState => tips.push(None),
            Fetched::Busy(why) => {
                busy = Some(why);
                tips.push(None);
            }
            Fetched::State => {
                let tip = repo.store().resolve(fetching);
                let _ = repo.store().delete_ref(fetching);
                let tip = tip.map_err(|e| {
                    anyhow::Error::from(remote_corrupt(names, None, &format!("{e:#}")))
                })?;
                if let Some(t) = &tip {
                    advance_ref(repo, &names.tracking, t.commit, false, "loopx: sync fetch")?;
                }
                tips.push(tip);
            }
        }
    }
    Ok(match busy {
        Some(why) => Err(why),
        None => Ok(tips),
    })
}

/// A remote state that cannot be read.
fn remote_corrupt(names: &Names, tip: Option<&Tip>, why: &str) -> Refusal {
    let at = tip.map_or(String::new(), |t| {
        format!(" (tick {}, {})", t.tick, t.commit.short(8))
    });
    Refusal::error(
        Code::InvalidTick,
        format!("the loopx state on {}{at} is corrupt: {why}", names.remote),
    )
    .with_hint(format!(
        "nothing was changed here; whoever pushed it must repair it (`loopx doctor` there names the file) and push the fix; `git log {}` shows who. Then run `loopx sync` again",
        names.tracking
    ))
}

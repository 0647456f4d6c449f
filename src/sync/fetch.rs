//! Step 1 of a round: the system git brings the remote's state ref.

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::git::{self, Fetched, NetworkError};
use crate::repo::Repo;
use crate::store::Tip;

use super::Names;

/// The tips of a fetch of several refs, in order, or why another fetch
/// here got in the way.
pub(super) enum Tips {
    Fetched(Vec<Option<Tip>>),
    Busy(String),
}

/// What a fetch brought, before any ref here moved (the scratch refs
/// git fetched into are read, removed and mirrored into the tracking refs
/// by `execute::take_fetched`).
pub(super) enum Brought {
    /// Known without a fetch: a kept ssh session said the remote holds
    /// exactly the tracking refs' tips.
    Unchanged(Vec<Option<Tip>>),
    /// Per side, the scratch ref git fetched into (None: the remote has no
    /// state there, or another fetch got in the way), and why another
    /// fetch got in the way, if one did.
    Fetched {
        into: Vec<Option<String>>,
        busy: Option<String>,
    },
}

/// Fetches several state refs from one remote in one `git fetch` (a split
/// state's shared ref and goal refs: `repo` and `names` of each), into
/// scratch refs of this sync's own, while `meanwhile` runs here (the push
/// of the refs that had something to push, so a sync's one fetch and one
/// push take the time of one). With `progress`, git's own meters go to
/// stderr; with `ask`, a kept ssh session is asked first.
pub(super) fn fetch_all_while<R>(
    sides: &[(&Repo, &Names)],
    progress: bool,
    ask: bool,
    meanwhile: impl FnOnce() -> R,
) -> (Result<Brought>, R) {
    let Some((first, first_names)) = sides.first() else {
        return (Ok(Brought::Unchanged(Vec::new())), meanwhile());
    };
    let (dir, remote, limit) = (
        first.store().common_dir(),
        first_names.remote.as_str(),
        first.config().sync_timeout,
    );
    let url = git::fetch_url(dir, remote);
    if ask && let Some(tips) = unchanged(sides, &url) {
        return (Ok(Brought::Unchanged(tips)), meanwhile());
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
    (brought(sides, fetching, found), during)
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

/// Which scratch refs a fetch filled (one per side), its network
/// failure told as the refusal it is.
fn brought(
    sides: &[(&Repo, &Names)],
    fetching: Vec<String>,
    found: Result<Vec<Fetched>>,
) -> Result<Brought> {
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
    let mut into = Vec::with_capacity(sides.len());
    let mut busy = None;
    for (fetching, found) in fetching.into_iter().zip(found) {
        match found {
            Fetched::NoState => into.push(None),
            Fetched::Busy(why) => {
                busy = Some(why);
                into.push(None);
            }
            Fetched::State => into.push(Some(fetching)),
        }
    }
    Ok(Brought::Fetched { into, busy })
}

/// A remote state that cannot be read.
pub(super) fn remote_corrupt(names: &Names, tip: Option<&Tip>, why: &str) -> Refusal {
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

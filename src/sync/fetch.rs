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
        match fetch(repo, names, false)? {
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
/// go to stderr as the fetch runs (a person at a terminal).
pub(super) fn fetch(
    repo: &Repo,
    names: &Names,
    progress: bool,
) -> Result<Result<Option<Tip>, String>> {
    // Into a ref of this sync's own, then read from there: two syncs on one
    // clone each see the tip their own fetch brought, never an older one
    // that a slower fetch wrote into the tracking ref afterwards.
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    let fetching = format!(
        "refs/loopx/fetching/{}-{}-{:08x}",
        names.remote.replace('/', "-"),
        std::process::id(),
        u32::from_le_bytes(b)
    );
    let found = git::fetch(
        repo.store().common_dir(),
        &names.remote,
        repo.state_ref(),
        &fetching,
        repo.config().sync_timeout,
        progress,
    )
    .map_err(|e| match e.downcast_ref::<NetworkError>() {
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
    match found {
        Fetched::NoState => Ok(Ok(None)),
        Fetched::Busy(why) => Ok(Err(why)),
        Fetched::State => {
            let tip = repo.store().resolve(&fetching);
            let _ = repo.store().delete_ref(&fetching);
            let tip = tip
                .map_err(|e| anyhow::Error::from(remote_corrupt(names, None, &format!("{e:#}"))))?;
            if let Some(t) = &tip {
                advance_ref(repo, &names.tracking, t.commit, false, "loopx: sync fetch")?;
            }
            Ok(Ok(tip))
        }
    }
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

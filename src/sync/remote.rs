//! Remote naming and setup: which remote, the refs sync keeps for it, and
//! the fetch refspec `--setup` adds.
//!
//! The remote-tracking copy of a remote's state lives under
//! `refs/loopx/remotes/<remote>/`, a namespace no branch can collide with
//! (round 1 used `refs/remotes/<remote>/loopx/state`, where a branch named
//! `loopx/state` on the remote made every plain `git fetch` fail). Clones set
//! up before are moved over by their next sync or `sync --setup`
//! ([`migrate`]).

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::git::{self};
use crate::repo::Repo;
use crate::store::Store;

/// The remote `loopx sync` uses when none is named: git config
/// `loopx.remote`, else `origin`.
pub fn default_remote(repo: &Repo) -> String {
    repo.config().remote.clone()
}

/// The refs one remote's sync uses.
#[derive(Clone, Debug)]
pub struct Names {
    pub remote: String,
    /// The remote-tracking copy of the remote's state ref
    /// (`refs/loopx/remotes/<remote>/state`).
    pub tracking: String,
    /// Where round 1 kept it (`refs/remotes/<remote>/loopx/state`), for
    /// `migrate`.
    pub legacy_tracking: String,
    /// The remote tip last synced with.
    pub synced: String,
    /// The remote tip last verified (every commit up to it is a valid
    /// tick).
    pub verified: String,
}

/// Checks that `remote` is a configured git remote and names its refs.
pub fn names(repo: &Repo, remote: Option<&str>) -> Result<Names, Refusal> {
    let named = remote.is_some();
    let remote = remote.map_or_else(|| default_remote(repo), str::to_owned);
    if repo
        .store()
        .config(&format!("remote.{remote}.url"))
        .is_none()
    {
        let hint = if named {
            format!("add it with `git remote add {remote} URL`; `git remote -v` lists the remotes")
        } else {
            format!(
                "add the team's remote with `git remote add {remote} URL`, or name another: `loopx sync REMOTE` (git config loopx.remote sets the default)"
            )
        };
        return Err(Refusal::error(
            Code::NoRemote,
            format!("there is no git remote named {remote}"),
        )
        .with_hint(hint));
    }
    let state_ref = repo.state_ref();
    let rest = state_ref.strip_prefix("refs/").unwrap_or(state_ref);
    // The default state ref is remembered under refs/loopx/synced/<remote>;
    // another one (git config loopx.ref, e.g. one ref per goal) under a name
    // of its own, so two states synced with one remote never share it.
    let own = |kind: &str| {
        if state_ref == crate::store::DEFAULT_REF {
            format!("refs/loopx/{kind}/{remote}")
        } else {
            format!("refs/loopx/{kind}/{remote}@{}", rest.replace('/', "-"))
        }
    };
    let tail = state_ref.strip_prefix("refs/loopx/").unwrap_or(rest);
    let names = Names {
        tracking: format!("refs/loopx/remotes/{remote}/{tail}"),
        legacy_tracking: format!("refs/remotes/{remote}/{rest}"),
        synced: own("synced"),
        verified: own("verified"),
        remote,
    };
    if ![&names.tracking, &names.synced, &names.verified]
        .iter()
        .all(|n| Store::is_ref_name(n))
    {
        return Err(Refusal::usage(
            Code::BadRemote,
            format!(
                "the remote name {:?} cannot be part of a ref name",
                names.remote
            ),
        )
        .with_hint("rename the remote with `git remote rename`"));
    }
    Ok(names)
}

/// The team's hub, when this clone shares its state through one: the
/// default remote ([`default_remote`]), once `loopx sync --setup` gave it
/// the state's fetch refspec (or round 1's, which the next sync migrates).
/// Commands then sync around their own work by default (DESIGN §5); None:
/// this clone works alone.
pub fn hub(repo: &Repo) -> Option<String> {
    let remote = default_remote(repo);
    let dir = repo.store().common_dir();
    let want = [refspec(&remote), legacy_refspec(&remote)];
    git::config_values(dir, &format!("remote.{remote}.fetch"))
        .ok()?
        .iter()
        .any(|v| want.iter().any(|w| v.trim() == w))
        .then_some(remote)
}

/// The fetch refspec `--setup` adds: the remote's `refs/loopx/*` into
/// `refs/loopx/remotes/<remote>/*`.
pub fn refspec(remote: &str) -> String {
    format!("+refs/loopx/*:refs/loopx/remotes/{remote}/*")
}

/// The refspec round 1's `--setup` added, which a branch named
/// `loopx/state` collides with.
fn legacy_refspec(remote: &str) -> String {
    format!("+refs/loopx/*:refs/remotes/{remote}/loopx/*")
}

/// Adds the glob fetch refspec `refspec` to the remote, so a plain `git
/// fetch` brings the state too. Returns the refspec and whether it was
/// added (false: it was there already). A glob, because a plain refspec
/// makes `git fetch` fail while the remote has no state yet; no push
/// refspec, which would change what a bare `git push` does.
/// The old tracking ref's tip, when there is one to move, comes last
/// (`sync::setup` moves it).
pub fn setup(
    repo: &Repo,
    remote: Option<&str>,
) -> Result<(Names, String, bool, Option<crate::store::Oid>)> {
    let names = names(repo, remote)?;
    let migrated = migrate(repo, &names)?;
    let refspec = refspec(&names.remote);
    let key = format!("remote.{}.fetch", names.remote);
    let dir = repo.store().common_dir();
    let present = git::config_values(dir, &key)?
        .iter()
        .any(|v| v.trim() == refspec);
    if !present {
        git::output(dir, &["config", "--add", &key, &refspec])?;
    }
    Ok((
        names,
        refspec,
        !present || migrated.replaced,
        migrated.legacy,
    ))
}

/// Moves a clone set up by round 1 to the tracking namespace of today: the
/// old fetch refspec is replaced by [`refspec`], and the old tracking ref
/// (when it holds a loopx tick and the new one does not exist yet) moves to
/// [`Names::tracking`] (this names its tip in `legacy`; `execute` moves
/// it). Cheap when there is nothing to do (the settings and refs are read
/// in memory).
pub fn migrate(repo: &Repo, names: &Names) -> Result<Migrated> {
    let mut replaced = false;
    let store = repo.store();
    let key = format!("remote.{}.fetch", names.remote);
    let old = legacy_refspec(&names.remote);
    if store.config_values(&key).iter().any(|v| v.trim() == old) {
        let dir = store.common_dir();
        git::output(dir, &["config", "--unset-all", "--fixed-value", &key, &old])?;
        let new = refspec(&names.remote);
        if !git::config_values(dir, &key)?
            .iter()
            .any(|v| v.trim() == new)
        {
            git::output(dir, &["config", "--add", &key, &new])?;
        }
        replaced = true;
    }
    let mut legacy_tip = None;
    if store.resolve(&names.tracking)?.is_none()
        && let Some(legacy) = store.resolve(&names.legacy_tracking)?
        && crate::op::message::kind_of(&store.message(legacy.commit)?).is_some()
    {
        legacy_tip = Some(legacy.commit);
    }
    Ok(Migrated {
        replaced,
        legacy: legacy_tip,
    })
}

/// What [`migrate`] did and left to do.
pub struct Migrated {
    /// The old fetch refspec was replaced.
    pub replaced: bool,
    /// The old tracking ref's tip, to move to [`Names::tracking`].
    pub legacy: Option<crate::store::Oid>,
}

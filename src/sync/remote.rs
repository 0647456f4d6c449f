//! Remote naming and setup: which remote, the refs sync keeps for it, and
//! the fetch refspec `--setup` adds.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::{Code, Refusal};
use crate::git::{self};
use crate::store::Store;

/// The remote `loopx sync` uses when none is named: git config
/// `loopx.remote`, else `origin`.
pub fn default_remote(ctx: &Ctx) -> String {
    ctx.config()
        .map_or_else(|_| "origin".to_owned(), |c| c.remote.clone())
}

/// The refs one remote's sync uses.
#[derive(Clone, Debug)]
pub struct Names {
    pub remote: String,
    /// The remote-tracking copy of the remote's state ref.
    pub tracking: String,
    /// The remote tip last synced with.
    pub synced: String,
    /// The remote tip last verified (every commit up to it is a valid
    /// tick).
    pub verified: String,
}

/// Checks that `remote` is a configured git remote and names its refs.
pub fn names(ctx: &Ctx, remote: Option<&str>) -> Result<Names, Refusal> {
    let named = remote.is_some();
    let remote = remote.map_or_else(|| default_remote(ctx), str::to_owned);
    if ctx
        .store()
        .ok()
        .and_then(|s| s.config(&format!("remote.{remote}.url")))
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
    let state_ref = ctx.state_ref();
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
    let names = Names {
        tracking: format!("refs/remotes/{remote}/{rest}"),
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

/// The fetch refspec `--setup` adds to `remote`.
fn setup_refspec(remote: &str) -> String {
    format!("+refs/loopx/*:refs/remotes/{remote}/loopx/*")
}

/// The team's hub, when this clone shares its state through one: the
/// default remote ([`default_remote`]), once `loopx sync --setup` gave it
/// the state's fetch refspec. Commands then sync around their own work by
/// default (DESIGN §5); None: this clone works alone.
pub fn hub(ctx: &Ctx) -> Option<String> {
    let remote = default_remote(ctx);
    let dir = ctx.store().ok()?.common_dir();
    let want = setup_refspec(&remote);
    git::config_values(dir, &format!("remote.{remote}.fetch"))
        .ok()?
        .iter()
        .any(|v| v.trim() == want)
        .then_some(remote)
}

/// Adds the glob fetch refspec `+refs/loopx/*:refs/remotes/<remote>/loopx/*`
/// to the remote, so a plain `git fetch` brings the state too. Returns the
/// refspec and whether it was added (false: it was there already). A glob,
/// because a plain refspec makes `git fetch` fail while the remote has no
/// state yet; no push refspec, which would change what a bare `git push`
/// does.
pub fn setup(ctx: &Ctx, remote: Option<&str>) -> Result<(Names, String, bool)> {
    let names = names(ctx, remote)?;
    let refspec = setup_refspec(&names.remote);
    let key = format!("remote.{}.fetch", names.remote);
    let dir = ctx.store()?.common_dir();
    let present = git::config_values(dir, &key)?
        .iter()
        .any(|v| v.trim() == refspec);
    if !present {
        git::output(dir, &["config", "--add", &key, &refspec])?;
    }
    Ok((names, refspec, !present))
}

//! History written before the team turned signing on: ticks at or before
//! git config `loopx.signaturesFrom` (a commit) need no signature.
//! `verify::Signing` reads it once per invocation; every check of
//! incoming history (`verify`, sync, the hub) goes through
//! `verify::check_tick`, which calls [`super::check_op`].

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::repo::Repo;
use crate::store::{Oid, PrefixMatch};

/// The commit named by `loopx.signaturesFrom`: ticks at or before it need no
/// signature (`verify` honours it the same way).
pub fn exempt_below(repo: &Repo) -> Result<Option<Oid>> {
    let Some(rev) = repo.config().signatures_from.clone() else {
        return Ok(None);
    };
    match repo.store().commit_by_prefix(rev.trim()) {
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

//! `loopx sync --repair-remote`: the way back after a forgery landed on an
//! unguarded hub. A human act: it finds the first commit on the remote
//! that is not a valid tick (verifying from the last tip verified for that
//! remote), and puts the remote's ref back at the last valid tick before
//! it, with a lease on the bad tip (never `+`). Clones that refused the
//! forgery then sync on without seeing a rewrite.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Refusal};
use crate::git::{self, Pushed};
use crate::model::Actor;
use crate::store::Oid;
use crate::tx;
use crate::verify::{self, Verified};

use super::{Names, names, remember};

/// A commit the repair takes off the remote.
#[derive(Clone, Debug, Serialize)]
pub struct Removed {
    pub commit: String,
    pub author: String,
    pub subject: String,
}

/// What a repair did.
#[derive(Clone, Debug, Serialize)]
pub struct Repair {
    pub remote: String,
    /// The remote's tip before (None: it has no state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Where the remote's ref is now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The rule the first removed commit breaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<verify::Finding>,
    /// Oldest first.
    pub removed: Vec<Removed>,
}

/// Finds the remote's first invalid tick and puts the remote back before
/// it; changes nothing when every tick is valid.
pub fn run(ctx: &Ctx, remote: Option<&str>) -> Result<Repair> {
    if !matches!(ctx.actor()?, Actor::Human { .. }) {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "repairing a remote's history is a human act; an agent may not do it",
        )
        .with_hint("ask a human to run `loopx sync --repair-remote`")
        .into());
    }
    let names = names(ctx, remote)?;
    let Some(tip) = super::fetch_tip(ctx, &names)? else {
        return Ok(Repair {
            remote: names.remote,
            from: None,
            to: None,
            finding: None,
            removed: Vec::new(),
        });
    };
    let start = start(ctx, &names, tip.commit)?;
    let base = match start {
        Some(s) => {
            let snap = tx::load_at(ctx, ctx.store()?.tip_at(s)?)?;
            Some(Verified {
                tip: snap.tip,
                state: snap.state,
            })
        }
        None => None,
    };
    let checked = verify::chain(
        ctx.store()?,
        base,
        tip.commit,
        ctx.now,
        &verify::Signing::load(ctx)?,
        &mut |_, _| {},
    )?;
    let Err(finding) = checked else {
        remember(ctx, &names.verified, tip.commit)?;
        return Ok(Repair {
            remote: names.remote,
            from: Some(tip.commit.to_string()),
            to: Some(tip.commit.to_string()),
            finding: None,
            removed: Vec::new(),
        });
    };
    let bad = ctx.store()?.oid(&finding.commit)?;
    let Some(good) = ctx.store()?.entry(bad)?.parent else {
        return Err(Refusal::error(
            Code::NothingValid,
            format!(
                "{}'s very first commit is not a valid tick: there is no valid tick to put it back at",
                names.remote
            ),
        )
        .with_hint(format!(
            "push a valid state there yourself, e.g. `git push --force-with-lease={r}:{t} {rem} {r}:{r}`",
            r = ctx.state_ref(),
            t = tip.commit,
            rem = names.remote
        ))
        .into());
    };
    let removed = ctx
        .store()?
        .chain_since(tip.commit, Some(good))?
        .into_iter()
        .map(|e| Removed {
            commit: e.commit.to_string(),
            author: format!("{} <{}>", e.author.name, e.author.email),
            subject: e.message.lines().next().unwrap_or_default().to_owned(),
        })
        .collect::<Vec<_>>();
    // Show what goes before it goes.
    for r in &removed {
        ctx.out.status(&format!(
            "Removing from {}: {} {} ({})",
            names.remote,
            &r.commit[..r.commit.len().min(8)],
            r.subject,
            r.author
        ));
    }
    let pushed = git::push_lease(
        ctx.store()?.common_dir(),
        &names.remote,
        &good.to_string(),
        ctx.state_ref(),
        &tip.commit.to_string(),
        ctx.config()?.sync_timeout,
    )
    .map_err(|e| super::push_failed(&names, e))?;
    if let Pushed::Behind(why) = pushed {
        return Err(Refusal::conflict(
            Code::RemoteMoved,
            format!(
                "{} moved while it was being repaired ({why}); nothing was changed there",
                names.remote
            ),
        )
        .with_hint("run `loopx sync --repair-remote` again")
        .into());
    }
    let _ = super::track_ref(ctx, &names.tracking, good);
    remember(ctx, &names.verified, good)?;
    Ok(Repair {
        remote: names.remote,
        from: Some(tip.commit.to_string()),
        to: Some(good.to_string()),
        finding: Some(finding),
        removed,
    })
}

/// Where verification of the remote starts: the last tip verified for it,
/// else the newest commit it shares with the local state, else the first.
fn start(ctx: &Ctx, names: &Names, remote: Oid) -> Result<Option<Oid>> {
    if let Some(v) = ctx.store()?.resolve(&names.verified)?
        && ctx.store()?.is_ancestor(v.commit, remote)?
    {
        return Ok(Some(v.commit));
    }
    match ctx.store()?.tip()? {
        Some(local) => ctx.store()?.merge_base(local.commit, remote),
        None => Ok(None),
    }
}

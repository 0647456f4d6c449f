//! `loopx sync --repair-remote`: the way back after a forgery landed on an
//! unguarded hub. A human act, in two steps. [`plan`] finds the first
//! commit on the remote that is not a valid tick (verifying from the last
//! tip verified for that remote) and lists what putting the remote back
//! before it would remove; [`apply`] (after the human said yes) pushes the
//! last valid tick over the remote's ref, with a lease on the bad tip
//! (never `+`). Clones that refused the forgery then sync on without seeing
//! a rewrite.
//!
//! Only a tick invalid by structure, one every clone refuses whatever its
//! clock and its trusted signers, is ever removed. A tick that is only "in
//! this machine's future", "signed by a key not trusted here" or "written by
//! a newer loopx" is this machine's verdict, not the team's: it is reported,
//! never removed. A hub that runs the guard (`loopx hub install`) judged
//! what it took by its own rules; its refusal of the repair wins.

use anyhow::Result;
use serde::Serialize;

use crate::error::{Code, Refusal};
use crate::git::{self, NetworkError, Pushed};
use crate::model::Actor;
use crate::repo::Repo;
use crate::store::{Oid, Tip};
use crate::verify::{self, Finding, Rule};

use super::execute::{advance_ref, push_failed};
use super::{Names, fetch_tip, names};

/// A commit the repair takes off the remote.
#[derive(Clone, Debug, Serialize)]
pub struct Removed {
    pub commit: String,
    pub author: String,
    pub subject: String,
}

/// What a repair did, or would do (`applied` false).
#[derive(Clone, Debug, Serialize)]
pub struct Repair {
    pub remote: String,
    /// The remote's tip before (None: it has no state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Where the remote's ref is now (or would be).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The rule the first removed commit breaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
    /// Oldest first.
    pub removed: Vec<Removed>,
    /// Whether the remote was changed (false for `--dry-run`, and when
    /// there is nothing to remove).
    pub applied: bool,
}

/// A repair decided, not yet pushed.
pub struct Plan {
    names: Names,
    /// The remote's tip, and the valid tick to put it back at.
    rewind: Option<(Tip, Oid)>,
    pub report: Repair,
}

/// Whether every clone refuses a tick that breaks `rule`, whatever its
/// clock, its trusted signers and its loopx version.
pub fn structural(rule: Rule) -> bool {
    !matches!(
        rule,
        Rule::Future | Rule::Signature | Rule::FormatTooNew | Rule::UnknownOp
    )
}

/// Finds the remote's first invalid tick and what putting the remote back
/// before it removes. Changes nothing on the remote.
pub fn plan(repo: &Repo, actor: &Actor, remote: Option<&str>) -> Result<Plan> {
    if !matches!(actor, Actor::Human { .. }) {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "repairing a remote's history is a human act; an agent may not do it",
        )
        .with_hint("ask a human to run `loopx sync --repair-remote`")
        .into());
    }
    let names = names(repo, remote)?;
    let mut report = Repair {
        remote: names.remote.clone(),
        from: None,
        to: None,
        finding: None,
        removed: Vec::new(),
        applied: false,
    };
    let Some(tip) = fetch_tip(repo, &names)? else {
        return Ok(Plan {
            names,
            rewind: None,
            report,
        });
    };
    report.from = Some(tip.commit.to_string());
    report.to = report.from.clone();
    let base = match start(repo, &names, tip.commit)? {
        Some(s) => Some(verify::trusted_at(repo.store(), s)?),
        None => None,
    };
    let Err(unverified) = verify::chain(repo, base, tip.commit, &mut |_, _| {}).0 else {
        advance_ref(repo, &names.verified, tip.commit, true, "loopx: sync")?;
        return Ok(Plan {
            names,
            rewind: None,
            report,
        });
    };
    let finding = unverified.finding()?;
    if !structural(finding.rule) {
        return Err(not_removable(&names, &finding).into());
    }
    let bad = repo.store().oid(&finding.commit)?;
    let Some(good) = repo.store().entry(bad)?.parent else {
        return Err(Refusal::error(
            Code::NothingValid,
            format!(
                "{}'s very first commit is not a valid tick: there is no valid tick to put it back at",
                names.remote
            ),
        )
        .with_hint(format!(
            "nothing was changed; a human who knows which state {} should hold pushes it there with a lease on its tip {}",
            names.remote,
            tip.commit.short(12),
        ))
        .into());
    };
    report.removed = repo
        .store()
        .chain_since(tip.commit, Some(good))?
        .into_iter()
        .map(|e| Removed {
            commit: e.commit.to_string(),
            author: format!("{} <{}>", e.author.name, e.author.email),
            subject: e.message.lines().next().unwrap_or_default().to_owned(),
        })
        .collect();
    report.to = Some(good.to_string());
    report.finding = Some(finding);
    Ok(Plan {
        names,
        rewind: Some((tip, good)),
        report,
    })
}

/// Puts the remote back as planned, with a lease on the tip the plan saw.
pub fn apply(repo: &Repo, plan: Plan) -> Result<Repair> {
    let Plan {
        names,
        rewind,
        mut report,
    } = plan;
    let Some((tip, good)) = rewind else {
        return Ok(report);
    };
    let pushed = git::push_lease(
        super::local(repo),
        &names.remote,
        &good.to_string(),
        repo.state_ref(),
        &tip.commit.to_string(),
        repo.config().sync_timeout,
    )
    .map_err(|e| match e.downcast_ref::<NetworkError>() {
        Some(n) if n.stderr.contains("loopx hub") => Refusal::rule(
            Code::HubNonFastForward,
            format!(
                "{} runs the loopx hub guard, and its verdict wins: it refused to be put back ({})",
                names.remote, n.stderr
            ),
        )
        .with_hint("nothing was changed there; the hub took those ticks by its own rules (its clock, its trusted signers): ask its admin, and compare with `loopx verify` here")
        .into(),
        _ => push_failed(&names, e),
    })?;
    if let Pushed::Behind(why) = pushed {
        return Err(Refusal::conflict(
            Code::RemoteMoved,
            format!(
                "{} moved while it was being repaired ({why}); nothing was changed there",
                names.remote
            ),
        )
        .with_hint("run `loopx sync --repair-remote --dry-run` again to see what it holds now")
        .into());
    }
    let _ = advance_ref(
        repo,
        &names.tracking,
        good,
        false,
        "loopx: sync --repair-remote",
    );
    advance_ref(
        repo,
        &names.verified,
        good,
        true,
        "loopx: sync --repair-remote",
    )?;
    report.applied = true;
    Ok(report)
}

/// The report of a tick this machine refuses but other clones may not.
fn not_removable(names: &Names, f: &Finding) -> Refusal {
    let why = match f.rule {
        Rule::Future => {
            "it is dated in this machine's future, and it is taken once its time has come: check this machine's clock and the writer's"
        }
        Rule::Signature => {
            "its signature is not one this machine trusts, and another clone's allowed signers may: check git config loopx.allowedSignersFile here, and ask the signer"
        }
        _ => "it was written by a newer loopx: upgrade loopx here",
    };
    let mut r = f.refusal(format!(
        "nothing was changed: --repair-remote removes only ticks every clone refuses, and {why}"
    ));
    r.message = format!(
        "{} holds a tick this machine refuses, which is not removed: {}",
        names.remote, r.message
    );
    r
}

/// Where verification of the remote starts: the last tip verified for it,
/// else the newest commit it shares with the local state, else the first.
fn start(repo: &Repo, names: &Names, remote: Oid) -> Result<Option<Oid>> {
    if let Some(v) = repo.store().resolve(&names.verified)?
        && repo.store().is_ancestor(v.commit, remote)?
    {
        return Ok(Some(v.commit));
    }
    match repo.store().tip()? {
        Some(local) => repo.store().merge_base(local.commit, remote),
        None => Ok(None),
    }
}

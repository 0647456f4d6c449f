//! `loopx sync --redate`: the way out for a clone that holds a tick dated
//! in this machine's future (made under a `LOOPX_NOW` ahead of the clock, or
//! while the clock was wrong). No hub takes such a tick, nor anything built
//! on it, so every later local tick would stay unpushed. This writes the
//! local ticks again from the newest one before the first future-dated
//! tick: each future-dated op at this machine's time, every other op as it
//! was (same id, actor and time), through the same replay a sync does
//! (`plan_replay`; an op that no longer applies becomes a `sync-rejected`
//! record). The old tip is kept under `refs/loopx/backup/redate/…` and the
//! local ref moves by compare-and-swap. Nothing valid is discarded.

use std::collections::HashMap;

use anyhow::Result;
use serde::Serialize;

use crate::error::{Code, Refusal};
use crate::op::message;
use crate::repo::Repo;
use crate::tx::{self, Snapshot};

use super::execute::{keep_backup, move_state, write_replay};
use super::replay::plan_replay;
use super::{Rejected, Replayed};

/// What `--redate` did.
#[derive(Clone, Debug, Serialize)]
pub struct Redated {
    /// The local tip before (None: there is no state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The local tip now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Ops written again at this machine's time.
    pub redated: usize,
    /// Ticks written again in all (the redated ones included).
    pub rewritten: usize,
    /// Ops that no longer applied (each recorded as `sync-rejected`).
    pub rejected: Vec<Rejected>,
    /// Where the old tip is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    #[serde(skip)]
    pub replays: Vec<Replayed>,
}

/// Rewrites the local ticks from the first one dated beyond this
/// machine's clock and the skew margin; changes nothing when there is none.
pub fn run(repo: &Repo) -> Result<Redated> {
    let store = repo.store();
    let mut report = Redated {
        from: None,
        to: None,
        redated: 0,
        rewritten: 0,
        rejected: Vec::new(),
        backup: None,
        replays: Vec::new(),
    };
    let Some(local) = store.tip()? else {
        return Ok(report);
    };
    report.from = Some(local.commit.to_string());
    report.to = report.from.clone();
    let now = repo.now();
    let skew = tx::snapshot(store, local.clone())?
        .state
        .meta
        .settings
        .clock_skew;
    let limit = now.plus(skew);
    // The local chain, oldest first, down to the first future-dated tick.
    let chain = store.chain_since(local.commit, None)?;
    let Some(first) = chain.iter().position(|e| e.time > limit.unix()) else {
        return Ok(report);
    };
    let Some(parent) = chain[first].parent else {
        return Err(Refusal::error(
            Code::NothingValid,
            format!(
                "the first tick of {} is dated after this machine's clock: there is no earlier tick to write the others on",
                repo.state_ref()
            ),
        )
        .with_hint("check this machine's clock (and LOOPX_NOW); nothing was changed")
        .into());
    };
    let mut ops = Vec::new();
    for e in &chain[first..] {
        let mut parsed = message::parse(&e.message).map_err(|why| {
            Refusal::error(
                Code::InvalidTick,
                format!(
                    "commit {} on {} is not a loopx tick ({why}), so it cannot be written again",
                    e.commit.short(8),
                    repo.state_ref()
                ),
            )
            .with_hint("`loopx verify` names it; nothing was changed")
        })?;
        if parsed.op.at > limit {
            parsed.op.at = now;
            report.redated += 1;
        }
        ops.push((e.commit, parsed));
    }
    let base = store.tip_at(parent)?;
    let onto = tx::snapshot(store, base)?;
    // Replayed ops stay on this chain: their signatures bind its identity.
    let binding = crate::trust::Binding::live(crate::trust::lineage::state_id(
        store,
        Some(onto.tip.commit),
    )?);
    let planned = plan_replay(
        &onto.state,
        &ops,
        &HashMap::new(),
        repo.signers()?,
        &binding,
    )?;
    let (tip, replays, written) = write_replay(
        repo,
        Snapshot {
            tip: onto.tip,
            state: onto.state,
        },
        planned.steps,
    )?;
    let backup = format!(
        "refs/loopx/backup/redate/{}-{}",
        local.tick,
        local.commit.short(8)
    );
    if !keep_backup(repo, &backup, local.commit, "loopx: sync --redate")? {
        return Err(moved(repo));
    }
    if !move_state(repo, tip.commit, Some(local.commit), "loopx: sync --redate")? {
        return Err(moved(repo));
    }
    report.to = Some(tip.commit.to_string());
    report.rewritten = written;
    report.rejected = planned.rejected;
    report.backup = Some(backup);
    report.replays = replays;
    Ok(report)
}

fn moved(repo: &Repo) -> anyhow::Error {
    Refusal::conflict(
        Code::RetriesExhausted,
        format!(
            "{} moved while its ticks were being written again; nothing was changed",
            repo.state_ref()
        ),
    )
    .with_hint("run `loopx sync --redate` again")
    .into()
}

//! Recording a session's usage from its hooks: Claude Code's transcript,
//! read from where it last stopped, and the usage Pi's extension sends.
//! What is read and how it adds up is [`hook::transcript`]; this writes the
//! `usage.record` tick and moves the session's place once it landed.

use anyhow::{Context, Result};

use super::Call;
use crate::cmd::tx;
use crate::hook::session::Session;
use crate::hook::{self, decide};
use crate::model::AgentStatus;
use crate::model::usage::Usage;
use crate::op::{Change, UsageRecord};

/// Records the usage of the transcript's messages written since the last
/// record (a byte offset kept in the session file, moved only after the
/// tick landed), added to the running total of the session's current hour
/// and reported as that total under a key derived from the session and the
/// hour's start. A Stop that reads the same stretch again after a crash
/// recomputes the same or a larger total for the same key: the max rule
/// counts it once.
pub(super) fn transcript(call: &Call) -> Result<()> {
    let input = call.input;
    let (Some(path), Some(sid)) = (input.transcript.as_deref(), input.session.as_deref()) else {
        return Ok(());
    };
    let mut s = call.session.load();
    let Some((text, next)) = hook::transcript::read_new(path, s.usage_offset)
        .with_context(|| format!("reading {path}"))?
    else {
        return Ok(());
    };
    let parts = hook::usage::claude::transcript(&text);
    if record(call, sid, &mut s, parts)? {
        s.usage_offset = next;
        call.session.save(&s);
    }
    Ok(())
}

/// Records the usage Pi reported since the extension's last call (the
/// payload's `usage`), as [`transcript`] does a transcript's.
pub(super) fn pi(call: &Call, stdin: &[u8]) -> Result<()> {
    let Some(sid) = call.input.session.as_deref() else {
        return Ok(());
    };
    let payload: serde_json::Value = serde_json::from_slice(stdin).unwrap_or_default();
    let parts = hook::pi::usage(&payload);
    if parts.is_empty() {
        return Ok(());
    }
    let mut s = call.session.load();
    if record(call, sid, &mut s, parts)? {
        call.session.save(&s);
    }
    Ok(())
}

/// Adds `parts` (one per model) to the running total of the session's
/// current stretch and records that total. Returns whether the agent is
/// active (else nothing was recorded, and the caller keeps its place to
/// read again).
fn record(call: &Call, sid: &str, s: &mut Session, mut parts: Vec<Usage>) -> Result<bool> {
    let ctx = &call.ctx;
    let snap = tx::load(ctx)?;
    let active = snap
        .state
        .agents
        .get(&call.agent)
        .is_some_and(|a| a.status == AgentStatus::Active);
    if parts.is_empty() || !active {
        return Ok(active);
    }
    // The goal of the open turn token (the last the hooks gave this
    // session), else of the agent's first claim, else its pick.
    let goal = s
        .turn_goal
        .clone()
        .filter(|g| snap.state.goals.contains_key(g))
        .or_else(|| decide::usage_goal(&snap.state, &call.agent))
        .map_or_else(|| crate::cmd::pick_goal(ctx, &snap.state, None), Ok)?;
    let store = ctx.store()?;
    for u in &mut parts {
        // A model nothing prices counts its tokens; the runtime's output
        // is no place to say so.
        let team = &snap.state.meta.settings.prices;
        let _ = crate::price::fill(u, |m| {
            crate::price::team(team, m).or_else(|| crate::config::price(store, m))
        });
    }
    let delta = hook::usage::merge(parts);
    if delta.is_empty() {
        return Ok(true);
    }
    // One ledger entry per session and stretch: a stretch's usage adds to
    // its total, reported again under the stretch's key, so the ledger
    // stays small and a re-read counts once under the max rule.
    let stretch = hook::transcript::stretch(s, sid, ctx.now, &delta);
    tx::start(ctx)?.run(|_| {
        Ok(tx::op(
            ctx,
            Change::UsageRecord(UsageRecord {
                goal: goal.clone(),
                turn: stretch.key.clone(),
                usage: stretch.total.clone(),
            }),
        )?)
    })?;
    stretch.keep(s);
    Ok(true)
}

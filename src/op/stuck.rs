//! Claims that are stuck: held, the lease not run out, but nobody works
//! on them. Judged from the state and what one clone knows beyond it
//! ([`Local`]), so `status`, its page and `digest` agree. Pure: the
//! commands read the session files and the last sync, this decides.
//!
//! - On the holder's clone: every session of the holder there ended
//!   without settling the claim, or the process that ran it is gone
//!   ([`Gone`]). Shown at once.
//! - Anywhere: no tick by the holder (a claim, a renew, an update, a turn:
//!   the existing ticks are the heartbeat; there are no others) for the
//!   team's `stuck_after` (default half the lease), measured up to the
//!   end of this clone's last sync with its hub, not up to now: a clone that
//!   last synced hours ago does not call every claim stuck.
//!
//! A stuck claim frees itself when its lease runs out (plus the clock
//! skew); a human frees it now with a forced release.

use std::collections::BTreeMap;

use crate::error::Next;
use crate::model::{AgentId, State, Todo, TodoStatus};
use crate::time::{Span, Timestamp};

/// How the holder's sessions on this clone ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Its session's end was seen with the claim still held.
    Ended,
    /// The process that ran its session no longer exists (killed, crashed).
    Died,
}

/// What this clone knows beyond the state.
#[derive(Clone, Debug, Default)]
pub struct Local {
    /// Agents whose sessions on this clone are all over (none still runs
    /// here), and how the latest one ended.
    pub gone: BTreeMap<AgentId, Gone>,
    /// Up to when this clone has seen the ticks of other clones: the end of
    /// its last sync, now for a clone that never synced. None when that
    /// cannot be told: no claim is judged by silence then.
    pub seen_until: Option<Timestamp>,
}

/// Why a claim is stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The holder's session on this clone is over ([`Gone`]).
    Session(Gone),
    /// No tick by the holder for `after`, up to this clone's last sync.
    Silent { after: Span },
}

impl Why {
    /// A short kebab-case word for JSON and the page.
    pub fn code(self) -> &'static str {
        match self {
            Why::Session(Gone::Ended) => "session-ended",
            Why::Session(Gone::Died) => "session-died",
            Why::Silent { .. } => "silent",
        }
    }
}

/// One stuck claim.
#[derive(Debug)]
pub struct Stuck<'s> {
    pub todo: &'s Todo,
    pub owner: &'s AgentId,
    pub why: Why,
    /// The holder's last tick the state shows ([`last_heard`]).
    pub last_heard: Timestamp,
    /// When its lease frees it by itself (the lease's end plus the clock
    /// skew).
    pub frees_at: Timestamp,
}

impl Stuck<'_> {
    /// Why, in a few words, for people.
    pub fn reason(&self) -> String {
        match self.why {
            Why::Session(Gone::Ended) => format!(
                "{}'s session on this clone ended without settling it",
                self.owner
            ),
            Why::Session(Gone::Died) => format!(
                "the process of {}'s session on this clone is gone",
                self.owner
            ),
            Why::Silent { after } => format!(
                "no tick by {} since {} (stuck after {after})",
                self.owner, self.last_heard
            ),
        }
    }

    /// The human command that frees it now (without the backticks).
    pub fn free_now(&self) -> String {
        Next::ForceRelease(self.todo.id.to_string())
            .cli()
            .trim_matches('`')
            .to_owned()
    }

    /// The whole line: why, when the lease frees it, what frees it now.
    pub fn line(&self) -> String {
        format!(
            "{}; its lease frees it at {}, or a human frees it now: `{}`",
            self.reason(),
            self.frees_at,
            self.free_now()
        )
    }
}

/// The holder's last tick on a claimed todo as the state shows it: the
/// claim itself, the todo's last change (a renew, an update), the
/// holder's last turn, validated writeback or park, whichever is latest.
pub fn last_heard(state: &State, todo: &Todo) -> Option<Timestamp> {
    let claim = todo.claim.as_ref()?;
    let agent = state.agents.get(&claim.owner);
    [
        Some(claim.since),
        Some(todo.updated_at),
        agent.and_then(|a| a.last_turn.as_ref().map(|t| t.at)),
        agent.and_then(|a| a.last_writeback),
        agent
            .and_then(|a| a.parked.as_ref())
            .filter(|p| p.by.agent() == Some(&claim.owner))
            .map(|p| p.at),
    ]
    .into_iter()
    .flatten()
    .max()
}

/// The claim on `todo`, if it is stuck at `now`. A claim whose lease has
/// run out is not: it is expired, and any agent may take it.
pub fn judge<'s>(
    state: &'s State,
    todo: &'s Todo,
    now: Timestamp,
    local: &Local,
) -> Option<Stuck<'s>> {
    let skew = state.meta.settings.clock_skew;
    if todo.status != TodoStatus::Claimed {
        return None;
    }
    let claim = todo.live_claim(now, skew)?;
    let last_heard = last_heard(state, todo)?;
    let after = state.stuck_after(&todo.goal);
    let why = match local.gone.get(&claim.owner) {
        Some(g) => Why::Session(*g),
        None => {
            let until = local.seen_until?.min(now);
            if until.since(last_heard) < after {
                return None;
            }
            Why::Silent { after }
        }
    };
    Some(Stuck {
        todo,
        owner: &claim.owner,
        why,
        last_heard,
        frees_at: claim.lease_until.plus(skew),
    })
}

/// Every stuck claim at `now`, the soonest freed first.
pub fn claims<'s>(state: &'s State, now: Timestamp, local: &Local) -> Vec<Stuck<'s>> {
    let mut out: Vec<Stuck> = state
        .todos
        .values()
        .filter_map(|t| judge(state, t, now, local))
        .collect();
    out.sort_by(|a, b| (a.frees_at, &a.todo.id).cmp(&(b.frees_at, &b.todo.id)));
    out
}

#[cfg(test)]
mod tests;

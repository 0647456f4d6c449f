//! A registered agent: its runtime and capabilities. Stored at
//! `agents/<id>.toml`.

use serde::{Deserialize, Serialize};

pub use super::runtime::Runtime;
use super::{actor::Actor, id::AgentId};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: AgentId,
    pub runtime: Runtime,
    pub status: AgentStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    pub registered_at: Timestamp,
    pub registered_by: Actor,
    /// The last time it made a validated writeback (an owner's todo update,
    /// a done that passed, evidence that passed, a refresh that advanced or
    /// blocked): `spend-slot` needs one at or after its turn began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_writeback: Option<Timestamp>,
    /// How its last turn ended, for the next turn's brief and `no-change`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<LastTurn>,
    /// Parked by `quota park` until a time (format 3): `should-run` answers
    /// `wait-until` before it, and after it runs only where the goal says
    /// `auto_resume`; otherwise the agent's next `refresh-state` opens a
    /// human-only gate and clears this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<Parked>,
    /// Its run of advanced turns on one todo with one progress fingerprint,
    /// for stall detection (format 3; docs/turn.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// The goals it may work on (format 7, `agent register --goal`, a
    /// human's act); empty: every active goal ([`crate::model::State::scope`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goals: Vec<super::GoalId>,
}

/// Why and until when an agent parked itself (a runtime's usage limit).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parked {
    pub until: Timestamp,
    /// The goal it was working on, whose `auto_resume` decides what
    /// happens after `until`.
    pub goal: super::GoalId,
    pub at: Timestamp,
    pub by: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The agent's current run of turns on one todo with one progress
/// fingerprint (`op::progress`): a run of `stall-after` advanced turns
/// opens a stall gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub todo: super::TodoId,
    /// The digest of the last turn's fingerprint (code, todo, checks).
    pub fingerprint: String,
    /// When each advanced turn of the run settled, oldest first; emptied by
    /// a turn that was not advanced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<crate::time::Timestamp>,
    /// The stall gate this run opened; only turns after its answer count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<super::GateId>,
}

/// The record `refresh-state` (or `settle`) leaves on the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastTurn {
    pub at: Timestamp,
    pub goal: super::GoalId,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<super::TodoId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// A hash of what concerned the agent then: its claims, the todos it
    /// could take, the gates on its scopes, others' evidence on its todos.
    pub digest: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Advanced,
    Unchanged,
    Blocked,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Advanced => "advanced",
            Outcome::Unchanged => "unchanged",
            Outcome::Blocked => "blocked",
        }
    }
}

impl std::str::FromStr for Outcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Outcome::Advanced, Outcome::Unchanged, Outcome::Blocked]
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not an outcome: use advanced, unchanged or blocked"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentStatus {
    Active,
    Retired,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Retired => "retired",
        }
    }
}

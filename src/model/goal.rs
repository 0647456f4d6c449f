//! A goal: the objective agents work towards, with its scope, guards and
//! quota policy. Stored at `goals/<id>.toml`.

use serde::{Deserialize, Serialize};

use super::{actor::Actor, id::GoalId};
use crate::time::{Span, Timestamp};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub id: GoalId,
    pub objective: String,
    pub status: GoalStatus,
    /// Paths agents may write (globs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// Free-text rules agents must follow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
    pub quota: QuotaPolicy,
    /// Caps on usage, the goal's and each agent's (format 3).
    #[serde(default, skip_serializing_if = "super::usage::Budgets::is_empty")]
    pub budget: super::usage::Budgets,
    /// Advanced turns without progress on one todo before a stall gate
    /// opens; 0 is off (format 3, absent when 3).
    #[serde(
        default = "default_stall_after",
        skip_serializing_if = "is_default_stall_after"
    )]
    pub stall_after: u32,
    /// Whether an agent parked by `quota park` runs again by itself once
    /// its time passes (format 3); otherwise a human's go is needed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_resume: bool,
    /// The lease a claim on this goal gets when no `--ttl` is passed
    /// (format 7, `goal set --lease`); absent, the team's
    /// (`settings.lease`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Span>,
    pub created_at: Timestamp,
    pub created_by: Actor,
    pub updated_at: Timestamp,
}

/// The default of `stall_after`.
pub const STALL_AFTER: u32 = 3;

fn default_stall_after() -> u32 {
    STALL_AFTER
}

fn is_default_stall_after(n: &u32) -> bool {
    *n == STALL_AFTER
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GoalStatus {
    Active,
    Paused,
    Done,
}

impl GoalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Done => "done",
        }
    }
}

impl std::str::FromStr for GoalStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [GoalStatus::Active, GoalStatus::Paused, GoalStatus::Done]
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a goal status: use active, paused or done"))
    }
}

/// `slots` turns per agent in any rolling `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaPolicy {
    pub slots: u32,
    pub window: Span,
}

impl Default for QuotaPolicy {
    fn default() -> Self {
        QuotaPolicy {
            slots: 48,
            window: Span::hours(24),
        }
    }
}

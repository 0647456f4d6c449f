//! A todo: a unit of work with a priority, dependencies, requirements and an
//! optional claim. Stored at `todos/<xx>/<id>.toml`, fanned out by the first
//! two hex digits of its id.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{
    actor::Actor,
    id::{AgentId, GoalId, TodoId},
};
use crate::time::{Span, Timestamp};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Todo {
    pub id: TodoId,
    pub goal: GoalId,
    pub title: String,
    pub priority: Priority,
    pub status: TodoStatus,
    /// Ids of todos that must be done first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<TodoId>,
    /// Capabilities an agent needs to take it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Paths (globs) its owner will write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// The command `todo done` runs first; completion needs it to pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<Validation>,
    /// Who last wrote or trusted the validation, by which op, and the op's
    /// signature if it was signed: what decides whether a machine runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_from: Option<super::Vouch>,
    /// Bumped by every change of owner; ops on a claimed todo carry the epoch
    /// their writer read (fencing).
    pub epoch: u64,
    pub created_at: Timestamp,
    pub created_by: Actor,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// The newest evidence recorded on it (the records live under
    /// `evidence/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_evidence: Option<EvidenceRef>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRef {
    pub id: super::EvidenceId,
    pub at: Timestamp,
    pub by: Actor,
    pub passed: bool,
}

impl Todo {
    /// Appends a note by `by` at `at`.
    pub fn add_note(&mut self, at: Timestamp, by: &Actor, text: impl Into<String>) {
        self.notes.push(Note {
            at,
            by: by.clone(),
            text: text.into(),
        });
    }

    /// The owner of a claim, live or expired.
    pub fn owner(&self) -> Option<&AgentId> {
        self.claim.as_ref().map(|c| &c.owner)
    }

    /// When the claim's lease ends (live or expired), if it has one.
    pub fn lease_until(&self) -> Option<Timestamp> {
        self.claim.as_ref().map(|c| c.lease_until)
    }

    /// The claim, if it is still live at `now` (with `skew` of grace).
    pub fn live_claim(&self, now: Timestamp, skew: Span) -> Option<&Claim> {
        self.claim
            .as_ref()
            .filter(|c| now < c.lease_until.plus(skew))
    }
}

/// A validation command: an argv run without a shell in the repository
/// root, with a timeout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    pub argv: Vec<String>,
    pub timeout: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub owner: AgentId,
    pub since: Timestamp,
    pub lease_until: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub at: Timestamp,
    pub by: Actor,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TodoStatus {
    Open,
    Claimed,
    Done,
    Blocked,
    Deferred,
}

impl TodoStatus {
    pub const ALL: [TodoStatus; 5] = [
        TodoStatus::Open,
        TodoStatus::Claimed,
        TodoStatus::Done,
        TodoStatus::Blocked,
        TodoStatus::Deferred,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Open => "open",
            TodoStatus::Claimed => "claimed",
            TodoStatus::Done => "done",
            TodoStatus::Blocked => "blocked",
            TodoStatus::Deferred => "deferred",
        }
    }
}

impl fmt::Display for TodoStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TodoStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TodoStatus::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a todo status: use open, claimed, done, blocked or deferred")
            })
    }
}

/// `P0` (most urgent) to `P4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    pub const DEFAULT: Priority = Priority(2);

    pub fn level(self) -> u8 {
        self.0
    }
}

impl Default for Priority {
    fn default() -> Self {
        Priority::DEFAULT
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P{}", self.0)
    }
}

impl FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.as_bytes() {
            [b'P' | b'p', d @ b'0'..=b'4'] => Ok(Priority(d - b'0')),
            _ => Err(format!(
                "{s:?} is not a priority: use P0 (most urgent) to P4"
            )),
        }
    }
}

impl Serialize for Priority {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Priority {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(crate::time::Text("a priority", str::parse))
    }
}

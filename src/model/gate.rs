//! A gate: a concrete question that blocks one scope (the goal, one agent or
//! one todo) until it is answered or withdrawn. Stored at `gates/<id>.toml`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    actor::Actor,
    id::{AgentId, GateId, GoalId, TodoId},
};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub id: GateId,
    pub goal: GoalId,
    pub question: String,
    pub options: Vec<String>,
    pub kind: GateKind,
    pub blocks: Blocks,
    pub status: GateStatus,
    pub opened_at: Timestamp,
    pub opened_by: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<Withdrawn>,
    /// The first successful `loopx.notify` run for this gate, recorded so
    /// the team's other clones do not notify again (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<Notified>,
    /// Opened by the usage record that reached a budget of its scope
    /// (format 3): `should-run` then answers `budget-exhausted`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget: bool,
}

/// Who ran the notification command for a gate, and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notified {
    pub by: Actor,
    pub at: Timestamp,
}

impl Gate {
    pub fn is_open(&self) -> bool {
        self.status == GateStatus::Open
    }

    /// Whether it stops `agent` from taking `todo` (of `goal`), while open.
    pub fn covers(&self, goal: &GoalId, agent: &AgentId, todo: &TodoId) -> bool {
        self.is_open()
            && match &self.blocks {
                Blocks::Goal => &self.goal == goal,
                Blocks::Agent(a) => a == agent,
                Blocks::Todo(t) => t == todo,
            }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub choice: String,
    pub by: Actor,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The SSH signature of the answering op, when it was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withdrawn {
    pub by: Actor,
    pub at: Timestamp,
    /// The SSH signature of the withdrawing op, when it was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateStatus {
    Open,
    Answered,
    Withdrawn,
}

impl GateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Open => "open",
            GateStatus::Answered => "answered",
            GateStatus::Withdrawn => "withdrawn",
        }
    }
}

/// What the gate is about. `permission`, `publish`, `production` and `spend`
/// may be answered only by a human; a `decision` by an agent too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateKind {
    Decision,
    Permission,
    Publish,
    Production,
    Spend,
}

impl GateKind {
    pub const ALL: [GateKind; 5] = [
        GateKind::Decision,
        GateKind::Permission,
        GateKind::Publish,
        GateKind::Production,
        GateKind::Spend,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GateKind::Decision => "decision",
            GateKind::Permission => "permission",
            GateKind::Publish => "publish",
            GateKind::Production => "production",
            GateKind::Spend => "spend",
        }
    }

    pub fn human_only(self) -> bool {
        self != GateKind::Decision
    }
}

impl FromStr for GateKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        GateKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a gate kind: use decision, permission, publish, production or spend")
            })
    }
}

/// The scope a gate blocks: `goal`, `agent:<id>` or `todo:<id>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Blocks {
    Goal,
    Agent(AgentId),
    Todo(TodoId),
}

impl fmt::Display for Blocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocks::Goal => f.write_str("goal"),
            Blocks::Agent(a) => write!(f, "agent:{a}"),
            Blocks::Todo(t) => write!(f, "todo:{t}"),
        }
    }
}

impl FromStr for Blocks {
    type Err = String;
    /// Parses a stored scope; todo ids must be complete here (the CLI
    /// resolves prefixes first).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a gate scope: use goal, agent:ID or todo:ID");
        if s == "goal" {
            return Ok(Blocks::Goal);
        }
        match s.split_once(':') {
            Some(("agent", id)) => AgentId::new(id)
                .map(Blocks::Agent)
                .map_err(|e| format!("{}: {e}", bad())),
            Some(("todo", id)) => TodoId::new(id)
                .map(Blocks::Todo)
                .map_err(|e| format!("{}: {e}", bad())),
            _ => Err(bad()),
        }
    }
}

impl Serialize for Blocks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

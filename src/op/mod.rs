//! Operations: every change to the state, as a plain value, and the one pure
//! function that applies it.
//!
//! An [`Op`] carries its stable id, its time, its actor and a [`Change`].
//! [`apply`] checks the change's preconditions against a [`State`] and
//! mutates it, or refuses with a [`Refusal`] and leaves it as it was. The
//! live command and sync's replay call the same function, so a rule holds
//! the same way on every machine. Nothing here knows about git.

mod agent;
mod goal;
pub mod message;
pub mod rules;
mod todo;

use serde::{Deserialize, Serialize};

use crate::error::Refusal;
use crate::model::{
    Actor, AgentId, GoalId, GoalStatus, OpId, Priority, Runtime, State, TodoId, TodoStatus,
};
use crate::time::{Span, Timestamp};

/// One change to the state, as recorded in a tick's commit message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    pub at: Timestamp,
    pub actor: Actor,
    pub change: Change,
}

/// What an operation changes. The `kind` tag is the `Loopx-Op` trailer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Change {
    #[serde(rename = "init")]
    Init {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal: Option<GoalId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        objective: Option<String>,
    },
    #[serde(rename = "goal.add")]
    GoalAdd { goal: GoalId, objective: String },
    #[serde(rename = "goal.set")]
    GoalSet {
        goal: GoalId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        objective: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<GoalStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        guards: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quota_slots: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quota_window: Option<Span>,
    },
    #[serde(rename = "agent.register")]
    AgentRegister {
        agent: AgentId,
        runtime: Runtime,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        capabilities: Vec<String>,
    },
    #[serde(rename = "todo.add")]
    TodoAdd {
        todo: TodoId,
        goal: GoalId,
        title: String,
        priority: Priority,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        after: Vec<TodoId>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        capabilities: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        scope: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Claim, renew (the owner claims again) or steal an expired lease.
    #[serde(rename = "todo.claim")]
    TodoClaim {
        todo: TodoId,
        /// The epoch the claimer read.
        epoch: u64,
        lease: Span,
    },
    #[serde(rename = "todo.release")]
    TodoRelease { todo: TodoId, epoch: u64 },
    #[serde(rename = "todo.update")]
    TodoUpdate {
        todo: TodoId,
        epoch: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<TodoStatus>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    #[serde(rename = "todo.done")]
    TodoDone {
        todo: TodoId,
        epoch: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

impl Change {
    /// The kind as written in the `Loopx-Op` trailer.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Init { .. } => "init",
            Change::GoalAdd { .. } => "goal.add",
            Change::GoalSet { .. } => "goal.set",
            Change::AgentRegister { .. } => "agent.register",
            Change::TodoAdd { .. } => "todo.add",
            Change::TodoClaim { .. } => "todo.claim",
            Change::TodoRelease { .. } => "todo.release",
            Change::TodoUpdate { .. } => "todo.update",
            Change::TodoDone { .. } => "todo.done",
        }
    }

    /// Every kind this binary knows, for `log --op` and sync's "upgrade
    /// loopx" check.
    pub const KINDS: &'static [&'static str] = &[
        "init",
        "goal.add",
        "goal.set",
        "agent.register",
        "todo.add",
        "todo.claim",
        "todo.release",
        "todo.update",
        "todo.done",
    ];

    /// The todo this change is about, if any.
    pub fn todo(&self) -> Option<&TodoId> {
        match self {
            Change::TodoAdd { todo, .. }
            | Change::TodoClaim { todo, .. }
            | Change::TodoRelease { todo, .. }
            | Change::TodoUpdate { todo, .. }
            | Change::TodoDone { todo, .. } => Some(todo),
            _ => None,
        }
    }
}

/// What applying an op did, for the commit subject and the command's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The commit subject without the actor: `claim t-3fa9c2d1 "Write the parser"`.
    pub subject: String,
}

impl Effect {
    fn new(subject: impl Into<String>) -> Self {
        Effect {
            subject: subject.into(),
        }
    }
}

/// Applies `op` to `state`, or refuses and leaves `state` unchanged.
pub fn apply(state: &mut State, op: &Op) -> Result<Effect, Refusal> {
    // Work on a copy only where a rule may refuse after a partial change;
    // every function below checks all preconditions before mutating.
    match &op.change {
        Change::Init { goal, objective } => {
            goal::init(state, op, goal.as_ref(), objective.as_deref())
        }
        Change::GoalAdd { goal, objective } => goal::add(state, op, goal, objective),
        Change::GoalSet { .. } => goal::set(state, op),
        Change::AgentRegister {
            agent,
            runtime,
            capabilities,
        } => agent::register(state, op, agent, *runtime, capabilities),
        Change::TodoAdd { .. } => todo::add(state, op),
        Change::TodoClaim { todo, epoch, lease } => todo::claim(state, op, todo, *epoch, *lease),
        Change::TodoRelease { todo, epoch } => todo::release(state, op, todo, *epoch),
        Change::TodoUpdate {
            todo,
            epoch,
            status,
            note,
        } => todo::update(state, op, todo, *epoch, *status, note.as_deref()),
        Change::TodoDone { todo, epoch, note } => {
            todo::done(state, op, todo, *epoch, note.as_deref())
        }
    }
}

/// A title shortened for a one-line subject.
pub(crate) fn short(title: &str) -> String {
    const MAX: usize = 60;
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= MAX {
        one_line
    } else {
        let cut: String = one_line.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests;

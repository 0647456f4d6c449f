//! What applying an op did, as data: [`Effect`] for the command that made
//! it (and the records it wrote outside the live state), [`Happened`] for
//! what it did.

use std::collections::BTreeMap;

use crate::model::{
    AgentId, EvidenceId, GateId, GoalId, Outcome, SignerName, Todo, TodoId, TodoStatus,
    evidence::Evidence,
};

/// What applying an op did: a typed account for the command that made it,
/// the commit subject, and the records it produced outside the live state
/// (evidence and archived todos are never loaded with the state, so they
/// travel here rather than in [`State`](crate::model::State)).
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    pub what: Happened,
    /// The commit subject without the actor: `claim t-3fa9c2d1 "Write the parser"`.
    pub subject: String,
    /// Evidence records the op wrote, in order.
    pub evidence: Vec<Evidence>,
    /// Todos the op moved to the archive.
    pub archived: BTreeMap<TodoId, Todo>,
}

/// What an op did, as data: commands branch on this, never on the subject.
#[derive(Clone, Debug, PartialEq)]
pub enum Happened {
    Initialized,
    /// `settings.set`: what was set, as `key=value` words.
    SettingsSet {
        changed: Vec<String>,
    },
    /// `goal.split`: the shared side (None) or a goal's side.
    Split {
        goal: Option<GoalId>,
    },
    GoalAdded {
        goal: GoalId,
    },
    /// `changed`: what was set, as `key=value` words.
    GoalSet {
        goal: GoalId,
        changed: Vec<String>,
    },
    /// `unchanged`: the same registration again (no tick).
    Registered {
        agent: AgentId,
        unchanged: bool,
    },
    Retired {
        agent: AgentId,
        released: Vec<TodoId>,
    },
    TodoAdded {
        todo: TodoId,
    },
    Claimed {
        todo: TodoId,
    },
    /// The owner claimed again, or renewed: the epoch stayed.
    Renewed {
        todo: TodoId,
    },
    /// A claim of an expired lease held by `from`.
    Stole {
        todo: TodoId,
        from: AgentId,
    },
    HandedOff {
        todo: TodoId,
        to: AgentId,
    },
    /// `from`: the owner a human forced it off, when it was not the actor.
    Released {
        todo: TodoId,
        from: Option<AgentId>,
    },
    Updated {
        todo: TodoId,
    },
    Done {
        todo: TodoId,
    },
    Edited {
        todo: TodoId,
    },
    Reopened {
        todo: TodoId,
        was: TodoStatus,
    },
    Archived {
        todos: Vec<TodoId>,
    },
    GateOpened {
        gate: GateId,
    },
    GateAnswered {
        gate: GateId,
        choice: String,
    },
    GateWithdrawn {
        gate: GateId,
    },
    /// `already`: another clone recorded it first (a no-op).
    GateNotified {
        gate: GateId,
        already: bool,
    },
    /// A human vouched for a todo's validation.
    Trusted {
        todo: TodoId,
    },
    SignerAnnounced {
        name: SignerName,
    },
    /// A machine was proposed, admitted or revoked (format 5).
    MachineChanged {
        name: crate::model::MachineName,
    },
    /// The team's signing policy was set (`loopx.toml`'s `signatures`).
    SigningRequired {
        signatures: crate::model::Signatures,
    },
    EvidenceAdded {
        evidence: EvidenceId,
        passed: bool,
    },
    /// `gate`: the human-only gate an expired park opened (format 3).
    Refreshed {
        agent: AgentId,
        outcome: Outcome,
        gate: Option<GateId>,
        /// The stall gate this turn opened (`op::progress`).
        stalled: Option<crate::model::GateId>,
    },
    /// `added`: what the report added to the turn's usage (None: nothing,
    /// a no-op); `gates`: the budget gates it opened.
    UsageRecorded {
        agent: AgentId,
        added: Option<crate::model::usage::Usage>,
        gates: Vec<GateId>,
    },
    /// `already`: the turn was spent before (a no-op).
    Spent {
        agent: AgentId,
        already: bool,
    },
    Voided {
        agent: AgentId,
    },
    Parked {
        agent: AgentId,
        until: crate::time::Timestamp,
    },
    Resumed {
        agent: AgentId,
    },
    /// Each step's account, in order, and a one-line summary of them
    /// (`t-… "Title": done, spent 1 of 3`).
    Settled {
        steps: Vec<Happened>,
        summary: String,
    },
}

impl Happened {
    /// The gate the op opened, answered or withdrew.
    pub fn gate(&self) -> Option<&GateId> {
        match self {
            Happened::GateOpened { gate }
            | Happened::GateAnswered { gate, .. }
            | Happened::GateWithdrawn { gate }
            | Happened::GateNotified { gate, .. } => Some(gate),
            _ => None,
        }
    }

    /// The todo a single-todo op acted on.
    pub fn todo(&self) -> Option<&TodoId> {
        match self {
            Happened::TodoAdded { todo }
            | Happened::Claimed { todo }
            | Happened::Renewed { todo }
            | Happened::Stole { todo, .. }
            | Happened::HandedOff { todo, .. }
            | Happened::Released { todo, .. }
            | Happened::Updated { todo }
            | Happened::Done { todo }
            | Happened::Edited { todo }
            | Happened::Trusted { todo }
            | Happened::Reopened { todo, .. } => Some(todo),
            _ => None,
        }
    }
}

impl Effect {
    pub(super) fn new(what: Happened, subject: impl Into<String>) -> Self {
        Effect {
            what,
            subject: subject.into(),
            evidence: Vec::new(),
            archived: BTreeMap::new(),
        }
    }
}

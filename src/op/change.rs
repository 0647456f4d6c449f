//! The operations, one type each: the table that names every kind of
//! [`Change`] (its `Loopx-Op` trailer, the serde tag of its body, and the
//! format that brought it), and the struct each kind carries.
//!
//! The table is the one list of kinds: [`Change`], [`Change::kind`],
//! [`Change::KINDS`] and each kind's first format are generated from it.
//! The stored form of an op is its struct's fields beside the `op` tag,
//! exactly as when the fields were inline in the enum.

use serde::{Deserialize, Serialize};

use crate::model::{
    AgentId, Blocks, EvidenceId, EvidenceKind, GateId, GateKind, GoalId, GoalStatus, Outcome,
    Priority, Runtime, SignerName, TeamPrice, TodoId, TodoStatus, Validation,
    evidence::{Artifact, Code},
    run::CommandRun,
    usage::Usd,
};
use crate::time::{Span, Timestamp};

/// Generates [`Change`] and its name tables from one list of
/// `"kind" => Struct, since N, by WHO;` rows: `kind` is the trailer and
/// serde tag, `Struct` the type the variant wraps (and the variant's name),
/// `N` the format that introduced the kind (a field or value may raise it:
/// [`Change::since`]), and `WHO` who may write it
/// ([`Authority`](super::authority::Authority): `Human("act")`,
/// `Agent("act")`, `Either`, or `Rule(f)` over the state and the op).
macro_rules! changes {
    ($($kind:literal => $variant:ident, since $since:literal, by $by:expr;)*) => {
        /// What an operation changes. The `op` tag is the `Loopx-Op`
        /// trailer; the other fields are the wrapped struct's.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op")]
        pub enum Change {
            $(
                #[doc = concat!("`", $kind, "`: [`", stringify!($variant), "`].")]
                #[serde(rename = $kind)]
                $variant($variant),
            )*
        }

        impl Change {
            /// Every kind this binary knows, for `log --op` and sync's
            /// "upgrade loopx" check.
            pub const KINDS: &'static [&'static str] = &[$($kind,)*];

            /// The kind as written in the `Loopx-Op` trailer.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Change::$variant(_) => $kind,)*
                }
            }

            /// The format that introduced this kind, whatever it holds.
            pub(super) fn kind_since(&self) -> u32 {
                match self {
                    $(Change::$variant(_) => $since,)*
                }
            }

            /// Who may write this kind, as the table declares it
            /// ([`super::authority::who`] decides).
            pub fn authority(&self) -> super::authority::Authority {
                #[allow(unused_imports)]
                use super::authority::{Authority::*, closes_gate, inits, on_itself, releases, retires, settles};
                match self {
                    $(Change::$variant(_) => $by,)*
                }
            }
        }
    };
}

changes! {
    "init" => Init, since 1, by Rule(inits);
    "goal.add" => GoalAdd, since 1, by Human("add a goal");
    "goal.set" => GoalSet, since 1, by Human("change a goal");
    "goal.split" => GoalSplit, since 1, by Human("split a state into a ref per goal");
    "agent.register" => AgentRegister, since 1, by Rule(on_itself);
    "todo.add" => TodoAdd, since 1, by Either;
    "todo.claim" => TodoClaim, since 1, by Agent("claim a todo");
    "todo.renew" => TodoRenew, since 1, by Agent("renew a lease");
    "todo.handoff" => TodoHandoff, since 1, by Agent("hand a todo off");
    "todo.release" => TodoRelease, since 1, by Rule(releases);
    "todo.update" => TodoUpdate, since 1, by Either;
    "todo.done" => TodoDone, since 1, by Either;
    "todo.edit" => TodoEdit, since 1, by Either;
    "todo.reopen" => TodoReopen, since 1, by Either;
    "todo.trust" => TodoTrust, since 2, by Human("trust a validation");
    "signer.announce" => SignerAnnounce, since 2, by Human("announce a signer");
    "signer.require" => SignerRequire, since 4, by Human("set the signing policy");
    "machine.propose" => MachinePropose, since 5, by Either;
    "machine.admit" => MachineAdmit, since 5, by Human("admit a machine");
    "machine.revoke" => MachineRevoke, since 5, by Human("revoke a machine");
    "todo.archive" => TodoArchive, since 1, by Either;
    "agent.retire" => AgentRetire, since 1, by Rule(retires);
    "gate.open" => GateOpen, since 1, by Either;
    "gate.answer" => GateAnswer, since 1, by Rule(closes_gate);
    "gate.withdraw" => GateWithdraw, since 1, by Rule(closes_gate);
    "gate.notified" => GateNotified, since 2, by Either;
    "evidence.add" => EvidenceAdd, since 1, by Either;
    "turn.refresh" => RefreshState, since 1, by Agent("refresh its state");
    "turn.settle" => Settle, since 1, by Rule(settles);
    "quota.spend" => QuotaSpend, since 1, by Agent("spend a slot");
    "quota.void" => QuotaVoid, since 1, by Human("void a spent slot");
    "usage.record" => UsageRecord, since 3, by Agent("record usage");
    "quota.park" => QuotaPark, since 3, by Rule(on_itself);
    "quota.resume" => QuotaResume, since 3, by Human("resume a parked agent");
    "settings.set" => SettingsSet, since 7, by Human("change the team's settings");
    "signer.approve" => SignerApprove, since 7, by Human("approve a signer's new key");
    "signer.reclaim" => SignerReclaim, since 7, by Human("reclaim a signing key");
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Init {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalAdd {
    pub goal: GoalId,
    pub objective: String,
}

/// Format 6: the migration to a ref per goal (`op::split`): on the shared
/// ref without a goal, on a goal's new ref with it. On a state already
/// split, a goal that shares a goal ref moves onto its own: `goal` on its
/// new ref, `moved` on the ref it leaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalSplit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<GoalId>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalSet {
    pub goal: GoalId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GoalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_slots: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_window: Option<Span>,
    /// A budget of the goal or of one agent on it (format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSet>,
    /// Format 3: whether parked agents resume by themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resume: Option<bool>,
    /// Format 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_after: Option<u32>,
    /// Format 7: the lease a claim on the goal gets when no `--ttl` is
    /// passed; `0s` goes back to the team's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Span>,
}

/// `goal set`'s budget part: `agent` names an agent's budget, else the
/// goal's; a limit of 0 removes it, and a budget with no limit left goes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<Usd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Span>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRegister {
    pub agent: AgentId,
    pub runtime: Runtime,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Format 7: the goals the agent may work on, a human's act: absent
    /// keeps what the record names, empty names none (every active goal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goals: Option<Vec<GoalId>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoAdd {
    pub todo: TodoId,
    pub goal: GoalId,
    pub title: String,
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<TodoId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<Validation>,
}

/// Claim, renew (the owner claims again) or steal an expired lease.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoClaim {
    pub todo: TodoId,
    /// The epoch the claimer read.
    pub epoch: u64,
    pub lease: Span,
}

/// The owner extends its lease; the epoch stays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoRenew {
    pub todo: TodoId,
    pub epoch: u64,
    pub lease: Span,
}

/// The owner (or a human) gives the claim to another agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoHandoff {
    pub todo: TodoId,
    pub epoch: u64,
    pub to: AgentId,
    pub lease: Span,
    pub note: String,
}

/// The owner gives the claim up; a human may `force` it off any owner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoRelease {
    pub todo: TodoId,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoUpdate {
    pub todo: TodoId,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TodoStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoDone {
    pub todo: TodoId,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The todo's validation, run once before the tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<CommandRun>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoEdit {
    pub todo: TodoId,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Replaces the `after` list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<TodoId>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Replaces the validation (format 2); voids earlier trust in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<Validation>,
}

/// A human vouches for a todo's validation as it is now (format 2):
/// `digest` names the argv and timeout trusted, so any later change
/// voids it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoTrust {
    pub todo: TodoId,
    pub digest: String,
}

/// A human announces a signer's public key in the state (format 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignerAnnounce {
    pub name: SignerName,
    pub key: String,
}

/// Format 7: approves signer `name`'s pending new `key`. Valid only signed
/// by the signer's current key, or by another human's announced key
/// (`trust`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignerApprove {
    pub name: SignerName,
    pub key: String,
}

/// Format 7: the holder of `key` (the op is signed by it, `trust`) binds it
/// to signer `name` of their own, voiding any other human's announcement
/// of the key (a squat written before format 7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignerReclaim {
    pub name: SignerName,
    pub key: String,
}

/// A human turns the team's signing policy on or off: whether every
/// human act must be signed (`loopx.toml`'s `signatures`).
/// Only a signed act may change it (format 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignerRequire {
    pub signatures: crate::model::Signatures,
}

/// A machine (a clone's key) proposes itself under a name (format 5).
/// It admits nothing: a signed `machine.admit` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachinePropose {
    pub machine: crate::model::MachineName,
    pub key: String,
}

/// A human admits a proposed machine, named with its key's fingerprint,
/// for the agents its patterns match; again, to change them (format 5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineAdmit {
    pub machine: crate::model::MachineName,
    pub fingerprint: String,
    pub agents: Vec<String>,
}

/// A human revokes a machine: its later ticks count no more (format 5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineRevoke {
    pub machine: crate::model::MachineName,
}

/// A done, blocked or deferred todo becomes open again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoReopen {
    pub todo: TodoId,
    pub epoch: u64,
}

/// Moves done todos out of the live set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TodoArchive {
    pub todos: Vec<TodoId>,
}

/// The agent stops; its claims are released.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRetire {
    pub agent: AgentId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateOpen {
    pub gate: GateId,
    pub goal: GoalId,
    pub question: String,
    pub options: Vec<String>,
    pub kind: GateKind,
    pub blocks: Blocks,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateAnswer {
    pub gate: GateId,
    pub choice: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateWithdraw {
    pub gate: GateId,
}

/// The `loopx.notify` command ran for the gate and succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateNotified {
    pub gate: GateId,
}

/// The agent records how its turn ended (and what concerned it then).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RefreshState {
    pub goal: GoalId,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<TodoId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// The turn's progress fingerprint, computed by the command
    /// (`op::progress`); format 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// One slot spent for a turn that made a validated writeback.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuotaSpend {
    pub goal: GoalId,
    pub turn: String,
    pub issued: Timestamp,
}

/// A human voids a spend: it stops counting and stays recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuotaVoid {
    pub agent: AgentId,
    pub turn: String,
    pub reason: String,
}

/// One report of a turn's usage (format 3): each figure keeps the
/// maximum over the turn's reports, so a repeated report adds nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub goal: GoalId,
    pub turn: String,
    pub usage: crate::model::usage::Usage,
}

/// An agent parks itself until a time (its runtime's usage limit
/// resets then): `should-run` waits without spending. Format 3.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuotaPark {
    pub agent: AgentId,
    pub goal: GoalId,
    pub until: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A human's go for a parked agent: the park ends now. Format 3.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuotaResume {
    pub agent: AgentId,
}

/// The team's shared settings (format 7): the default lease, the clock-skew
/// margin and prices by model. Only the fields given change; at least one
/// is given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingsSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew: Option<Span>,
    /// How long a holder may go without a tick before its claim shows
    /// stuck; `0s` goes back to half the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after: Option<Span>,
    /// Prices to set, by model id.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prices: std::collections::BTreeMap<String, TeamPrice>,
    /// Model ids whose team price to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unprice: Vec<String>,
    /// The agent-wide slots: turns one agent may spend in its agent-wide
    /// window across every goal; 0 goes back to the largest of its goals'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_slots: Option<u32>,
    /// The agent-wide rolling window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_window: Option<Span>,
}

/// A whole turn's writeback in one tick: the steps apply in order, all
/// or nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    pub turn: String,
    pub steps: Vec<Change>,
}

/// A record of what was tried: a note, an artifact, or a command's run.
/// Its id, time (the op's) and code commit are part of the op, so a
/// replay writes the same record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceAdd {
    pub evidence: EvidenceId,
    pub goal: GoalId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<TodoId>,
    pub kind: EvidenceKind,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<CommandRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
}

impl GoalSet {
    /// A `goal.set` of `goal` that changes nothing yet: name the fields to
    /// change, `GoalSet { status: Some(..), ..GoalSet::new(goal) }`.
    pub fn new(goal: GoalId) -> GoalSet {
        GoalSet {
            goal,
            objective: None,
            status: None,
            scope: None,
            guards: None,
            quota_slots: None,
            quota_window: None,
            budget: None,
            auto_resume: None,
            stall_after: None,
            lease: None,
        }
    }
}

impl TodoAdd {
    /// A `todo.add` with no ordering, capabilities, scope, note or
    /// validation: set those with `TodoAdd { note: Some(..), ..TodoAdd::new(..) }`.
    pub fn new(
        todo: TodoId,
        goal: GoalId,
        title: impl Into<String>,
        priority: Priority,
    ) -> TodoAdd {
        TodoAdd {
            todo,
            goal,
            title: title.into(),
            priority,
            after: Vec::new(),
            capabilities: Vec::new(),
            scope: Vec::new(),
            note: None,
            validate: None,
        }
    }
}

impl TodoEdit {
    /// A `todo.edit` of `todo` at `epoch` that changes nothing yet.
    pub fn new(todo: TodoId, epoch: u64) -> TodoEdit {
        TodoEdit {
            todo,
            epoch,
            title: None,
            priority: None,
            after: None,
            note: None,
            validate: None,
        }
    }
}

impl RefreshState {
    /// A `turn.refresh` of `goal` with only its outcome.
    pub fn new(goal: GoalId, outcome: Outcome) -> RefreshState {
        RefreshState {
            goal,
            outcome,
            turn: None,
            todo: None,
            next_action: None,
            progress: None,
        }
    }
}

impl EvidenceAdd {
    /// An `evidence.add` of a plain record: no todo, code, run or artifact.
    pub fn new(
        evidence: EvidenceId,
        goal: GoalId,
        kind: EvidenceKind,
        summary: impl Into<String>,
    ) -> EvidenceAdd {
        EvidenceAdd {
            evidence,
            goal,
            todo: None,
            kind,
            summary: summary.into(),
            code: None,
            run: None,
            artifact: None,
        }
    }
}

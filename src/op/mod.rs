//! Operations: every change to the state, as a plain value, and the one pure
//! function that applies it.
//!
//! An [`Op`] carries its stable id, its time, its actor and a [`Change`].
//! [`apply`] checks the change's preconditions against a [`State`] and
//! mutates it, or refuses with a [`Refusal`] and leaves it as it was. The
//! live command and sync's replay call the same function, so a rule holds
//! the same way on every machine. Nothing here knows about git.

pub mod agent;
pub mod board;
pub mod brief;
mod effect;
mod evidence;
mod gate;
mod goal;
mod kind;
pub mod limits;
pub mod machine;
pub mod message;
pub mod park;
pub mod progress;
pub mod rules;
pub mod secrets;
pub mod signer;
mod split;
pub mod todo;
pub mod turn;
pub mod usage;

pub use effect::{Effect, Happened};

use serde::{Deserialize, Serialize};

use crate::error::Refusal;
use crate::model::{
    Actor, AgentId, Blocks, EvidenceId, EvidenceKind, GateId, GateKind, GoalId, GoalStatus, OpId,
    Outcome, Priority, Runtime, SignerName, State, TodoId, TodoStatus, Validation,
    evidence::{Artifact, Code},
    run::CommandRun,
};
use crate::time::{Span, Timestamp};

/// One change to the state, as recorded in a tick's commit message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    pub at: Timestamp,
    pub actor: Actor,
    /// An SSH signature (namespace `loopx`) over the op and the revision of
    /// what it changes: base64 of the SSHSIG blob (`trust`). Format 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    pub change: Change,
}

/// What an operation changes. The `op` tag is the `Loopx-Op` trailer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op")]
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
    /// Format 6: the migration to a ref per goal (`op::split`): on the
    /// shared ref without a goal, on a goal's new ref with it.
    #[serde(rename = "goal.split")]
    GoalSplit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal: Option<GoalId>,
    },
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
        /// A budget of the goal or of one agent on it (format 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<usage::BudgetSet>,
        /// Format 3: whether parked agents resume by themselves.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto_resume: Option<bool>,
        /// Format 3.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stall_after: Option<u32>,
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validate: Option<Validation>,
    },
    /// Claim, renew (the owner claims again) or steal an expired lease.
    #[serde(rename = "todo.claim")]
    TodoClaim {
        todo: TodoId,
        /// The epoch the claimer read.
        epoch: u64,
        lease: Span,
    },
    /// The owner extends its lease; the epoch stays.
    #[serde(rename = "todo.renew")]
    TodoRenew {
        todo: TodoId,
        epoch: u64,
        lease: Span,
    },
    /// The owner (or a human) gives the claim to another agent.
    #[serde(rename = "todo.handoff")]
    TodoHandoff {
        todo: TodoId,
        epoch: u64,
        to: AgentId,
        lease: Span,
        note: String,
    },
    /// The owner gives the claim up; a human may `force` it off any owner.
    #[serde(rename = "todo.release")]
    TodoRelease {
        todo: TodoId,
        epoch: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
    },
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
        /// The todo's validation, run once before the tick.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validation: Option<CommandRun>,
    },
    #[serde(rename = "todo.edit")]
    TodoEdit {
        todo: TodoId,
        epoch: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
        /// Replaces the `after` list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<Vec<TodoId>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// Replaces the validation (format 2); voids earlier trust in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validate: Option<Validation>,
    },
    /// A human vouches for a todo's validation as it is now (format 2):
    /// `digest` names the argv and timeout trusted, so any later change
    /// voids it.
    #[serde(rename = "todo.trust")]
    TodoTrust { todo: TodoId, digest: String },
    /// A human announces a signer's public key in the state (format 2).
    #[serde(rename = "signer.announce")]
    SignerAnnounce { name: SignerName, key: String },
    /// A human turns the team's signing policy on or off: whether every
    /// human act must be signed (`loopx.toml`'s `signatures`).
    /// Only a signed act may change it (format 4).
    #[serde(rename = "signer.require")]
    SignerRequire {
        signatures: crate::model::Signatures,
    },
    /// A machine (a clone's key) proposes itself under a name (format 5).
    /// It admits nothing: a signed `machine.admit` does.
    #[serde(rename = "machine.propose")]
    MachinePropose {
        machine: crate::model::MachineName,
        key: String,
    },
    /// A human admits a proposed machine, named with its key's fingerprint,
    /// for the agents its patterns match; again, to change them (format 5).
    #[serde(rename = "machine.admit")]
    MachineAdmit {
        machine: crate::model::MachineName,
        fingerprint: String,
        agents: Vec<String>,
    },
    /// A human revokes a machine: its later ticks count no more (format 5).
    #[serde(rename = "machine.revoke")]
    MachineRevoke { machine: crate::model::MachineName },
    /// A done, blocked or deferred todo becomes open again.
    #[serde(rename = "todo.reopen")]
    TodoReopen { todo: TodoId, epoch: u64 },
    /// Moves done todos out of the live set.
    #[serde(rename = "todo.archive")]
    TodoArchive { todos: Vec<TodoId> },
    /// The agent stops; its claims are released.
    #[serde(rename = "agent.retire")]
    AgentRetire { agent: AgentId },
    #[serde(rename = "gate.open")]
    GateOpen {
        gate: GateId,
        goal: GoalId,
        question: String,
        options: Vec<String>,
        kind: GateKind,
        blocks: Blocks,
    },
    #[serde(rename = "gate.answer")]
    GateAnswer {
        gate: GateId,
        choice: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    #[serde(rename = "gate.withdraw")]
    GateWithdraw { gate: GateId },
    /// The `loopx.notify` command ran for the gate and succeeded.
    #[serde(rename = "gate.notified")]
    GateNotified { gate: GateId },
    /// The agent records how its turn ended (and what concerned it then).
    #[serde(rename = "turn.refresh")]
    RefreshState {
        goal: GoalId,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        todo: Option<TodoId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_action: Option<String>,
        /// The turn's progress fingerprint, computed by the command
        /// (`op::progress`); format 3.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<String>,
    },
    /// One slot spent for a turn that made a validated writeback.
    #[serde(rename = "quota.spend")]
    QuotaSpend {
        goal: GoalId,
        turn: String,
        issued: Timestamp,
    },
    /// A human voids a spend: it stops counting and stays recorded.
    #[serde(rename = "quota.void")]
    QuotaVoid {
        agent: AgentId,
        turn: String,
        reason: String,
    },
    /// One report of a turn's usage (format 3): each figure keeps the
    /// maximum over the turn's reports, so a repeated report adds nothing.
    #[serde(rename = "usage.record")]
    UsageRecord {
        goal: GoalId,
        turn: String,
        usage: crate::model::usage::Usage,
    },
    /// An agent parks itself until a time (its runtime's usage limit
    /// resets then): `should-run` waits without spending. Format 3.
    #[serde(rename = "quota.park")]
    QuotaPark {
        agent: AgentId,
        goal: GoalId,
        until: Timestamp,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A human's go for a parked agent: the park ends now. Format 3.
    #[serde(rename = "quota.resume")]
    QuotaResume { agent: AgentId },
    /// A whole turn's writeback in one tick: the steps apply in order, all
    /// or nothing.
    #[serde(rename = "turn.settle")]
    Settle { turn: String, steps: Vec<Change> },
    /// A record of what was tried: a note, an artifact, or a command's run.
    /// Its id, time (the op's) and code commit are part of the op, so a
    /// replay writes the same record.
    #[serde(rename = "evidence.add")]
    EvidenceAdd {
        evidence: EvidenceId,
        goal: GoalId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        todo: Option<TodoId>,
        kind: EvidenceKind,
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<Code>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run: Option<CommandRun>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact: Option<Artifact>,
    },
}

/// Applies `op` to `state`, or refuses and leaves `state` unchanged.
pub fn apply(state: &mut State, op: &Op) -> Result<Effect, Refusal> {
    apply_as(state, op, crate::model::FORMAT)
}

/// Applies `op` under the rules of `format`, the `Loopx-Format` of the tick
/// that recorded it. The input limits ([`limits`]) hold whatever format a
/// tick claims (format 4 on: an old format number is no way round them), and
/// an op holding a kind, field or value newer than `format` is refused.
pub fn apply_as(state: &mut State, op: &Op, format: u32) -> Result<Effect, Refusal> {
    let since = op.since();
    if since > format {
        return Err(Refusal::rule(
            crate::error::Code::InvalidTick,
            format!(
                "its op {} holds what first exists in format {since}, but it is recorded in format {format}",
                op.change.kind()
            ),
        ));
    }
    limits::check(&op.change)?;
    if let Some(sig) = &op.signature {
        limits::signature(sig)?;
    }
    dispatch(state, op)
}

impl Op {
    /// The first format that can hold this op: its change's
    /// ([`Change::since`]), 2 for a human's signature and 5 for an agent's
    /// (its machine's).
    pub fn since(&self) -> u32 {
        let signed = match (&self.signature, self.actor.is_human()) {
            (None, _) => 1,
            (Some(_), true) => 2,
            (Some(_), false) => 5,
        };
        self.change.since().max(signed)
    }
}

/// The rules of each kind of change, without the input limits.
fn dispatch(state: &mut State, op: &Op) -> Result<Effect, Refusal> {
    // Every function below checks all its preconditions before it mutates.
    match &op.change {
        Change::Init { goal, objective } => {
            goal::init(state, op, goal.as_ref(), objective.as_deref())
        }
        Change::GoalAdd { goal, objective } => goal::add(state, op, goal, objective),
        Change::GoalSplit { goal } => split::split(state, op, goal.as_ref()),
        Change::GoalSet { .. } => goal::set(state, op),
        Change::AgentRegister {
            agent,
            runtime,
            capabilities,
        } => agent::register(state, op, agent, *runtime, capabilities),
        Change::TodoAdd { .. } => todo::add(state, op),
        Change::TodoClaim { todo, epoch, lease } => todo::claim(state, op, todo, *epoch, *lease),
        Change::TodoRenew { todo, epoch, lease } => todo::renew(state, op, todo, *epoch, *lease),
        Change::TodoHandoff {
            todo,
            epoch,
            to,
            lease,
            note,
        } => todo::handoff(state, op, todo, *epoch, to, *lease, note),
        Change::TodoRelease { todo, epoch, force } => {
            todo::release(state, op, todo, *epoch, *force)
        }
        Change::TodoUpdate {
            todo,
            epoch,
            status,
            note,
        } => todo::update(state, op, todo, *epoch, *status, note.as_deref()),
        Change::TodoDone {
            todo,
            epoch,
            note,
            validation,
        } => todo::done(
            state,
            op,
            todo,
            *epoch,
            note.as_deref(),
            validation.as_ref(),
        ),
        Change::TodoEdit { .. } => todo::edit(state, op),
        Change::TodoReopen { todo, epoch } => todo::reopen(state, op, todo, *epoch),
        Change::TodoTrust { todo, digest } => signer::trust_todo(state, op, todo, digest),
        Change::SignerAnnounce { name, key } => signer::announce(state, op, name, key),
        Change::SignerRequire { signatures } => signer::require(state, op, *signatures),
        Change::MachinePropose { machine: m, key } => machine::propose(state, op, m, key),
        Change::MachineAdmit {
            machine: m,
            fingerprint,
            agents,
        } => machine::admit(state, op, m, fingerprint, agents),
        Change::MachineRevoke { machine: m } => machine::revoke(state, op, m),
        Change::TodoArchive { todos } => todo::archive(state, op, todos),
        Change::AgentRetire { agent } => agent::retire(state, op, agent),
        Change::GateOpen { .. } => gate::open(state, op),
        Change::GateAnswer { gate, choice, note } => {
            gate::answer(state, op, gate, choice, note.as_deref())
        }
        Change::GateWithdraw { gate } => gate::withdraw(state, op, gate),
        Change::GateNotified { gate } => gate::notified(state, op, gate),
        Change::EvidenceAdd { .. } => evidence::add(state, op),
        Change::RefreshState { .. } => turn::refresh(state, op),
        Change::QuotaSpend { goal, turn, issued } => turn::spend(state, op, goal, turn, *issued),
        Change::QuotaVoid {
            agent,
            turn,
            reason,
        } => turn::void(state, op, agent, turn, reason),
        Change::UsageRecord { .. } => usage::record(state, op),
        Change::QuotaPark { .. } => park::park(state, op),
        Change::QuotaResume { agent } => park::resume(state, op, agent),
        Change::Settle { steps, .. } => turn::settle(state, op, steps),
    }
}

/// Records that the acting agent made a validated writeback now, for
/// `spend-slot` (DESIGN §4). Humans and unknown agents leave no mark.
fn wrote_back(state: &mut State, op: &Op) {
    if let Some(a) = op.actor.agent().and_then(|id| state.agents.get_mut(id)) {
        // Ops can land out of time order (a long check, a sync replay):
        // keep the latest.
        a.last_writeback = a.last_writeback.max(Some(op.at));
    }
}

/// A title shortened for a one-line subject.
pub fn short(title: &str) -> String {
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
mod test_support;

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
mod change;
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
pub mod todo;
pub mod turn;
pub mod usage;

pub use change::*;
pub use effect::{Effect, Happened};

use serde::{Deserialize, Serialize};

use crate::error::Refusal;
use crate::model::{Actor, Blocks, GoalId, OpId, State, TodoId};
use crate::time::Timestamp;

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
        Change::Init(Init { goal, objective }) => {
            goal::init(state, op, goal.as_ref(), objective.as_deref())
        }
        Change::GoalAdd(GoalAdd { goal, objective }) => goal::add(state, op, goal, objective),
        Change::GoalSet(_) => goal::set(state, op),
        Change::AgentRegister(AgentRegister {
            agent,
            runtime,
            capabilities,
        }) => agent::register(state, op, agent, *runtime, capabilities),
        Change::TodoAdd(_) => todo::add(state, op),
        Change::TodoClaim(TodoClaim { todo, epoch, lease }) => {
            todo::claim(state, op, todo, *epoch, *lease)
        }
        Change::TodoRenew(TodoRenew { todo, epoch, lease }) => {
            todo::renew(state, op, todo, *epoch, *lease)
        }
        Change::TodoHandoff(TodoHandoff {
            todo,
            epoch,
            to,
            lease,
            note,
        }) => todo::handoff(state, op, todo, *epoch, to, *lease, note),
        Change::TodoRelease(TodoRelease { todo, epoch, force }) => {
            todo::release(state, op, todo, *epoch, *force)
        }
        Change::TodoUpdate(TodoUpdate {
            todo,
            epoch,
            status,
            note,
        }) => todo::update(state, op, todo, *epoch, *status, note.as_deref()),
        Change::TodoDone(TodoDone {
            todo,
            epoch,
            note,
            validation,
        }) => todo::done(
            state,
            op,
            todo,
            *epoch,
            note.as_deref(),
            validation.as_ref(),
        ),
        Change::TodoEdit(_) => todo::edit(state, op),
        Change::TodoReopen(TodoReopen { todo, epoch }) => todo::reopen(state, op, todo, *epoch),
        Change::TodoTrust(TodoTrust { todo, digest }) => {
            signer::trust_todo(state, op, todo, digest)
        }
        Change::SignerAnnounce(SignerAnnounce { name, key }) => {
            signer::announce(state, op, name, key)
        }
        Change::SignerRequire(SignerRequire { signatures }) => {
            signer::require(state, op, *signatures)
        }
        Change::MachinePropose(MachinePropose { machine: m, key }) => {
            machine::propose(state, op, m, key)
        }
        Change::MachineAdmit(MachineAdmit {
            machine: m,
            fingerprint,
            agents,
        }) => machine::admit(state, op, m, fingerprint, agents),
        Change::MachineRevoke(MachineRevoke { machine: m }) => machine::revoke(state, op, m),
        Change::TodoArchive(TodoArchive { todos }) => todo::archive(state, op, todos),
        Change::AgentRetire(AgentRetire { agent }) => agent::retire(state, op, agent),
        Change::GateOpen(_) => gate::open(state, op),
        Change::GateAnswer(GateAnswer { gate, choice, note }) => {
            gate::answer(state, op, gate, choice, note.as_deref())
        }
        Change::GateWithdraw(GateWithdraw { gate }) => gate::withdraw(state, op, gate),
        Change::GateNotified(GateNotified { gate }) => gate::notified(state, op, gate),
        Change::EvidenceAdd(_) => evidence::add(state, op),
        Change::RefreshState(_) => turn::refresh(state, op),
        Change::QuotaSpend(QuotaSpend { goal, turn, issued }) => {
            turn::spend(state, op, goal, turn, *issued)
        }
        Change::QuotaVoid(QuotaVoid {
            agent,
            turn,
            reason,
        }) => turn::void(state, op, agent, turn, reason),
        Change::UsageRecord(_) => usage::record(state, op),
        Change::QuotaPark(_) => park::park(state, op),
        Change::QuotaResume(QuotaResume { agent }) => park::resume(state, op, agent),
        Change::Settle(Settle { steps, .. }) => turn::settle(state, op, steps),
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

//! Operations: every change to the state, as a plain value, and the one pure
//! function that applies it.
//!
//! An [`Op`] carries its stable id, its time, its actor and a [`Change`].
//! [`apply`] checks the change's preconditions against a [`State`] and
//! mutates it, or refuses with a [`Refusal`] and leaves it as it was. The
//! live command and sync's replay call the same function, so a rule holds
//! the same way on every machine. Nothing here knows about git.

pub mod agent;
pub mod authority;
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
mod settings;
pub mod signer;
mod split;
pub mod stuck;
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
    dispatch(state, op, format)
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

/// The rules of each kind of change, without the input limits, under the
/// rules of `format` (the tick's).
fn dispatch(state: &mut State, op: &Op, format: u32) -> Result<Effect, Refusal> {
    // Who may write it, as the op table declares; then every function
    // below takes its own kind's struct and checks all its preconditions
    // before it mutates.
    authority::check(state, op)?;
    match &op.change {
        Change::Init(c) => goal::init(state, op, c),
        Change::GoalAdd(c) => goal::add(state, op, c),
        Change::GoalSet(c) => goal::set(state, op, c),
        Change::GoalSplit(c) => split::split(state, op, c.goal.as_ref(), c.moved.as_ref()),
        Change::AgentRegister(c) => agent::register(state, op, c),
        Change::AgentRetire(c) => agent::retire(state, op, c),
        Change::TodoAdd(c) => todo::add(state, op, c),
        Change::TodoClaim(c) => todo::claim(state, op, c),
        Change::TodoRenew(c) => todo::renew(state, op, c),
        Change::TodoHandoff(c) => todo::handoff(state, op, c),
        Change::TodoRelease(c) => todo::release(state, op, c),
        Change::TodoUpdate(c) => todo::update(state, op, c),
        Change::TodoDone(c) => todo::done(state, op, c),
        Change::TodoEdit(c) => todo::edit(state, op, c),
        Change::TodoReopen(c) => todo::reopen(state, op, c),
        Change::TodoArchive(c) => todo::archive(state, op, c),
        Change::TodoTrust(c) => signer::trust_todo(state, op, c),
        Change::SignerAnnounce(c) => signer::announce(state, op, c, format),
        Change::SignerApprove(c) => signer::approve(state, op, c),
        Change::SignerReclaim(c) => signer::reclaim(state, op, c),
        Change::SignerRequire(c) => signer::require(state, op, c),
        Change::MachinePropose(c) => machine::propose(state, op, c),
        Change::MachineAdmit(c) => machine::admit(state, op, c),
        Change::MachineRevoke(c) => machine::revoke(state, op, c),
        Change::GateOpen(c) => gate::open(state, op, c),
        Change::GateAnswer(c) => gate::answer(state, op, c),
        Change::GateWithdraw(c) => gate::withdraw(state, op, c),
        Change::GateNotified(c) => gate::notified(state, op, c),
        Change::EvidenceAdd(c) => evidence::add(state, op, c),
        Change::RefreshState(c) => turn::refresh(state, op, c),
        Change::QuotaSpend(c) => turn::spend(state, op, c),
        Change::QuotaVoid(c) => turn::void(state, op, c),
        Change::UsageRecord(c) => usage::record(state, op, c),
        Change::QuotaPark(c) => park::park(state, op, c),
        Change::QuotaResume(c) => park::resume(state, op, c),
        Change::Settle(c) => turn::settle(state, op, c, format),
        Change::SettingsSet(c) => settings::set(state, op, c),
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
pub(crate) mod test_support;

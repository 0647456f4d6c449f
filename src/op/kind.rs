//! What a [`Change`] is called in the `Loopx-Op` trailer, the format that
//! brought it, and the goal or todo it names.

use super::*;

impl Change {
    /// The kind as written in the `Loopx-Op` trailer.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Init { .. } => "init",
            Change::GoalAdd { .. } => "goal.add",
            Change::GoalSplit { .. } => "goal.split",
            Change::GoalSet { .. } => "goal.set",
            Change::AgentRegister { .. } => "agent.register",
            Change::TodoAdd { .. } => "todo.add",
            Change::TodoClaim { .. } => "todo.claim",
            Change::TodoRenew { .. } => "todo.renew",
            Change::TodoHandoff { .. } => "todo.handoff",
            Change::TodoRelease { .. } => "todo.release",
            Change::TodoUpdate { .. } => "todo.update",
            Change::TodoDone { .. } => "todo.done",
            Change::TodoEdit { .. } => "todo.edit",
            Change::TodoReopen { .. } => "todo.reopen",
            Change::TodoTrust { .. } => "todo.trust",
            Change::SignerAnnounce { .. } => "signer.announce",
            Change::SignerRequire { .. } => "signer.require",
            Change::MachinePropose { .. } => "machine.propose",
            Change::MachineAdmit { .. } => "machine.admit",
            Change::MachineRevoke { .. } => "machine.revoke",
            Change::TodoArchive { .. } => "todo.archive",
            Change::AgentRetire { .. } => "agent.retire",
            Change::GateOpen { .. } => "gate.open",
            Change::GateAnswer { .. } => "gate.answer",
            Change::GateWithdraw { .. } => "gate.withdraw",
            Change::GateNotified { .. } => "gate.notified",
            Change::EvidenceAdd { .. } => "evidence.add",
            Change::RefreshState { .. } => "turn.refresh",
            Change::QuotaSpend { .. } => "quota.spend",
            Change::QuotaVoid { .. } => "quota.void",
            Change::UsageRecord { .. } => "usage.record",
            Change::QuotaPark { .. } => "quota.park",
            Change::QuotaResume { .. } => "quota.resume",
            Change::Settle { .. } => "turn.settle",
        }
    }

    /// The format that introduced this kind of op and every field and
    /// value it holds (`model::FORMAT`'s list): a tick recorded in an older
    /// format cannot hold it.
    pub fn since(&self) -> u32 {
        let kind = match self {
            Change::SignerAnnounce { .. }
            | Change::TodoTrust { .. }
            | Change::GateNotified { .. } => 2,
            Change::QuotaPark { .. } | Change::QuotaResume { .. } | Change::UsageRecord { .. } => 3,
            Change::SignerRequire {
                signatures: crate::model::Signatures::All,
            }
            | Change::MachinePropose { .. }
            | Change::MachineAdmit { .. }
            | Change::MachineRevoke { .. } => 5,
            Change::SignerRequire { .. } => 4,
            Change::Settle { steps, .. } => steps.iter().map(Change::since).max().unwrap_or(1),
            _ => 1,
        };
        let field = match self {
            Change::TodoEdit {
                validate: Some(_), ..
            } => 2,
            Change::GoalSet {
                budget,
                auto_resume,
                stall_after,
                ..
            } if budget.is_some() || auto_resume.is_some() || stall_after.is_some() => 3,
            Change::RefreshState {
                progress: Some(_), ..
            } => 3,
            Change::AgentRegister { runtime, .. } => runtime.since(),
            Change::EvidenceAdd { run: Some(r), .. }
            | Change::TodoDone {
                validation: Some(r),
                ..
            } if r.argv_sha256.is_some() || r.output_redacted => 2,
            _ => 1,
        };
        kind.max(field)
    }

    /// Every kind this binary knows, for `log --op` and sync's "upgrade
    /// loopx" check.
    pub const KINDS: &'static [&'static str] = &[
        "init",
        "goal.add",
        "goal.set",
        "goal.split",
        "agent.register",
        "todo.add",
        "todo.claim",
        "todo.renew",
        "todo.handoff",
        "todo.release",
        "todo.update",
        "todo.done",
        "todo.edit",
        "todo.reopen",
        "todo.trust",
        "signer.announce",
        "signer.require",
        "machine.propose",
        "machine.admit",
        "machine.revoke",
        "todo.archive",
        "agent.retire",
        "gate.open",
        "gate.answer",
        "gate.withdraw",
        "gate.notified",
        "evidence.add",
        "turn.refresh",
        "turn.settle",
        "quota.spend",
        "quota.void",
        "usage.record",
        "quota.park",
        "quota.resume",
    ];

    /// The goal this change concerns, when it or the state says (`find`
    /// looks a todo up, archived ones too where the caller has them).
    pub fn goal_in<'s>(
        &self,
        state: &State,
        find: &impl Fn(&TodoId) -> Option<&'s crate::model::Todo>,
    ) -> Option<GoalId> {
        match self {
            Change::TodoAdd { goal, .. }
            | Change::GateOpen { goal, .. }
            | Change::EvidenceAdd { goal, .. }
            | Change::QuotaSpend { goal, .. }
            | Change::RefreshState { goal, .. } => Some(goal.clone()),
            Change::GateAnswer { gate, .. } | Change::GateWithdraw { gate } => {
                state.gates.get(gate).map(|g| g.goal.clone())
            }
            c => c.todo().and_then(find).map(|t| t.goal.clone()),
        }
    }

    /// The todo this change is about, if any.
    pub fn todo(&self) -> Option<&TodoId> {
        match self {
            Change::TodoAdd { todo, .. }
            | Change::TodoClaim { todo, .. }
            | Change::TodoRenew { todo, .. }
            | Change::TodoHandoff { todo, .. }
            | Change::TodoRelease { todo, .. }
            | Change::TodoUpdate { todo, .. }
            | Change::TodoDone { todo, .. }
            | Change::TodoEdit { todo, .. }
            | Change::TodoTrust { todo, .. }
            | Change::TodoReopen { todo, .. } => Some(todo),
            Change::EvidenceAdd { todo, .. } | Change::RefreshState { todo, .. } => todo.as_ref(),
            Change::Settle { steps, .. } => steps.iter().find_map(Change::todo),
            Change::GateOpen {
                blocks: Blocks::Todo(todo),
                ..
            } => Some(todo),
            _ => None,
        }
    }
}

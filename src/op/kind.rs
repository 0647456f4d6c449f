//! The first format a [`Change`] needs (its kind's, from the table in
//! `change.rs`, raised by newer fields), and the goal or todo it names.

use super::*;
use crate::op::{
    AgentRegister, EvidenceAdd, GateAnswer, GateOpen, GateWithdraw, GoalSet, QuotaSpend,
    RefreshState, Settle, SignerRequire, TodoAdd, TodoClaim, TodoDone, TodoEdit, TodoHandoff,
    TodoRelease, TodoRenew, TodoReopen, TodoTrust, TodoUpdate,
};

impl Change {
    /// The first format that can hold this change: its kind's (the table
    /// in `op/change.rs`), raised by a field or value that came later (`model::FORMAT`'s list). A tick recorded in an older
    /// format cannot hold it.
    pub fn since(&self) -> u32 {
        let held = match self {
            Change::SignerRequire(SignerRequire {
                signatures: crate::model::Signatures::All,
            }) => 5,
            Change::Settle(Settle { steps, .. }) => {
                steps.iter().map(Change::since).max().unwrap_or(1)
            }
            Change::TodoEdit(TodoEdit {
                validate: Some(_), ..
            }) => 2,
            Change::GoalSet(GoalSet { lease: Some(_), .. }) => 7,
            Change::GoalSet(GoalSet {
                budget,
                auto_resume,
                stall_after,
                ..
            }) if budget.is_some() || auto_resume.is_some() || stall_after.is_some() => 3,
            Change::RefreshState(RefreshState {
                progress: Some(_), ..
            }) => 3,
            Change::AgentRegister(AgentRegister { goals: Some(_), .. }) => 7,
            Change::AgentRegister(AgentRegister { runtime, .. }) => runtime.since(),
            Change::EvidenceAdd(EvidenceAdd { run: Some(r), .. })
            | Change::TodoDone(TodoDone {
                validation: Some(r),
                ..
            }) if r.argv_sha256.is_some() || r.output_redacted => 2,
            _ => 1,
        };
        self.kind_since().max(held)
    }

    /// The goal this change concerns, when it or the state says (`find`
    /// looks a todo up, archived ones too where the caller has them).
    pub fn goal_in<'s>(
        &self,
        state: &State,
        find: &impl Fn(&TodoId) -> Option<&'s crate::model::Todo>,
    ) -> Option<GoalId> {
        match self {
            Change::TodoAdd(TodoAdd { goal, .. })
            | Change::GateOpen(GateOpen { goal, .. })
            | Change::EvidenceAdd(EvidenceAdd { goal, .. })
            | Change::QuotaSpend(QuotaSpend { goal, .. })
            | Change::RefreshState(RefreshState { goal, .. }) => Some(goal.clone()),
            Change::GateAnswer(GateAnswer { gate, .. })
            | Change::GateWithdraw(GateWithdraw { gate }) => {
                state.gates.get(gate).map(|g| g.goal.clone())
            }
            c => c.todo().and_then(find).map(|t| t.goal.clone()),
        }
    }

    /// The todo this change is about, if any.
    pub fn todo(&self) -> Option<&TodoId> {
        match self {
            Change::TodoAdd(TodoAdd { todo, .. })
            | Change::TodoClaim(TodoClaim { todo, .. })
            | Change::TodoRenew(TodoRenew { todo, .. })
            | Change::TodoHandoff(TodoHandoff { todo, .. })
            | Change::TodoRelease(TodoRelease { todo, .. })
            | Change::TodoUpdate(TodoUpdate { todo, .. })
            | Change::TodoDone(TodoDone { todo, .. })
            | Change::TodoEdit(TodoEdit { todo, .. })
            | Change::TodoTrust(TodoTrust { todo, .. })
            | Change::TodoReopen(TodoReopen { todo, .. }) => Some(todo),
            Change::EvidenceAdd(EvidenceAdd { todo, .. })
            | Change::RefreshState(RefreshState { todo, .. }) => todo.as_ref(),
            Change::Settle(Settle { steps, .. }) => steps.iter().find_map(Change::todo),
            Change::GateOpen(GateOpen {
                blocks: Blocks::Todo(todo),
                ..
            }) => Some(todo),
            _ => None,
        }
    }
}

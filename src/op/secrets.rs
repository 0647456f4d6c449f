//! Every free text an op carries into the state (titles, notes, questions,
//! objectives, guards, reasons, next actions, answers' notes, evidence
//! summaries) goes through the one redactor, [`crate::redact`], before the
//! op is signed and written: the state is replicated to every clone and the
//! hub, so a secret there is everywhere, forever. A gate's options are
//! refused instead, because an answer names its choice by its text and a
//! redacted option would no longer say what it means; so is a validation
//! ([`super::limits`]), which must run as written.

use std::borrow::Cow;

use super::Change;
use crate::error::{Code, Refusal};
use crate::op::{
    EvidenceAdd, GateAnswer, GateOpen, GoalAdd, GoalSet, Init, QuotaPark, QuotaVoid, RefreshState,
    Settle, TodoAdd, TodoDone, TodoEdit, TodoHandoff, TodoUpdate,
};

/// Redacts the free text of `change` in place; returns the names of the
/// fields that changed (empty: nothing looked secret), or refuses an option
/// that looks like a secret.
pub fn redact(change: &mut Change) -> Result<Vec<&'static str>, Refusal> {
    let mut hit = Vec::new();
    walk(change, &mut hit)?;
    hit.dedup();
    Ok(hit)
}

fn one(text: &mut String, what: &'static str, hit: &mut Vec<&'static str>) {
    if let Cow::Owned(r) = crate::redact::text(text) {
        *text = r;
        hit.push(what);
    }
}

fn opt(text: &mut Option<String>, what: &'static str, hit: &mut Vec<&'static str>) {
    if let Some(t) = text {
        one(t, what, hit);
    }
}

fn walk(change: &mut Change, hit: &mut Vec<&'static str>) -> Result<(), Refusal> {
    match change {
        Change::Init(Init { objective, .. }) => opt(objective, "objective", hit),
        Change::GoalAdd(GoalAdd { objective, .. }) => one(objective, "objective", hit),
        Change::GoalSet(GoalSet {
            objective, guards, ..
        }) => {
            opt(objective, "objective", hit);
            for g in guards.iter_mut().flatten() {
                one(g, "guard", hit);
            }
        }
        Change::TodoAdd(TodoAdd { title, note, .. }) => {
            one(title, "title", hit);
            opt(note, "note", hit);
        }
        Change::TodoEdit(TodoEdit { title, note, .. }) => {
            opt(title, "title", hit);
            opt(note, "note", hit);
        }
        Change::TodoHandoff(TodoHandoff { note, .. }) => one(note, "note", hit),
        Change::TodoUpdate(TodoUpdate { note, .. })
        | Change::TodoDone(TodoDone { note, .. })
        | Change::GateAnswer(GateAnswer { note, .. }) => opt(note, "note", hit),
        Change::GateOpen(GateOpen {
            question, options, ..
        }) => {
            one(question, "question", hit);
            if let Some(o) = options.iter().find(|o| crate::redact::looks_secret(o)) {
                return Err(Refusal::usage(
                    Code::SecretInOption,
                    format!(
                        "the option {} looks like it holds a secret",
                        crate::redact::text(o)
                    ),
                )
                .with_hint("an answer names its option by its text, so options are stored as written: name the option without the secret"));
            }
        }
        Change::RefreshState(RefreshState { next_action, .. }) => {
            opt(next_action, "next action", hit)
        }
        Change::QuotaVoid(QuotaVoid { reason, .. }) => one(reason, "reason", hit),
        Change::QuotaPark(QuotaPark { reason, .. }) => opt(reason, "reason", hit),
        Change::EvidenceAdd(EvidenceAdd { summary, .. }) => one(summary, "summary", hit),
        Change::Settle(Settle { steps, .. }) => {
            for s in steps {
                walk(s, hit)?;
            }
        }
        Change::AgentRegister(_)
        | Change::SettingsSet(_)
        | Change::TodoClaim(_)
        | Change::TodoRenew(_)
        | Change::TodoRelease(_)
        | Change::TodoTrust(_)
        | Change::SignerAnnounce(_)
        | Change::SignerApprove(_)
        | Change::SignerReclaim(_)
        | Change::SignerRequire(_)
        | Change::MachineRevoke(_)
        | Change::MachinePropose(_)
        | Change::MachineAdmit(_)
        | Change::TodoReopen(_)
        | Change::TodoArchive(_)
        | Change::AgentRetire(_)
        | Change::GoalSplit(_)
        | Change::GateWithdraw(_)
        | Change::GateNotified(_)
        | Change::QuotaSpend(_)
        | Change::QuotaResume(_)
        | Change::UsageRecord(_) => {}
    }
    Ok(())
}

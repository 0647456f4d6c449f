//! The replay, decided: the local-only ticks' ops, in order, re-applied on
//! top of the remote's state (`execute` writes them with the one tick
//! writer); an op that no longer applies becomes a `sync-rejected` record
//! derived from the op alone.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::error::Refusal;
use crate::model::{EvidenceId, EvidenceKind, GoalId, OpId, State, id::RANDOM_HEX};
use crate::op::{
    Change, EvidenceAdd, GateAnswer, GateOpen, GateWithdraw, GoalAdd, GoalSet, Init, Op, QuotaPark,
    QuotaSpend, RefreshState, TodoAdd, UsageRecord, message,
};
use crate::store::Oid;

use super::Rejected;

/// One tick a replay writes: a local op that still applies, or the record
/// of one that lost.
pub(super) struct Step {
    pub(super) op: Op,
    /// Trailers beyond the ones every tick has.
    pub(super) extra: Vec<(String, String)>,
    /// For a replayed op (not a record): the local commit it came from.
    pub(super) replayed_from: Option<Oid>,
}

/// What a replay will write, decided without touching git.
pub(super) struct ReplayPlan {
    pub(super) steps: Vec<Step>,
    /// Local ops the remote already had (same op id), not applied again.
    pub(super) already: usize,
    pub(super) rejected: Vec<Rejected>,
}

/// The replay as a pure function of the remote's state and the local ops
/// (with the commits that held them), oldest first: which ops apply again,
/// which lost (and the `sync-rejected` record of each), which the remote
/// already has. The same inputs give the same plan on every machine.
///
/// `on_remote` maps the op ids of the remote's ticks since the base to the
/// content hash of each op ([`crate::trust::op_digest`]): a local op is
/// "already there" only when both match. The same id with other content
/// is refused (exit 3, `op-id-reused`), never taken for "already there".
pub(super) fn plan_replay(
    remote: &State,
    ops: &[(Oid, message::Parsed)],
    on_remote: &HashMap<String, String>,
    signers: &crate::trust::AllowedSigners,
    binding: &crate::trust::Binding,
) -> Result<ReplayPlan, Refusal> {
    let mut state = remote.clone();
    let mut plan = ReplayPlan {
        steps: Vec::new(),
        already: 0,
        rejected: Vec::new(),
    };
    for (commit, parsed) in ops {
        let op = &parsed.op;
        // Already on the remote: the op itself, or the record of its
        // rejection (a sync that pushed, then stopped before it moved the
        // local ref).
        if let Some(theirs) = on_remote.get(op.id.as_str()) {
            if *theirs != crate::trust::op_digest(op) {
                return Err(Refusal::rule(
                    crate::error::Code::OpIdReused,
                    format!(
                        "a tick whose op id {} is the id of the local {} by {}, with other content: an op id names one op, so this one is not taken for \"already there\"",
                        op.id,
                        op.change.kind(),
                        op.actor.name()
                    ),
                )
                .with_hint("nothing was changed here and no local tick is lost; the remote's tick reuses an op id (a forgery, or a copied op): ask who pushed it, and put the remote back before it"));
            }
            plan.already += 1;
            continue;
        }
        if on_remote.contains_key(rejection_id(&op.id).as_str()) {
            plan.already += 1;
            continue;
        }
        let mut extra: Vec<(String, String)> = parsed
            .trailers
            .iter()
            .filter(|(k, _)| !message::OWN_TRAILERS.contains(&k.as_str()))
            .cloned()
            .collect();
        if !extra.iter().any(|(k, _)| k == message::REPLAYED_FROM) {
            // The op id: every clone has it, unlike the local commit.
            extra.push((message::REPLAYED_FROM.to_owned(), op.id.to_string()));
        }
        // The same rules a live tick applies, signatures included.
        let mut after = state.clone();
        let applied = crate::trust::check_op(&state, op, signers, binding)
            .and_then(|_| crate::op::apply(&mut after, op));
        match applied {
            Ok(_) => {
                plan.steps.push(Step {
                    op: op.clone(),
                    extra,
                    replayed_from: (!is_sync_record(op)).then_some(*commit),
                });
                state = after;
            }
            Err(refusal) => {
                let mut rejected = Rejected {
                    op: op.id.clone(),
                    kind: op.change.kind(),
                    actor: op.actor.clone(),
                    todo: op.change.todo().cloned(),
                    code: refusal.code,
                    reason: refusal.message.clone(),
                    winner: op
                        .change
                        .todo()
                        .and_then(|t| state.todos.get(t))
                        .and_then(|t| t.owner())
                        .filter(|owner| op.actor.agent() != Some(*owner))
                        .cloned(),
                    evidence: None,
                    commit: commit.to_string(),
                    exit: refusal.exit,
                };
                let record = if is_sync_record(op) {
                    // A record of an earlier rejection that no longer fits
                    // (its todo is gone): keep it, without the todo.
                    without_todo(op)
                } else {
                    rejection(op, &refusal, &state)
                };
                if let Some(record) = record {
                    let mut after = state.clone();
                    if crate::op::apply(&mut after, &record).is_ok() {
                        if let Change::EvidenceAdd(EvidenceAdd { evidence, .. }) = &record.change {
                            rejected.evidence = Some(evidence.clone());
                        }
                        plan.steps.push(Step {
                            op: record,
                            extra: vec![(message::REJECTED_FROM.to_owned(), op.id.to_string())],
                            replayed_from: None,
                        });
                        state = after;
                    }
                }
                if !is_sync_record(op) {
                    plan.rejected.push(rejected);
                }
            }
        }
    }
    Ok(plan)
}

/// Whether an op is a `sync-rejected` record that sync wrote.
fn is_sync_record(op: &Op) -> bool {
    matches!(
        op.change,
        Change::EvidenceAdd(EvidenceAdd {
            kind: EvidenceKind::SyncRejected,
            ..
        })
    )
}

fn without_todo(op: &Op) -> Option<Op> {
    let mut op = op.clone();
    match &mut op.change {
        Change::EvidenceAdd(EvidenceAdd { todo, .. }) if todo.is_some() => *todo = None,
        _ => return None,
    }
    Some(op)
}

/// The `sync-rejected` record of an op that lost: everything in it derives
/// from the op and the state it lost against (id from the op id, the op's
/// time and actor), so every machine doing the same replay writes the same
/// file. None when the state has no goal to file it under.
pub fn rejection(op: &Op, refusal: &Refusal, state: &State) -> Option<Op> {
    let goal = goal_of(op, state)?;
    let todo = op
        .change
        .todo()
        .filter(|t| state.todos.get(*t).is_some_and(|x| x.goal == goal))
        .cloned();
    // One line within the summary limit, whatever the refusal said (a
    // failed validation quotes its output).
    let summary = crate::op::limits::fit(
        &format!(
            "{} lost: {} (op {} by {})",
            op.change.kind(),
            refusal.message,
            op.id,
            op.actor.name()
        ),
        crate::op::limits::QUESTION,
    );
    Some(Op {
        id: rejection_id(&op.id),
        at: op.at,
        actor: op.actor.clone(),
        signature: None,
        change: Change::EvidenceAdd(EvidenceAdd {
            todo,
            ..EvidenceAdd::new(
                EvidenceId::from_hex(&derive("loopx sync-rejected evidence", &op.id, RANDOM_HEX)),
                goal,
                EvidenceKind::SyncRejected,
                summary,
            )
        }),
    })
}

/// The op id of the `sync-rejected` record of op `id`.
pub fn rejection_id(id: &OpId) -> OpId {
    OpId::from_hex(&derive("loopx sync-rejected op", id, 16))
}

/// The goal an op is about, else the state's only active goal, else its
/// first goal.
fn goal_of(op: &Op, state: &State) -> Option<GoalId> {
    let named = match &op.change {
        Change::GoalAdd(GoalAdd { goal, .. })
        | Change::GoalSet(GoalSet { goal, .. })
        | Change::TodoAdd(TodoAdd { goal, .. })
        | Change::GateOpen(GateOpen { goal, .. })
        | Change::EvidenceAdd(EvidenceAdd { goal, .. })
        | Change::RefreshState(RefreshState { goal, .. })
        | Change::QuotaSpend(QuotaSpend { goal, .. })
        | Change::QuotaPark(QuotaPark { goal, .. })
        | Change::UsageRecord(UsageRecord { goal, .. }) => Some(goal.clone()),
        Change::GateAnswer(GateAnswer { gate, .. })
        | Change::GateWithdraw(GateWithdraw { gate }) => {
            state.gates.get(gate).map(|g| g.goal.clone())
        }
        Change::Init(Init { goal, .. }) => goal.clone(),
        _ => None,
    };
    let from_todo = op
        .change
        .todo()
        .and_then(|t| state.todos.get(t))
        .map(|t| t.goal.clone());
    from_todo
        .into_iter()
        .chain(named)
        .find(|g| state.goals.contains_key(g))
        .or_else(|| state.default_goal().ok().map(|g| g.id.clone()))
        .or_else(|| state.goals.keys().next().cloned())
}

/// `n` hex digits of SHA-256 over a purpose and an op id.
fn derive(purpose: &str, id: &OpId, n: usize) -> String {
    let digest = Sha256::new()
        .chain_update(purpose.as_bytes())
        .chain_update([0])
        .chain_update(id.as_str().as_bytes())
        .finalize();
    let hex = crate::model::id::hex(&digest);
    hex[..n].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::model::{Actor, AgentId, TodoId};
    use crate::op;
    use crate::op::{TodoClaim, TodoRelease};
    use crate::time::{Span, Timestamp};

    fn op(actor: &str, change: Change) -> Op {
        Op {
            id: OpId::from_hex("00000000000000aa"),
            at: Timestamp::parse("2026-11-30T09:00:00Z").unwrap(),
            actor: Actor::Agent(AgentId::new(actor).unwrap()),
            signature: None,
            change,
        }
    }

    fn board() -> State {
        let mut state = State::default();
        let human = Actor::Human {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        };
        let at = Timestamp::parse("2026-11-30T08:00:00Z").unwrap();
        let mut apply = |change| {
            op::apply(
                &mut state,
                &Op {
                    id: OpId::from_hex("0000000000000001"),
                    at,
                    actor: human.clone(),
                    signature: None,
                    change,
                },
            )
            .unwrap();
        };
        apply(Change::Init(Init {
            goal: Some(GoalId::new("main").unwrap()),
            objective: Some("Ship".into()),
        }));
        apply(Change::TodoAdd(TodoAdd::new(
            TodoId::from_hex("000000a1"),
            GoalId::new("main").unwrap(),
            "A",
            crate::model::Priority::DEFAULT,
        )));
        state
    }

    #[test]
    fn a_rejection_record_depends_only_on_the_op_and_the_state() {
        let state = board();
        let claim = op(
            "agent-a",
            Change::TodoClaim(TodoClaim {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                lease: Span::minutes(45),
            }),
        );
        let refusal = Refusal::conflict(Code::Claimed, "t-000000a1 is not ready: agent-b holds it");
        let a = rejection(&claim, &refusal, &state).unwrap();
        let b = rejection(&claim, &refusal, &state).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.at, claim.at);
        assert_eq!(a.actor, claim.actor);
        assert_ne!(a.id, claim.id);
        let Change::EvidenceAdd(EvidenceAdd {
            evidence,
            goal,
            todo,
            kind,
            summary,
            ..
        }) = &a.change
        else {
            panic!("an evidence op: {a:?}")
        };
        assert_eq!(evidence.hex().len(), RANDOM_HEX);
        assert_eq!(goal.as_str(), "main");
        assert_eq!(todo.as_ref().map(TodoId::as_str), Some("t-000000a1"));
        assert_eq!(*kind, EvidenceKind::SyncRejected);
        assert_eq!(
            summary,
            "todo.claim lost: t-000000a1 is not ready: agent-b holds it (op o-00000000000000aa by agent-a)"
        );
    }

    #[test]
    fn a_rejection_record_lands_even_for_an_unregistered_agent() {
        let mut state = board();
        let claim = op(
            "agent-gone",
            Change::TodoClaim(TodoClaim {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                lease: Span::minutes(45),
            }),
        );
        let refusal = op::apply(&mut state.clone(), &claim).unwrap_err();
        assert_eq!(refusal.code, Code::NotRegistered);
        let record = rejection(&claim, &refusal, &state).unwrap();
        let effect = op::apply(&mut state, &record).unwrap();
        assert_eq!(effect.evidence.len(), 1);
        assert_eq!(effect.evidence[0].kind, EvidenceKind::SyncRejected);
        assert!(
            !effect.evidence[0].passed(),
            "a lost op is no passing check"
        );
    }

    #[test]
    fn a_state_without_goals_gets_no_record() {
        let claim = op(
            "agent-a",
            Change::TodoRelease(TodoRelease {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                force: false,
            }),
        );
        let refusal = Refusal::rule(Code::Waiting, "y");
        assert!(rejection(&claim, &refusal, &State::default()).is_none());
    }

    fn parsed(op: Op) -> message::Parsed {
        message::Parsed {
            subject: String::new(),
            op,
            tick: 0,
            format: crate::model::FORMAT,
            trailers: Vec::new(),
        }
    }

    #[test]
    fn a_replay_plan_is_decided_without_git() {
        let state = board();
        let commit = |n: u8| crate::store::Oid::from_hex_for_tests(n);
        let lost = op(
            "agent-gone",
            Change::TodoClaim(TodoClaim {
                todo: TodoId::from_hex("000000a1"),
                epoch: 0,
                lease: Span::minutes(45),
            }),
        );
        let mut kept = op(
            "agent-gone",
            Change::GoalSet(GoalSet {
                objective: Some("Ship it".into()),
                ..GoalSet::new(crate::model::GoalId::new("main").unwrap())
            }),
        );
        kept.actor = Actor::Human {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        };
        kept.id = OpId::from_hex("00000000000000bb");
        let mut known = kept.clone();
        known.id = OpId::from_hex("00000000000000cc");
        let on_remote: HashMap<String, String> =
            [(known.id.to_string(), crate::trust::op_digest(&known))].into();
        let ops = [
            (commit(1), parsed(lost.clone())),
            (commit(2), parsed(kept.clone())),
            (commit(3), parsed(known.clone())),
        ];
        let none = crate::trust::AllowedSigners::none();
        let bind = crate::trust::Binding::default();
        let plan = plan_replay(&state, &ops, &on_remote, &none, &bind).unwrap();
        let again = plan_replay(&state, &ops, &on_remote, &none, &bind).unwrap();
        assert_eq!(plan.already, 1);
        assert_eq!(plan.rejected.len(), 1);
        assert_eq!(plan.rejected[0].op, lost.id);
        assert_eq!(plan.rejected[0].code, Code::NotRegistered);
        // The record of the lost claim, then the goal change, replayed.
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(
            plan.steps[0].op,
            rejection(
                &lost,
                &op::apply(&mut state.clone(), &lost).unwrap_err(),
                &state
            )
            .unwrap()
        );
        assert_eq!(plan.steps[0].replayed_from, None);
        assert_eq!(
            plan.steps[0].extra,
            vec![(message::REJECTED_FROM.to_owned(), lost.id.to_string())]
        );
        assert_eq!(plan.steps[1].op, kept);
        assert_eq!(plan.steps[1].replayed_from, Some(commit(2)));
        assert_eq!(
            plan.steps[1].extra,
            vec![(message::REPLAYED_FROM.to_owned(), kept.id.to_string())]
        );
        // The same id with other content on the remote: refused, never
        // taken for already there.
        let mut other = known.clone();
        other.at = crate::time::Timestamp::parse("2026-11-30T10:00:00Z").unwrap();
        let reused: HashMap<String, String> =
            [(known.id.to_string(), crate::trust::op_digest(&other))].into();
        let err = plan_replay(&state, &ops, &reused, &none, &bind)
            .err()
            .unwrap();
        assert_eq!(err.code, crate::error::Code::OpIdReused);
        // Deterministic: the same inputs, the same plan.
        assert_eq!(
            again.steps.iter().map(|s| &s.op).collect::<Vec<_>>(),
            plan.steps.iter().map(|s| &s.op).collect::<Vec<_>>()
        );
    }
}

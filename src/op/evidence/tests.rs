//! Unit tests of `evidence.add`: what a record must name, who may write it,
//! and what it leaves on the todo and the agent.

use crate::model::Evidence;
use crate::model::todo::EvidenceRef;
use crate::op::test_support::*;
use crate::op::{AgentRetire, EvidenceAdd};

const E1: &str = "0000e1e1";

#[test]
fn a_human_records_a_note_on_a_todo() {
    let mut s = board();
    let mut change = evidence(E1, Some(T1), EvidenceKind::Note, None);
    if let Change::EvidenceAdd(EvidenceAdd { summary, code, .. }) = &mut change {
        *summary = "  Looked at the grammar  ".to_owned();
        *code = Some(Code {
            head: Some("abc123".to_owned()),
            dirty: true,
        });
    }
    let written = ok_evidence(&mut s, &op(human(), "2026-01-01T09:05:00Z", change));
    assert_eq!(
        written,
        vec![Evidence {
            id: EvidenceId::from_hex(E1),
            goal: gid("main"),
            todo: Some(tid(T1)),
            kind: EvidenceKind::Note,
            summary: "Looked at the grammar".to_owned(),
            by: human(),
            at: t("2026-01-01T09:05:00Z"),
            code: Some(Code {
                head: Some("abc123".to_owned()),
                dirty: true,
            }),
            run: None,
            artifact: None,
        }]
    );
    assert_eq!(
        todo1(&s).last_evidence,
        Some(EvidenceRef {
            id: EvidenceId::from_hex(E1),
            at: t("2026-01-01T09:05:00Z"),
            by: human(),
            passed: true,
        })
    );
}

#[test]
fn evidence_on_the_goal_alone_touches_no_todo() {
    let mut s = board();
    let before = s.todos.clone();
    let written = ok_evidence(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            evidence(E1, None, EvidenceKind::Review, None),
        ),
    );
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].todo, None);
    assert_eq!(s.todos, before);
}

#[test]
fn a_passing_run_is_a_writeback_and_a_failing_one_is_not() {
    let mut s = claimed_board();
    let passed = ok_evidence(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:11:00Z",
            evidence(
                E1,
                Some(T1),
                EvidenceKind::Test,
                Some(command_run(&["cargo", "test"], Some(0))),
            ),
        ),
    );
    assert!(passed[0].passed());
    assert_eq!(
        s.agents[&aid("agent-a")].last_writeback,
        Some(t("2026-01-01T09:11:00Z"))
    );
    assert!(todo1(&s).last_evidence.as_ref().is_some_and(|e| e.passed));

    // A failing run is recorded (evidence, not a refusal) but is no
    // writeback; the todo's last evidence says it failed.
    let failed = ok_evidence(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            evidence(
                "0000e2e2",
                Some(T1),
                EvidenceKind::Test,
                Some(command_run(&["cargo", "test"], Some(101))),
            ),
        ),
    );
    assert!(!failed[0].passed());
    assert_eq!(
        s.agents[&aid("agent-a")].last_writeback,
        Some(t("2026-01-01T09:11:00Z"))
    );
    let last = todo1(&s).last_evidence.clone().expect("recorded");
    assert_eq!(
        (last.id, last.passed),
        (EvidenceId::from_hex("0000e2e2"), false)
    );
}

#[test]
fn a_human_leaves_no_writeback_mark() {
    let mut s = board();
    let agents = s.agents.clone();
    let _ = ok_evidence(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            evidence(E1, Some(T1), EvidenceKind::Test, None),
        ),
    );
    assert_eq!(s.agents, agents);
}

#[test]
fn a_sync_rejected_record_lands_for_a_retired_agent_and_passes_nothing() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            Change::AgentRetire(AgentRetire {
                agent: aid("agent-a"),
            }),
        ),
    );
    let agents = s.agents.clone();
    let written = ok_evidence(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:13:00Z",
            evidence(E1, Some(T1), EvidenceKind::SyncRejected, None),
        ),
    );
    assert_eq!(written[0].kind, EvidenceKind::SyncRejected);
    assert!(!written[0].passed());
    assert!(todo1(&s).last_evidence.as_ref().is_some_and(|e| !e.passed));
    assert_eq!(s.agents, agents, "no writeback for a lost op");
    // Any other kind from the retired agent is refused.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:14:00Z",
            evidence("0000e2e2", Some(T1), EvidenceKind::Note, None),
        ),
        Exit::Refused,
        "agent-retired",
    );
}

#[test]
fn evidence_needs_a_registered_agent() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:05:00Z",
            evidence(E1, None, EvidenceKind::Note, None),
        ),
        Exit::Refused,
        "not-registered",
    );
}

#[test]
fn evidence_names_a_known_goal_and_a_live_todo_of_it() {
    let mut s = board();
    let at = "2026-01-01T09:05:00Z";
    let mut change = evidence(E1, None, EvidenceKind::Note, None);
    if let Change::EvidenceAdd(EvidenceAdd { goal, .. }) = &mut change {
        *goal = gid("nope");
    }
    refuse(
        &mut s,
        &op(human(), at, change),
        Exit::Error,
        "unknown-goal",
    );
    refuse(
        &mut s,
        &op(
            human(),
            at,
            evidence(E1, Some(T2), EvidenceKind::Note, None),
        ),
        Exit::Error,
        "unknown-todo",
    );
    ok(
        &mut s,
        &op(human(), at, goal_add("docs", "Write the manual")),
    );
    let mut change = evidence(E1, Some(T1), EvidenceKind::Note, None);
    if let Change::EvidenceAdd(EvidenceAdd { goal, .. }) = &mut change {
        *goal = gid("docs");
    }
    let r = refuse(&mut s, &op(human(), at, change), Exit::Usage, "wrong-goal");
    assert_eq!(r.message, "t-000000a1 belongs to goal main, not docs");
}

#[test]
fn evidence_refuses_an_empty_summary() {
    let mut s = board();
    let mut change = evidence(E1, Some(T1), EvidenceKind::Note, None);
    if let Change::EvidenceAdd(EvidenceAdd { summary, .. }) = &mut change {
        *summary = "   ".to_owned();
    }
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", change),
        Exit::Usage,
        "empty-text",
    );
}

//! Unit tests of `gate.open`, `gate.answer` and `gate.withdraw`: who may open
//! and close a gate, what it must name, and that an open gate stops the work
//! it covers until it is closed.

use crate::model::gate::{Answer, Withdrawn};
use crate::model::{Gate, GateId, GateStatus};
use crate::op::test_support::*;
use crate::op::{AgentRetire, GateAnswer, GateOpen, GateWithdraw, TodoAdd};

/// The gate most tests open.
const G1: &str = "0000c0de";

fn gate_id(hex: &str) -> GateId {
    GateId::from_hex(hex)
}

fn open_gate(kind: GateKind, blocks: Blocks, options: &[&str]) -> Change {
    Change::GateOpen(GateOpen {
        gate: gate_id(G1),
        goal: gid("main"),
        question: "  Which parser library? ".to_owned(),
        options: strings(options),
        kind,
        blocks,
    })
}

fn answer(choice: &str, note: Option<&str>) -> Change {
    Change::GateAnswer(GateAnswer {
        gate: gate_id(G1),
        choice: choice.to_owned(),
        note: note.map(str::to_owned),
    })
}

fn withdraw() -> Change {
    Change::GateWithdraw(GateWithdraw { gate: gate_id(G1) })
}

/// The board with a decision gate on goal `main`, opened by the human at
/// 09:05 with options `nom` and `winnow`.
fn gated_board(kind: GateKind) -> State {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            open_gate(kind, Blocks::Goal, &["nom", "winnow"]),
        ),
    );
    s
}

#[test]
fn gate_open_stores_the_gate_with_trimmed_deduplicated_options() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            open_gate(
                GateKind::Permission,
                Blocks::Todo(tid(T1)),
                &[" nom ", "winnow", "nom"],
            ),
        ),
    );
    let g = &s.gates[&gate_id(G1)];
    assert_eq!(
        *g,
        Gate {
            id: gate_id(G1),
            goal: gid("main"),
            question: "Which parser library?".to_owned(),
            options: strings(&["nom", "winnow"]),
            kind: GateKind::Permission,
            blocks: Blocks::Todo(tid(T1)),
            status: GateStatus::Open,
            opened_at: t("2026-01-01T09:05:00Z"),
            opened_by: human(),
            answer: None,
            withdrawn: None,
            notified: None,
            budget: false,
        }
    );
}

#[test]
fn a_registered_agent_opens_a_gate_and_an_unregistered_one_cannot() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:05:00Z",
            open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]),
        ),
    );
    assert_eq!(s.gates[&gate_id(G1)].opened_by, agent("agent-a"));

    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:05:00Z",
            open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]),
        ),
        Exit::Refused,
        "not-registered",
    );
}

#[test]
fn gate_open_refuses_an_unknown_or_done_goal() {
    let mut s = board();
    let mut change = open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]);
    if let Change::GateOpen(GateOpen { goal, .. }) = &mut change {
        *goal = gid("nope");
    }
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", change),
        Exit::Error,
        "unknown-goal",
    );
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:04:00Z",
            set_status(GoalStatus::Done),
        ),
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]),
        ),
        Exit::Refused,
        "goal-done",
    );
}

#[test]
fn gate_open_checks_what_it_blocks() {
    let mut s = board();
    let at = "2026-01-01T09:05:00Z";
    refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(
                GateKind::Decision,
                Blocks::Agent(aid("agent-z")),
                &["a", "b"],
            ),
        ),
        Exit::Refused,
        "not-registered",
    );
    refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(GateKind::Decision, Blocks::Todo(tid(T2)), &["a", "b"]),
        ),
        Exit::Error,
        "unknown-todo",
    );
    // A todo of another goal.
    ok(
        &mut s,
        &op(human(), at, goal_add("docs", "Write the manual")),
    );
    let mut other = add(T2, "Write the manual");
    if let Change::TodoAdd(TodoAdd { goal, .. }) = &mut other {
        *goal = gid("docs");
    }
    ok(&mut s, &op(human(), at, other));
    let r = refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(GateKind::Decision, Blocks::Todo(tid(T2)), &["a", "b"]),
        ),
        Exit::Usage,
        "wrong-goal",
    );
    assert_eq!(r.message, "t-000000b2 belongs to goal docs, not main");
    // A retired agent is still a known one: its gate waits for its return.
    ok(
        &mut s,
        &op(
            human(),
            at,
            Change::AgentRetire(AgentRetire {
                agent: aid("agent-b"),
            }),
        ),
    );
    ok(
        &mut s,
        &op(
            human(),
            at,
            open_gate(
                GateKind::Decision,
                Blocks::Agent(aid("agent-b")),
                &["a", "b"],
            ),
        ),
    );
}

#[test]
fn gate_open_refuses_a_taken_id_an_empty_question_and_bad_options() {
    let mut s = gated_board(GateKind::Decision);
    let at = "2026-01-01T09:06:00Z";
    refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]),
        ),
        Exit::Conflict,
        "id-taken",
    );
    let mut s = board();
    let mut empty = open_gate(GateKind::Decision, Blocks::Goal, &["a", "b"]);
    if let Change::GateOpen(GateOpen { question, .. }) = &mut empty {
        *question = " \n ".to_owned();
    }
    refuse(&mut s, &op(human(), at, empty), Exit::Usage, "empty-text");
    refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(GateKind::Decision, Blocks::Goal, &["a", "  "]),
        ),
        Exit::Usage,
        "empty-option",
    );
    // Two options that are one after trimming are one option.
    refuse(
        &mut s,
        &op(
            human(),
            at,
            open_gate(GateKind::Decision, Blocks::Goal, &["yes", " yes"]),
        ),
        Exit::Usage,
        "too-few-options",
    );
    assert!(s.gates.is_empty());
}

#[test]
fn an_open_gate_stops_claims_until_it_is_answered() {
    let mut s = gated_board(GateKind::Decision);
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:06:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Refused,
        "gate-open",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is not ready: gate g-0000c0de is open: \"Which parser library?\""
    );
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:07:00Z",
            answer(" winnow ", Some("faster")),
        ),
    );
    let g = &s.gates[&gate_id(G1)];
    assert_eq!(g.status, GateStatus::Answered);
    assert_eq!(
        g.answer,
        Some(Answer {
            choice: "winnow".to_owned(),
            by: human(),
            at: t("2026-01-01T09:07:00Z"),
            note: Some("faster".to_owned()),
            signature: None,
        })
    );
    assert_eq!(g.withdrawn, None);
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:08:00Z",
            claim(T1, 0, LEASE),
        ),
    );
    assert_eq!(todo1(&s).owner(), Some(&aid("agent-a")));
}

#[test]
fn a_gate_on_one_agent_stops_only_that_agent() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            open_gate(
                GateKind::Decision,
                Blocks::Agent(aid("agent-a")),
                &["a", "b"],
            ),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:06:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Refused,
        "gate-open",
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:06:00Z",
            claim(T1, 0, LEASE),
        ),
    );
}

#[test]
fn gate_answer_refuses_a_choice_that_is_not_an_option_and_an_empty_note() {
    let mut s = gated_board(GateKind::Decision);
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:07:00Z", answer("pest", None)),
        Exit::Usage,
        "bad-choice",
    );
    assert_eq!(
        r.message,
        "\"pest\" is not an option of g-0000c0de: choose nom or winnow"
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:07:00Z", answer("nom", Some("  "))),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn gate_answer_and_withdraw_refuse_an_unknown_gate() {
    let mut s = board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:07:00Z", answer("nom", None)),
        Exit::Error,
        "unknown-gate",
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:07:00Z", withdraw()),
        Exit::Error,
        "unknown-gate",
    );
}

#[test]
fn only_a_human_closes_a_human_only_gate() {
    for kind in GateKind::ALL.into_iter().filter(|k| k.human_only()) {
        let mut s = gated_board(kind);
        for change in [answer("nom", None), withdraw()] {
            let r = refuse(
                &mut s,
                &op(agent("agent-a"), "2026-01-01T09:07:00Z", change),
                Exit::Refused,
                "humans-only",
            );
            assert!(r.message.contains(kind.as_str()), "{}", r.message);
        }
        ok(
            &mut s,
            &op(human(), "2026-01-01T09:07:00Z", answer("nom", None)),
        );
    }
}

#[test]
fn a_registered_agent_answers_a_decision_gate() {
    let mut s = gated_board(GateKind::Decision);
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:07:00Z",
            answer("nom", None),
        ),
        Exit::Refused,
        "not-registered",
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:07:00Z",
            answer("nom", None),
        ),
    );
    let a = s.gates[&gate_id(G1)].answer.clone().expect("answered");
    assert_eq!((a.choice.as_str(), a.by), ("nom", agent("agent-b")));
}

#[test]
fn gate_withdraw_closes_the_gate_and_frees_the_work() {
    let mut s = gated_board(GateKind::Production);
    ok(&mut s, &op(human(), "2026-01-01T09:07:00Z", withdraw()));
    let g = &s.gates[&gate_id(G1)];
    assert_eq!(g.status, GateStatus::Withdrawn);
    assert_eq!(
        g.withdrawn,
        Some(Withdrawn {
            by: human(),
            at: t("2026-01-01T09:07:00Z"),
            signature: None,
        })
    );
    assert_eq!(g.answer, None);
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:08:00Z",
            claim(T1, 0, LEASE),
        ),
    );
}

#[test]
fn a_closed_gate_is_neither_answered_nor_withdrawn_again() {
    let mut s = gated_board(GateKind::Decision);
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:07:00Z", answer("nom", None)),
    );
    for change in [answer("winnow", None), withdraw()] {
        let r = refuse(
            &mut s,
            &op(human(), "2026-01-01T09:08:00Z", change),
            Exit::Refused,
            "gate-closed",
        );
        assert_eq!(r.message, "g-0000c0de is already answered");
    }
    let mut s = gated_board(GateKind::Decision);
    ok(&mut s, &op(human(), "2026-01-01T09:07:00Z", withdraw()));
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:08:00Z", answer("nom", None)),
        Exit::Refused,
        "gate-closed",
    );
    assert_eq!(r.message, "g-0000c0de is already withdrawn");
}

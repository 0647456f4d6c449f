//! Unit tests of the usage ledger: `usage.record` and its max rule, the
//! budget gate it opens, `goal.set`'s budgets, and should-run's
//! `budget-exhausted`.

use crate::model::usage::{Usage, Usd};
use crate::op::test_support::*;
use crate::op::turn::{self, Reason};
use crate::op::usage::{CONTINUE_ONCE, RAISED, STOP};
use crate::op::{BudgetSet, GateAnswer, GoalSet, UsageRecord};

const TURN: &str = "00000000000000a1";

fn usage(input: u64, output: u64, usd: Option<u64>) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cost_usd: usd.map(Usd),
        ..Usage::default()
    }
}

fn record(turn: &str, u: Usage) -> Change {
    Change::UsageRecord(UsageRecord {
        goal: gid("main"),
        turn: turn.to_owned(),
        usage: u,
    })
}

fn budget(agent: Option<&str>, usd: Option<u64>, tokens: Option<u64>) -> Change {
    Change::GoalSet(GoalSet {
        budget: Some(BudgetSet {
            agent: agent.map(aid),
            usd: usd.map(Usd),
            tokens,
            window: None,
        }),
        ..GoalSet::new(gid("main"))
    })
}

fn entries(s: &State, a: &str) -> Vec<crate::model::usage::Entry> {
    s.quota
        .get(&aid(a))
        .map(|l| l.usage.clone())
        .unwrap_or_default()
}

fn decide(s: &State, a: &str, at: &str) -> turn::Decision {
    turn::decide(s, &aid(a), &s.goals[&gid("main")], t(at))
}

#[test]
fn a_repeated_report_is_a_no_op_and_a_larger_one_adds_the_difference() {
    let mut s = board();
    let first = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(100, 50, Some(10_000))),
        ),
    );
    assert!(
        first.subject.contains("+100 in, +50 out, +$0.01"),
        "{}",
        first.subject
    );
    let before = s.clone();
    let again = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:11:00Z",
            record(TURN, usage(100, 50, Some(10_000))),
        ),
    );
    assert!(matches!(
        again.what,
        Happened::UsageRecorded { added: None, .. }
    ));
    assert_eq!(s, before, "a repeated report changes nothing");
    // Smaller in one figure, larger in another: the maximum of each wins.
    let later = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            record(TURN, usage(80, 70, Some(12_000))),
        ),
    );
    let Happened::UsageRecorded {
        added: Some(added), ..
    } = later.what
    else {
        panic!("{:?}", later.what)
    };
    assert_eq!(
        (added.input_tokens, added.output_tokens, added.cost_usd),
        (0, 20, Some(Usd(2_000)))
    );
    let e = entries(&s, "agent-a");
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].usage.input_tokens, e[0].usage.output_tokens),
        (100, 70)
    );
    assert_eq!(e[0].usage.cost_usd, Some(Usd(12_000)));
}

#[test]
fn only_registered_agents_record_and_bad_reports_are_refused() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(1, 1, None)),
        ),
        Exit::Refused,
        "agents-only",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record("x", usage(1, 1, None)),
        ),
        Exit::Usage,
        "bad-usage",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(0, 0, None)),
        ),
        Exit::Usage,
        "bad-usage",
    );
    let mut cached = usage(1, 1, None);
    cached.cached_input_tokens = 2;
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, cached),
        ),
        Exit::Usage,
        "bad-usage",
    );
}

#[test]
fn the_record_that_reaches_the_budget_opens_a_spend_gate_in_its_tick() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            budget(None, Some(1_000_000), None),
        ),
    );
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(10, 10, Some(600_000))),
        ),
    );
    assert!(s.gates.is_empty());
    assert!(decide(&s, "agent-a", "2026-01-01T09:11:00Z").skip.is_none());
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:20:00Z",
            record("00000000000000b2", usage(10, 10, Some(400_000))),
        ),
    );
    let Happened::UsageRecorded { gates, .. } = &e.what else {
        panic!()
    };
    assert_eq!(gates.len(), 1);
    let g = &s.gates[&gates[0]];
    assert!(g.budget && g.is_open() && g.kind == GateKind::Spend && g.blocks == Blocks::Goal);
    assert!(g.question.contains("$1.00 of $1.00"), "{}", g.question);
    // Both agents skip, with the figures and the gate.
    for a in ["agent-a", "agent-b"] {
        let d = decide(&s, a, "2026-01-01T09:21:00Z");
        let Some(Reason::BudgetExhausted(crate::op::usage::Exhausted { standing, gate })) = d.skip
        else {
            panic!("{:?}", d.skip)
        };
        assert_eq!(gate.as_ref(), Some(&gates[0]));
        assert_eq!(standing.spent.usd, Usd(1_000_000));
    }
    // An agent may not answer it.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:22:00Z",
            Change::GateAnswer(GateAnswer {
                gate: gates[0].clone(),
                choice: CONTINUE_ONCE.into(),
                note: None,
            }),
        ),
        Exit::Refused,
        "humans-only",
    );
    // A later usage with the gate open opens no second gate.
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:23:00Z",
            record("00000000000000c3", usage(1, 1, Some(1))),
        ),
    );
    assert_eq!(s.gates.len(), 1);
}

#[test]
fn continue_once_lets_work_go_on_until_the_next_usage_record() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            budget(None, None, Some(1_000)),
        ),
    );
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(900, 100, None)),
        ),
    );
    let Happened::UsageRecorded { gates, .. } = e.what else {
        panic!()
    };
    let answer = |choice: &str| {
        Change::GateAnswer(GateAnswer {
            gate: gates[0].clone(),
            choice: choice.into(),
            note: None,
        })
    };
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:15:00Z", answer(CONTINUE_ONCE)),
    );
    assert!(
        decide(&s, "agent-a", "2026-01-01T09:16:00Z").skip.is_none(),
        "one more turn"
    );
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:20:00Z",
            record("00000000000000b2", usage(50, 5, None)),
        ),
    );
    let Happened::UsageRecorded { gates: again, .. } = e.what else {
        panic!()
    };
    assert_eq!(again.len(), 1, "the next record asks again");
    let d = decide(&s, "agent-a", "2026-01-01T09:21:00Z");
    assert!(matches!(
        d.skip,
        Some(Reason::BudgetExhausted(crate::op::usage::Exhausted {
            gate: Some(_),
            ..
        }))
    ));
    // Stop: the gate closes and the skip stays, without a gate.
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:22:00Z",
            Change::GateAnswer(GateAnswer {
                gate: again[0].clone(),
                choice: STOP.into(),
                note: None,
            }),
        ),
    );
    let d = decide(&s, "agent-a", "2026-01-01T09:23:00Z");
    assert!(
        matches!(
            d.skip,
            Some(Reason::BudgetExhausted(crate::op::usage::Exhausted {
                gate: None,
                ..
            }))
        ),
        "{:?}",
        d.skip
    );
    // The window moves on: a day later, the spend no longer counts.
    assert!(decide(&s, "agent-a", "2026-01-02T09:21:00Z").skip.is_none());
}

#[test]
fn raising_the_budget_answers_the_gate_and_lowering_it_opens_one() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            budget(Some("agent-a"), Some(500_000), None),
        ),
    );
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            record(TURN, usage(10, 10, Some(600_000))),
        ),
    );
    let Happened::UsageRecorded { gates, .. } = e.what else {
        panic!()
    };
    assert_eq!(s.gates[&gates[0]].blocks, Blocks::Agent(aid("agent-a")));
    assert!(
        decide(&s, "agent-b", "2026-01-01T09:11:00Z").skip.is_none(),
        "only agent-a's budget"
    );
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            budget(Some("agent-a"), Some(2_000_000), None),
        ),
    );
    assert!(subject.contains("answered"), "{subject}");
    let g = &s.gates[&gates[0]];
    assert_eq!(g.answer.as_ref().map(|a| a.choice.as_str()), Some(RAISED));
    assert!(decide(&s, "agent-a", "2026-01-01T09:13:00Z").skip.is_none());
    // Lowering it under what was spent opens a gate in the same tick.
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:14:00Z",
            budget(Some("agent-a"), Some(100_000), None),
        ),
    );
    assert!(subject.contains("budget reached"), "{subject}");
    assert_eq!(s.gates.values().filter(|g| g.is_open()).count(), 1);
    // 0 removes the budget, and answers its gate.
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:15:00Z",
            budget(Some("agent-a"), Some(0), None),
        ),
    );
    assert!(s.goals[&gid("main")].budget.is_empty());
    assert_eq!(s.gates.values().filter(|g| g.is_open()).count(), 0);
}

#[test]
fn budgets_are_human_only_and_checked() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:05:00Z",
            budget(None, Some(1), None),
        ),
        Exit::Refused,
        "humans-only",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            budget(Some("nobody"), Some(1), None),
        ),
        Exit::Error,
        "unknown-agent",
    );
    let window_alone = Change::GoalSet(GoalSet {
        budget: Some(BudgetSet {
            window: Some(crate::time::Span::hours(2)),
            ..BudgetSet::default()
        }),
        ..GoalSet::new(gid("main"))
    });
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", window_alone),
        Exit::Usage,
        "bad-budget",
    );
}

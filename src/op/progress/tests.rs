//! Unit tests of stall detection: the fingerprint, the run of turns the
//! agent keeps, the gate, and what `should-run` and `quota.spend` say.

use std::collections::BTreeSet;

use crate::op::progress::{self, CodeState};
use crate::op::test_support::*;
use crate::op::{EvidenceAdd, GateAnswer, GateWithdraw, GoalSet, QuotaSpend, RefreshState, Settle};

/// An op with its own id.
fn op_n(n: u64, actor: Actor, at: &str, change: Change) -> Op {
    Op {
        id: OpId::from_hex(&format!("{n:016x}")),
        ..op(actor, at, change)
    }
}

fn turn_at(minute: u32) -> String {
    format!("2026-01-01T10:{minute:02}:00Z")
}

/// agent-a's refresh of T1 with fingerprint `fp`.
fn refresh_fp(outcome: Outcome, todo: &str, fp: &str) -> Change {
    Change::RefreshState(RefreshState {
        todo: Some(tid(todo)),
        progress: Some(fp.to_owned()),
        ..RefreshState::new(gid("main"), outcome)
    })
}

/// Applies agent-a's advanced turn `n` (at 10:n) with fingerprint `fp`.
fn turn(s: &mut State, n: u32, fp: &str) -> Effect {
    ok_effect(
        s,
        &op_n(
            n.into(),
            agent("agent-a"),
            &turn_at(n),
            refresh_fp(Outcome::Advanced, T1, fp),
        ),
    )
}

fn stalled_gate(e: &Effect) -> Option<GateId> {
    match &e.what {
        Happened::Refreshed { stalled, .. } => stalled.clone(),
        _ => None,
    }
}

fn decide_skip(s: &State, at: &str) -> Option<turn::Reason> {
    turn::decide(s, &aid("agent-a"), &s.goals[&gid("main")], t(at)).skip
}

fn answer(s: &mut State, n: u64, gate: &GateId, at: &str) {
    ok(
        s,
        &op_n(
            n,
            human(),
            at,
            Change::GateAnswer(GateAnswer {
                gate: gate.clone(),
                choice: "continue".to_owned(),
                note: None,
            }),
        ),
    );
}

// -------------------------------------------------------------- fingerprint

#[test]
fn the_fingerprint_changes_with_each_part_and_only_with_them() {
    let code = CodeState {
        head: Some("a".repeat(40)),
        tree: Some("b".repeat(40)),
    };
    let check = |argv: &[&str], exit| (strings(argv), Some(exit));
    let checks: BTreeSet<_> = [check(&["cargo", "test"], 0), check(&["make"], 0)].into();
    let base = progress::fingerprint(&code, TodoStatus::Claimed, &[tid(T2)], &checks);
    assert_eq!(base.len(), 16);
    // The same inputs, in another order, give the same digest.
    let reordered: BTreeSet<_> = [check(&["make"], 0), check(&["cargo", "test"], 0)].into();
    assert_eq!(
        progress::fingerprint(&code, TodoStatus::Claimed, &[tid(T2), tid(T2)], &reordered),
        base
    );
    let other_tree = CodeState {
        tree: Some("c".repeat(40)),
        ..code.clone()
    };
    let other_head = CodeState {
        head: None,
        ..code.clone()
    };
    let fewer: BTreeSet<_> = [check(&["make"], 0)].into();
    // Argument boundaries count: `cargo test` is not `cargo` `test`.
    let joined: BTreeSet<_> = [check(&["cargo test"], 0), check(&["make"], 0)].into();
    for (what, fp) in [
        (
            "tree",
            progress::fingerprint(&other_tree, TodoStatus::Claimed, &[tid(T2)], &checks),
        ),
        (
            "head",
            progress::fingerprint(&other_head, TodoStatus::Claimed, &[tid(T2)], &checks),
        ),
        (
            "status",
            progress::fingerprint(&code, TodoStatus::Blocked, &[tid(T2)], &checks),
        ),
        (
            "after",
            progress::fingerprint(&code, TodoStatus::Claimed, &[], &checks),
        ),
        (
            "checks",
            progress::fingerprint(&code, TodoStatus::Claimed, &[tid(T2)], &fewer),
        ),
        (
            "argv",
            progress::fingerprint(&code, TodoStatus::Claimed, &[tid(T2)], &joined),
        ),
    ] {
        assert_ne!(fp, base, "a different {what} gives a different digest");
    }
}

// ------------------------------------------------------------------ the run

#[test]
fn the_third_advanced_turn_without_progress_opens_a_human_only_spend_gate() {
    let mut s = claimed_board();
    assert_eq!(s.goals[&gid("main")].stall_after, 3);
    assert_eq!(stalled_gate(&turn(&mut s, 1, "f1")), None);
    assert_eq!(stalled_gate(&turn(&mut s, 2, "f1")), None);
    assert_eq!(decide_skip(&s, &turn_at(2)), None);
    let e = turn(&mut s, 3, "f1");
    let gate = stalled_gate(&e).expect("the third turn opens the gate");
    assert!(
        e.subject.contains(&format!("stalled: gate {gate}")),
        "{}",
        e.subject
    );
    let g = &s.gates[&gate];
    assert_eq!(g.kind, GateKind::Spend);
    assert!(g.kind.human_only());
    assert_eq!(g.blocks, Blocks::Todo(tid(T1)));
    assert_eq!(g.opened_by, agent("agent-a"));
    assert_eq!(g.options, strings(&["continue", "reassign", "drop"]));
    assert_eq!(
        g.question,
        format!("t-{T1} made no progress in 3 turns: continue, reassign, or drop?")
    );
    assert_eq!(
        decide_skip(&s, &turn_at(4)),
        Some(turn::Reason::Stalled {
            gate: gate.clone(),
            todo: tid(T1)
        })
    );
    // More turns open no second gate while the first is open.
    assert_eq!(stalled_gate(&turn(&mut s, 4, "f1")), None);
    assert_eq!(s.gates.len(), 1);
    // An agent may not answer it.
    refuse(
        &mut s,
        &op_n(
            9,
            agent("agent-a"),
            &turn_at(5),
            Change::GateAnswer(GateAnswer {
                gate,
                choice: "continue".to_owned(),
                note: None,
            }),
        ),
        Exit::Refused,
        "humans-only",
    );
}

#[test]
fn the_gate_names_the_last_evidence() {
    let mut s = claimed_board();
    let e = EvidenceId::from_hex("0000e1e1");
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            &turn_at(0),
            Change::EvidenceAdd(EvidenceAdd {
                todo: Some(tid(T1)),
                ..EvidenceAdd::new(
                    e.clone(),
                    gid("main"),
                    EvidenceKind::Note,
                    "tried again".to_owned(),
                )
            }),
        ),
    );
    for n in 1..=3 {
        turn(&mut s, n, "f1");
    }
    let g = s.gates.values().next().expect("a gate");
    assert!(
        g.question.ends_with(&format!("Last evidence: {e}.")),
        "{}",
        g.question
    );
}

#[test]
fn progress_of_any_kind_restarts_the_run() {
    // A new fingerprint, an unchanged or blocked turn, another todo: each
    // starts over, so three turns in a row never line up.
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(human(), &turn_at(0), add(T2, "Write the lexer")),
    );
    turn(&mut s, 1, "f1");
    turn(&mut s, 2, "f1");
    turn(&mut s, 3, "f2");
    turn(&mut s, 4, "f2");
    let quiet = |s: &mut State, n: u32, outcome| {
        ok(
            s,
            &op_n(
                n.into(),
                agent("agent-a"),
                &turn_at(n),
                refresh_fp(outcome, T1, "f2"),
            ),
        );
    };
    quiet(&mut s, 5, Outcome::Unchanged);
    turn(&mut s, 6, "f2");
    turn(&mut s, 7, "f2");
    quiet(&mut s, 8, Outcome::Blocked);
    turn(&mut s, 9, "f2");
    turn(&mut s, 10, "f2");
    ok(
        &mut s,
        &op_n(
            11,
            agent("agent-a"),
            &turn_at(11),
            refresh_fp(Outcome::Advanced, T2, "f2"),
        ),
    );
    turn(&mut s, 12, "f2");
    turn(&mut s, 13, "f2");
    assert!(
        s.gates.is_empty(),
        "{:?}",
        s.gates.keys().collect::<Vec<_>>()
    );
    let p = s.agents[&aid("agent-a")].progress.clone().expect("a run");
    assert_eq!((p.todo, p.turns.len()), (tid(T1), 2));
    // A refresh without a fingerprint (an older tick, the Stop hook) leaves
    // the run as it was.
    let mut bare = refresh(Outcome::Advanced, Some(T1), None);
    if let Change::RefreshState(RefreshState { turn, .. }) = &mut bare {
        *turn = None;
    }
    ok(&mut s, &op_n(14, agent("agent-a"), &turn_at(14), bare));
    assert_eq!(
        s.agents[&aid("agent-a")]
            .progress
            .as_ref()
            .map(|p| p.turns.len()),
        Some(2)
    );
    assert!(stalled_gate(&turn(&mut s, 15, "f2")).is_some());
}

#[test]
fn answering_the_gate_resets_the_count() {
    let mut s = claimed_board();
    for n in 1..=3 {
        turn(&mut s, n, "f1");
    }
    let first = s.gates.keys().next().cloned().expect("a gate");
    answer(&mut s, 100, &first, &turn_at(4));
    assert_eq!(decide_skip(&s, &turn_at(4)), None);
    // Only the turns after the answer count: two more are not enough.
    assert_eq!(stalled_gate(&turn(&mut s, 5, "f1")), None);
    assert_eq!(stalled_gate(&turn(&mut s, 6, "f1")), None);
    let second = stalled_gate(&turn(&mut s, 7, "f1")).expect("a new gate");
    assert_ne!(second, first);
    assert!(matches!(
        decide_skip(&s, &turn_at(8)),
        Some(turn::Reason::Stalled { gate, .. }) if gate == second
    ));
    // A withdrawn gate resets it too.
    ok(
        &mut s,
        &op_n(
            101,
            human(),
            &turn_at(9),
            Change::GateWithdraw(GateWithdraw {
                gate: second.clone(),
            }),
        ),
    );
    assert_eq!(decide_skip(&s, &turn_at(9)), None);
    assert_eq!(stalled_gate(&turn(&mut s, 10, "f1")), None);
}

#[test]
fn stall_after_is_a_goal_setting_and_zero_turns_it_off() {
    let mut s = claimed_board();
    let set = |n| {
        Change::GoalSet(GoalSet {
            stall_after: Some(n),
            ..GoalSet::new(gid("main"))
        })
    };
    refuse(
        &mut s,
        &op(human(), &turn_at(0), set(101)),
        Exit::Usage,
        "bad-quota",
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), &turn_at(0), set(5)),
        Exit::Refused,
        "humans-only",
    );
    let subject = ok(&mut s, &op(human(), &turn_at(0), set(0)));
    assert!(subject.contains("stall-after=0"), "{subject}");
    for n in 1..=10 {
        assert_eq!(stalled_gate(&turn(&mut s, n, "f1")), None);
    }
    // Turned on again, the run already counts.
    ok(&mut s, &op(human(), &turn_at(11), set(2)));
    assert!(stalled_gate(&turn(&mut s, 12, "f1")).is_some());
}

// ------------------------------------------------------------- spending

#[test]
fn the_stalling_settle_spends_and_nothing_after_it_does() {
    let mut s = claimed_board();
    let settle = |n: u32, turn: &str| {
        Change::Settle(Settle {
            turn: turn.to_owned(),
            steps: vec![
                refresh_fp(Outcome::Advanced, T1, "f1"),
                Change::QuotaSpend(QuotaSpend {
                    goal: gid("main"),
                    turn: turn.to_owned(),
                    issued: t(&turn_at(n)),
                }),
            ],
        })
    };
    for n in 1..=3u32 {
        let e = ok_effect(
            &mut s,
            &op_n(
                n.into(),
                agent("agent-a"),
                &turn_at(n),
                settle(n, &format!("turn-{n}")),
            ),
        );
        assert_eq!(e.subject.contains("stalled: gate"), n == 3, "{}", e.subject);
    }
    assert_eq!(s.quota[&aid("agent-a")].spends.len(), 3);
    let r = refuse(
        &mut s,
        &op_n(4, agent("agent-a"), &turn_at(4), settle(4, "turn-4")),
        Exit::Refused,
        "stalled",
    );
    assert!(r.message.contains("nothing is spent"), "{}", r.message);
    refuse(
        &mut s,
        &op_n(
            5,
            agent("agent-a"),
            &turn_at(5),
            spend("turn-5", &turn_at(5)),
        ),
        Exit::Refused,
        "stalled",
    );
    // A spend for a turn already spent stays a no-op.
    ok(
        &mut s,
        &op_n(
            6,
            agent("agent-a"),
            &turn_at(6),
            spend("turn-3", &turn_at(3)),
        ),
    );
    assert_eq!(s.quota[&aid("agent-a")].spends.len(), 3);
}

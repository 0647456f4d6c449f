//! `todo.renew`: the owner extends its lease; the epoch stays.

use super::*;
use crate::op::{GateOpen, TodoRenew};

fn renew(hex: &str, epoch: u64, lease: Span) -> Change {
    Change::TodoRenew(TodoRenew {
        todo: tid(hex),
        epoch,
        lease,
    })
}

#[test]
fn the_owner_extends_its_lease_and_the_epoch_stays() {
    let mut s = claimed_board();
    let since = todo1(&s).claim.as_ref().expect("claimed").since;
    let effect = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            renew(T1, 1, Span::hours(1)),
        ),
    );
    assert_eq!(effect.what, Happened::Renewed { todo: tid(T1) });
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Claimed);
    assert_eq!(todo.epoch, 1);
    assert_eq!(
        todo.claim,
        Some(Claim {
            owner: aid("agent-a"),
            since,
            lease_until: t("2026-01-01T10:15:00Z"),
        })
    );
    assert_eq!(todo.updated_at, t("2026-01-01T09:15:00Z"));
}

#[test]
fn an_expired_lease_nobody_took_is_renewed() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T11:00:00Z",
            renew(T1, 1, LEASE),
        ),
    );
    let c = todo1(&s).claim.clone().expect("claimed");
    assert_eq!(c.lease_until, t("2026-01-01T11:10:00Z"));
}

#[test]
fn renew_is_for_the_registered_owner() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    refuse(
        &mut s,
        &op(human(), at, renew(T1, 1, LEASE)),
        Exit::Refused,
        "agents-only",
    );
    refuse(
        &mut s,
        &op(agent("agent-z"), at, renew(T1, 1, LEASE)),
        Exit::Refused,
        "not-registered",
    );
    let r = refuse(
        &mut s,
        &op(agent("agent-b"), at, renew(T1, 1, LEASE)),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a, not by agent-b"
    );
}

#[test]
fn a_lease_taken_over_is_a_conflict_for_the_robbed_owner() {
    let mut s = claimed_board();
    // agent-b steals the expired lease at 10:00 (epoch 2).
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T10:00:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:01:00Z",
            renew(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
}

#[test]
fn renew_refuses_an_unclaimed_or_unknown_todo() {
    let mut s = board();
    let at = "2026-01-01T09:15:00Z";
    refuse(
        &mut s,
        &op(agent("agent-a"), at, renew(T1, 0, LEASE)),
        Exit::Refused,
        "not-claimed",
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), at, renew(T2, 0, LEASE)),
        Exit::Error,
        "unknown-todo",
    );
}

#[test]
fn renew_refuses_a_stale_epoch_and_a_bad_lease() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    refuse(
        &mut s,
        &op(agent("agent-a"), at, renew(T1, 0, LEASE)),
        Exit::Conflict,
        "stale-epoch",
    );
    for lease in [Span::seconds(0), Span::seconds(Span::MAX.as_secs() + 1)] {
        refuse(
            &mut s,
            &op(agent("agent-a"), at, renew(T1, 1, lease)),
            Exit::Usage,
            "bad-ttl",
        );
    }
}

#[test]
fn a_gate_on_the_todo_stops_a_renew() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            Change::GateOpen(GateOpen {
                gate: GateId::from_hex("0000c0de"),
                goal: gid("main"),
                question: "Keep going?".to_owned(),
                options: strings(&["yes", "no"]),
                kind: GateKind::Decision,
                blocks: Blocks::Todo(tid(T1)),
            }),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            renew(T1, 1, LEASE),
        ),
        Exit::Refused,
        "gate-open",
    );
}

//! `todo.handoff`: the owner gives its claim to another agent, with a note.

use super::*;
use crate::op::{AgentRetire, TodoClaim, TodoHandoff};

fn handoff(to: &str, epoch: u64, note: &str) -> Change {
    Change::TodoHandoff(TodoHandoff {
        todo: tid(T1),
        epoch,
        to: aid(to),
        lease: Span::hours(1),
        note: note.to_owned(),
    })
}

#[test]
fn the_owner_hands_its_claim_to_another_agent() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let effect = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            handoff("agent-b", 1, "  the lexer is done  "),
        ),
    );
    assert_eq!(
        effect.what,
        Happened::HandedOff {
            todo: tid(T1),
            to: aid("agent-b"),
        }
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Claimed);
    assert_eq!(todo.epoch, 2, "a handoff changes hands: the epoch bumps");
    assert_eq!(
        todo.claim,
        Some(Claim {
            owner: aid("agent-b"),
            since: t(at),
            lease_until: t("2026-01-01T10:15:00Z"),
        })
    );
    assert_eq!(
        todo.notes.last(),
        Some(&Note {
            at: t(at),
            by: agent("agent-a"),
            text: "handoff from agent-a to agent-b: the lexer is done".to_owned(),
        })
    );
    // The old owner is fenced off; the new one works on.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:16:00Z",
            update(T1, 1, None, Some("late")),
        ),
        Exit::Conflict,
        "claimed",
    );
    ok(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:16:00Z", done(T1, 2, None)),
    );
}

#[test]
fn handoff_is_an_agents_act() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:15:00Z", handoff("agent-b", 1, "x")),
        Exit::Refused,
        "agents-only",
    );
}

#[test]
fn only_the_owner_hands_off_a_claimed_todo() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:11:00Z",
            register("agent-c", Runtime::Codex, &[]),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:15:00Z",
            handoff("agent-c", 1, "x"),
        ),
        Exit::Conflict,
        "claimed",
    );
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            handoff("agent-b", 0, "x"),
        ),
        Exit::Refused,
        "not-claimed",
    );
}

#[test]
fn handoff_needs_a_registered_active_target_other_than_the_owner() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let a = || agent("agent-a");
    refuse(
        &mut s,
        &op(a(), at, handoff("agent-a", 1, "x")),
        Exit::Usage,
        "handoff-to-self",
    );
    refuse(
        &mut s,
        &op(a(), at, handoff("agent-z", 1, "x")),
        Exit::Refused,
        "not-registered",
    );
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            Change::AgentRetire(AgentRetire {
                agent: aid("agent-b"),
            }),
        ),
    );
    refuse(
        &mut s,
        &op(a(), at, handoff("agent-b", 1, "x")),
        Exit::Refused,
        "agent-retired",
    );
}

#[test]
fn the_target_must_fit_the_todo() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:02:00Z",
            add_with(&[], &["rust"], &[], None),
        ),
    );
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            Change::TodoClaim(TodoClaim {
                todo: tid(T2),
                epoch: 0,
                lease: LEASE,
            }),
        ),
    );
    let mut change = handoff("agent-b", 1, "x");
    if let Change::TodoHandoff(TodoHandoff { todo, .. }) = &mut change {
        *todo = tid(T2);
    }
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", change),
        Exit::Refused,
        "missing-capability",
    );
    assert_eq!(
        r.message,
        "t-000000b2 cannot go to agent-b: it needs capability rust"
    );
}

#[test]
fn handoff_refuses_a_stale_epoch_an_empty_note_and_a_bad_lease() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let a = || agent("agent-a");
    refuse(
        &mut s,
        &op(a(), at, handoff("agent-b", 0, "x")),
        Exit::Conflict,
        "stale-epoch",
    );
    refuse(
        &mut s,
        &op(a(), at, handoff("agent-b", 1, " \n ")),
        Exit::Usage,
        "empty-text",
    );
    let mut change = handoff("agent-b", 1, "x");
    if let Change::TodoHandoff(TodoHandoff { lease, .. }) = &mut change {
        *lease = Span::seconds(0);
    }
    refuse(&mut s, &op(a(), at, change), Exit::Usage, "bad-ttl");
}

//! `todo.release`: the owner gives a claim up; a human forces it.

use super::*;

#[test]
fn release_refuses_an_unclaimed_todo() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:10:00Z", release(T1, 0)),
        Exit::Refused,
        "not-claimed",
    );
    assert_eq!(r.message, "t-000000a1 is not claimed");
}

#[test]
fn release_of_another_agents_claim_is_a_conflict() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a, not by agent-b"
    );
    // A human is not the owner either.
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(r.message, "t-000000a1 is claimed by agent-a, not by Ada");
}

#[test]
fn the_owner_releases() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 1)),
    );
    assert_eq!(subject, "release t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.updated_at, t("2026-01-01T09:12:00Z"));
    // A second release finds nothing to release.
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:13:00Z", release(T1, 1)),
        Exit::Refused,
        "not-claimed",
    );
}

#[test]
fn release_with_a_stale_epoch_is_a_conflict() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 0)),
        Exit::Conflict,
        "stale-epoch",
    );
}

#[test]
fn release_needs_a_registered_agent() {
    let mut s = claimed_board();
    s.agents.get_mut(&aid("agent-a")).unwrap().status = AgentStatus::Retired;
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Refused,
        "agent-retired",
    );
}

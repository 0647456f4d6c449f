//! `todo.done`: completion, validation, fencing.

use super::*;

#[test]
fn the_owner_completes_its_claim() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            done(T1, 1, Some(" merged ")),
        ),
    );
    assert_eq!(subject, "done t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Done);
    assert_eq!(todo.done_at, Some(t("2026-01-01T09:15:00Z")));
    assert_eq!(todo.updated_at, t("2026-01-01T09:15:00Z"));
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(
        todo.notes,
        vec![Note {
            at: t("2026-01-01T09:15:00Z"),
            by: agent("agent-a"),
            text: "merged".to_owned(),
        }]
    );
}

#[test]
fn anyone_completes_an_unclaimed_todo() {
    for who in [human(), agent("agent-b")] {
        let mut s = board();
        let subject = ok(&mut s, &op(who, "2026-01-01T09:15:00Z", done(T1, 0, None)));
        assert_eq!(subject, "done t-000000a1 \"Write the parser\"");
        let todo = todo1(&s);
        assert_eq!(todo.status, TodoStatus::Done);
        assert_eq!(todo.done_at, Some(t("2026-01-01T09:15:00Z")));
        assert!(todo.notes.is_empty());
    }
}

#[test]
fn done_twice_is_refused() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 1, None)),
    );
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:16:00Z", done(T1, 1, None)),
        Exit::Refused,
        "todo-done",
    );
    assert_eq!(r.message, "t-000000a1 is already done");
}

#[test]
fn done_by_a_non_owner_is_a_conflict() {
    let mut s = claimed_board();
    for who in [agent("agent-b"), human()] {
        let r = refuse(
            &mut s,
            &op(who, "2026-01-01T09:15:00Z", done(T1, 1, None)),
            Exit::Conflict,
            "claimed",
        );
        assert_eq!(
            r.message,
            "t-000000a1 is claimed by agent-a; only its owner may complete it"
        );
    }
    // Even once the lease has expired: only a steal moves it.
    refuse(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T10:00:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "claimed",
    );
}

#[test]
fn done_refuses_a_stale_epoch_and_an_empty_note() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 0, None)),
        Exit::Conflict,
        "stale-epoch",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            done(T1, 1, Some("")),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn a_robbed_owner_is_fenced_off() {
    // agent-a's lease expires, agent-b steals it (epoch 2): agent-a's late
    // completion is a conflict, whether agent-b still holds it or released it.
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:30:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:31:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "claimed",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:31:00Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    ok(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:32:00Z", release(T1, 2)),
    );
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:33:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "stale-epoch",
    );
    assert_eq!(
        r.message,
        "t-000000a1 changed hands since epoch 1 was read: it is now at epoch 2"
    );
}

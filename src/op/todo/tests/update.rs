//! `todo.update`: status and notes.

use super::*;

#[test]
fn update_of_a_claimed_todo_by_a_non_owner_is_a_conflict() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some("hi")),
        ),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a; only its owner may update it"
    );
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Blocked), None),
        ),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a; only its owner may update it"
    );
}

#[test]
fn update_refuses_status_claimed_or_done() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Claimed), None),
        ),
        Exit::Usage,
        "bad-status",
    );
    assert_eq!(r.message, "status claimed is not set by an update");
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Done), Some("finished")),
        ),
        Exit::Usage,
        "bad-status",
    );
    assert_eq!(r.message, "status done is not set by an update");
}

#[test]
fn update_needs_something_to_update() {
    let mut s = board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:12:00Z", update(T1, 0, None, None)),
        Exit::Usage,
        "nothing-to-update",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some(" ")),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn blocked_by_the_owner_drops_the_claim() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Blocked), None),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=blocked"
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Blocked);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.updated_at, t("2026-01-01T09:12:00Z"));
}

#[test]
fn update_appends_a_note_with_actor_and_time() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some(" halfway ")),
        ),
    );
    assert_eq!(subject, "update t-000000a1 \"Write the parser\" note");
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:14:00Z",
            update(T1, 1, Some(TodoStatus::Deferred), Some("later")),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=deferred note"
    );
    let todo = todo1(&s);
    assert_eq!(
        todo.notes,
        vec![
            Note {
                at: t("2026-01-01T09:12:00Z"),
                by: agent("agent-a"),
                text: "halfway".to_owned(),
            },
            Note {
                at: t("2026-01-01T09:14:00Z"),
                by: agent("agent-a"),
                text: "later".to_owned(),
            },
        ]
    );
    assert_eq!(todo.status, TodoStatus::Deferred);
    assert_eq!(todo.claim, None);
}

#[test]
fn a_note_alone_keeps_the_claim() {
    let mut s = claimed_board();
    let before = todo1(&s).claim.clone();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some("halfway")),
        ),
    );
    assert_eq!(todo1(&s).status, TodoStatus::Claimed);
    assert_eq!(todo1(&s).claim, before);
}

#[test]
fn anyone_updates_an_unclaimed_todo() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 0, Some(TodoStatus::Blocked), Some("needs a spec")),
        ),
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:13:00Z",
            update(T1, 0, Some(TodoStatus::Open), None),
        ),
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.notes.len(), 1);
    assert_eq!(todo.notes[0].by, human());
}

#[test]
fn a_done_todo_is_only_reopened() {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", done(T1, 0, None)),
    );
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:06:00Z",
            update(T1, 0, None, Some("more")),
        ),
        Exit::Refused,
        "todo-done",
    );
    assert_eq!(r.message, "t-000000a1 is done");
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:06:00Z",
            update(T1, 0, Some(TodoStatus::Blocked), None),
        ),
        Exit::Refused,
        "todo-done",
    );
    let subject = ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:07:00Z",
            update(T1, 0, Some(TodoStatus::Open), Some("not quite")),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=open note"
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.done_at, None);
    assert_eq!(todo.updated_at, t("2026-01-01T09:07:00Z"));
    // Ready again.
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
fn update_with_a_stale_epoch_is_a_conflict() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
    // Also on an unclaimed todo whose epoch moved.
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:13:00Z", release(T1, 1)),
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:14:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
}

#[test]
fn update_needs_a_registered_agent() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Refused,
        "not-registered",
    );
}

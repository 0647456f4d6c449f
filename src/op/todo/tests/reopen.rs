//! `todo.reopen`: a done, blocked or deferred todo becomes open again.

use super::*;
use crate::op::TodoReopen;

fn reopen(epoch: u64) -> Change {
    Change::TodoReopen(TodoReopen {
        todo: tid(T1),
        epoch,
    })
}

#[test]
fn a_done_todo_is_reopened() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 1, None)),
    );
    let effect = ok_effect(&mut s, &op(human(), "2026-01-01T09:20:00Z", reopen(1)));
    assert_eq!(
        effect.what,
        Happened::Reopened {
            todo: tid(T1),
            was: TodoStatus::Done,
        }
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.done_at, None);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.updated_at, t("2026-01-01T09:20:00Z"));
    // Open again, it is ready for work.
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:21:00Z",
            claim(T1, 1, LEASE),
        ),
    );
}

#[test]
fn blocked_and_deferred_todos_are_reopened_by_anyone_registered() {
    for status in [TodoStatus::Blocked, TodoStatus::Deferred] {
        let mut s = board();
        ok(
            &mut s,
            &op(
                human(),
                "2026-01-01T09:05:00Z",
                update(T1, 0, Some(status), None),
            ),
        );
        refuse(
            &mut s,
            &op(agent("agent-z"), "2026-01-01T09:06:00Z", reopen(0)),
            Exit::Refused,
            "not-registered",
        );
        ok(
            &mut s,
            &op(agent("agent-b"), "2026-01-01T09:06:00Z", reopen(0)),
        );
        assert_eq!(todo1(&s).status, TodoStatus::Open);
    }
}

#[test]
fn an_open_or_claimed_todo_is_not_reopened() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", reopen(0)),
        Exit::Refused,
        "not-closed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is open, not done, blocked or deferred"
    );
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", reopen(1)),
        Exit::Refused,
        "not-closed",
    );
    // Anyone else meets the claim first.
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:15:00Z", reopen(1)),
        Exit::Conflict,
        "claimed",
    );
}

#[test]
fn reopen_refuses_a_stale_epoch_and_an_unknown_todo() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 1, None)),
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:20:00Z", reopen(0)),
        Exit::Conflict,
        "stale-epoch",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:20:00Z",
            Change::TodoReopen(TodoReopen {
                todo: tid(T2),
                epoch: 0,
            }),
        ),
        Exit::Error,
        "unknown-todo",
    );
}

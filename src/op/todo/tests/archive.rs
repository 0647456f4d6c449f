//! `todo.archive`: done todos leave the live set.

use super::*;
use crate::op::{TodoArchive, TodoClaim, TodoEdit};

fn archive(ids: &[&str]) -> Change {
    Change::TodoArchive(TodoArchive {
        todos: ids.iter().map(|h| tid(h)).collect(),
    })
}

/// The board with T1 done (by agent-a at 09:15) and T2 open.
fn one_done() -> State {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 1, None)),
    );
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:16:00Z", add(T2, "Write the lexer")),
    );
    s
}

#[test]
fn archive_moves_the_done_todos_and_skips_the_rest() {
    let mut s = one_done();
    let done_t1 = todo1(&s).clone();
    let moved = ok_archived(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:20:00Z",
            archive(&[T1, T2, "0000dead"]),
        ),
    );
    assert_eq!(moved, vec![done_t1], "the todo is archived as it was");
    assert!(!s.todos.contains_key(&tid(T1)));
    assert_eq!(s.todos[&tid(T2)].status, TodoStatus::Open);
}

#[test]
fn an_archived_todo_still_counts_as_done_for_after() {
    let mut s = one_done();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:17:00Z",
            Change::TodoEdit(TodoEdit {
                after: Some(vec![tid(T1)]),
                ..TodoEdit::new(tid(T2), 0)
            }),
        ),
    );
    let _ = ok_archived(&mut s, &op(human(), "2026-01-01T09:20:00Z", archive(&[T1])));
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:21:00Z",
            Change::TodoClaim(TodoClaim {
                todo: tid(T2),
                epoch: 0,
                lease: LEASE,
            }),
        ),
    );
}

#[test]
fn nothing_done_to_archive_is_refused() {
    let mut s = one_done();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:20:00Z", archive(&[T2, "0000dead"])),
        Exit::Refused,
        "nothing-to-archive",
    );
    assert_eq!(r.message, "no done todos to archive");
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:20:00Z", archive(&[])),
        Exit::Refused,
        "nothing-to-archive",
    );
}

#[test]
fn a_registered_agent_archives_and_an_unknown_one_cannot() {
    let mut s = one_done();
    refuse(
        &mut s,
        &op(agent("agent-z"), "2026-01-01T09:20:00Z", archive(&[T1])),
        Exit::Refused,
        "not-registered",
    );
    let moved = ok_archived(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:20:00Z", archive(&[T1])),
    );
    assert_eq!(moved.len(), 1);
}

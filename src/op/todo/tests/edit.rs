//! `todo.edit`: title, priority, the `after` list and notes of a todo.

use super::*;
use crate::op::TodoEdit;

fn edit(
    hex: &str,
    epoch: u64,
    title: Option<&str>,
    priority: Option<&str>,
    after: Option<&[&str]>,
    note: Option<&str>,
) -> Change {
    Change::TodoEdit(TodoEdit {
        title: title.map(str::to_owned),
        priority: priority.map(|p| p.parse().expect("a priority")),
        after: after.map(|a| a.iter().map(|h| tid(h)).collect()),
        note: note.map(str::to_owned),
        ..TodoEdit::new(tid(hex), epoch)
    })
}

/// The board with T2 "Write the lexer" added too.
fn two_todos() -> State {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:02:00Z", add(T2, "Write the lexer")),
    );
    s
}

#[test]
fn edit_sets_every_field_it_names() {
    let mut s = two_todos();
    let at = "2026-01-01T09:05:00Z";
    ok(
        &mut s,
        &op(
            human(),
            at,
            edit(
                T1,
                0,
                Some("  Write the parser, fast "),
                Some("P0"),
                Some(&[T2, T2]),
                Some("  measured first "),
            ),
        ),
    );
    let todo = todo1(&s);
    assert_eq!(todo.title, "Write the parser, fast");
    assert_eq!(todo.priority.to_string(), "P0");
    assert_eq!(todo.after, vec![tid(T2)]);
    assert_eq!(
        todo.notes,
        vec![Note {
            at: t(at),
            by: human(),
            text: "measured first".to_owned(),
        }]
    );
    assert_eq!(todo.updated_at, t(at));
    assert_eq!(todo.epoch, 0, "an edit is no change of hands");
}

#[test]
fn edit_of_one_field_leaves_the_others_and_an_empty_after_clears_the_list() {
    let mut s = two_todos();
    let at = "2026-01-01T09:05:00Z";
    ok(
        &mut s,
        &op(human(), at, edit(T1, 0, None, None, Some(&[T2]), None)),
    );
    let before = todo1(&s).clone();
    ok(
        &mut s,
        &op(human(), at, edit(T1, 0, None, Some("P4"), None, None)),
    );
    let todo = todo1(&s);
    assert_eq!(todo.priority.to_string(), "P4");
    assert_eq!(
        (&todo.title, &todo.after, &todo.notes),
        (&before.title, &before.after, &before.notes)
    );
    ok(
        &mut s,
        &op(human(), at, edit(T1, 0, None, None, Some(&[]), None)),
    );
    assert!(todo1(&s).after.is_empty());
}

#[test]
fn the_owner_edits_its_claim_and_others_may_not() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            edit(T1, 1, Some("Parser"), None, None, None),
        ),
    );
    assert_eq!(todo1(&s).title, "Parser");
    for actor in [human(), agent("agent-b")] {
        refuse(
            &mut s,
            &op(actor, at, edit(T1, 1, Some("Mine"), None, None, None)),
            Exit::Conflict,
            "claimed",
        );
    }
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            at,
            edit(T1, 1, Some("Mine"), None, None, None),
        ),
        Exit::Refused,
        "not-registered",
    );
}

#[test]
fn edit_refuses_a_stale_epoch_empty_text_and_nothing_to_edit() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let a = || agent("agent-a");
    refuse(
        &mut s,
        &op(a(), at, edit(T1, 0, Some("x"), None, None, None)),
        Exit::Conflict,
        "stale-epoch",
    );
    refuse(
        &mut s,
        &op(a(), at, edit(T1, 1, Some("  "), None, None, None)),
        Exit::Usage,
        "empty-text",
    );
    refuse(
        &mut s,
        &op(a(), at, edit(T1, 1, None, None, None, Some(""))),
        Exit::Usage,
        "empty-text",
    );
    refuse(
        &mut s,
        &op(a(), at, edit(T1, 1, None, None, None, None)),
        Exit::Usage,
        "nothing-to-edit",
    );
    refuse(
        &mut s,
        &op(a(), at, edit(T2, 0, Some("x"), None, None, None)),
        Exit::Error,
        "unknown-todo",
    );
}

#[test]
fn after_names_live_todos_and_makes_no_cycle() {
    let mut s = two_todos();
    let at = "2026-01-01T09:05:00Z";
    refuse(
        &mut s,
        &op(
            human(),
            at,
            edit(T1, 0, None, None, Some(&["0000dead"]), None),
        ),
        Exit::Refused,
        "unknown-after",
    );
    // Waiting for itself is the shortest cycle.
    refuse(
        &mut s,
        &op(human(), at, edit(T1, 0, None, None, Some(&[T1]), None)),
        Exit::Refused,
        "after-cycle",
    );
    // T2 waits for T1, so T1 may not wait for T2; nor through a third todo.
    ok(
        &mut s,
        &op(human(), at, edit(T2, 0, None, None, Some(&[T1]), None)),
    );
    let r = refuse(
        &mut s,
        &op(human(), at, edit(T1, 0, None, None, Some(&[T2]), None)),
        Exit::Refused,
        "after-cycle",
    );
    assert_eq!(
        r.message,
        "t-000000a1 cannot wait for t-000000b2: t-000000b2 already waits for t-000000a1"
    );
    ok(&mut s, &op(human(), at, add("000000c3", "Write the docs")));
    ok(
        &mut s,
        &op(
            human(),
            at,
            edit("000000c3", 0, None, None, Some(&[T2]), None),
        ),
    );
    refuse(
        &mut s,
        &op(
            human(),
            at,
            edit(T1, 0, None, None, Some(&["000000c3"]), None),
        ),
        Exit::Refused,
        "after-cycle",
    );
}

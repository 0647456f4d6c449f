//! `todo.add`: who may add, where, and what is stored.

use super::*;
use crate::op::TodoAdd;

#[test]
fn todo_add_by_a_human() {
    let s = board();
    let todo = todo1(&s);
    assert_eq!(
        *todo,
        Todo {
            id: tid(T1),
            goal: gid("main"),
            title: "Write the parser".to_owned(),
            priority: Priority::DEFAULT,
            status: TodoStatus::Open,
            after: Vec::new(),
            capabilities: Vec::new(),
            scope: Vec::new(),
            validate: None,
            validate_from: None,
            epoch: 0,
            created_at: t("2026-01-01T09:01:00Z"),
            created_by: human(),
            updated_at: t("2026-01-01T09:01:00Z"),
            done_at: None,
            claim: None,
            notes: Vec::new(),
            last_evidence: None,
        }
    );
}

#[test]
fn todo_add_subject_and_registered_agent_author() {
    let mut s = board();
    let change = Change::TodoAdd(TodoAdd::new(
        tid(T2),
        gid("main"),
        "  Write\t the   lexer ".to_owned(),
        "P0".parse().unwrap(),
    ));
    let subject = ok(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T10:00:00Z", change),
    );
    assert_eq!(subject, "add t-000000b2 \"Write the lexer\"");
    let todo = &s.todos[&tid(T2)];
    assert_eq!(todo.title, "Write\t the   lexer");
    assert_eq!(todo.priority.to_string(), "P0");
    assert_eq!(todo.created_by, agent("agent-b"));
    assert!(todo.notes.is_empty());
}

#[test]
fn todo_add_refuses_an_unknown_goal() {
    let mut s = board();
    let change = Change::TodoAdd(TodoAdd::new(
        tid(T2),
        gid("nope"),
        "Lexer",
        Priority::DEFAULT,
    ));
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", change),
        Exit::Error,
        "unknown-goal",
    );
    assert_eq!(r.message, "there is no goal nope");
}

#[test]
fn todo_add_refuses_a_done_goal() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            set_status(GoalStatus::Done),
        ),
    );
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:01:00Z", add(T2, "Lexer")),
        Exit::Refused,
        "goal-done",
    );
    assert_eq!(r.message, "goal main is done");
}

#[test]
fn todo_add_refuses_a_taken_id() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", add(T1, "Another title")),
        Exit::Conflict,
        "id-taken",
    );
    assert_eq!(r.message, "todo t-000000a1 already exists");
}

#[test]
fn todo_add_refuses_an_unknown_after() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            add_with(&[T1, "0000dead"], &[], &[], None),
        ),
        Exit::Refused,
        "unknown-after",
    );
    assert_eq!(r.message, "--after names t-0000dead, which does not exist");
}

#[test]
fn todo_add_refuses_an_empty_title_and_an_empty_note() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", add(T2, "  \n ")),
        Exit::Usage,
        "empty-text",
    );
    assert_eq!(r.message, "the title is empty");
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            add_with(&[], &[], &[], Some("   ")),
        ),
        Exit::Usage,
        "empty-text",
    );
    assert_eq!(r.message, "the note is empty");
}

#[test]
fn todo_add_refuses_an_unregistered_or_retired_agent() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(agent("agent-z"), "2026-01-01T10:00:00Z", add(T2, "Lexer")),
        Exit::Refused,
        "not-registered",
    );
    assert_eq!(r.message, "agent agent-z is not registered");
    s.agents.get_mut(&aid("agent-b")).unwrap().status = AgentStatus::Retired;
    let r = refuse(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T10:00:00Z", add(T2, "Lexer")),
        Exit::Refused,
        "agent-retired",
    );
    assert_eq!(r.message, "agent agent-b is retired");
}

#[test]
fn todo_add_records_the_note() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            add_with(&[], &[], &[], Some("  found while parsing  ")),
        ),
    );
    assert_eq!(
        s.todos[&tid(T2)].notes,
        vec![Note {
            at: t("2026-01-01T10:00:00Z"),
            by: agent("agent-a"),
            text: "found while parsing".to_owned(),
        }]
    );
}

#[test]
fn todo_add_sorts_and_dedupes_its_lists() {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:30:00Z", add("0000000c", "Other")),
    );
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            add_with(
                &["0000000c", T1, "0000000c"],
                &["rust", " git", "rust", ""],
                &["src/b/**", "src/a/**", "src/b/**"],
                None,
            ),
        ),
    );
    let todo = &s.todos[&tid(T2)];
    assert_eq!(todo.after, vec![tid("0000000c"), tid(T1)]);
    assert_eq!(todo.capabilities, strings(&["git", "rust"]));
    assert_eq!(todo.scope, strings(&["src/a/**", "src/b/**"]));
}

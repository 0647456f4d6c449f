//! Unit tests of `goal.split`.

use crate::op::test_support::*;

fn split(goal: Option<&str>) -> Change {
    Change::GoalSplit(GoalSplit {
        goal: goal.map(gid),
        moved: None,
    })
}

/// The board with a second goal `web` and a todo on it.
fn two_goals() -> State {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:02:00Z", goal_add("web", "The site")),
    );
    let mut t = add("00000b02", "Draw the page");
    if let Change::TodoAdd(TodoAdd { goal, .. }) = &mut t {
        *goal = gid("web");
    }
    ok(&mut s, &op(human(), "2026-01-01T09:03:00Z", t));
    s
}

#[test]
fn the_shared_side_keeps_only_the_shared_parts_in_the_newest_format() {
    let mut s = two_goals();
    let subject = ok(&mut s, &op(human(), "2026-01-01T10:00:00Z", split(None)));
    assert_eq!(subject, "split the goals onto their own refs");
    assert_eq!(
        (s.meta.format, s.meta.goal_refs),
        (crate::model::FORMAT, true)
    );
    assert!(s.goals.is_empty() && s.todos.is_empty() && s.agents.is_empty());
    assert!(s.gates.is_empty() && s.quota.is_empty());
}

#[test]
fn a_goals_side_keeps_its_goal_its_todos_and_every_agent() {
    let mut s = two_goals();
    ok(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", split(Some("web"))),
    );
    assert_eq!(s.goals.keys().collect::<Vec<_>>(), [&gid("web")]);
    assert_eq!(s.todos.keys().collect::<Vec<_>>(), [&tid("00000b02")]);
    assert_eq!(s.agents.len(), 2);
    assert_eq!(
        (s.meta.format, s.meta.goal_refs),
        (crate::model::FORMAT, true)
    );
    // Both sides write the same loopx.toml.
    let mut shared = two_goals();
    ok(
        &mut shared,
        &op(human(), "2026-01-01T10:00:00Z", split(None)),
    );
    assert_eq!(s.meta, shared.meta);
}

#[test]
fn only_a_human_splits_once_and_only_a_known_goal() {
    let mut s = two_goals();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T10:00:00Z", split(None)),
        Exit::Refused,
        "humans-only",
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", split(Some("nope"))),
        Exit::Refused,
        "unknown-goal",
    );
    ok(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", split(Some("main"))),
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T10:01:00Z", split(None)),
        Exit::Refused,
        "already-split",
    );
}

#[test]
fn a_goal_that_shares_a_goal_ref_moves_off_it_and_a_lone_goal_does_not() {
    // A goal ref of a split state holding `main` and `web`.
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:01:00Z", split(Some("main"))),
    );
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:02:00Z", goal_add("web", "The site")),
    );
    let mut t = add("00000b02", "Draw the page");
    if let Change::TodoAdd(TodoAdd { goal, .. }) = &mut t {
        *goal = gid("web");
    }
    ok(&mut s, &op(human(), "2026-01-01T09:03:00Z", t));
    let moved = |g: &str| {
        Change::GoalSplit(GoalSplit {
            goal: None,
            moved: Some(gid(g)),
        })
    };
    // Its new ref keeps it alone, with its todo and every agent.
    let mut own = s.clone();
    let subject = ok(
        &mut own,
        &op(human(), "2026-01-01T10:00:00Z", split(Some("web"))),
    );
    assert_eq!(subject, "split goal web onto its own ref");
    assert_eq!(own.goals.keys().collect::<Vec<_>>(), [&gid("web")]);
    assert_eq!(own.todos.keys().collect::<Vec<_>>(), [&tid("00000b02")]);
    assert_eq!(own.agents.len(), s.agents.len());
    // The ref it leaves drops it and its todo, and keeps the rest.
    let mut left = s.clone();
    let subject = ok(
        &mut left,
        &op(human(), "2026-01-01T10:00:00Z", moved("web")),
    );
    assert_eq!(subject, "moved goal web onto its own ref");
    assert_eq!(left.goals.keys().collect::<Vec<_>>(), [&gid("main")]);
    assert!(!left.todos.contains_key(&tid("00000b02")));
    assert_eq!(left.todos.len(), s.todos.len() - 1);
    assert_eq!(left.agents.len(), s.agents.len());
    // A goal alone on its ref has nowhere to go; agents never split.
    refuse(
        &mut left,
        &op(human(), "2026-01-01T10:01:00Z", moved("main")),
        Exit::Refused,
        "already-split",
    );
    refuse(
        &mut own,
        &op(human(), "2026-01-01T10:01:00Z", split(Some("web"))),
        Exit::Refused,
        "already-split",
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T10:01:00Z", moved("web")),
        Exit::Refused,
        "humans-only",
    );
    // Not on a state that is not split.
    refuse(
        &mut board(),
        &op(human(), "2026-01-01T10:01:00Z", moved("main")),
        Exit::Refused,
        "not-split",
    );
}

//! Unit tests of `init`, `goal.add` and `goal.set`.

use crate::op::GoalSet;
use crate::op::test_support::*;

#[test]
fn init_on_an_empty_state_without_goal() {
    let mut s = State::default();
    let subject = ok(
        &mut s,
        &op(human(), "2026-01-01T09:00:00Z", init(None, None)),
    );
    assert_eq!(subject, "init");
    assert_eq!(s, State::default());
}

#[test]
fn init_with_goal_and_objective_creates_the_goal() {
    let mut s = State::default();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:00:00Z",
            init(Some("main"), Some("  Ship the parser ")),
        ),
    );
    assert_eq!(subject, "init with goal main");
    assert_eq!(s.goals.len(), 1);
    let g = &s.goals[&gid("main")];
    assert_eq!(g.id, gid("main"));
    assert_eq!(g.objective, "Ship the parser");
    assert_eq!(g.status, GoalStatus::Active);
    assert_eq!(g.quota, QuotaPolicy::default());
    assert!(g.scope.is_empty() && g.guards.is_empty());
    assert_eq!(g.created_at, t("2026-01-01T09:00:00Z"));
    assert_eq!(g.updated_at, t("2026-01-01T09:00:00Z"));
    assert_eq!(g.created_by, human());
    assert!(s.agents.is_empty() && s.todos.is_empty());
}

#[test]
fn init_refuses_a_non_empty_state() {
    let mut s = board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", init(None, None)),
        Exit::Refused,
        "already-initialized",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            init(Some("other"), Some("x")),
        ),
        Exit::Refused,
        "already-initialized",
    );
    // One agent alone is already a state.
    let mut s = State::default();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:00:00Z",
            register("agent-a", Runtime::Codex, &[]),
        ),
    );
    refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", init(None, None)),
        Exit::Refused,
        "already-initialized",
    );
}

#[test]
fn init_goal_and_objective_go_together() {
    let mut s = State::default();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:00:00Z", init(Some("main"), None)),
        Exit::Usage,
        "goal-needs-objective",
    );
    assert_eq!(r.message, "--goal and --objective go together");
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:00:00Z", init(None, Some("Ship it"))),
        Exit::Usage,
        "goal-needs-objective",
    );
}

#[test]
fn init_with_an_empty_objective_is_refused() {
    let mut s = State::default();
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:00:00Z",
            init(Some("main"), Some("   ")),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn an_agent_cannot_init_with_a_goal() {
    let mut s = State::default();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:00:00Z",
            init(Some("main"), Some("Ship it")),
        ),
        Exit::Refused,
        "humans-only",
    );
    assert_eq!(
        r.message,
        "only a human may add a goal; agent-a is an agent"
    );
    assert!(s.goals.is_empty());
}

#[test]
fn goal_add_by_a_human() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            goal_add("docs", " Write the\n user docs "),
        ),
    );
    assert_eq!(subject, "goal add docs \"Write the user docs\"");
    let g = &s.goals[&gid("docs")];
    assert_eq!(g.objective, "Write the\n user docs");
    assert_eq!(g.status, GoalStatus::Active);
    assert_eq!(g.created_at, t("2026-01-01T10:00:00Z"));
    assert_eq!(g.updated_at, t("2026-01-01T10:00:00Z"));
    assert_eq!(g.created_by, human());
    assert_eq!(s.goals.len(), 2);
}

#[test]
fn goal_add_shortens_a_long_objective_in_the_subject() {
    let mut s = board();
    let long = "x".repeat(70);
    let subject = ok(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", goal_add("docs", &long)),
    );
    assert_eq!(subject, format!("goal add docs \"{}…\"", "x".repeat(59)));
    assert_eq!(s.goals[&gid("docs")].objective, long);
}

#[test]
fn goal_add_is_for_humans_only() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            goal_add("docs", "Docs"),
        ),
        Exit::Refused,
        "humans-only",
    );
    assert_eq!(
        r.message,
        "only a human may add a goal; agent-a is an agent"
    );
}

#[test]
fn goal_add_refuses_a_duplicate() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", goal_add("main", "Again")),
        Exit::Refused,
        "goal-exists",
    );
    assert_eq!(r.message, "goal main already exists");
}

#[test]
fn goal_add_refuses_an_empty_objective() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", goal_add("docs", " \n\t ")),
        Exit::Usage,
        "empty-text",
    );
    assert_eq!(r.message, "the objective is empty");
}

#[test]
fn goal_set_is_for_humans_only() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            set_status(GoalStatus::Paused),
        ),
        Exit::Refused,
        "humans-only",
    );
    assert_eq!(
        r.message,
        "only a human may change a goal; agent-a is an agent"
    );
}

#[test]
fn goal_set_refuses_an_unknown_goal() {
    let mut s = board();
    let change = Change::GoalSet(GoalSet {
        status: Some(GoalStatus::Paused),
        ..GoalSet::new(gid("nope"))
    });
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", change),
        Exit::Error,
        "unknown-goal",
    );
    assert_eq!(r.message, "there is no goal nope");
}

#[test]
fn goal_set_refuses_an_empty_objective() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            goal_set_with(Some("  "), Some(GoalStatus::Paused), None, None),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn goal_set_refuses_zero_quotas_without_applying_the_rest() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            goal_set_with(Some("New"), Some(GoalStatus::Paused), Some(0), None),
        ),
        Exit::Usage,
        "bad-quota",
    );
    assert_eq!(r.message, "--quota-slots must be at least 1");
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            goal_set_with(
                Some("New"),
                Some(GoalStatus::Paused),
                Some(3),
                Some(Span::seconds(0)),
            ),
        ),
        Exit::Usage,
        "bad-quota",
    );
    assert_eq!(r.message, "--quota-window must be longer than 0s");
    assert_eq!(s.goals[&gid("main")].objective, "Ship the parser");
}

#[test]
fn goal_set_needs_something_to_set() {
    let mut s = board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", goal_set()),
        Exit::Usage,
        "nothing-to-set",
    );
}

#[test]
fn goal_set_applies_every_field() {
    let mut s = board();
    let change = Change::GoalSet(GoalSet {
        objective: Some(" Ship the parser and docs ".to_owned()),
        status: Some(GoalStatus::Paused),
        scope: Some(strings(&["src/**", "docs/**"])),
        guards: Some(strings(&["no unsafe"])),
        quota_slots: Some(3),
        quota_window: Some(Span::hours(2)),
        ..GoalSet::new(gid("main"))
    });
    let subject = ok(&mut s, &op(human(), "2026-01-01T10:00:00Z", change));
    assert_eq!(
        subject,
        "goal set main objective status=paused scope guards quota-slots=3 quota-window=2h"
    );
    let g = &s.goals[&gid("main")];
    assert_eq!(g.objective, "Ship the parser and docs");
    assert_eq!(g.status, GoalStatus::Paused);
    // Scopes are stored sorted.
    assert_eq!(g.scope, strings(&["docs/**", "src/**"]));
    assert_eq!(g.guards, strings(&["no unsafe"]));
    assert_eq!(
        g.quota,
        QuotaPolicy {
            slots: 3,
            window: Span::hours(2)
        }
    );
    assert_eq!(g.updated_at, t("2026-01-01T10:00:00Z"));
    assert_eq!(g.created_at, t("2026-01-01T09:00:00Z"));
}

#[test]
fn goal_set_one_field_leaves_the_others() {
    let mut s = board();
    let before = s.goals[&gid("main")].clone();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T11:30:00Z",
            goal_set_with(None, None, None, Some(Span::minutes(90))),
        ),
    );
    assert_eq!(subject, "goal set main quota-window=1h30m");
    let g = &s.goals[&gid("main")];
    assert_eq!(
        *g,
        Goal {
            quota: QuotaPolicy {
                slots: before.quota.slots,
                window: Span::minutes(90)
            },
            updated_at: t("2026-01-01T11:30:00Z"),
            ..before
        }
    );
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T12:00:00Z",
            set_status(GoalStatus::Done),
        ),
    );
    assert_eq!(subject, "goal set main status=done");
    assert_eq!(s.goals[&gid("main")].status, GoalStatus::Done);
}

//! `todo.claim`: readiness, fencing, renewing by claiming again, stealing
//! an expired lease.

use super::*;
use crate::op::TodoAdd;

#[test]
fn claim_sets_owner_lease_and_epoch() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
    );
    assert_eq!(subject, "claim t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Claimed);
    assert_eq!(todo.epoch, 1);
    assert_eq!(
        todo.claim,
        Some(Claim {
            owner: aid("agent-a"),
            since: t("2026-01-01T09:10:00Z"),
            lease_until: t("2026-01-01T09:20:00Z"),
        })
    );
    assert_eq!(todo.updated_at, t("2026-01-01T09:10:00Z"));
    assert!(todo.notes.is_empty());
}

#[test]
fn claim_is_for_agents_only() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:10:00Z", claim(T1, 0, LEASE)),
        Exit::Refused,
        "agents-only",
    );
    assert_eq!(
        r.message,
        "only a registered agent may claim a todo: claims belong to registered agents"
    );
}

#[test]
fn claim_needs_a_registered_active_agent() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Refused,
        "not-registered",
    );
    s.agents.get_mut(&aid("agent-a")).unwrap().status = AgentStatus::Retired;
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Refused,
        "agent-retired",
    );
}

#[test]
fn claim_refuses_an_unknown_todo() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T2, 0, LEASE),
        ),
        Exit::Error,
        "unknown-todo",
    );
    assert_eq!(r.message, "there is no todo t-000000b2");
}

#[test]
fn claim_refuses_a_done_todo() {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", done(T1, 0, None)),
    );
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Refused,
        "todo-done",
    );
    assert_eq!(r.message, "t-000000a1 is not ready: it is done");
}

#[test]
fn claim_refuses_a_blocked_or_deferred_todo() {
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
        let r = refuse(
            &mut s,
            &op(
                agent("agent-a"),
                "2026-01-01T09:10:00Z",
                claim(T1, 0, LEASE),
            ),
            Exit::Refused,
            "not-open",
        );
        assert_eq!(
            r.message,
            format!("t-000000a1 is not ready: it is {status}")
        );
    }
}

#[test]
fn claim_waits_for_unfinished_after() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            add_with(&[T1], &[], &[], None),
        ),
    );
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:10:00Z",
            claim(T2, 0, LEASE),
        ),
        Exit::Refused,
        "waiting",
    );
    assert_eq!(
        r.message,
        "t-000000b2 is not ready: it waits for t-000000a1"
    );
    // Once T1 is done, T2 is ready.
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:11:00Z", done(T1, 0, None)),
    );
    assert_eq!(
        ok(
            &mut s,
            &op(
                agent("agent-b"),
                "2026-01-01T09:12:00Z",
                claim(T2, 0, LEASE)
            )
        ),
        "claim t-000000b2 \"Write the lexer\""
    );
}

#[test]
fn claim_needs_the_capabilities() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            add_with(&[], &["rust"], &[], None),
        ),
    );
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:10:00Z",
            claim(T2, 0, LEASE),
        ),
        Exit::Refused,
        "missing-capability",
    );
    assert_eq!(
        r.message,
        "t-000000b2 is not ready: it needs capability rust"
    );
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T2, 0, LEASE),
        ),
    );
    assert_eq!(s.todos[&tid(T2)].owner(), Some(&aid("agent-a")));
}

#[test]
fn claim_refuses_when_the_goal_is_not_active() {
    for (status, shown) in [(GoalStatus::Paused, "paused"), (GoalStatus::Done, "done")] {
        let mut s = board();
        ok(
            &mut s,
            &op(human(), "2026-01-01T09:05:00Z", set_status(status)),
        );
        let r = refuse(
            &mut s,
            &op(
                agent("agent-a"),
                "2026-01-01T09:10:00Z",
                claim(T1, 0, LEASE),
            ),
            Exit::Refused,
            "goal-not-active",
        );
        assert_eq!(
            r.message,
            format!("t-000000a1 is not ready: its goal is {shown}")
        );
    }
}

#[test]
fn a_live_claim_by_another_is_a_conflict_naming_the_owner() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:15:00Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is not ready: agent-a holds it until 2026-01-01T09:20:00Z"
    );
    assert!(r.hint.unwrap().to_string().starts_with("agent-a won it"));
}

#[test]
fn the_owner_renews_without_bumping_the_epoch() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:18:00Z",
            claim(T1, 1, Span::minutes(30)),
        ),
    );
    assert_eq!(subject, "renew t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.status, TodoStatus::Claimed);
    assert_eq!(
        todo.claim,
        Some(Claim {
            owner: aid("agent-a"),
            since: t("2026-01-01T09:10:00Z"),
            lease_until: t("2026-01-01T09:48:00Z"),
        })
    );
    assert_eq!(todo.updated_at, t("2026-01-01T09:18:00Z"));
    assert!(todo.notes.is_empty());
}

#[test]
fn a_renew_with_a_stale_epoch_is_a_conflict() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:18:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
}

#[test]
fn an_expired_lease_can_be_stolen() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:30:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    assert_eq!(
        subject,
        "steal t-000000a1 \"Write the parser\" from agent-a"
    );
    let todo = todo1(&s);
    assert_eq!(todo.epoch, 2);
    assert_eq!(todo.status, TodoStatus::Claimed);
    assert_eq!(
        todo.claim,
        Some(Claim {
            owner: aid("agent-b"),
            since: t("2026-01-01T09:30:00Z"),
            lease_until: t("2026-01-01T09:40:00Z"),
        })
    );
    assert_eq!(
        todo.notes,
        vec![Note {
            at: t("2026-01-01T09:30:00Z"),
            by: agent("agent-b"),
            text: "stole the expired lease of agent-a".to_owned(),
        }]
    );
}

#[test]
fn stealing_needs_the_current_epoch() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:30:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
    assert_eq!(
        r.message,
        "t-000000a1 changed hands since epoch 0 was read: it now belongs to agent-a at epoch 1"
    );
}

#[test]
fn stealing_still_needs_the_todo_ready() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:25:00Z",
            set_status(GoalStatus::Paused),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:30:00Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Refused,
        "goal-not-active",
    );
}

#[test]
fn the_clock_skew_margin_keeps_a_lease_live() {
    // Lease until 09:20:00, clock skew 30s.
    let mut s = claimed_board();
    assert_eq!(s.meta.settings.clock_skew, Span::seconds(30));
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:20:10Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:20:29Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    let subject = ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:20:31Z",
            claim(T1, 1, LEASE),
        ),
    );
    assert_eq!(
        subject,
        "steal t-000000a1 \"Write the parser\" from agent-a"
    );
}

#[test]
fn the_clock_skew_setting_is_honoured() {
    let mut s = claimed_board();
    s.meta.settings.clock_skew = Span::minutes(5);
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:24:00Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:25:01Z",
            claim(T1, 1, LEASE),
        ),
    );
    assert_eq!(todo1(&s).owner(), Some(&aid("agent-b")));
}

#[test]
fn a_claim_from_a_stale_epoch_is_fenced_off() {
    // agent-a claims and releases (epoch 0 -> 1); agent-b read epoch 0.
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 1)),
    );
    assert_eq!(todo1(&s).epoch, 1);
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:13:00Z",
            claim(T1, 0, LEASE),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
    assert_eq!(
        r.message,
        "t-000000a1 changed hands since epoch 0 was read: it is now at epoch 1"
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:13:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    assert_eq!(todo1(&s).epoch, 2);
}

#[test]
fn a_lease_of_zero_is_a_usage_error() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, Span::seconds(0)),
        ),
        Exit::Usage,
        "bad-ttl",
    );
    assert_eq!(
        r.message,
        "a lease must be longer than 0s and at most 3650d"
    );
    // Nor longer than ten years: the lease would not write as RFC 3339.
    let mut s2 = board();
    refuse(
        &mut s2,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, Span::seconds(Span::MAX.as_secs() + 1)),
        ),
        Exit::Usage,
        "bad-ttl",
    );
    // Also on a renew.
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            claim(T1, 1, Span::seconds(0)),
        ),
        Exit::Usage,
        "bad-ttl",
    );
}

#[test]
fn next_spreads_agents_over_the_top_tier_and_never_below_it() {
    let mut s = board();
    for i in 0..6 {
        ok(
            &mut s,
            &op(
                human(),
                "2026-01-01T09:02:00Z",
                add(&format!("0000c0{i:02}"), "Same priority"),
            ),
        );
    }
    let agents: Vec<String> = (0..16).map(|i| format!("spread-{i}")).collect();
    for a in &agents {
        ok(
            &mut s,
            &op(
                human(),
                "2026-01-01T09:03:00Z",
                register(a, Runtime::Codex, &[]),
            ),
        );
    }
    let now = t("2026-01-01T09:10:00Z");
    let pick = |s: &State, a: &str| {
        crate::op::rules::best_ready(s, &s.agents[&aid(a)], None, now)
            .unwrap()
            .id
            .clone()
    };
    let picks: std::collections::BTreeSet<TodoId> = agents.iter().map(|a| pick(&s, a)).collect();
    assert!(picks.len() >= 3, "16 agents over 7 todos: {picks:?}");
    for a in &agents {
        assert_eq!(pick(&s, a), pick(&s, a), "stable");
    }
    // One more urgent todo: every agent wants it, none a lower one.
    let mut urgent = add("0000d001", "Urgent");
    if let Change::TodoAdd(TodoAdd { priority, .. }) = &mut urgent {
        *priority = "P1".parse().unwrap();
    }
    ok(&mut s, &op(human(), "2026-01-01T09:04:00Z", urgent));
    for a in &agents {
        assert_eq!(pick(&s, a), tid("0000d001"));
    }
}

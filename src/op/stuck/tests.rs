//! Unit tests of stuck claims, the team's `stuck_after` and a goal's lease.

use super::{Gone, Local, Why, claims, judge};
use crate::op::test_support::*;
use crate::op::{GoalSet, SettingsSet};

fn settings(lease: Option<Span>, stuck_after: Option<Span>) -> Change {
    Change::SettingsSet(SettingsSet {
        lease,
        clock_skew: None,
        stuck_after,
        prices: Default::default(),
        unprice: Vec::new(),
        agent_slots: None,
        agent_window: None,
    })
}

/// The claimed board (T1 by agent-a from 09:10, lease until 09:20) with a
/// team `stuck_after` of 4 minutes.
fn stuck_board() -> State {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:10:00Z",
            settings(None, Some(Span::minutes(4))),
        ),
    );
    s
}

fn seen(at: &str) -> Local {
    Local {
        gone: Default::default(),
        seen_until: Some(t(at)),
    }
}

#[test]
fn a_silent_claim_is_stuck_only_once_the_clone_has_seen_stuck_after_of_silence() {
    let s = stuck_board();
    let now = t("2026-01-01T09:15:00Z");
    // Synced at 09:13: three minutes of silence seen, whatever the time now.
    assert!(claims(&s, now, &seen("2026-01-01T09:13:00Z")).is_empty());
    // Never synced: nothing is judged by silence.
    assert!(claims(&s, now, &Local::default()).is_empty());
    let found = claims(&s, now, &seen("2026-01-01T09:14:00Z"));
    assert_eq!(found.len(), 1);
    let x = &found[0];
    assert_eq!(x.owner, &aid("agent-a"));
    assert_eq!(
        x.why,
        Why::Silent {
            after: Span::minutes(4)
        }
    );
    assert_eq!(x.last_heard, t("2026-01-01T09:10:00Z"));
    // The lease's end plus the default 30s of skew.
    assert_eq!(x.frees_at, t("2026-01-01T09:20:30Z"));
    assert_eq!(
        x.line(),
        format!(
            "no tick by agent-a since 2026-01-01T09:10:00Z (stuck after 4m); its lease frees it at 2026-01-01T09:20:30Z, or a human frees it now: `loopx todo release {} --force`",
            tid(T1)
        )
    );
    // A sync later than now counts up to now.
    assert!(
        judge(
            &s,
            todo1(&s),
            t("2026-01-01T09:13:00Z"),
            &seen("2026-01-01T09:30:00Z")
        )
        .is_none()
    );
}

#[test]
fn a_renew_an_update_or_a_turn_is_the_heartbeat() {
    let now = t("2026-01-01T09:16:00Z");
    let local = seen("2026-01-01T09:16:00Z");
    assert_eq!(claims(&stuck_board(), now, &local).len(), 1);
    for change in [
        Change::TodoRenew(crate::op::TodoRenew {
            todo: tid(T1),
            epoch: 1,
            lease: LEASE,
        }),
        update(T1, 1, None, Some("parser half done")),
        refresh(Outcome::Advanced, Some(T1), None),
    ] {
        let mut s = stuck_board();
        ok(
            &mut s,
            &op(agent("agent-a"), "2026-01-01T09:13:00Z", change),
        );
        assert!(claims(&s, now, &local).is_empty());
    }
}

#[test]
fn a_session_gone_on_this_clone_is_stuck_at_once_and_an_expired_lease_is_not_stuck() {
    let s = stuck_board();
    let now = t("2026-01-01T09:11:00Z");
    for (gone, code) in [(Gone::Died, "session-died"), (Gone::Ended, "session-ended")] {
        let local = Local {
            gone: [(aid("agent-a"), gone)].into(),
            seen_until: None,
        };
        let found = claims(&s, now, &local);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].why.code(), code);
        assert!(
            found[0].reason().contains("agent-a's session"),
            "{}",
            found[0].reason()
        );
        // Another agent's session says nothing of this claim.
        let other = Local {
            gone: [(aid("agent-b"), gone)].into(),
            seen_until: None,
        };
        assert!(claims(&s, now, &other).is_empty());
        // Once the lease (and the skew) ran out, it is expired, not stuck.
        assert!(claims(&s, t("2026-01-01T09:20:30Z"), &local).is_empty());
    }
}

#[test]
fn stuck_after_defaults_to_half_the_goal_lease_else_the_team_lease() {
    let mut s = claimed_board();
    let main = gid("main");
    assert_eq!(s.lease_for(&main), Span::minutes(45));
    assert_eq!(s.stuck_after(&main), Span::seconds(45 * 60 / 2));
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:11:00Z",
            settings(Some(Span::hours(1)), None),
        ),
    );
    assert_eq!(s.lease_for(&main), Span::hours(1));
    assert_eq!(s.stuck_after(&main), Span::minutes(30));
    let set = |lease| {
        Change::GoalSet(GoalSet {
            lease: Some(lease),
            ..GoalSet::new(gid("main"))
        })
    };
    let subject = ok(
        &mut s,
        &op(human(), "2026-01-01T09:12:00Z", set(Span::hours(2))),
    );
    assert_eq!(subject, "goal set main lease=2h");
    assert_eq!(s.lease_for(&main), Span::hours(2));
    assert_eq!(s.stuck_after(&main), Span::hours(1));
    // The team's stuck_after comes first; 0s goes back to half the lease.
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:13:00Z",
            settings(None, Some(Span::minutes(5))),
        ),
    );
    assert_eq!(s.stuck_after(&main), Span::minutes(5));
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:14:00Z",
            settings(None, Some(Span::seconds(0))),
        ),
    );
    assert_eq!(subject, "settings stuck_after=half the lease");
    assert_eq!(s.meta.settings.stuck_after, None);
    // 0s takes the goal's lease away: the team's again.
    let subject = ok(
        &mut s,
        &op(human(), "2026-01-01T09:15:00Z", set(Span::seconds(0))),
    );
    assert_eq!(subject, "goal set main lease=the team's");
    assert_eq!(s.goals[&main].lease, None);
    assert_eq!(s.lease_for(&main), Span::hours(1));
}

#[test]
fn a_goal_lease_needs_format_7_and_a_settings_change_refuses_nothing_to_set() {
    let with_lease = Change::GoalSet(GoalSet {
        lease: Some(Span::hours(2)),
        ..GoalSet::new(gid("main"))
    });
    assert_eq!(with_lease.since(), 7);
    let without = Change::GoalSet(GoalSet {
        quota_slots: Some(3),
        ..GoalSet::new(gid("main"))
    });
    assert_eq!(without.since(), 1);
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:11:00Z", settings(None, None)),
        Exit::Usage,
        "nothing-to-set",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:11:00Z",
            settings(None, Some(Span::seconds(-1))),
        ),
        Exit::Usage,
        "bad-ttl",
    );
}

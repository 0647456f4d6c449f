//! Unit tests of parking: `quota.park`, `quota.resume`, what `should-run`
//! answers around the park's end, and the gate an expired park opens.

use crate::op::park::{self, Standing};
use crate::op::test_support::*;
use crate::op::turn::{self, Reason};
use crate::op::{GateAnswer, GoalSet, QuotaPark, QuotaResume};

const UNTIL: &str = "2026-01-01T15:00:00Z";

fn park_change(agent: &str, until: &str, reason: Option<&str>) -> Change {
    Change::QuotaPark(QuotaPark {
        agent: aid(agent),
        goal: gid("main"),
        until: t(until),
        reason: reason.map(str::to_owned),
    })
}

/// agent-a parked itself at 09:20 until 15:00.
fn parked_board() -> State {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:20:00Z",
            park_change("agent-a", UNTIL, Some(" usage limit, resets 3pm ")),
        ),
    );
    assert_eq!(
        subject,
        "park agent-a until 2026-01-01T15:00:00Z: usage limit, resets 3pm"
    );
    s
}

fn skip_at(s: &State, at: &str) -> Option<Reason> {
    let goal = &s.goals[&gid("main")];
    turn::decide(s, &aid("agent-a"), goal, t(at)).skip
}

fn auto_resume(s: &mut State, on: bool) {
    let c = Change::GoalSet(GoalSet {
        auto_resume: Some(on),
        ..GoalSet::new(gid("main"))
    });
    ok(s, &op(human(), "2026-01-01T09:21:00Z", c));
}

#[test]
fn a_parked_agent_waits_until_its_time() {
    let s = parked_board();
    let p = s.agents[&aid("agent-a")].parked.clone().expect("parked");
    assert_eq!(p.until, t(UNTIL));
    assert_eq!(p.reason.as_deref(), Some("usage limit, resets 3pm"));
    assert_eq!(p.by, agent("agent-a"));
    assert_eq!(
        skip_at(&s, "2026-01-01T14:59:59Z"),
        Some(Reason::WaitUntil {
            until: t(UNTIL),
            reason: Some("usage limit, resets 3pm".to_owned())
        })
    );
}

#[test]
fn after_its_time_it_needs_a_go_unless_the_goal_auto_resumes() {
    let mut s = parked_board();
    assert_eq!(
        skip_at(&s, UNTIL),
        Some(Reason::AwaitingGo {
            until: t(UNTIL),
            gate: None
        })
    );
    auto_resume(&mut s, true);
    assert_eq!(
        skip_at(&s, "2026-01-01T14:00:00Z").map(|r| r.code()),
        Some("wait-until")
    );
    assert_eq!(skip_at(&s, UNTIL), None, "the goal resumes by itself");
}

#[test]
fn a_parked_agent_cannot_claim_until_it_may_run() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:20:00Z",
            park_change("agent-a", UNTIL, None),
        ),
    );
    let claim = |at: &str| op(agent("agent-a"), at, claim(T1, 0, LEASE));
    refuse(
        &mut s,
        &claim("2026-01-01T10:00:00Z"),
        Exit::Refused,
        "parked",
    );
    // After the time, still no silent resume.
    refuse(
        &mut s,
        &claim("2026-01-01T16:00:00Z"),
        Exit::Refused,
        "parked",
    );
    auto_resume(&mut s, true);
    ok(&mut s, &claim("2026-01-01T16:00:00Z"));
}

#[test]
fn the_next_refresh_after_the_time_opens_a_human_only_gate() {
    let mut s = parked_board();
    // Before the time a refresh opens nothing.
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T14:00:00Z",
            refresh(Outcome::Blocked, None, None),
        ),
    );
    assert!(matches!(e.what, Happened::Refreshed { gate: None, .. }));
    let mut o = op(
        agent("agent-a"),
        "2026-01-01T15:05:00Z",
        refresh(Outcome::Blocked, None, None),
    );
    o.id = OpId::from_hex("00000000000000aa");
    let e = ok_effect(&mut s, &o);
    let Happened::Refreshed { gate: Some(g), .. } = e.what else {
        panic!("no gate: {e:?}")
    };
    assert_eq!(
        g,
        GateId::derived(&o.id, "park"),
        "a replay opens the same gate"
    );
    assert!(
        e.subject
            .ends_with(&format!("park ended, gate {g} asks for a go"))
    );
    let gate = &s.gates[&g];
    assert_eq!(gate.kind, GateKind::Spend);
    assert!(gate.kind.human_only());
    assert_eq!(gate.blocks, Blocks::Agent(aid("agent-a")));
    assert_eq!(gate.options, strings(&["resume", "stop"]));
    assert_eq!(
        skip_at(&s, "2026-01-01T15:06:00Z"),
        Some(Reason::GateOpen {
            gate: g.clone(),
            question: gate.question.clone()
        })
    );
    // A second refresh does not open another gate.
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T15:07:00Z",
            refresh(Outcome::Blocked, None, None),
        ),
    );
    assert!(matches!(e.what, Happened::Refreshed { gate: None, .. }));
    // An agent cannot give itself the go.
    let answer = |actor: Actor, choice: &str| {
        op(
            actor,
            "2026-01-01T15:10:00Z",
            Change::GateAnswer(GateAnswer {
                gate: g.clone(),
                choice: choice.to_owned(),
                note: None,
            }),
        )
    };
    refuse(
        &mut s,
        &answer(agent("agent-a"), "resume"),
        Exit::Refused,
        "humans-only",
    );
    ok(&mut s, &answer(human(), "resume"));
    assert_eq!(skip_at(&s, "2026-01-01T15:11:00Z"), None);
    // Its next refresh clears the park.
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T15:12:00Z",
            refresh(Outcome::Advanced, None, None),
        ),
    );
    assert_eq!(s.agents[&aid("agent-a")].parked, None);
}

#[test]
fn a_stop_answer_keeps_it_parked_until_a_human_resumes_it() {
    let mut s = parked_board();
    let e = ok_effect(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T15:05:00Z",
            refresh(Outcome::Blocked, None, None),
        ),
    );
    let Happened::Refreshed { gate: Some(g), .. } = e.what else {
        panic!("no gate")
    };
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T15:10:00Z",
            Change::GateAnswer(GateAnswer {
                gate: g.clone(),
                choice: "stop".to_owned(),
                note: None,
            }),
        ),
    );
    assert_eq!(
        skip_at(&s, "2026-01-01T15:11:00Z"),
        Some(Reason::AwaitingGo {
            until: t(UNTIL),
            gate: Some(g)
        })
    );
    let resume = |actor: Actor| {
        op(
            actor,
            "2026-01-01T15:20:00Z",
            Change::QuotaResume(QuotaResume {
                agent: aid("agent-a"),
            }),
        )
    };
    refuse(
        &mut s,
        &resume(agent("agent-a")),
        Exit::Refused,
        "humans-only",
    );
    assert_eq!(ok(&mut s, &resume(human())), "resume agent-a");
    assert_eq!(skip_at(&s, "2026-01-01T15:21:00Z"), None);
    refuse(&mut s, &resume(human()), Exit::Refused, "not-parked");
}

#[test]
fn park_refuses_bad_times_and_other_agents() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:00:00Z",
            register("agent-b", Runtime::Codex, &[]),
        ),
    );
    let at = "2026-01-01T09:20:00Z";
    refuse(
        &mut s,
        &op(agent("agent-a"), at, park_change("agent-a", at, None)),
        Exit::Usage,
        "bad-time",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            park_change("agent-a", "2026-03-01T00:00:00Z", None),
        ),
        Exit::Usage,
        "bad-time",
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), at, park_change("agent-b", UNTIL, None)),
        Exit::Refused,
        "park-self-only",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            park_change("agent-a", UNTIL, Some("   ")),
        ),
        Exit::Usage,
        "empty-text",
    );
    // A human may park any agent; parking again moves the time.
    ok(
        &mut s,
        &op(human(), at, park_change("agent-b", UNTIL, None)),
    );
    ok(
        &mut s,
        &op(
            human(),
            at,
            park_change("agent-b", "2026-01-01T16:00:00Z", None),
        ),
    );
    let b = &s.agents[&aid("agent-b")];
    assert_eq!(
        b.parked.as_ref().map(|p| p.until),
        Some(t("2026-01-01T16:00:00Z"))
    );
    let goal = &s.goals[&gid("main")];
    assert_eq!(
        park::standing(&s, b, goal, t("2026-01-01T15:30:00Z")),
        Standing::Waiting {
            until: t("2026-01-01T16:00:00Z"),
            reason: None
        }
    );
}

#[test]
fn re_registering_keeps_the_park() {
    let mut s = parked_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:30:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust", "docs"]),
        ),
    );
    assert!(s.agents[&aid("agent-a")].parked.is_some());
}

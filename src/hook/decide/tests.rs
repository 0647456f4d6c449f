use super::*;
use crate::model::{Actor, GoalStatus, OpId, Priority, Runtime, TodoId};
use crate::op::{AgentRegister, GoalSet, Init, Op, RefreshState, TodoAdd, TodoClaim, apply};
use crate::time::Span;

const T1: &str = "000000a1";

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn aid(id: &str) -> AgentId {
    AgentId::new(id).unwrap()
}

fn apply_as(state: &mut State, actor: Actor, at: &str, change: Change) {
    let op = Op {
        id: OpId::from_hex("0000000000000001"),
        at: t(at),
        actor,
        signature: None,
        change,
    };
    if let Err(r) = apply(state, &op) {
        panic!("refused: {}", r.message);
    }
}

fn human() -> Actor {
    Actor::Human {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

/// Goal `main`, agent `codex-1` registered, todo T1 "Write the parser".
fn board() -> State {
    let mut s = State::default();
    let main = GoalId::new("main").unwrap();
    for (at, change) in [
        (
            "2026-01-01T09:00:00Z",
            Change::Init(Init {
                goal: Some(main.clone()),
                objective: Some("Ship the parser".to_owned()),
            }),
        ),
        (
            "2026-01-01T09:00:00Z",
            Change::AgentRegister(AgentRegister {
                agent: aid("codex-1"),
                runtime: Runtime::Codex,
                capabilities: Vec::new(),
                goals: None,
            }),
        ),
        (
            "2026-01-01T09:01:00Z",
            Change::TodoAdd(TodoAdd::new(
                TodoId::from_hex(T1),
                main,
                "Write the parser".to_owned(),
                Priority::DEFAULT,
            )),
        ),
    ] {
        apply_as(&mut s, human(), at, change);
    }
    s
}

/// The board with T1 claimed by codex-1 at 09:10 for 30 minutes.
fn claimed() -> State {
    let mut s = board();
    apply_as(
        &mut s,
        Actor::Agent(aid("codex-1")),
        "2026-01-01T09:10:00Z",
        Change::TodoClaim(TodoClaim {
            todo: TodoId::from_hex(T1),
            epoch: 0,
            lease: Span::minutes(30),
        }),
    );
    s
}

fn goal(s: &State) -> &Goal {
    &s.goals[&GoalId::new("main").unwrap()]
}

fn start<'a>(state: &'a State, agent: &'a AgentId, continued: bool) -> Start<'a> {
    Start {
        agent,
        goal: goal(state),
        tip: "0123456789abcdef0123456789abcdef01234567",
        now: t("2026-01-01T09:15:00Z"),
        runtime: "codex",
        continued,
        offline: None,
        hub: None,
        lx: "loopx",
        worktrees: &[],
        worktree_next: false,
    }
}

#[test]
fn the_brief_offers_the_ready_todo_or_the_own_claim() {
    let a = aid("codex-1");
    let s = board();
    let text = brief(&s, &start(&s, &a, false));
    assert!(
        text.starts_with("loopx: you are agent codex-1.\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "Next: claim t-000000a1 \"Write the parser\" with `loopx todo claim t-000000a1`."
        ),
        "{text}"
    );
    assert!(text.contains("End the turn with `loopx settle --turn lxt1:main:codex-1:"));
    let s = claimed();
    let mut st = start(&s, &a, true);
    st.offline = Some("offline: the hub did not answer within 3s");
    st.hub = Some("origin");
    st.lx = "/opt/loopx";
    let text = brief(&s, &st);
    assert!(text.contains("\noffline: the hub did not answer"), "{text}");
    assert!(
        text.contains("Next: go on with your claim t-000000a1"),
        "{text}"
    );
    assert!(text.contains("This session continues codex-1, the agent of an earlier codex session"));
    assert!(
        text.contains("through origin: `/opt/loopx todo claim`"),
        "{text}"
    );
}

#[test]
fn a_paused_goal_stands_the_agent_down() {
    let a = aid("codex-1");
    let mut s = board();
    apply_as(
        &mut s,
        human(),
        "2026-01-01T09:05:00Z",
        Change::GoalSet(GoalSet {
            status: Some(GoalStatus::Paused),
            ..GoalSet::new(GoalId::new("main").unwrap())
        }),
    );
    let text = brief(&s, &start(&s, &a, false));
    assert!(
        text.contains("Stand down (goal-paused): goal main is paused."),
        "{text}"
    );
    assert!(!text.contains("Turn token"));
}

#[test]
fn a_start_resets_the_count_and_a_resume_keeps_when_it_started() {
    let a = aid("codex-1");
    let s = board();
    let mut rec = Session {
        continuations: 3,
        ended: true,
        ..Session::default()
    };
    let input = Input::default();
    open(
        &mut rec,
        &s,
        &a,
        &input,
        t("2026-01-01T09:00:00Z"),
        Some((7, 9)),
    );
    assert_eq!(rec.started, Some(t("2026-01-01T09:00:00Z")));
    assert_eq!((rec.continuations, rec.ended), (0, false));
    assert_eq!((rec.pid, rec.pid_start), (Some(7), Some(9)));
    assert_eq!(rec.agent.as_deref(), Some("codex-1"));
    let resume = Input {
        source: Some("resume".to_owned()),
        ..Input::default()
    };
    open(&mut rec, &s, &a, &resume, t("2026-01-01T10:00:00Z"), None);
    assert_eq!(rec.started, Some(t("2026-01-01T09:00:00Z")));
    assert_eq!(rec.nudged, Some(t("2026-01-01T10:00:00Z")));
    assert_eq!((rec.pid, rec.pid_start), (Some(7), Some(9)));
    open(
        &mut rec,
        &s,
        &a,
        &Input::default(),
        t("2026-01-01T11:00:00Z"),
        None,
    );
    assert_eq!(rec.started, Some(t("2026-01-01T11:00:00Z")));
}

#[test]
fn a_prompt_says_what_changed_since_the_last_one() {
    let a = aid("codex-1");
    let s = board();
    let mut rec = Session {
        continuations: 2,
        ..Session::default()
    };
    let now = t("2026-01-01T09:15:00Z");
    // The first prompt has nothing to compare with.
    assert_eq!(prompt(&mut rec, &s, &a, Some(goal(&s)), now), None);
    assert_eq!(rec.continuations, 0);
    assert_eq!(rec.nudged, Some(now));
    assert_eq!(prompt(&mut rec, &s, &a, Some(goal(&s)), now), None);
    let mut paused = s.clone();
    let first = paused.goals.keys().next().unwrap().clone();
    paused.goals.get_mut(&first).unwrap().status = GoalStatus::Paused;
    let text = prompt(&mut rec, &paused, &a, Some(goal(&paused)), now).unwrap();
    assert_eq!(
        text,
        "loopx: since your last prompt:\n- goal main is now paused"
    );
}

#[test]
fn a_stop_keeps_a_claim_holder_going_until_it_says_why_it_stops() {
    let a = aid("codex-1");
    let s = claimed();
    let now = t("2026-01-01T09:15:00Z");
    let mut rec = Session::default();
    assert!(may_continue(&Input::default(), &rec, 3));
    let text = stop(&mut rec, &s, &a, Some(goal(&s)), "00", now, "loopx").unwrap();
    assert!(
        text.starts_with("loopx: you still hold t-000000a1 \"Write the parser\", lease 25m left"),
        "{text}"
    );
    assert_eq!((rec.continuations, rec.nudged), (1, Some(now)));
    rec.continuations = 3;
    assert!(!may_continue(&Input::default(), &rec, 3));
    let guard = Input {
        stop_active: true,
        ..Input::default()
    };
    assert!(!may_continue(&guard, &Session::default(), 3));
    // Nothing to go on with: no claim, or no goal.
    let mut rec = Session::default();
    assert_eq!(
        stop(&mut rec, &board(), &a, Some(goal(&s)), "00", now, "loopx"),
        None
    );
    assert_eq!(stop(&mut rec, &s, &a, None, "00", now, "loopx"), None);
    assert_eq!(rec.continuations, 0);
    // A blocked turn after the last nudge: it said why it stops.
    let mut blocked = s.clone();
    apply_as(
        &mut blocked,
        Actor::Agent(a.clone()),
        "2026-01-01T09:16:00Z",
        Change::RefreshState(RefreshState {
            todo: Some(TodoId::from_hex(T1)),
            next_action: Some("wait".to_owned()),
            ..RefreshState::new(GoalId::new("main").unwrap(), Outcome::Blocked)
        }),
    );
    let mut rec = Session {
        nudged: Some(now),
        ..Session::default()
    };
    let later = t("2026-01-01T09:17:00Z");
    assert_eq!(
        stop(&mut rec, &blocked, &a, Some(goal(&s)), "00", later, "loopx"),
        None
    );
}

#[test]
fn a_session_end_records_the_unrecorded_turn_of_a_claim_holder() {
    let a = aid("codex-1");
    let s = claimed();
    let rec = Session {
        started: Some(t("2026-01-01T09:00:00Z")),
        ..Session::default()
    };
    let e = end(&rec, true, &s, &a, None, Some("logout")).unwrap();
    assert_eq!(e.claims.len(), 1);
    let Some(Change::RefreshState(RefreshState {
        outcome,
        todo,
        next_action,
        ..
    })) = e.record
    else {
        panic!("no turn recorded");
    };
    assert_eq!(outcome, Outcome::Unchanged);
    assert_eq!(todo, Some(TodoId::from_hex(T1)));
    assert_eq!(
        next_action.as_deref(),
        Some("resume t-000000a1 \"Write the parser\" (the session ended: logout)")
    );
    let lines = kept(&a, &e.claims);
    assert_eq!(
        lines,
        [
            "loopx: codex-1 keeps t-000000a1 \"Write the parser\" until 2026-01-01T09:40:00Z; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release t-000000a1` gives it up)."
        ]
    );
    // No claim and no write-back: nothing to record.
    let open = board();
    let e = end(&rec, true, &open, &a, GoalId::new("main").ok(), None).unwrap();
    assert!(e.record.is_none() && e.claims.is_empty());
    // An unknown agent: nothing at all.
    assert!(end(&rec, true, &s, &aid("codex-2"), None, None).is_none());
}

#[test]
fn a_turn_recorded_since_the_start_is_not_recorded_again() {
    let a = aid("codex-1");
    let mut s = claimed();
    let rec = Session {
        started: Some(t("2026-01-01T09:00:00Z")),
        ..Session::default()
    };
    apply_as(
        &mut s,
        Actor::Agent(a.clone()),
        "2026-01-01T09:20:00Z",
        Change::RefreshState(RefreshState {
            todo: Some(TodoId::from_hex(T1)),
            ..RefreshState::new(GoalId::new("main").unwrap(), Outcome::Advanced)
        }),
    );
    assert!(
        end(&rec, true, &s, &a, None, None)
            .unwrap()
            .record
            .is_none()
    );
    // At a stop that ends the turn, only what came since the last nudge
    // counts.
    let nudged = Session {
        started: rec.started,
        nudged: Some(t("2026-01-01T09:30:00Z")),
        ..Session::default()
    };
    assert!(
        end(&nudged, false, &s, &a, None, None)
            .unwrap()
            .record
            .is_some()
    );
    assert!(
        end(&nudged, true, &s, &a, None, None)
            .unwrap()
            .record
            .is_none()
    );
}

#[test]
fn a_usage_limit_parks_until_the_reset_within_the_longest_park() {
    let now = t("2026-01-01T09:00:00Z");
    let other = Input {
        error_type: Some("billing_error".to_owned()),
        ..Input::default()
    };
    assert_eq!(limit(&other, now), None);
    let limited = |text: &str| Input {
        error_type: Some("rate_limit".to_owned()),
        error_text: Some(text.to_owned()),
        ..Input::default()
    };
    let (until, reason) = limit(&limited("limit hit,\u{7}\n try again in 5 hours"), now).unwrap();
    assert_eq!(until, t("2026-01-01T14:00:00Z"));
    assert_eq!(reason, "limit hit, try again in 5 hours");
    let (until, _) = limit(&limited("try again in 9999 hours"), now).unwrap();
    assert_eq!(until, now.plus(crate::op::park::LONGEST));
    let (until, reason) = limit(&limited(&"x".repeat(400)), now).unwrap();
    assert_eq!(until, now.plus(super::super::limit::FALLBACK));
    assert_eq!(reason.len(), 300);
}

#[test]
fn gemini_agents_are_named_in_every_command() {
    let a = aid("gemini-1");
    let start = name_the_agent(
        context(&a, "Run `loopx todo claim t-1`.".to_owned()),
        Event::Start,
        &a,
    );
    let Answer::Context { text, .. } = start else {
        panic!()
    };
    assert!(text.starts_with("Run `LOOPX_AGENT=gemini-1 loopx todo claim t-1`."));
    assert!(text.ends_with("run loopx as `LOOPX_AGENT=gemini-1 loopx …`."));
    assert_eq!(
        name_the_agent(
            Answer::Continue("`loopx settle`".to_owned()),
            Event::Stop,
            &a
        ),
        Answer::Continue("`LOOPX_AGENT=gemini-1 loopx settle`".to_owned())
    );
    assert_eq!(
        name_the_agent(Answer::Nothing, Event::Stop, &a),
        Answer::Nothing
    );
}

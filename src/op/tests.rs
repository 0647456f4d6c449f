//! Unit tests of `apply`: every op's preconditions and effects, on a `State`
//! built in memory. No git. After every refusal the state must be exactly as
//! it was before the call (`refuse` checks it).

use super::*;
use crate::error::Exit;
use crate::model::{AgentStatus, Claim, Goal, Note, QuotaPolicy, Todo};

// ---------------------------------------------------------------- helpers

/// The board's todo.
const T1: &str = "000000a1";
/// Another todo the tests add.
const T2: &str = "000000b2";

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn human() -> Actor {
    Actor::Human {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

fn agent(id: &str) -> Actor {
    Actor::Agent(aid(id))
}

fn aid(id: &str) -> AgentId {
    AgentId::new(id).unwrap()
}

fn gid(id: &str) -> GoalId {
    GoalId::new(id).unwrap()
}

fn tid(hex: &str) -> TodoId {
    TodoId::from_hex(hex)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn op(actor: Actor, at: &str, change: Change) -> Op {
    Op {
        id: OpId::from_hex("0000000000000001"),
        at: t(at),
        actor,
        signature: None,
        change,
    }
}

/// Applies an op that must succeed and returns its subject.
fn ok(state: &mut State, op: &Op) -> String {
    match apply(state, op) {
        Ok(e) => e.subject,
        Err(r) => panic!(
            "{} refused: {} ({}: {})",
            op.change.kind(),
            r.code,
            r.exit.code(),
            r.message
        ),
    }
}

/// Applies an op that must be refused with `exit` and `code`, checks that the
/// state did not move, and returns the refusal.
#[track_caller]
fn refuse(state: &mut State, op: &Op, exit: Exit, code: &str) -> Refusal {
    let before = state.clone();
    let r = match apply(state, op) {
        Ok(e) => panic!("{} succeeded: {}", op.change.kind(), e.subject),
        Err(r) => r,
    };
    assert_eq!((r.exit, r.code.as_str()), (exit, code), "{}", r.message);
    assert_eq!(
        *state,
        before,
        "a refused {} changed the state",
        op.change.kind()
    );
    r
}

fn init(goal: Option<&str>, objective: Option<&str>) -> Change {
    Change::Init {
        goal: goal.map(gid),
        objective: objective.map(str::to_owned),
    }
}

fn goal_add(goal: &str, objective: &str) -> Change {
    Change::GoalAdd {
        goal: gid(goal),
        objective: objective.to_owned(),
    }
}

/// A `goal.set` of `main` that sets nothing; fill in the fields.
fn goal_set() -> Change {
    Change::GoalSet {
        goal: gid("main"),
        objective: None,
        status: None,
        scope: None,
        guards: None,
        quota_slots: None,
        quota_window: None,
    }
}

fn set_status(status: GoalStatus) -> Change {
    goal_set_with(None, Some(status), None, None)
}

fn register(id: &str, runtime: Runtime, caps: &[&str]) -> Change {
    Change::AgentRegister {
        agent: aid(id),
        runtime,
        capabilities: strings(caps),
    }
}

fn add(hex: &str, title: &str) -> Change {
    Change::TodoAdd {
        todo: tid(hex),
        goal: gid("main"),
        title: title.to_owned(),
        priority: Priority::DEFAULT,
        after: Vec::new(),
        capabilities: Vec::new(),
        scope: Vec::new(),
        note: None,
        validate: None,
    }
}

fn claim(hex: &str, epoch: u64, lease: Span) -> Change {
    Change::TodoClaim {
        todo: tid(hex),
        epoch,
        lease,
    }
}

fn release(hex: &str, epoch: u64) -> Change {
    Change::TodoRelease {
        todo: tid(hex),
        epoch,
        force: false,
    }
}

fn update(hex: &str, epoch: u64, status: Option<TodoStatus>, note: Option<&str>) -> Change {
    Change::TodoUpdate {
        todo: tid(hex),
        epoch,
        status,
        note: note.map(str::to_owned),
    }
}

fn done(hex: &str, epoch: u64, note: Option<&str>) -> Change {
    Change::TodoDone {
        todo: tid(hex),
        epoch,
        note: note.map(str::to_owned),
        validation: None,
    }
}

/// Ten minutes, the lease most tests claim with.
const LEASE: Span = Span::minutes(10);

/// A board built through `apply` itself: goal `main`, agents `agent-a`
/// (claude-code, rust) and `agent-b` (codex, no capability), and one open
/// todo T1 "Write the parser".
fn board() -> State {
    let mut s = State::default();
    for (at, change) in [
        (
            "2026-01-01T09:00:00Z",
            init(Some("main"), Some("Ship the parser")),
        ),
        (
            "2026-01-01T09:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust"]),
        ),
        (
            "2026-01-01T09:00:00Z",
            register("agent-b", Runtime::Codex, &[]),
        ),
        ("2026-01-01T09:01:00Z", add(T1, "Write the parser")),
    ] {
        ok(&mut s, &op(human(), at, change));
    }
    s
}

/// The board with T1 claimed by agent-a at 09:10 for 10 minutes (epoch 1,
/// lease until 09:20).
fn claimed_board() -> State {
    let mut s = board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
    );
    s
}

fn todo1(s: &State) -> &Todo {
    &s.todos[&tid(T1)]
}

// ------------------------------------------------------------------- init

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

// --------------------------------------------------------------- goal.add

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

// --------------------------------------------------------------- goal.set

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
    let Change::GoalSet { status, .. } = set_status(GoalStatus::Paused) else {
        unreachable!()
    };
    let change = Change::GoalSet {
        goal: gid("nope"),
        objective: None,
        status,
        scope: None,
        guards: None,
        quota_slots: None,
        quota_window: None,
    };
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T10:00:00Z", change),
        Exit::Error,
        "unknown-goal",
    );
    assert_eq!(r.message, "there is no goal nope");
}

/// A `goal.set` of `main` with these fields.
fn goal_set_with(
    objective: Option<&str>,
    status: Option<GoalStatus>,
    quota_slots: Option<u32>,
    quota_window: Option<Span>,
) -> Change {
    Change::GoalSet {
        goal: gid("main"),
        objective: objective.map(str::to_owned),
        status,
        scope: None,
        guards: None,
        quota_slots,
        quota_window,
    }
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
    let change = Change::GoalSet {
        goal: gid("main"),
        objective: Some(" Ship the parser and docs ".to_owned()),
        status: Some(GoalStatus::Paused),
        scope: Some(strings(&["src/**", "docs/**"])),
        guards: Some(strings(&["no unsafe"])),
        quota_slots: Some(3),
        quota_window: Some(Span::hours(2)),
    };
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

// --------------------------------------------------------- agent.register

#[test]
fn register_a_new_agent() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Gemini, &[]),
        ),
    );
    assert_eq!(subject, "register agent agent-c (gemini)");
    let a = &s.agents[&aid("agent-c")];
    assert_eq!(a.id, aid("agent-c"));
    assert_eq!(a.runtime, Runtime::Gemini);
    assert_eq!(a.status, AgentStatus::Active);
    assert!(a.capabilities.is_empty());
    assert_eq!(a.registered_at, t("2026-01-01T10:00:00Z"));
    assert_eq!(a.registered_by, human());
}

#[test]
fn an_agent_registers_itself() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-c"),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Cursor, &["go"]),
        ),
    );
    assert_eq!(subject, "register agent agent-c (cursor)");
    assert_eq!(s.agents[&aid("agent-c")].registered_by, agent("agent-c"));
}

#[test]
fn an_agent_registers_only_itself() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Codex, &[]),
        ),
        Exit::Refused,
        "register-self-only",
    );
    assert_eq!(
        r.message,
        "agent agent-a may register only itself, not agent-c"
    );
    // Nor re-register another registered agent.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            register("agent-b", Runtime::Custom, &[]),
        ),
        Exit::Refused,
        "register-self-only",
    );
}

#[test]
fn an_identical_re_register_changes_nothing() {
    let mut s = board();
    let before = s.clone();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust"]),
        ),
    );
    assert_eq!(subject, "register agent agent-a (unchanged)");
    assert_eq!(s, before);
    // The same capabilities in another order, duplicated or padded are the
    // same registration.
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T11:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &[" rust", "rust", ""]),
        ),
    );
    assert_eq!(subject, "register agent agent-a (unchanged)");
    assert_eq!(s, before);
}

#[test]
fn changing_the_runtime_re_registers() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::Codex, &["rust"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (codex)");
    let a = &s.agents[&aid("agent-a")];
    assert_eq!(a.runtime, Runtime::Codex);
    assert_eq!(a.capabilities, strings(&["rust"]));
    assert_eq!(a.status, AgentStatus::Active);
    // The first registration is kept: its time and who made it.
    assert_eq!(a.registered_at, t("2026-01-01T09:00:00Z"));
    assert_eq!(a.registered_by, human());
}

#[test]
fn changing_capabilities_re_registers() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust", "git"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (claude-code)");
    assert_eq!(
        s.agents[&aid("agent-a")].capabilities,
        strings(&["git", "rust"])
    );
}

#[test]
fn a_retired_agent_is_re_activated() {
    let mut s = board();
    s.agents.get_mut(&aid("agent-a")).unwrap().status = AgentStatus::Retired;
    // Identical runtime and capabilities: still a re-registration.
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (claude-code)");
    let a = &s.agents[&aid("agent-a")];
    assert_eq!(a.status, AgentStatus::Active);
    assert_eq!(a.registered_at, t("2026-01-01T09:00:00Z"));
}

#[test]
fn capabilities_are_trimmed_sorted_and_deduped() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T10:00:00Z",
            register(
                "agent-c",
                Runtime::Custom,
                &["rust", " git ", "", "rust", "docker", "git"],
            ),
        ),
    );
    assert_eq!(
        s.agents[&aid("agent-c")].capabilities,
        strings(&["docker", "git", "rust"])
    );
}

// --------------------------------------------------------------- todo.add

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
    let change = Change::TodoAdd {
        todo: tid(T2),
        goal: gid("main"),
        title: "  Write\n the   lexer ".to_owned(),
        priority: "P0".parse().unwrap(),
        after: Vec::new(),
        capabilities: Vec::new(),
        scope: Vec::new(),
        validate: None,
        note: None,
    };
    let subject = ok(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T10:00:00Z", change),
    );
    assert_eq!(subject, "add t-000000b2 \"Write the lexer\"");
    let todo = &s.todos[&tid(T2)];
    assert_eq!(todo.title, "Write\n the   lexer");
    assert_eq!(todo.priority.to_string(), "P0");
    assert_eq!(todo.created_by, agent("agent-b"));
    assert!(todo.notes.is_empty());
}

#[test]
fn todo_add_refuses_an_unknown_goal() {
    let mut s = board();
    let Change::TodoAdd {
        todo,
        title,
        priority,
        ..
    } = add(T2, "Lexer")
    else {
        unreachable!()
    };
    let change = Change::TodoAdd {
        todo,
        goal: gid("nope"),
        title,
        priority,
        after: Vec::new(),
        capabilities: Vec::new(),
        scope: Vec::new(),
        validate: None,
        note: None,
    };
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

/// `add(T2, …)` with these lists and note.
fn add_with(after: &[&str], caps: &[&str], scope: &[&str], note: Option<&str>) -> Change {
    Change::TodoAdd {
        todo: tid(T2),
        goal: gid("main"),
        title: "Write the lexer".to_owned(),
        priority: Priority::DEFAULT,
        after: after.iter().map(|h| tid(h)).collect(),
        capabilities: strings(caps),
        scope: strings(scope),
        validate: None,
        note: note.map(str::to_owned),
    }
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

// ------------------------------------------------------------- todo.claim

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
    assert!(r.hint.as_deref().unwrap().starts_with("agent-a won it"));
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

// ----------------------------------------------------------- todo.release

#[test]
fn release_refuses_an_unclaimed_todo() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:10:00Z", release(T1, 0)),
        Exit::Refused,
        "not-claimed",
    );
    assert_eq!(r.message, "t-000000a1 is not claimed");
}

#[test]
fn release_of_another_agents_claim_is_a_conflict() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a, not by agent-b"
    );
    // A human is not the owner either.
    let r = refuse(
        &mut s,
        &op(human(), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(r.message, "t-000000a1 is claimed by agent-a, not by Ada");
}

#[test]
fn the_owner_releases() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 1)),
    );
    assert_eq!(subject, "release t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.updated_at, t("2026-01-01T09:12:00Z"));
    // A second release finds nothing to release.
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:13:00Z", release(T1, 1)),
        Exit::Refused,
        "not-claimed",
    );
}

#[test]
fn release_with_a_stale_epoch_is_a_conflict() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 0)),
        Exit::Conflict,
        "stale-epoch",
    );
}

#[test]
fn release_needs_a_registered_agent() {
    let mut s = claimed_board();
    s.agents.get_mut(&aid("agent-a")).unwrap().status = AgentStatus::Retired;
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:12:00Z", release(T1, 1)),
        Exit::Refused,
        "agent-retired",
    );
}

// ------------------------------------------------------------ todo.update

#[test]
fn update_of_a_claimed_todo_by_a_non_owner_is_a_conflict() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some("hi")),
        ),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a; only its owner may update it"
    );
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Blocked), None),
        ),
        Exit::Conflict,
        "claimed",
    );
    assert_eq!(
        r.message,
        "t-000000a1 is claimed by agent-a; only its owner may update it"
    );
}

#[test]
fn update_refuses_status_claimed_or_done() {
    let mut s = claimed_board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Claimed), None),
        ),
        Exit::Usage,
        "bad-status",
    );
    assert_eq!(
        r.message,
        "--status claimed is set by `loopx todo claim`, not by update"
    );
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Done), Some("finished")),
        ),
        Exit::Usage,
        "bad-status",
    );
    assert_eq!(
        r.message,
        "--status done is set by `loopx todo done`, not by update"
    );
}

#[test]
fn update_needs_something_to_update() {
    let mut s = board();
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:12:00Z", update(T1, 0, None, None)),
        Exit::Usage,
        "nothing-to-update",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some(" ")),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn blocked_by_the_owner_drops_the_claim() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, Some(TodoStatus::Blocked), None),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=blocked"
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Blocked);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(todo.updated_at, t("2026-01-01T09:12:00Z"));
}

#[test]
fn update_appends_a_note_with_actor_and_time() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some(" halfway ")),
        ),
    );
    assert_eq!(subject, "update t-000000a1 \"Write the parser\" note");
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:14:00Z",
            update(T1, 1, Some(TodoStatus::Deferred), Some("later")),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=deferred note"
    );
    let todo = todo1(&s);
    assert_eq!(
        todo.notes,
        vec![
            Note {
                at: t("2026-01-01T09:12:00Z"),
                by: agent("agent-a"),
                text: "halfway".to_owned(),
            },
            Note {
                at: t("2026-01-01T09:14:00Z"),
                by: agent("agent-a"),
                text: "later".to_owned(),
            },
        ]
    );
    assert_eq!(todo.status, TodoStatus::Deferred);
    assert_eq!(todo.claim, None);
}

#[test]
fn a_note_alone_keeps_the_claim() {
    let mut s = claimed_board();
    let before = todo1(&s).claim.clone();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 1, None, Some("halfway")),
        ),
    );
    assert_eq!(todo1(&s).status, TodoStatus::Claimed);
    assert_eq!(todo1(&s).claim, before);
}

#[test]
fn anyone_updates_an_unclaimed_todo() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            update(T1, 0, Some(TodoStatus::Blocked), Some("needs a spec")),
        ),
    );
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:13:00Z",
            update(T1, 0, Some(TodoStatus::Open), None),
        ),
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.notes.len(), 1);
    assert_eq!(todo.notes[0].by, human());
}

#[test]
fn a_done_todo_is_only_reopened() {
    let mut s = board();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", done(T1, 0, None)),
    );
    let r = refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:06:00Z",
            update(T1, 0, None, Some("more")),
        ),
        Exit::Refused,
        "todo-done",
    );
    assert_eq!(r.message, "t-000000a1 is done");
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:06:00Z",
            update(T1, 0, Some(TodoStatus::Blocked), None),
        ),
        Exit::Refused,
        "todo-done",
    );
    let subject = ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:07:00Z",
            update(T1, 0, Some(TodoStatus::Open), Some("not quite")),
        ),
    );
    assert_eq!(
        subject,
        "update t-000000a1 \"Write the parser\" status=open note"
    );
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.done_at, None);
    assert_eq!(todo.updated_at, t("2026-01-01T09:07:00Z"));
    // Ready again.
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:08:00Z",
            claim(T1, 0, LEASE),
        ),
    );
}

#[test]
fn update_with_a_stale_epoch_is_a_conflict() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
    // Also on an unclaimed todo whose epoch moved.
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:13:00Z", release(T1, 1)),
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:14:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Conflict,
        "stale-epoch",
    );
}

#[test]
fn update_needs_a_registered_agent() {
    let mut s = board();
    refuse(
        &mut s,
        &op(
            agent("agent-z"),
            "2026-01-01T09:12:00Z",
            update(T1, 0, None, Some("hi")),
        ),
        Exit::Refused,
        "not-registered",
    );
}

// -------------------------------------------------------------- todo.done

#[test]
fn the_owner_completes_its_claim() {
    let mut s = claimed_board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            done(T1, 1, Some(" merged ")),
        ),
    );
    assert_eq!(subject, "done t-000000a1 \"Write the parser\"");
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Done);
    assert_eq!(todo.done_at, Some(t("2026-01-01T09:15:00Z")));
    assert_eq!(todo.updated_at, t("2026-01-01T09:15:00Z"));
    assert_eq!(todo.claim, None);
    assert_eq!(todo.epoch, 1);
    assert_eq!(
        todo.notes,
        vec![Note {
            at: t("2026-01-01T09:15:00Z"),
            by: agent("agent-a"),
            text: "merged".to_owned(),
        }]
    );
}

#[test]
fn anyone_completes_an_unclaimed_todo() {
    for who in [human(), agent("agent-b")] {
        let mut s = board();
        let subject = ok(&mut s, &op(who, "2026-01-01T09:15:00Z", done(T1, 0, None)));
        assert_eq!(subject, "done t-000000a1 \"Write the parser\"");
        let todo = todo1(&s);
        assert_eq!(todo.status, TodoStatus::Done);
        assert_eq!(todo.done_at, Some(t("2026-01-01T09:15:00Z")));
        assert!(todo.notes.is_empty());
    }
}

#[test]
fn done_twice_is_refused() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 1, None)),
    );
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:16:00Z", done(T1, 1, None)),
        Exit::Refused,
        "todo-done",
    );
    assert_eq!(r.message, "t-000000a1 is already done");
}

#[test]
fn done_by_a_non_owner_is_a_conflict() {
    let mut s = claimed_board();
    for who in [agent("agent-b"), human()] {
        let r = refuse(
            &mut s,
            &op(who, "2026-01-01T09:15:00Z", done(T1, 1, None)),
            Exit::Conflict,
            "claimed",
        );
        assert_eq!(
            r.message,
            "t-000000a1 is claimed by agent-a; only its owner may complete it"
        );
    }
    // Even once the lease has expired: only a steal moves it.
    refuse(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T10:00:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "claimed",
    );
}

#[test]
fn done_refuses_a_stale_epoch_and_an_empty_note() {
    let mut s = claimed_board();
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:15:00Z", done(T1, 0, None)),
        Exit::Conflict,
        "stale-epoch",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:15:00Z",
            done(T1, 1, Some("")),
        ),
        Exit::Usage,
        "empty-text",
    );
}

#[test]
fn a_robbed_owner_is_fenced_off() {
    // agent-a's lease expires, agent-b steals it (epoch 2): agent-a's late
    // completion is a conflict, whether agent-b still holds it or released it.
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:30:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:31:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "claimed",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:31:00Z",
            claim(T1, 1, LEASE),
        ),
        Exit::Conflict,
        "claimed",
    );
    ok(
        &mut s,
        &op(agent("agent-b"), "2026-01-01T09:32:00Z", release(T1, 2)),
    );
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:33:00Z", done(T1, 1, None)),
        Exit::Conflict,
        "stale-epoch",
    );
    assert_eq!(
        r.message,
        "t-000000a1 changed hands since epoch 1 was read: it is now at epoch 2"
    );
}

#[test]
fn todo_ops_refuse_an_unknown_todo() {
    let mut s = board();
    for change in [
        release(T2, 0),
        update(T2, 0, None, Some("x")),
        done(T2, 0, None),
    ] {
        refuse(
            &mut s,
            &op(agent("agent-a"), "2026-01-01T09:15:00Z", change),
            Exit::Error,
            "unknown-todo",
        );
    }
}

//! Fixtures shared by the op unit tests: ids, actors, change builders, a
//! board built through `apply` itself, and the `ok`/`refuse` checks. After
//! every refusal the state must be exactly as it was before the call
//! (`refuse` checks it).

pub(super) use super::*;
pub(super) use crate::error::Exit;
pub(super) use crate::model::{
    AgentId, AgentStatus, Claim, EvidenceId, EvidenceKind, GateId, GateKind, Goal, GoalStatus,
    Note, Outcome, Priority, QuotaPolicy, Runtime, Todo, TodoStatus, Validation,
    evidence::{Artifact, Code},
    run::CommandRun,
};
pub(super) use crate::time::{Span, Timestamp};

// ---------------------------------------------------------------- helpers

/// The board's todo.
pub(super) const T1: &str = "000000a1";
/// Another todo the tests add.
pub(super) const T2: &str = "000000b2";

pub(super) fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

pub(crate) fn human() -> Actor {
    Actor::Human {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

pub(crate) fn agent(id: &str) -> Actor {
    Actor::Agent(aid(id))
}

pub(super) fn aid(id: &str) -> AgentId {
    AgentId::new(id).unwrap()
}

pub(super) fn gid(id: &str) -> GoalId {
    GoalId::new(id).unwrap()
}

pub(super) fn tid(hex: &str) -> TodoId {
    TodoId::from_hex(hex)
}

pub(super) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

pub(crate) fn op(actor: Actor, at: &str, change: Change) -> Op {
    Op {
        id: OpId::from_hex("0000000000000001"),
        at: t(at),
        actor,
        signature: None,
        change,
    }
}

/// Applies an op that must succeed and returns its subject.
#[track_caller]
pub(super) fn ok(state: &mut State, op: &Op) -> String {
    ok_effect(state, op).subject
}

/// Applies an op that must succeed and returns what it did.
#[track_caller]
pub(super) fn ok_effect(state: &mut State, op: &Op) -> Effect {
    match apply(state, op) {
        Ok(e) => e,
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
pub(super) fn refuse(state: &mut State, op: &Op, exit: Exit, code: &str) -> Refusal {
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

pub(super) fn init(goal: Option<&str>, objective: Option<&str>) -> Change {
    Change::Init(Init {
        goal: goal.map(gid),
        objective: objective.map(str::to_owned),
    })
}

pub(super) fn goal_add(goal: &str, objective: &str) -> Change {
    Change::GoalAdd(GoalAdd {
        goal: gid(goal),
        objective: objective.to_owned(),
    })
}

/// A `goal.set` of `main` that sets nothing; fill in the fields.
pub(super) fn goal_set() -> Change {
    Change::GoalSet(GoalSet::new(gid("main")))
}

pub(super) fn set_status(status: GoalStatus) -> Change {
    goal_set_with(None, Some(status), None, None)
}

pub(super) fn register(id: &str, runtime: Runtime, caps: &[&str]) -> Change {
    Change::AgentRegister(AgentRegister {
        agent: aid(id),
        runtime,
        capabilities: strings(caps),
        goals: None,
    })
}

pub(super) fn add(hex: &str, title: &str) -> Change {
    Change::TodoAdd(TodoAdd::new(
        tid(hex),
        gid("main"),
        title.to_owned(),
        Priority::DEFAULT,
    ))
}

pub(super) fn claim(hex: &str, epoch: u64, lease: Span) -> Change {
    Change::TodoClaim(TodoClaim {
        todo: tid(hex),
        epoch,
        lease,
    })
}

pub(super) fn release(hex: &str, epoch: u64) -> Change {
    Change::TodoRelease(TodoRelease {
        todo: tid(hex),
        epoch,
        force: false,
    })
}

pub(super) fn update(
    hex: &str,
    epoch: u64,
    status: Option<TodoStatus>,
    note: Option<&str>,
) -> Change {
    Change::TodoUpdate(TodoUpdate {
        todo: tid(hex),
        epoch,
        status,
        note: note.map(str::to_owned),
    })
}

pub(super) fn done(hex: &str, epoch: u64, note: Option<&str>) -> Change {
    Change::TodoDone(TodoDone {
        todo: tid(hex),
        epoch,
        note: note.map(str::to_owned),
        validation: None,
    })
}

/// Ten minutes, the lease most tests claim with.
pub(super) const LEASE: Span = Span::minutes(10);

/// A board built through `apply` itself: goal `main`, agents `agent-a`
/// (claude-code, rust) and `agent-b` (codex, no capability), and one open
/// todo T1 "Write the parser".
pub(super) fn board() -> State {
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
pub(super) fn claimed_board() -> State {
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

pub(super) fn todo1(s: &State) -> &Todo {
    &s.todos[&tid(T1)]
}

/// A `goal.set` of `main` with these fields.
pub(super) fn goal_set_with(
    objective: Option<&str>,
    status: Option<GoalStatus>,
    quota_slots: Option<u32>,
    quota_window: Option<Span>,
) -> Change {
    Change::GoalSet(GoalSet {
        objective: objective.map(str::to_owned),
        status,
        quota_slots,
        quota_window,
        ..GoalSet::new(gid("main"))
    })
}

/// `add(T2, …)` with these lists and note.
pub(super) fn add_with(
    after: &[&str],
    caps: &[&str],
    scope: &[&str],
    note: Option<&str>,
) -> Change {
    Change::TodoAdd(TodoAdd {
        after: after.iter().map(|h| tid(h)).collect(),
        capabilities: strings(caps),
        scope: strings(scope),
        note: note.map(str::to_owned),
        ..TodoAdd::new(
            tid(T2),
            gid("main"),
            "Write the lexer".to_owned(),
            Priority::DEFAULT,
        )
    })
}

/// A record of `argv` that exited with `exit` (None: killed).
pub(super) fn command_run(argv: &[&str], exit: Option<i32>) -> CommandRun {
    CommandRun {
        exit,
        output_tail: "test result: 3 passed\n".to_owned(),
        ..CommandRun::assumed_passing(&strings(argv))
    }
}

/// An `evidence.add` of kind `kind` on goal `main`, optionally on a todo
/// and with a command's run.
pub(super) fn evidence(
    hex: &str,
    todo: Option<&str>,
    kind: EvidenceKind,
    run: Option<CommandRun>,
) -> Change {
    Change::EvidenceAdd(EvidenceAdd {
        todo: todo.map(tid),
        run,
        ..EvidenceAdd::new(
            EvidenceId::from_hex(hex),
            gid("main"),
            kind,
            "cargo test".to_owned(),
        )
    })
}

/// Applies an op that must succeed and returns the evidence records it
/// wrote.
#[track_caller]
pub(super) fn ok_evidence(state: &mut State, op: &Op) -> Vec<crate::model::Evidence> {
    ok_effect(state, op).evidence
}

/// Applies an op that must succeed and returns the todos it moved to the
/// archive.
#[track_caller]
pub(super) fn ok_archived(state: &mut State, op: &Op) -> Vec<Todo> {
    ok_effect(state, op).archived.into_values().collect()
}

/// A `turn.refresh` of goal `main`.
pub(super) fn refresh(outcome: Outcome, todo: Option<&str>, next: Option<&str>) -> Change {
    Change::RefreshState(RefreshState {
        turn: Some("7a1e".to_owned()),
        todo: todo.map(tid),
        next_action: next.map(str::to_owned),
        ..RefreshState::new(gid("main"), outcome)
    })
}

/// A `quota.spend` on goal `main` for turn `turn`, issued at `issued`.
pub(super) fn spend(turn: &str, issued: &str) -> Change {
    Change::QuotaSpend(QuotaSpend {
        goal: gid("main"),
        turn: turn.to_owned(),
        issued: t(issued),
    })
}

/// A `quota.void` of `agent`'s spend for `turn`.
pub(super) fn void(agent: &str, turn: &str, reason: &str) -> Change {
    Change::QuotaVoid(QuotaVoid {
        agent: aid(agent),
        turn: turn.to_owned(),
        reason: reason.to_owned(),
    })
}

/// One change of every kind, with every optional field set, so a round trip
/// through any format shows a field it drops. The `match` has no wildcard:
/// a new kind does not compile until it has a sample here.
pub(crate) fn every_change() -> Vec<Change> {
    let run = CommandRun {
        argv: strings(&["cargo", "test", "--", "--quiet"]),
        argv_sha256: Some("cd".repeat(32)),
        exit: Some(101),
        timed_out: true,
        error: Some("no such file".to_owned()),
        duration_ms: 1234,
        output_sha256: "ab".repeat(32),
        output_redacted: true,
        output_tail: "line \"one\"\nline two\n".to_owned(),
    };
    let all = vec![
        init(Some("main"), Some("Ship the parser")),
        goal_add("docs", "Write the manual"),
        Change::GoalSet(GoalSet {
            objective: Some("Ship the parser, fast".to_owned()),
            status: Some(GoalStatus::Paused),
            scope: Some(strings(&["src/**", "docs/*.md"])),
            guards: Some(strings(&["no new dependencies"])),
            quota_slots: Some(3),
            quota_window: Some(Span::hours(6)),
            budget: Some(BudgetSet {
                agent: Some(aid("agent-a")),
                usd: Some(crate::model::usage::Usd(2_500_000)),
                tokens: Some(5_000_000),
                window: Some(Span::hours(12)),
            }),
            auto_resume: Some(true),
            stall_after: Some(5),
            ..GoalSet::new(gid("main"))
        }),
        register("agent-a", Runtime::ClaudeCode, &["rust", "docs"]),
        Change::TodoAdd(TodoAdd {
            todo: tid(T1),
            goal: gid("main"),
            title: "Write the parser: \"quoted\" \\ and ünïcode".to_owned(),
            priority: "P0".parse().expect("a priority"),
            after: vec![tid(T2)],
            capabilities: strings(&["rust"]),
            scope: strings(&["src/parser/**"]),
            note: Some("a note\nover two lines".to_owned()),
            validate: Some(Validation {
                argv: strings(&["cargo", "test"]),
                timeout: Span::minutes(5),
            }),
        }),
        claim(T1, 3, LEASE),
        Change::TodoRenew(TodoRenew {
            todo: tid(T1),
            epoch: 4,
            lease: Span::hours(2),
        }),
        Change::TodoHandoff(TodoHandoff {
            todo: tid(T1),
            epoch: 4,
            to: aid("agent-b"),
            lease: LEASE,
            note: "the lexer is done".to_owned(),
        }),
        Change::TodoRelease(TodoRelease {
            todo: tid(T1),
            epoch: 5,
            force: true,
        }),
        update(T1, 5, Some(TodoStatus::Blocked), Some("waiting on CI")),
        Change::TodoDone(TodoDone {
            todo: tid(T1),
            epoch: 6,
            note: Some("all green".to_owned()),
            validation: Some(run.clone()),
        }),
        Change::TodoEdit(TodoEdit {
            todo: tid(T1),
            epoch: 6,
            title: Some("Parser".to_owned()),
            priority: Some("P4".parse().expect("a priority")),
            after: Some(Vec::new()),
            note: Some("renamed".to_owned()),
            validate: Some(Validation {
                argv: vec!["cargo".to_owned(), "test".to_owned()],
                timeout: Span::minutes(5),
            }),
        }),
        Change::TodoTrust(TodoTrust {
            todo: tid(T1),
            digest: "sha256:00".to_owned(),
        }),
        Change::SignerAnnounce(SignerAnnounce {
            name: crate::model::SignerName::new("ada").expect("a slug"),
            key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30"
                .to_owned(),
        }),
        Change::TodoReopen(TodoReopen {
            todo: tid(T1),
            epoch: 6,
        }),
        Change::TodoArchive(TodoArchive {
            todos: vec![tid(T1), tid(T2)],
        }),
        Change::AgentRetire(AgentRetire {
            agent: aid("agent-b"),
        }),
        Change::GateOpen(GateOpen {
            gate: GateId::from_hex("0000c0de"),
            goal: gid("main"),
            question: "Which parser library?".to_owned(),
            options: strings(&["nom", "winnow"]),
            kind: GateKind::Publish,
            blocks: Blocks::Todo(tid(T1)),
        }),
        Change::GateAnswer(GateAnswer {
            gate: GateId::from_hex("0000c0de"),
            choice: "winnow".to_owned(),
            note: Some("faster".to_owned()),
        }),
        Change::GateWithdraw(GateWithdraw {
            gate: GateId::from_hex("0000c0de"),
        }),
        Change::GateNotified(GateNotified {
            gate: GateId::from_hex("0000c0de"),
        }),
        Change::EvidenceAdd(EvidenceAdd {
            evidence: EvidenceId::from_hex("0000e1e1"),
            goal: gid("main"),
            todo: Some(tid(T1)),
            kind: EvidenceKind::Artifact,
            summary: "the benchmark".to_owned(),
            code: Some(Code {
                head: Some("0123456789abcdef0123456789abcdef01234567".to_owned()),
                dirty: true,
            }),
            run: Some(run),
            artifact: Some(Artifact {
                path: "bench/out.txt".to_owned(),
                sha256: "cd".repeat(32),
                bytes: 4096,
            }),
        }),
        Change::RefreshState(RefreshState {
            goal: gid("main"),
            outcome: Outcome::Blocked,
            turn: Some("7a1e".to_owned()),
            todo: Some(tid(T1)),
            next_action: Some("ask about the grammar".to_owned()),
            progress: Some("0123456789abcdef".to_owned()),
        }),
        spend("turn-1", "2026-01-01T09:10:00Z"),
        void("agent-a", "turn-1", "a test run"),
        Change::UsageRecord(UsageRecord {
            goal: gid("main"),
            turn: "0123456789abcdef".to_owned(),
            usage: crate::model::usage::Usage {
                input_tokens: 1200,
                output_tokens: 300,
                cached_input_tokens: 800,
                cost_usd: Some(crate::model::usage::Usd(12_500)),
                estimated: true,
                model: Some("claude-sonnet-4-5".to_owned()),
                runtime: Some("claude-code".to_owned()),
            },
        }),
        Change::QuotaPark(QuotaPark {
            agent: aid("agent-a"),
            goal: gid("main"),
            until: t("2026-01-01T15:00:00Z"),
            reason: Some("usage limit; resets 3pm UTC".to_owned()),
        }),
        Change::QuotaResume(QuotaResume {
            agent: aid("agent-a"),
        }),
        Change::SignerRequire(SignerRequire {
            signatures: crate::model::Signatures::Humans,
        }),
        Change::MachinePropose(MachinePropose {
            machine: crate::model::MachineName::new("m1").unwrap(),
            key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICGl6j1VyDP5Zet7jhQpM3382MfOOlu8vhJCMmdy7t6x"
                .to_owned(),
        }),
        Change::MachineAdmit(MachineAdmit {
            machine: crate::model::MachineName::new("m1").unwrap(),
            fingerprint: "SHA256:lN0nopXDHgJc8FKGM1G8FIEixvVsaNRQiMoP2BODGoE".to_owned(),
            agents: vec!["agent-*".to_owned()],
        }),
        Change::MachineRevoke(MachineRevoke {
            machine: crate::model::MachineName::new("m1").unwrap(),
        }),
        Change::GoalSplit(GoalSplit {
            goal: None,
            moved: None,
        }),
        Change::SettingsSet(crate::op::SettingsSet {
            lease: Some(crate::time::Span::minutes(30)),
            clock_skew: Some(crate::time::Span::minutes(2)),
            stuck_after: Some(crate::time::Span::minutes(10)),
            prices: std::collections::BTreeMap::from([(
                "claude-opus-5-5".to_owned(),
                crate::model::TeamPrice {
                    input: 5.0,
                    output: 25.0,
                    cached_input: Some(0.5),
                },
            )]),
            unprice: Vec::new(),
            agent_slots: None,
            agent_window: None,
        }),
        Change::SignerApprove(crate::op::SignerApprove {
            name: crate::model::SignerName::new("ada").expect("a slug"),
            key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30"
                .to_owned(),
        }),
        Change::SignerReclaim(crate::op::SignerReclaim {
            name: crate::model::SignerName::new("ada").expect("a slug"),
            key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30"
                .to_owned(),
        }),
        Change::Settle(Settle {
            turn: "turn-2".to_owned(),
            steps: vec![
                done(T1, 1, None),
                refresh(Outcome::Advanced, None, None),
                spend("turn-2", "2026-01-01T09:10:00Z"),
            ],
        }),
    ];
    for c in &all {
        match c {
            Change::Init(_)
            | Change::GoalAdd(_)
            | Change::GoalSet(_)
            | Change::AgentRegister(_)
            | Change::TodoAdd(_)
            | Change::TodoClaim(_)
            | Change::TodoRenew(_)
            | Change::TodoHandoff(_)
            | Change::TodoRelease(_)
            | Change::TodoUpdate(_)
            | Change::TodoDone(_)
            | Change::TodoEdit(_)
            | Change::TodoReopen(_)
            | Change::TodoTrust(_)
            | Change::SignerAnnounce(_)
            | Change::SignerRequire(_)
            | Change::MachinePropose(_)
            | Change::MachineAdmit(_)
            | Change::MachineRevoke(_)
            | Change::TodoArchive(_)
            | Change::AgentRetire(_)
            | Change::GoalSplit(_)
            | Change::GateOpen(_)
            | Change::GateAnswer(_)
            | Change::GateWithdraw(_)
            | Change::GateNotified(_)
            | Change::EvidenceAdd(_)
            | Change::RefreshState(_)
            | Change::QuotaSpend(_)
            | Change::QuotaVoid(_)
            | Change::UsageRecord(_)
            | Change::QuotaPark(_)
            | Change::QuotaResume(_)
            | Change::SettingsSet(_)
            | Change::SignerApprove(_)
            | Change::SignerReclaim(_)
            | Change::Settle(_) => {}
        }
    }
    all
}

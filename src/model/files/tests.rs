//! Unit tests of the state as files: every file kind round trips through its
//! canonical TOML at the path its id gives, and a file that does not parse
//! or does not belong where it is refuses with `corrupt-state`.

use std::collections::BTreeMap;

use super::*;
use crate::error::Code as ErrorCode;
use crate::model::agent::{LastTurn, Outcome, Parked, Runtime};
use crate::model::evidence::{Artifact, Code, EvidenceKind};
use crate::model::gate::{Answer, Blocks, GateKind, GateStatus};
use crate::model::quota::{Ledger, Spend, Void};
use crate::model::run::CommandRun;
use crate::model::todo::{Claim, EvidenceRef, Note, TodoStatus, Validation};
use crate::model::{Actor, AgentStatus, EvidenceId, GoalStatus, QuotaPolicy, Settings};
use crate::time::{Span, Timestamp};

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).expect("a time")
}

fn human() -> Actor {
    Actor::Human {
        name: "Ada Lovelace".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

fn agent_a() -> AgentId {
    AgentId::new("agent-a").expect("an id")
}

fn main_goal() -> GoalId {
    GoalId::new("main").expect("an id")
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn run() -> CommandRun {
    CommandRun {
        argv: strings(&["cargo", "test"]),
        argv_sha256: Some("cd".repeat(32)),
        exit: Some(1),
        timed_out: false,
        error: None,
        duration_ms: 820,
        output_sha256: "ab".repeat(32),
        output_redacted: true,
        output_tail: "test parser ... FAILED\n\"quoted\" and ünïcode\n".to_owned(),
    }
}

/// A todo with every optional field set.
fn todo(hex: &str) -> Todo {
    Todo {
        id: TodoId::from_hex(hex),
        goal: main_goal(),
        title: "Write the parser: \"quoted\"".to_owned(),
        priority: "P1".parse().expect("a priority"),
        status: TodoStatus::Claimed,
        after: vec![TodoId::from_hex("000000b2")],
        capabilities: strings(&["rust"]),
        scope: strings(&["src/parser/**"]),
        validate: Some(Validation {
            argv: strings(&["cargo", "test"]),
            timeout: Span::minutes(5),
        }),
        validate_from: None,
        epoch: 3,
        created_at: t("2026-01-01T09:00:00Z"),
        created_by: human(),
        updated_at: t("2026-01-01T09:30:00Z"),
        done_at: Some(t("2026-01-01T09:20:00Z")),
        claim: Some(Claim {
            owner: agent_a(),
            since: t("2026-01-01T09:25:00Z"),
            lease_until: t("2026-01-01T10:10:00Z"),
        }),
        notes: vec![Note {
            at: t("2026-01-01T09:26:00Z"),
            by: Actor::Agent(agent_a()),
            text: "a note\nover two lines".to_owned(),
        }],
        last_evidence: Some(EvidenceRef {
            id: EvidenceId::from_hex("0000e1e1"),
            at: t("2026-01-01T09:27:00Z"),
            by: Actor::Agent(agent_a()),
            passed: false,
        }),
    }
}

/// A state with one entity of every kind that lives in the state, each with
/// every optional field set, and settings that are not the defaults.
fn full_state() -> State {
    let goal = Goal {
        id: main_goal(),
        objective: "Ship the parser".to_owned(),
        status: GoalStatus::Paused,
        scope: strings(&["src/**"]),
        guards: strings(&["no new dependencies"]),
        quota: QuotaPolicy {
            slots: 3,
            window: Span::hours(6),
        },
        budget: crate::model::usage::Budgets {
            goal: Some(crate::model::usage::Budget {
                usd: Some(crate::model::usage::Usd(20_000_000)),
                tokens: Some(5_000_000),
                window: Span::hours(24),
            }),
            agents: [(
                agent_a(),
                crate::model::usage::Budget {
                    usd: Some(crate::model::usage::Usd(2_500_000)),
                    tokens: None,
                    window: Span::hours(12),
                },
            )]
            .into(),
        },
        auto_resume: true,
        lease: Some(Span::hours(3)),
        stall_after: 5,
        created_at: t("2026-01-01T09:00:00Z"),
        created_by: human(),
        updated_at: t("2026-01-01T09:01:00Z"),
    };
    let agent = Agent {
        id: agent_a(),
        runtime: Runtime::ClaudeCode,
        status: AgentStatus::Retired,
        capabilities: strings(&["docs", "rust"]),
        registered_at: t("2026-01-01T09:00:00Z"),
        registered_by: human(),
        last_writeback: Some(t("2026-01-01T09:27:00Z")),
        last_turn: Some(LastTurn {
            at: t("2026-01-01T09:28:00Z"),
            goal: main_goal(),
            outcome: Outcome::Blocked,
            turn: Some("7a1e".to_owned()),
            todo: Some(TodoId::from_hex("000000a1")),
            next_action: Some("ask about the grammar".to_owned()),
            digest: "0123456789abcdef".to_owned(),
        }),
        parked: Some(Parked {
            until: t("2026-01-01T15:00:00Z"),
            goal: main_goal(),
            at: t("2026-01-01T09:29:00Z"),
            by: Actor::Agent(agent_a()),
            reason: Some("usage limit; resets 3pm UTC".to_owned()),
        }),
        progress: Some(crate::model::Progress {
            todo: TodoId::from_hex("000000a1"),
            fingerprint: "fedcba9876543210".to_owned(),
            turns: vec![t("2026-01-01T09:26:00Z"), t("2026-01-01T09:28:00Z")],
            gate: Some(GateId::from_hex("0000c0de")),
        }),
        goals: vec![main_goal()],
    };
    let gate = Gate {
        id: GateId::from_hex("0000c0de"),
        goal: main_goal(),
        question: "Which parser library?".to_owned(),
        options: strings(&["nom", "winnow"]),
        kind: GateKind::Permission,
        blocks: Blocks::Todo(TodoId::from_hex("000000a1")),
        status: GateStatus::Answered,
        opened_at: t("2026-01-01T09:02:00Z"),
        opened_by: Actor::Agent(agent_a()),
        answer: Some(Answer {
            choice: "winnow".to_owned(),
            by: human(),
            at: t("2026-01-01T09:03:00Z"),
            note: Some("faster".to_owned()),
            signature: None,
        }),
        withdrawn: None,
        notified: None,
        budget: true,
    };
    let ledger = Ledger {
        agent: agent_a(),
        usage: vec![crate::model::usage::Entry {
            turn: "0123456789abcdef".to_owned(),
            goal: main_goal(),
            at: t("2026-01-01T09:12:00Z"),
            usage: crate::model::usage::Usage {
                input_tokens: 1200,
                output_tokens: 300,
                cached_input_tokens: 800,
                cost_usd: Some(crate::model::usage::Usd(12_345)),
                estimated: true,
                model: Some("gpt-5".to_owned()),
                runtime: Some("codex".to_owned()),
            },
        }],
        spends: vec![
            Spend {
                turn: "turn-1".to_owned(),
                goal: main_goal(),
                at: t("2026-01-01T09:10:00Z"),
                void: Some(Void {
                    by: human(),
                    at: t("2026-01-01T09:11:00Z"),
                    reason: "a test run".to_owned(),
                }),
            },
            Spend {
                turn: "turn-2".to_owned(),
                goal: main_goal(),
                at: t("2026-01-01T09:12:00Z"),
                void: None,
            },
        ],
    };
    let todo = todo("000000a1");
    State {
        meta: Meta {
            format: FORMAT,
            goal_refs: false,
            settings: Settings {
                lease: Span::hours(2),
                clock_skew: Span::seconds(5),
                stuck_after: Some(Span::minutes(20)),
                agent_quota: Some(crate::model::QuotaPolicy {
                    slots: 20,
                    window: Span::hours(12),
                }),
                signatures: crate::model::Signatures::Off,
                prices: BTreeMap::from([(
                    "claude-opus-5-5".to_owned(),
                    crate::model::TeamPrice {
                        input: 5.0,
                        output: 25.0,
                        cached_input: None,
                    },
                )]),
            },
        },
        goals: BTreeMap::from([(goal.id.clone(), goal)]).into(),
        agents: BTreeMap::from([(agent.id.clone(), agent.clone())]).into(),
        todos: BTreeMap::from([(todo.id.clone(), todo)]).into(),
        gates: BTreeMap::from([(gate.id.clone(), gate)]).into(),
        quota: BTreeMap::from([(ledger.agent.clone(), ledger)]).into(),
        signers: Default::default(),
        machines: BTreeMap::from([(
            crate::model::MachineName::new("m1").unwrap(),
            crate::model::Machine {
                name: crate::model::MachineName::new("m1").unwrap(),
                key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICGl6j1VyDP5Zet7jhQpM3382MfOOlu8vhJCMmdy7t6x".to_owned(),
                proposed_by: crate::model::Actor::Agent(agent.id.clone()),
                proposed_at: t("2026-01-01T09:00:00Z"),
                admitted_by: Some(crate::model::Actor::Human {
                    name: "Ada".to_owned(),
                    email: "ada@example.com".to_owned(),
                }),
                admitted_at: Some(t("2026-01-01T09:01:00Z")),
                agents: vec!["agent-*".to_owned()],
                revoked_by: None,
                revoked_at: None,
            },
        )])
        .into(),
    }
}

fn evidence() -> Evidence {
    Evidence {
        id: EvidenceId::from_hex("0000e1e1"),
        goal: main_goal(),
        todo: Some(TodoId::from_hex("000000a1")),
        kind: EvidenceKind::Artifact,
        summary: "the benchmark".to_owned(),
        by: Actor::Agent(agent_a()),
        at: t("2026-01-01T09:27:00Z"),
        code: Some(Code {
            head: Some("0123456789abcdef0123456789abcdef01234567".to_owned()),
            dirty: true,
        }),
        run: Some(run()),
        artifact: Some(Artifact {
            path: "bench/out.txt".to_owned(),
            sha256: "cd".repeat(32),
            bytes: 4096,
        }),
    }
}

/// The files as `(path, bytes)`, what a tree read gives `decode`.
fn written(changes: &[Change]) -> Vec<(&str, &[u8])> {
    changes
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_deref().expect("a write, not a delete")))
        .collect()
}

#[test]
fn every_file_of_the_state_round_trips() {
    let state = full_state();
    let files = encode_all(&state);
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "loopx.toml",
            "goals/main.toml",
            "agents/agent-a.toml",
            "todos/00/t-000000a1.toml",
            "gates/g-0000c0de.toml",
            "quota/agent-a.toml",
            "machines/m1.toml",
        ]
    );
    let kinds: Vec<Kind> = paths.iter().map(|p| kind_of(p)).collect();
    assert_eq!(
        kinds,
        [
            Kind::Meta,
            Kind::Goal,
            Kind::Agent,
            Kind::Todo,
            Kind::Gate,
            Kind::Quota,
            Kind::Machine
        ]
    );
    for (path, bytes) in written(&files) {
        check_file(path, bytes).unwrap_or_else(|r| panic!("{path}: {}", r.message));
    }
    assert_eq!(decode(written(&files)), Ok(state));
}

/// The local cache (`crate::cache`) stores `State` as JSON through its own
/// serde: every field that the TOML files keep must survive it too.
#[test]
fn the_whole_state_round_trips_through_the_cache_encoding() {
    let state = full_state();
    let json = serde_json::to_vec(&state).unwrap();
    let back: State = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, state);
    // And the state the TOML files give is the one the cache gives.
    let files = encode_all(&state);
    let from_files = decode(written(&files)).unwrap();
    let again: State = serde_json::from_slice(&serde_json::to_vec(&from_files).unwrap()).unwrap();
    assert_eq!(again, from_files);
}

#[test]
fn evidence_and_archived_todos_round_trip_outside_the_state() {
    let state = full_state();
    let e = evidence();
    let mut archive = BTreeMap::new();
    let mut done = todo("000000f0");
    done.status = TodoStatus::Done;
    done.claim = None;
    archive.insert(done.id.clone(), done);
    let records = Records {
        evidence: std::slice::from_ref(&e),
        archived: Some(&archive),
    };
    let files = changes(&state, &state, &records);
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "evidence/2026-01/00/e-0000e1e1.toml",
            "archive/todos/00/t-000000f0.toml"
        ]
    );
    assert_eq!(kind_of(paths[0]), Kind::Evidence);
    assert_eq!(kind_of(paths[1]), Kind::Archived);
    for (path, bytes) in written(&files) {
        check_file(path, bytes).unwrap_or_else(|r| panic!("{path}: {}", r.message));
    }
    assert_eq!(decode_evidence(written(&files)), Ok(vec![e]));
    assert_eq!(decode_archive(written(&files)), Ok(archive));
    // They are not part of the live state.
    let all = encode_all(&state);
    let mut with_meta = written(&all);
    with_meta.extend(written(&files));
    assert_eq!(decode(with_meta), Ok(state));
}

#[test]
fn encoding_is_canonical_and_only_changed_entities_are_written() {
    let state = full_state();
    assert_eq!(encode_all(&state), encode_all(&state.clone()));
    assert!(changes(&state, &state, &Records::default()).is_empty());
    let mut next = state.clone();
    let id = TodoId::from_hex("000000a1");
    next.todos.get_mut(&id).expect("a todo").epoch += 1;
    next.goals.clear();
    assert_eq!(
        changes(&state, &next, &Records::default()),
        vec![
            ("goals/main.toml".to_owned(), None),
            (
                "todos/00/t-000000a1.toml".to_owned(),
                Some(encode(&next.todos[&id]))
            ),
        ]
    );
}

#[test]
fn a_file_at_the_wrong_path_is_corrupt() {
    let state = full_state();
    let files = encode_all(&state);
    let (_, goal) = files
        .iter()
        .find(|(p, _)| p == "goals/main.toml")
        .expect("the goal");
    let goal = goal.as_deref().expect("bytes");
    let r = check_file("goals/other.toml", goal).expect_err("misplaced");
    assert_eq!(r.code, "corrupt-state");
    assert_eq!(
        r.message,
        "the state file goals/other.toml is corrupt: its id belongs at goals/main.toml"
    );
    let mut moved = written(&files);
    moved.push(("goals/other.toml", goal));
    assert_eq!(
        decode(moved).map_err(|r| r.code),
        Err(ErrorCode::CorruptState)
    );
}

#[test]
fn a_file_that_does_not_parse_is_corrupt_and_names_its_line() {
    let r = check_file(
        "todos/00/t-000000a1.toml",
        b"id = \"t-000000a1\"\nepoch = \"x\"\n",
    )
    .expect_err("not a todo");
    assert_eq!(r.code, "corrupt-state");
    assert!(
        r.message
            .starts_with("the state file todos/00/t-000000a1.toml is corrupt: "),
        "{}",
        r.message
    );
    assert!(!r.message.contains('\n'), "one line: {}", r.message);
    let r = check_file("goals/main.toml", &[0xff, 0xfe]).expect_err("not UTF-8");
    assert!(r.message.contains("not UTF-8"), "{}", r.message);
}

#[test]
fn unknown_paths_are_ignored_and_a_newer_format_is_refused() {
    let state = full_state();
    let all = encode_all(&state);
    let mut files = written(&all);
    files.push(("notes/readme.md", b"hello"));
    files.push(("todos/t-000000a1.toml", b"not even toml"));
    assert_eq!(kind_of("notes/readme.md"), Kind::Unknown);
    assert_eq!(kind_of("todos/t-000000a1.toml"), Kind::Unknown);
    assert_eq!(decode(files.clone()), Ok(state));

    let newer = format!("format = {}\n", FORMAT + 1);
    files.retain(|(p, _)| *p != META);
    files.push((META, newer.as_bytes()));
    let r = decode(files).expect_err("too new");
    assert_eq!(
        (r.code, r.hint.map(|h| h.to_string())),
        (ErrorCode::FormatTooNew, Some("upgrade loopx".to_owned()))
    );
    let r = check_meta(None).expect_err("no meta");
    assert_eq!(r.code, "corrupt-state");
}

/// Every format version up to `FORMAT` has its line in the comment on
/// `FORMAT` and its row in docs/format.md's "Versions and upgrades": a bump
/// cannot land undocumented.
#[test]
fn every_format_version_is_documented() {
    let source = include_str!("../mod.rs");
    let doc = include_str!("../../../docs/format.md");
    let section = doc
        .split("## 14. Versions and upgrades")
        .nth(1)
        .expect("docs/format.md has the section");
    for n in 1..=FORMAT {
        assert!(
            source.contains(&format!("/// - {n} (")),
            "the comment on FORMAT in src/model/mod.rs has no line for format {n}"
        );
        assert!(
            section.contains(&format!("\n| {n} |")),
            "docs/format.md, Versions and upgrades, has no row for format {n}"
        );
    }
}

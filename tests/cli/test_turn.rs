//! The agent turn: should-run → claim → work → writeback → refresh-state →
//! spend-slot, and the same through settle.

use crate::common::{TestEnv, assert_text, settle};

fn token(env: &TestEnv, agent: &str) -> String {
    let v = env
        .agent(agent, &["quota", "should-run", "--json"])
        .ok()
        .json();
    assert_eq!(v["decision"], "run", "{v}");
    v["turn_token"].as_str().unwrap().to_owned()
}

#[test]
fn the_five_step_turn_by_two_agents() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let u = env.add("Write the docs", &[]);
    for (agent, todo) in [("agent-a", &t), ("agent-b", &u)] {
        let v = env
            .agent(agent, &["quota", "should-run", "--json"])
            .ok()
            .json();
        assert_eq!(v["decision"], "run");
        assert_eq!(
            v["todo"]["id"],
            todo.as_str(),
            "{agent} is offered the best ready todo"
        );
        assert_eq!(v["todo"]["own"], false);
        let tok = v["turn_token"].as_str().unwrap().to_owned();
        env.agent(agent, &["todo", "claim", todo]).ok();
        env.agent(agent, &["todo", "update", todo, "--note", "halfway"])
            .ok();
        env.agent(
            agent,
            &[
                "refresh-state",
                "--outcome",
                "advanced",
                "--turn",
                &tok,
                "--next-action",
                "finish it",
            ],
        )
        .ok();
        let out = env
            .agent(agent, &["quota", "spend-slot", "--turn", &tok])
            .ok();
        assert_text(
            &out.stdout,
            &format!(
                "Spent a slot for turn {}: 47 left.\n",
                tok.split(':').nth(3).unwrap()
            ),
        );
        // Its own claim comes first next time.
        let v = env
            .agent(agent, &["quota", "should-run", "--json"])
            .ok()
            .json();
        assert_eq!(v["todo"]["id"], todo.as_str());
        assert_eq!(v["todo"]["own"], true);
    }
    let v = env.loopx(&["quota", "status", "--json"]).ok().json();
    assert_eq!(v["quota"][0]["used"], 1);
    assert_eq!(v["quota"][1]["used"], 1);
    let subjects = env.git(&["log", "--format=%s", "-2", "refs/loopx/state"]);
    assert!(subjects.starts_with("spend agent-b turn "), "{subjects}");
    assert!(
        subjects.contains(
            "(1 of 48 in 1d) — agent-b\nrefresh agent-b advanced: next finish it — agent-b\n"
        ),
        "{subjects}"
    );
}

#[test]
fn the_turn_through_settle() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--", "true"]);
    let tok = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let before = env.ticks();
    let out = env
        .agent(
            "agent-a",
            &settle(
                &tok,
                &t,
                &[
                    "--outcome",
                    "advanced",
                    "--done",
                    "--note",
                    "merged",
                    "--",
                    "sh",
                    "-c",
                    "echo 3 passed",
                ],
            ),
        )
        .ok();
    assert_eq!(env.ticks(), before + 1, "one tick for the whole turn");
    assert!(out.stdout.starts_with("check passed: `sh -c echo 3 passed` (exit 0)\nvalidation passed: `true` (exit 0)\nSettled turn "), "{}", out.stdout);
    assert!(out.stdout.contains("\"Write the parser\": evidence passed, evidence passed, done, advanced, spent 1 of 48.\ngoal main: Ship the parser\n"), "{}", out.stdout);
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "done");
    assert_eq!(
        env.loopx(&["evidence", "list", "--todo", &t, "--json"])
            .ok()
            .json()["evidence"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let v = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(v["quota"][0]["used"], 1);
    // The same token again: already spent, nothing settles twice.
    env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .ok();
    assert_eq!(env.ticks(), before + 1);
}

#[test]
fn a_failing_check_or_validation_in_settle_records_only_evidence() {
    let env = TestEnv::with_board();
    let t = env.add("Make the file", &["--", "test", "-f", "made.txt"]);
    let tok = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let before = env.ticks();
    let out = env
        .agent(
            "agent-a",
            &settle(
                &tok,
                &t,
                &[
                    "--outcome",
                    "advanced",
                    "--done",
                    "--",
                    "sh",
                    "-c",
                    "echo boom; exit 4",
                ],
            ),
        )
        .code(3);
    assert!(out.stdout.contains("check FAILED: `sh -c echo boom; exit 4` (exit 4)\n  boom\nNot settled: the evidence is recorded"), "{}", out.stdout);
    assert_eq!(env.ticks(), before + 1);
    let out = env
        .agent(
            "agent-a",
            &settle(&tok, &t, &["--outcome", "advanced", "--done"]),
        )
        .code(3);
    assert!(
        out.stdout
            .contains("validation FAILED: `test -f made.txt` (exit 1)"),
        "{}",
        out.stdout
    );
    assert_eq!(env.ticks(), before + 2);
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "claimed", "not done");
    let v = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(v["quota"][0]["used"], 0, "nothing spent");
    std::fs::write(env.repo.join("made.txt"), "x").unwrap();
    env.agent(
        "agent-a",
        &settle(&tok, &t, &["--outcome", "advanced", "--done"]),
    )
    .ok();
}

#[test]
fn spend_needs_a_validated_writeback_and_is_spent_once() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let tok = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let before = env.tip();
    let out = env
        .agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .code(3);
    assert!(out.stderr.starts_with("error: agent-a has made no validated writeback since its turn began at 2024-12-02T09:04:00Z, so no slot is spent\nhint: record the turn first: `loopx todo update` on your claim"), "{}", out.stderr);
    // An unchanged refresh is not a writeback, and a failing command neither.
    env.agent("agent-a", &["refresh-state", "--outcome", "unchanged"])
        .ok();
    env.agent("agent-a", &["evidence", "run", "--", "false"])
        .code(3);
    env.agent(
        "agent-a",
        &["quota", "spend-slot", "--turn", &tok, "--dry-run"],
    )
    .code(3);
    env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .code(3);
    assert_eq!(
        env.ticks(),
        2 + 2 + 1 + 2,
        "the refresh and the evidence only"
    );
    let _ = before;
    // Passing evidence is a writeback.
    env.agent("agent-a", &["evidence", "run", "--", "true"])
        .ok();
    let out = env
        .agent(
            "agent-a",
            &["quota", "spend-slot", "--turn", &tok, "--dry-run"],
        )
        .ok();
    assert!(
        out.stdout.starts_with("Would spend a slot"),
        "{}",
        out.stdout
    );
    env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .ok();
    let ticks = env.ticks();
    let out = env
        .agent(
            "agent-a",
            &["quota", "spend-slot", "--turn", &tok, "--json"],
        )
        .ok();
    assert_eq!(out.json()["already"], true);
    assert_eq!(env.ticks(), ticks, "a repeated spend writes nothing");
    // Someone else's token is not yours; a human does not spend.
    env.agent("agent-b", &["quota", "spend-slot", "--turn", &tok])
        .code(4);
    env.loopx(&["quota", "spend-slot", "--turn", &tok]).code(3);
    env.agent("agent-a", &["quota", "spend-slot", "--turn", "garbage"])
        .code(2);
}

#[test]
fn quota_runs_out_and_the_window_rolls_over() {
    let env = TestEnv::with_board();
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--quota-slots",
        "2",
        "--quota-window",
        "1h",
    ])
    .ok();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t, "--ttl", "8h"])
        .ok();
    for _ in 0..2 {
        let tok = token(&env, "agent-a");
        env.agent("agent-a", &["todo", "update", &t, "--note", "more"])
            .ok();
        env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
            .ok();
    }
    let out = env.agent("agent-a", &["quota", "should-run"]).code(3);
    assert_text(
        &out.stdout,
        "skip: quota-exhausted — all slots are used; the next frees at 2024-12-02T10:08:00Z\ngoal: main\nslots: 0 of 2 left per 1h\n",
    );
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["frees_at"], "2024-12-02T10:08:00Z");
    assert!(v.get("turn_token").is_none());
    // agent-b has its own slots.
    env.agent("agent-b", &["quota", "should-run"]).code(3); // nothing ready for it: agent-a holds the only todo
    // The window rolls: after an hour the oldest spend no longer counts.
    // The spends were at 09:08 and 09:11; at 10:09 only the second counts.
    env.advance(54 * 60);
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json();
    assert_eq!(v["slots"]["left"], 1);
    // A human voids a spend: it stops counting and stays recorded.
    let spent = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    let turn = spent["quota"][0]["spends"][1]["turn"]
        .as_str()
        .unwrap()
        .to_owned();
    let tok = format!("lxt1:main:agent-a:{turn}:0");
    env.agent(
        "agent-a",
        &[
            "quota",
            "void-slot",
            "--turn",
            &tok,
            "--reason",
            "runaway loop",
        ],
    )
    .code(3);
    env.loopx(&[
        "quota",
        "void-slot",
        "--turn",
        &tok,
        "--reason",
        "runaway loop",
    ])
    .ok();
    let v = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(v["quota"][0]["used"], 0);
    assert_eq!(v["quota"][0]["spends"][1]["void"]["reason"], "runaway loop");
    env.loopx(&["quota", "void-slot", "--turn", &tok, "--reason", "again"])
        .code(3);
}

#[test]
fn no_change_skips_until_something_that_concerns_the_agent_changes() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-a", &["refresh-state", "--outcome", "unchanged"])
        .ok();
    let out = env.agent("agent-a", &["quota", "should-run"]).code(3);
    assert!(out.stdout.starts_with("skip: no-change — your last turn ended unchanged and nothing that concerns you has changed since\n"), "{}", out.stdout);
    // Something unrelated to agent-a (a gate on agent-b) keeps the skip.
    env.loopx(&[
        "gate",
        "open",
        "--question",
        "b only?",
        "--blocks",
        "agent:agent-b",
    ])
    .ok();
    env.agent("agent-a", &["quota", "should-run"]).code(3);
    // A new todo agent-a could take lifts it.
    env.add("B", &[]);
    env.agent("agent-a", &["quota", "should-run"]).ok();
    env.agent("agent-a", &["refresh-state", "--outcome", "unchanged"])
        .ok();
    env.agent("agent-a", &["quota", "should-run"]).code(3);
    // Others' evidence on its todo lifts it too.
    env.agent(
        "agent-b",
        &["evidence", "add", "--todo", &t, "--summary", "reviewed"],
    )
    .ok();
    env.agent("agent-a", &["quota", "should-run"]).ok();
}

#[test]
fn should_run_reasons_and_sizes() {
    let env = TestEnv::with_board();
    env.agent("agent-a", &["quota", "should-run"]).code(3);
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "nothing-ready");
    let v = env
        .agent("ghost", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "not-registered");
    env.loopx(&["quota", "should-run"]).code(3);
    for i in 0..30 {
        env.add(
            &format!("todo number {i} with a reasonably long title to weigh the output"),
            &[],
        );
    }
    let g = env
        .loopx(&["gate", "open", "--question", "Ship on Friday?"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "gate-open");
    assert_eq!(v["reason"]["gate"], g.as_str());
    assert_eq!(v["reason"]["question"], "Ship on Friday?");
    env.loopx(&["gate", "withdraw", &g]).ok();
    env.loopx(&["goal", "set", "main", "--status", "paused"])
        .ok();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "goal-paused");
    env.loopx(&["goal", "set", "main", "--status", "active"])
        .ok();
    let out = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok();
    assert!(
        out.stdout.len() < 1024,
        "{} bytes: {}",
        out.stdout.len(),
        out.stdout
    );
    let first = out.json()["turn_token"].as_str().unwrap().to_owned();
    let human = env.agent("agent-a", &["quota", "should-run"]).ok().stdout;
    assert!(human.lines().count() <= 10, "{human}");
    // A tick later, a different token.
    env.add("one more", &[]);
    assert_ne!(token(&env, "agent-a"), first);
    // should-run writes nothing.
    let tip = env.tip();
    env.agent("agent-a", &["quota", "should-run"]).ok();
    assert_eq!(env.tip(), tip);
}

#[test]
fn the_brief_stays_small_on_a_large_board() {
    let env = TestEnv::with_board();
    let spawner = env.spawner();
    // 200 todos, added in-process quickly through the real binary.
    for i in 0..200 {
        let out = crate::common::run(spawner.command().args([
            "todo",
            "add",
            &format!("A todo with a title long enough to matter, number {i}"),
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let t = env.add("Mine", &["--priority", "P0"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.loopx(&["gate", "open", "--question", "Which license?"])
        .ok();
    let out = env
        .agent(
            "agent-a",
            &["refresh-state", "--outcome", "blocked", "--dry-run"],
        )
        .ok();
    assert!(out.stdout.len() < 1024, "{} bytes", out.stdout.len());
    assert!(
        out.stdout.starts_with("goal main: Ship the parser\ngate "),
        "{}",
        out.stdout
    );
    let json = env
        .agent(
            "agent-a",
            &[
                "refresh-state",
                "--outcome",
                "blocked",
                "--dry-run",
                "--json",
            ],
        )
        .ok()
        .stdout;
    assert!(json.len() < 1024, "{} bytes: {json}", json.len());
}

#[test]
fn diff_and_log_tell_the_turn() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let start = env.ticks().to_string();
    let g = env
        .loopx(&["gate", "open", "--question", "Use nom?"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.loopx(&[
        "gate", "answer", &g, "--choice", "approve", "--note", "fine",
    ])
    .ok();
    let tok = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent(
        "agent-a",
        &settle(&tok, &t, &["--outcome", "advanced", "--done"]),
    )
    .ok();
    let out = env.loopx(&["diff", &start]).ok().stdout;
    let body: Vec<&str> = out.lines().skip(1).collect();
    assert_text(
        &body
            .join("\n")
            .replace(&t, "T")
            .replace(&g, "G")
            .replace(&tok.split(':').nth(3).unwrap().to_owned(), "TURN"),
        "refreshed  agent agent-a: advanced\ndone       todo T \"A\"\nanswered   gate G \"Use nom?\": opened, approve by Ada Lovelace\nspent      quota agent-a: turn TURN on main",
    );
    let log = env.loopx(&["log", "-n", "1"]).ok().stdout;
    assert!(
        log.contains(
            "turn.settle         settle T \"A\": done, advanced, spent 1 of 48"
                .replace('T', &t)
                .as_str()
        ),
        "{log}"
    );
}

#[test]
fn review_fixes_hold() {
    let env = TestEnv::with_board();
    // A goal id with a dot still round-trips through its turn token.
    env.loopx(&["goal", "set", "main", "--status", "paused"])
        .ok();
    env.loopx(&["goal", "add", "release.v2", "--objective", "Ship 2.0"])
        .ok();
    let t = env.add("Dotted", &["--goal", "release.v2"]);
    let v = env
        .agent(
            "agent-a",
            &["quota", "should-run", "--goal", "release.v2", "--json"],
        )
        .ok()
        .json();
    let tok = v["turn_token"].as_str().unwrap().to_owned();
    assert!(tok.starts_with("lxt1:release.v2:agent-a:"), "{tok}");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-a", &["todo", "update", &t, "--note", "x"])
        .ok();
    env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .ok();
    // A settle after the token was spent is not wiped out: the spend is a no-op.
    env.agent(
        "agent-a",
        &settle(&tok, &t, &["--outcome", "advanced", "--done"]),
    )
    .ok();
    let v = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    let used: u64 = v["quota"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["used"].as_u64().unwrap())
        .sum();
    assert_eq!(used, 1, "spent once: {v}");
    // An absurd lease is refused at the flag and never reaches the state.
    let u = env.add("Lease", &["--goal", "release.v2"]);
    env.agent("agent-b", &["todo", "claim", &u, "--ttl", "100000000d"])
        .code(2);
    env.loopx(&["doctor"]).ok();
}

#[test]
fn a_quiet_settle_records_the_outcome_and_spends_nothing() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let tok = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env
        .agent("agent-a", &settle(&tok, &t, &["--outcome", "unchanged"]))
        .ok();
    assert!(out.stdout.contains("\"A\": unchanged."), "{}", out.stdout);
    let v = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(v["quota"][0]["used"], 0);
    env.agent("agent-a", &["quota", "should-run"]).code(3);
}

#[test]
fn a_gate_on_a_held_todo_stops_its_holder_too() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let g = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Deploy it?",
            "--kind",
            "production",
            "--blocks",
            &format!("todo:{t}"),
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "gate-open");
    assert_eq!(v["reason"]["gate"], g.as_str());
    env.agent("agent-a", &["todo", "renew", &t]).code(3);
    env.agent("agent-a", &["todo", "claim", &t]).code(3);
    env.loopx(&["gate", "answer", &g, "--choice", "approve"])
        .ok();
    env.agent("agent-a", &["quota", "should-run"]).ok();
}

#[test]
fn a_choice_with_blank_lines_is_refused_and_the_tick_stays_readable() {
    let env = TestEnv::with_board();
    // Option names are one line (format 2): a blank line in one could
    // end a commit subject early or pose as trailers.
    let before = env.ticks();
    let out = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Which plan?",
            "--option",
            "plan a\n\nfast",
            "--option",
            "plan b",
        ])
        .code(2);
    assert!(out.stderr.contains("one line"), "{}", out.stderr);
    assert_eq!(env.ticks(), before);
    let g = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Which plan?",
            "--option",
            "plan a",
            "--option",
            "plan b",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.loopx(&["gate", "answer", &g, "--choice", "plan a"])
        .ok();
    let log = env.loopx(&["log", "-n", "1"]).ok().stdout;
    assert!(
        log.contains("gate.answer") && !log.contains("unreadable"),
        "{log}"
    );
}

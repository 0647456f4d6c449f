//! Agents across goals (issue 47): on a single-ref state an agent never
//! names a goal. should-run, the brief and the hooks pick across the goals
//! it may work on, as `claim --next` does, and say which goal; spend does
//! not multiply with goals; a runtime's park stops the agent everywhere,
//! a human's on one goal; a stall on one goal is not reset by work on
//! another; a split state's shared ref names the fix.

use serde_json::Value;

use crate::common::{TestEnv, run_stdin};

fn should_run(env: &TestEnv, agent: &str) -> Value {
    env.agent(agent, &["quota", "should-run", "--json"]).json()
}

/// A board with goals `main` and `docs`, and no `loopx.goal` anywhere.
fn two_goals() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the guide"])
        .ok();
    env
}

#[test]
fn with_two_goals_should_run_and_the_brief_name_the_goal_of_the_pick() {
    let env = two_goals();
    let t = env.add("Write the tutorial", &["--goal", "docs"]);
    let v = should_run(&env, "agent-a");
    assert_eq!(v["decision"], "run", "{v}");
    assert_eq!(v["goal"], "docs", "{v}");
    assert_eq!(v["todo"]["id"], t.as_str());
    assert!(
        v["turn_token"]
            .as_str()
            .unwrap()
            .starts_with("lxt1:docs:agent-a:"),
        "{v}"
    );
    let text = env.agent("agent-a", &["quota", "should-run"]).ok().stdout;
    assert!(text.contains("\ngoal: docs\n"), "{text}");
    // Its own claim comes first, even when a more urgent todo waits on
    // the other goal.
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let m = env.add("Fix the parser", &["--goal", "main", "--priority", "p0"]);
    let v = should_run(&env, "agent-a");
    assert_eq!(
        (v["goal"].as_str(), v["todo"]["own"].as_bool()),
        (Some("docs"), Some(true)),
        "{v}"
    );
    // Another agent gets the other goal's todo.
    let v = should_run(&env, "agent-b");
    assert_eq!(
        (v["goal"].as_str(), v["todo"]["id"].as_str()),
        (Some("main"), Some(m.as_str())),
        "{v}"
    );

    // A session's brief names the goal of its pick, never asks for one.
    let repo = env.repo.to_string_lossy().to_string();
    let start = format!(
        r#"{{"session_id":"5a5a5a5a","cwd":"{repo}","hook_event_name":"SessionStart","source":"startup"}}"#
    );
    let out = run_stdin(
        env.command().args(["hook", "claude-code", "SessionStart"]),
        start.as_bytes(),
    )
    .ok();
    assert!(!out.stdout.contains("must be named"), "{}", out.stdout);
    assert!(
        out.stdout.contains("goal main: Ship the parser"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("claim {m}")), "{}", out.stdout);
    assert!(
        out.stdout.contains("Turn token: lxt1:main:"),
        "{}",
        out.stdout
    );

    // A human's command that needs a goal still asks, listing them.
    let err = env.loopx(&["--json", "todo", "add", "Another"]).code(2);
    assert_eq!(err.error_code(), "ambiguous-goal");
    let hint = err.json()["error"]["hint"].as_str().unwrap().to_owned();
    assert!(hint.contains("--goal docs, --goal main"), "{hint}");
    // An agent's does not: its pick decides.
    let v = env
        .agent("agent-b", &["--json", "todo", "add", "Found while working"])
        .ok()
        .json();
    let id = v["todo"].as_str().unwrap();
    let v = env.loopx(&["todo", "show", id, "--json"]).ok().json();
    assert_eq!(v["goal"], "main", "{v}");
}

#[test]
fn the_goals_an_agent_may_work_on_are_a_humans_to_narrow() {
    let env = two_goals();
    env.add("Write the tutorial", &["--goal", "docs"]);
    let err = env
        .agent(
            "agent-a",
            &["--json", "agent", "register", "agent-a", "--goal", "main"],
        )
        .code(3);
    assert_eq!(err.error_code(), "humans-only", "{}", err.stdout);
    env.loopx(&["agent", "register", "agent-a", "--goal", "main"])
        .ok();
    let v = env
        .loopx(&["agent", "show", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(v["goals"], serde_json::json!(["main"]), "{v}");
    // Only main now: nothing is ready there, and docs is not its work.
    let v = should_run(&env, "agent-a");
    assert_eq!(
        (v["decision"].as_str(), v["goal"].as_str()),
        (Some("skip"), Some("main")),
        "{v}"
    );
    assert_eq!(v["reason"]["code"], "nothing-ready", "{v}");
    // The agent's own session start keeps the goals a human named.
    env.agent("agent-a", &["agent", "register", "agent-a"]).ok();
    assert_eq!(
        env.loopx(&["agent", "show", "agent-a", "--json"])
            .ok()
            .json()["goals"],
        serde_json::json!(["main"])
    );
    env.loopx(&["agent", "register", "agent-a", "--every-goal"])
        .ok();
    assert_eq!(should_run(&env, "agent-a")["goal"], "docs");
    // A goal that is done drops out of the scope, never an error.
    env.loopx(&[
        "agent", "register", "agent-a", "--goal", "docs", "--goal", "main",
    ])
    .ok();
    env.loopx(&["goal", "set", "docs", "--status", "done"]).ok();
    let v = should_run(&env, "agent-a");
    assert_eq!(v["goal"], "main", "{v}");
    let status = env.loopx(&["status"]).ok().stdout;
    assert!(
        status.contains("agent-a: docs is done, out of its goals"),
        "{status}"
    );
}

/// How many turns an agent runs before should-run skips, on `goals` goals
/// of 3 slots each (stall detection off), and the skip's code.
fn turns_until_skip(goals: usize, agent_slots: Option<&str>) -> (usize, String) {
    let env = TestEnv::with_board();
    let mut ids = vec!["main".to_owned()];
    for i in 1..goals {
        let g = format!("g{i}");
        env.loopx(&["goal", "add", &g, "--objective", "More work"])
            .ok();
        ids.push(g);
    }
    for g in &ids {
        env.loopx(&["goal", "set", g, "--quota-slots", "3", "--stall-after", "0"])
            .ok();
        env.add(&format!("Work on {g}"), &["--goal", g]);
    }
    if let Some(n) = agent_slots {
        env.loopx(&["settings", "set", "--agent-slots", n]).ok();
    }
    for turns in 0..40 {
        let v = should_run(&env, "agent-a");
        if v["decision"] != "run" {
            return (turns, v["reason"]["code"].as_str().unwrap().to_owned());
        }
        let todo = v["todo"]["id"].as_str().unwrap().to_owned();
        if v["todo"]["own"] == false {
            env.agent("agent-a", &["todo", "claim", &todo]).ok();
        }
        let token = v["turn_token"].as_str().unwrap().to_owned();
        env.agent(
            "agent-a",
            &[
                "settle",
                "--turn",
                &token,
                "--todo",
                &todo,
                "--outcome",
                "advanced",
            ],
        )
        .ok();
    }
    panic!("should-run never skipped");
}

#[test]
fn an_agent_with_ten_goals_spends_no_more_slots_than_with_one() {
    assert_eq!(turns_until_skip(1, None), (3, "quota-exhausted".to_owned()));
    assert_eq!(
        turns_until_skip(10, None),
        (3, "agent-quota-exhausted".to_owned())
    );
    // A human sets the agent-wide window: it caps the spend across goals.
    assert_eq!(
        turns_until_skip(10, Some("5")),
        (5, "agent-quota-exhausted".to_owned())
    );
}

#[test]
fn a_rate_limit_park_stops_the_agent_on_every_goal_a_humans_park_on_one() {
    let env = two_goals();
    let m = env.add("Fix the parser", &["--goal", "main"]);
    let d = env.add("Write the tutorial", &["--goal", "docs"]);
    // A human parks agent-a on docs only: it still runs on main.
    env.loopx(&[
        "quota", "park", "--of", "agent-a", "--goal", "docs", "--until", "2h",
    ])
    .ok();
    let v = should_run(&env, "agent-a");
    assert_eq!(
        (v["decision"].as_str(), v["goal"].as_str()),
        (Some("run"), Some("main")),
        "{v}"
    );
    env.agent("agent-a", &["todo", "claim", &d]).code(3);
    env.agent("agent-a", &["todo", "claim", &m]).ok();

    // The runtime's usage limit (StopFailure) parks the session's agent on
    // every goal.
    let repo = env.repo.to_string_lossy().to_string();
    let hook = |event: &str, payload: String| {
        run_stdin(
            env.command().args(["hook", "claude-code", event]),
            payload.as_bytes(),
        )
        .ok()
    };
    hook(
        "SessionStart",
        format!(
            r#"{{"session_id":"7b7b7b7b","cwd":"{repo}","hook_event_name":"SessionStart","source":"startup"}}"#
        ),
    );
    let agent = env.loopx(&["agent", "list", "--json"]).ok().json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .find(|id| id.starts_with("claude-code-"))
        .expect("the session registered its agent");
    hook(
        "StopFailure",
        format!(
            r#"{{"session_id":"7b7b7b7b","cwd":"{repo}","hook_event_name":"StopFailure","error_type":"rate_limit","error":"429","error_message":"Usage limit reached. Resets in 3 hours."}}"#
        ),
    );
    let v = should_run(&env, &agent);
    assert_eq!(v["reason"]["code"], "wait-until", "{v}");
    for g in ["docs", "main"] {
        let v = env
            .agent(&agent, &["quota", "should-run", "--goal", g, "--json"])
            .code(3)
            .json();
        assert_eq!(v["reason"]["code"], "wait-until", "{g}: {v}");
    }
    let e = env.add("Another tutorial", &["--goal", "docs"]);
    let err = env.agent(&agent, &["--json", "todo", "claim", &e]).code(3);
    assert_eq!(err.error_code(), "parked");
}

#[test]
fn a_stall_on_one_goal_is_not_reset_by_work_on_another() {
    let env = two_goals();
    env.loopx(&["goal", "set", "main", "--scope", "src/**"])
        .ok();
    env.loopx(&["goal", "set", "docs", "--scope", "docs/**"])
        .ok();
    let write = |path: &str, text: &str| {
        let p = env.repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("src/lib.rs", "fn flaky() {}\n");
    write("docs/guide.md", "# Guide\n");
    env.git(&["add", "."]);
    env.git(&["commit", "-qm", "start"]);
    let t = env.add("Fix the flaky test", &["--goal", "main"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let mut subjects = Vec::new();
    for n in 1..=3 {
        let v = should_run(&env, "agent-a");
        assert_eq!(
            (v["decision"].as_str(), v["goal"].as_str()),
            (Some("run"), Some("main")),
            "turn {n}: {v}"
        );
        // Meanwhile, someone works on docs: new commits, new files.
        write("docs/guide.md", &format!("# Guide\n\nPart {n}\n"));
        env.git(&["add", "."]);
        env.git(&["commit", "-qm", &format!("docs part {n}")]);
        let token = v["turn_token"].as_str().unwrap().to_owned();
        let s = env
            .agent(
                "agent-a",
                &[
                    "settle",
                    "--json",
                    "--turn",
                    &token,
                    "--todo",
                    &t,
                    "--outcome",
                    "advanced",
                ],
            )
            .ok()
            .json();
        subjects.push(s["subject"].as_str().unwrap().to_owned());
    }
    assert!(subjects[2].contains("stalled: gate g-"), "{subjects:?}");
    let v = should_run(&env, "agent-a");
    assert_eq!(v["reason"]["code"], "stalled", "{v}");
}

#[test]
fn a_split_states_shared_ref_names_the_fix() {
    let env = two_goals();
    env.add("Fix the parser", &["--goal", "main"]);
    env.loopx(&["goal", "split"]).ok();
    let fix = "git config loopx.ref refs/loopx/goals/";
    let list = env.loopx(&["goal", "list"]).ok().stdout;
    assert!(list.contains("docs") && list.contains("main"), "{list}");
    assert!(list.contains(fix), "{list}");
    for args in [
        &["--json", "todo", "add", "X"][..],
        &["--json", "todo", "add", "X", "--goal", "main"][..],
    ] {
        let out = env.loopx(args);
        assert_ne!(out.code, 0, "{args:?}");
        let hint = out.json()["error"]["hint"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(hint.contains(fix), "{args:?}: {}", out.stdout);
    }
    // On a goal's ref, the same command works.
    env.git(&["config", "loopx.ref", "refs/loopx/goals/main"]);
    env.loopx(&["todo", "add", "X"]).ok();
}

#[test]
fn an_agents_budget_caps_its_usage_across_goals() {
    let env = two_goals();
    for g in ["main", "docs"] {
        env.loopx(&[
            "goal",
            "set",
            g,
            "--budget-tokens",
            "1k",
            "--budget-agent",
            "agent-a",
        ])
        .ok();
        env.add(&format!("Work on {g}"), &["--goal", g]);
    }
    let mut goals = Vec::new();
    for _ in 0..2 {
        let v = should_run(&env, "agent-a");
        assert_eq!(v["decision"], "run", "{v}");
        let todo = v["todo"]["id"].as_str().unwrap().to_owned();
        goals.push(v["goal"].as_str().unwrap().to_owned());
        env.agent("agent-a", &["todo", "claim", &todo]).ok();
        let token = v["turn_token"].as_str().unwrap().to_owned();
        env.agent(
            "agent-a",
            &[
                "settle",
                "--turn",
                &token,
                "--todo",
                &todo,
                "--outcome",
                "advanced",
                "--done",
                "--usage",
                r#"{"input_tokens": 500, "output_tokens": 100}"#,
            ],
        )
        .ok();
    }
    goals.sort();
    assert_eq!(goals, ["docs", "main"], "one turn on each goal");
    // 600 tokens on each goal: under each goal's budget, over the agent's.
    env.add("More on main", &["--goal", "main"]);
    let v = should_run(&env, "agent-a");
    assert_eq!(v["reason"]["code"], "budget-exhausted", "{v}");
    assert_eq!(v["reason"]["budget"]["scope"], "agent:agent-a", "{v}");
    assert!(
        v["reason"]["message"]
            .as_str()
            .unwrap()
            .contains("across every goal"),
        "{v}"
    );
    // Another agent is not affected.
    assert_eq!(should_run(&env, "agent-b")["decision"], "run");
}

//! Parking until a runtime's window resets: `quota park`, the `wait-until`
//! and `awaiting-go` answers of should-run, the gate an expired park opens,
//! and `quota resume`; through a sync too.

use crate::common::{Output, TestEnv, assert_text};

fn code(out: &Output) -> String {
    out.error_code()
}

fn should_run(env: &TestEnv, agent: &str, code: i32) -> serde_json::Value {
    env.agent(agent, &["quota", "should-run", "--json"])
        .code(code)
        .json()
}

#[test]
fn a_parked_agent_waits_without_writing_then_needs_a_go() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let v = env
        .agent(
            "agent-a",
            &[
                "quota",
                "park",
                "--until",
                "5h",
                "--reason",
                "Claude usage limit reached, resets 3pm",
                "--json",
            ],
        )
        .ok()
        .json();
    let until = v["until"].as_str().unwrap().to_owned();
    assert_eq!(v["agent"], "agent-a");
    assert_eq!(v["goal"], "main");
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert_eq!(
        subject.trim(),
        format!("park agent-a until {until}: Claude usage limit reached, resets 3pm — agent-a")
    );

    // Until then: skip wait-until, nothing written, no claim.
    let ticks = env.ticks();
    let v = should_run(&env, "agent-a", 3);
    assert_eq!(v["reason"]["code"], "wait-until", "{v}");
    assert_eq!(v["reason"]["until"], until.as_str());
    assert!(v.to_string().len() < 1024);
    let q = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok()
        .json();
    assert_eq!(q["quota"][0]["parked"]["state"], "waiting");
    let q = env.loopx(&["quota", "status", "--agent", "agent-a"]).ok();
    assert!(
        q.stdout.contains(&format!(", parked until {until}\n")),
        "{}",
        q.stdout
    );
    let out = env.agent("agent-a", &["quota", "should-run"]).code(3);
    assert_text(
        &out.stdout,
        &format!(
            "skip: wait-until — parked until {until}: Claude usage limit reached, resets 3pm\ngoal: main\n"
        ),
    );
    let err = env.agent("agent-a", &["todo", "claim", &t]).code(3);
    assert_text(
        &err.stderr,
        &format!(
            "error: agent-a is parked until {until}\nhint: wait until then; `loopx quota should-run` says when to run\n"
        ),
    );
    assert_eq!(env.ticks(), ticks, "waiting writes nothing");
    // Another agent is not affected.
    assert_eq!(should_run(&env, "agent-b", 0)["decision"], "run");

    // After the time: no silent resume.
    env.advance(5 * 3600);
    let v = should_run(&env, "agent-a", 3);
    assert_eq!(v["reason"]["code"], "awaiting-go", "{v}");
    env.agent("agent-a", &["todo", "claim", &t]).code(3);
    // The agent's next refresh opens a human-only gate that asks for the go.
    let out = env
        .agent("agent-a", &["refresh-state", "--outcome", "blocked"])
        .ok();
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(
        subject.contains("park ended, gate g-"),
        "{subject}{}",
        out.stdout
    );
    let v = should_run(&env, "agent-a", 3);
    assert_eq!(v["reason"]["code"], "gate-open", "{v}");
    let gate = v["reason"]["gate"].as_str().unwrap().to_owned();
    let g = env.loopx(&["gate", "show", &gate, "--json"]).ok().json();
    assert_eq!(g["kind"], "spend");
    // The agent cannot answer it; a human can.
    env.agent("agent-a", &["gate", "answer", &gate, "resume"])
        .code(3);
    env.loopx(&["gate", "answer", &gate, "resume"]).ok();
    assert_eq!(should_run(&env, "agent-a", 0)["decision"], "run");
    env.agent("agent-a", &["todo", "claim", &t]).ok();
}

#[test]
fn auto_resume_and_a_humans_resume() {
    let env = TestEnv::with_board();
    env.add("Write the parser", &[]);
    env.loopx(&["goal", "set", "main", "--auto-resume", "true"])
        .ok();
    env.agent("agent-a", &["quota", "park", "--until", "1h"])
        .ok();
    assert_eq!(
        should_run(&env, "agent-a", 3)["reason"]["code"],
        "wait-until"
    );
    env.advance(3600);
    assert_eq!(should_run(&env, "agent-a", 0)["decision"], "run");

    // A human parks agent-b and lifts it early.
    env.loopx(&[
        "quota",
        "park",
        "--of",
        "agent-b",
        "--until",
        "2024-12-04T00:00:00Z",
    ])
    .ok();
    assert_eq!(
        should_run(&env, "agent-b", 3)["reason"]["code"],
        "wait-until"
    );
    let err = env
        .agent("agent-b", &["quota", "resume", "agent-b", "--json"])
        .code(3);
    assert_eq!(code(&err), "humans-only");
    env.loopx(&["quota", "resume", "agent-b"]).ok();
    assert_eq!(should_run(&env, "agent-b", 0)["decision"], "run");
    let err = env.loopx(&["quota", "resume", "agent-b", "--json"]).code(3);
    assert_eq!(code(&err), "not-parked");
}

#[test]
fn bad_park_requests_change_nothing() {
    let env = TestEnv::with_board();
    let ticks = env.ticks();
    for (args, want, what) in [
        (vec!["--until", "yesterday"], 2, "bad-time"),
        (vec!["--until", "2020-01-01T00:00:00Z"], 2, "bad-time"),
        (vec!["--until", "40d"], 2, "bad-time"),
        (
            vec!["--until", "1h", "--of", "agent-b"],
            3,
            "park-self-only",
        ),
        (vec!["--until", "1h", "--goal", "nope"], 1, "unknown-goal"),
    ] {
        let mut a = vec!["quota", "park", "--json"];
        a.extend(args);
        let err = env.agent("agent-a", &a).code(want);
        assert_eq!(code(&err), what, "{a:?}");
    }
    let err = env.loopx(&["quota", "park", "--until", "1h"]).code(2);
    assert!(err.stderr.contains("--of AGENT"), "{}", err.stderr);
    assert_eq!(env.ticks(), ticks);
}

#[test]
fn a_park_travels_with_sync_and_the_gate_it_opens_too() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.add("Write the parser", &[]);
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();

    env.agent("agent-a", &["quota", "park", "--until", "1h"])
        .ok();
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    let v = b
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "wait-until", "{v}");

    // The time passes; agent-a's refresh on b opens the gate; a human on the
    // first machine answers it after a sync; b sees the go.
    env.advance(3600);
    b.agent("agent-a", &["refresh-state", "--outcome", "blocked"])
        .ok();
    b.loopx(&["sync"]).ok();
    env.loopx(&["sync"]).ok();
    let v = should_run(&env, "agent-a", 3);
    assert_eq!(v["reason"]["code"], "gate-open", "{v}");
    let gate = v["reason"]["gate"].as_str().unwrap().to_owned();
    env.loopx(&["gate", "answer", &gate, "resume"]).ok();
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    let v = b
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json();
    assert_eq!(v["decision"], "run");
    env.loopx(&["verify"]).ok();
    b.loopx(&["verify"]).ok();
}

/// Claude Code's StopFailure on a usage limit parks the session's agent
/// until the time its message gives; other errors change nothing.
#[test]
fn a_rate_limit_stop_failure_parks_the_agent() {
    use crate::common::run_stdin;
    let env = TestEnv::with_board();
    env.add("Write the parser", &[]);
    let repo = env.repo.to_string_lossy().to_string();
    let hook = |event: &str, payload: String| {
        run_stdin(
            env.command().args(["hook", "claude-code", event]),
            payload.as_bytes(),
        )
        .ok()
    };
    let start = format!(
        r#"{{"session_id":"9f8e7d6c","cwd":"{repo}","hook_event_name":"SessionStart","source":"startup"}}"#
    );
    hook("SessionStart", start);
    let agent = env.loopx(&["agent", "list", "--json"]).ok().json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .find(|id| id.starts_with("claude-code-"))
        .expect("the session registered its agent");
    let ticks = env.ticks();
    let failure = |kind: &str, message: &str| {
        format!(
            r#"{{"session_id":"9f8e7d6c","cwd":"{repo}","hook_event_name":"StopFailure","error_type":"{kind}","error":"429","error_message":"{message}"}}"#
        )
    };
    let out = hook(
        "StopFailure",
        failure("server_error", "Overloaded, try again in 5 minutes"),
    );
    assert_eq!(out.stdout, "");
    assert_eq!(env.ticks(), ticks, "only a usage limit parks");
    hook(
        "StopFailure",
        failure(
            "rate_limit",
            "Claude usage limit reached. Your limit will reset at 3pm (UTC).",
        ),
    );
    let v = env
        .agent(&agent, &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "wait-until", "{v}");
    // The test clock starts at 09:00 UTC: the next 3pm is today's.
    assert_eq!(v["reason"]["until"], "2024-12-02T15:00:00Z");
    assert!(
        v["reason"]["message"]
            .as_str()
            .unwrap()
            .contains("Your limit will reset at 3pm (UTC)"),
        "{v}"
    );
    // No readable time: a short park, not a retry storm.
    hook(
        "StopFailure",
        failure("rate_limit", "Rate limit exceeded: 100 requests per minute"),
    );
    let v = env
        .agent(&agent, &["quota", "should-run", "--json"])
        .code(3)
        .json();
    let until = v["reason"]["until"].as_str().unwrap();
    assert!(until.starts_with("2024-12-02T10:"), "{v}");
    // A hostile message: a reset far beyond the longest park, control
    // characters and a huge text. The park is capped at 31 days and its
    // reason kept to one line of 300 characters.
    let huge = format!(
        r"try again in 99999 hours \u001b[2J\n{}",
        "x".repeat(100_000)
    );
    hook("StopFailure", failure("rate_limit", &huge));
    let v = env
        .agent(&agent, &["quota", "should-run", "--json"])
        .code(3)
        .json();
    let until = v["reason"]["until"].as_str().unwrap();
    assert!(until.starts_with("2025-01-02T"), "{v}");
    let message = v["reason"]["message"].as_str().unwrap();
    assert!(
        !message.contains('\u{1b}') && !message.contains('\n'),
        "{v}"
    );
    assert!(message.len() < 400, "{v}");
}

//! The copy-paste loop of docs/turn.md, run as printed (with `sleep` and
//! the agent's work stubbed): a budget stops it with `budget-exhausted`,
//! and a park makes it wait until the park's end.

use std::process::Command;

use crate::common::{TestEnv, isolate, run};

/// The loop script from docs/turn.md, with `cargo test` as the check
/// replaced by `true`.
fn loop_script() -> String {
    let doc = include_str!("../../docs/turn.md");
    let start = doc.find("## A copy-paste loop").expect("the section");
    let body = &doc[start..];
    let open = body.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let close = body[open..].find("```").expect("the block ends") + open;
    let script = body[open..close].replace("-- cargo test", "-- true");
    assert!(script.contains("while true; do"), "{script}");
    script
}

/// Runs the loop with `prelude` defining `run_agent_turn` and a `sleep`
/// that records the skip code and stops the loop after `sleeps` sleeps.
fn run_loop(env: &TestEnv, prelude: &str, sleeps: u32) -> String {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_loopx"))
        .parent()
        .unwrap()
        .to_owned();
    let script = format!(
        "n=0\nsleep() {{ echo \"SLEEP $code $1\"; n=$((n+1)); [ $n -ge {sleeps} ] && exit 0; return 0; }}\n{prelude}\n{}",
        loop_script()
    );
    let mut c = Command::new("bash");
    isolate(&mut c, env.root());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.arg("-c")
        .arg(script)
        .current_dir(&env.repo)
        .env("PATH", path)
        .env("LOOPX_NOW", env.now())
        .env("LOOPX_AGENT", "agent-a");
    let out = run(&mut c);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.stdout
}

#[test]
fn the_documented_loop_stops_at_a_budget_and_waits_out_a_park() {
    let env = TestEnv::with_board();
    for title in ["One", "Two", "Three", "Four"] {
        env.add(title, &[]);
    }
    env.loopx(&["goal", "set", "main", "--budget-tokens", "1M"])
        .ok();
    let out = run_loop(
        &env,
        r#"run_agent_turn() { echo '{"input_tokens":600000,"output_tokens":1000}' > usage.json; return 0; }"#,
        2,
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("Settled turn"))
            .count(),
        2,
        "{out}"
    );
    assert!(
        out.contains("SLEEP budget-exhausted 300\nSLEEP budget-exhausted 300\n"),
        "{out}"
    );

    // A human raises the budget; the agent parks for an hour: the loop
    // sleeps until then (plus a minute; the loop reads the real clock, so
    // only the floor of a minute is certain here).
    let gate = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(gate["reason"]["code"], "budget-exhausted", "{gate}");
    env.loopx(&["goal", "set", "main", "--budget-tokens", "10M"])
        .ok();
    env.agent(
        "agent-a",
        &["quota", "park", "--until", "2025-01-02T00:00:00Z"],
    )
    .ok();
    let out = run_loop(&env, "run_agent_turn() { return 0; }", 1);
    assert!(out.starts_with("SLEEP wait-until "), "{out}");
    let secs: i64 = out.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 60, "{out}");
}

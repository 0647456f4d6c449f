//! The usage ledger: `--usage` on `settle` and `quota spend-slot` (strict,
//! priced where a runtime gave no dollars, counted once per turn), budgets
//! set by `goal set`, the spend gate the record that reaches one opens, the
//! `budget-exhausted` answer, and totals that agree across machines.

use crate::common::{Output, TestEnv, settle};

fn token(env: &TestEnv, agent: &str) -> String {
    env.agent(agent, &["quota", "should-run", "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .expect("a turn token")
        .to_owned()
}

fn ledger(env: &TestEnv, agent: &str) -> String {
    env.git(&["show", &format!("refs/loopx/state:quota/{agent}.toml")])
}

/// `settle --outcome advanced --usage USAGE` for the turn `turn` on `todo`,
/// run by `agent` (an agent's command on a test machine).
fn settle_advanced(
    agent: impl Fn(&[&str]) -> Output,
    turn: &str,
    todo: &str,
    usage: &str,
) -> Output {
    agent(&settle(
        turn,
        todo,
        &["--outcome", "advanced", "--usage", usage],
    ))
}

fn usage_of(out: &Output) -> serde_json::Value {
    out.json()["quota"][0]["usage"].clone()
}

#[test]
fn a_bad_usage_is_a_usage_error_that_says_what_is_accepted_and_writes_nothing() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    let ticks = env.ticks();
    for bad in [
        r#"{"input_tokens": -5}"#,
        r#"{"input_tokens": "12"}"#,
        r#"{"cost_usd": -1}"#,
        r#"{"tokens": 12}"#,
        r#"[1, 2]"#,
        r#"{"input_tokens": 3"#,
        r#"{}"#,
    ] {
        for cmd in [
            vec![
                "settle",
                "--turn",
                &turn,
                "--todo",
                &t,
                "--outcome",
                "advanced",
                "--usage",
                bad,
            ],
            vec!["quota", "spend-slot", "--turn", &turn, "--usage", bad],
        ] {
            let out = env.agent("agent-a", &cmd).code(2);
            assert!(
                out.stderr
                    .contains("input_tokens, output_tokens, cached_input_tokens"),
                "{bad}: {}",
                out.stderr
            );
        }
    }
    let out = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage-file",
                "nope.json",
            ],
        )
        .code(2);
    assert!(
        out.stderr.contains("cannot read the usage file"),
        "{}",
        out.stderr
    );
    assert_eq!(env.ticks(), ticks, "nothing written");
}

#[test]
fn tokens_without_dollars_are_priced_once_and_stored_in_the_op() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(|a| env.agent("agent-a", a), &turn, &t, r#"{"input_tokens": 1000000, "cached_input_tokens": 600000, "output_tokens": 100000, "model": "claude-sonnet-4-5-20250929", "runtime": "claude-code"}"#)
    .ok();
    // 0.4M × $3 + 0.6M × $0.30 + 0.1M × $15 per million.
    let body = env.git(&["log", "-1", "--format=%B", "refs/loopx/state"]);
    assert!(body.contains("op = \"usage.record\""), "{body}");
    assert!(
        body.contains("cost_usd = 2.88\nestimated = true\n"),
        "{body}"
    );
    assert!(ledger(&env, "agent-a").contains("cost_usd = 2.88\nestimated = true\n"));
    // A price in git config changes later records, never this one.
    env.git(&["config", "loopx.price.claude-sonnet-4-5.input", "30"]);
    let q = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok();
    assert_eq!(usage_of(&q)["cost_usd"], 2.88);
    assert_eq!(usage_of(&q)["estimated"], true);
    let turn = token(&env, "agent-a");
    env.agent(
        "agent-a",
        &[
            "quota",
            "spend-slot",
            "--turn",
            &turn,
            "--usage",
            r#"{"input_tokens": 100000, "model": "claude-sonnet-4-5"}"#,
        ],
    )
    .code(3);
    env.agent("agent-a", &["todo", "update", &t, "--note", "more"])
        .ok();
    let v = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--json",
                "--usage",
                r#"{"input_tokens": 100000, "model": "claude-sonnet-4-5"}"#,
            ],
        )
        .ok()
        .json();
    assert_eq!(v["usage_added"]["cost_usd"], 3.0, "{v}");
    // A reported cost is kept as reported; a model nothing prices counts
    // its tokens only, and says so.
    let turn = token(&env, "agent-a");
    env.agent("agent-a", &["todo", "update", &t, "--note", "again"])
        .ok();
    let out = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage",
                r#"{"input_tokens": 10, "output_tokens": 5, "model": "llama-9"}"#,
            ],
        )
        .ok();
    assert!(
        out.stderr.contains("no price for model llama-9"),
        "{}",
        out.stderr
    );
    let q = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok();
    assert_eq!(usage_of(&q)["input_tokens"], 1_100_010);
    assert_eq!(usage_of(&q)["cost_usd"], 5.88);
}

#[test]
fn one_turn_counts_once_and_a_larger_report_adds_the_difference() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    let report = r#"{"input_tokens": 5000, "output_tokens": 700, "cost_usd": 0.05}"#;
    settle_advanced(|a| env.agent("agent-a", a), &turn, &t, report).ok();
    let ticks = env.ticks();
    // The same report again: no tick.
    let v = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage",
                report,
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(v["already"], true);
    assert!(v.get("usage_added").is_none(), "{v}");
    assert_eq!(env.ticks(), ticks, "a repeated report writes nothing");
    // Larger: the difference, in a tick of its own.
    let v = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--json",
                "--usage",
                r#"{"input_tokens": 4000, "output_tokens": 900, "cost_usd": 0.06}"#,
            ],
        )
        .ok()
        .json();
    assert_eq!(v["usage_added"]["output_tokens"], 200, "{v}");
    assert_eq!(v["usage_added"].get("input_tokens"), None, "{v}");
    assert_eq!(env.ticks(), ticks + 1);
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(subject.starts_with("usage agent-a turn "), "{subject}");
    let q = env
        .loopx(&["quota", "status", "--agent", "agent-a", "--json"])
        .ok();
    let u = usage_of(&q);
    assert_eq!(
        (
            u["turns"].clone(),
            u["input_tokens"].clone(),
            u["output_tokens"].clone(),
            u["cost_usd"].clone()
        ),
        (1.into(), 5000.into(), 900.into(), 0.06.into())
    );
}

#[test]
fn runtime_outputs_are_read_with_usage_format() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    std::fs::write(
        env.root().join("codex.jsonl"),
        "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":20000,\"cached_input_tokens\":10000,\"output_tokens\":1000}}\n",
    )
    .unwrap();
    let file = env.root().join("codex.jsonl");
    let turn = token(&env, "agent-a");
    env.agent(
        "agent-a",
        &[
            "settle",
            "--turn",
            &turn,
            "--todo",
            &t,
            "--outcome",
            "advanced",
            "--usage-file",
            file.to_str().unwrap(),
            "--usage-format",
            "codex",
            "--usage-model",
            "gpt-5",
        ],
    )
    .ok();
    // 10k × $1.25 + 10k × $0.125 + 1k × $10 per million.
    let l = ledger(&env, "agent-a");
    assert!(
        l.contains(
            "cost_usd = 0.02375\nestimated = true\nmodel = \"gpt-5\"\nruntime = \"codex\"\n"
        ),
        "{l}"
    );
    // A file in another shape is refused as such.
    let turn = token(&env, "agent-a");
    let out = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage-file",
                file.to_str().unwrap(),
                "--usage-format",
                "gemini",
            ],
        )
        .code(2);
    assert!(out.stderr.contains("not Gemini CLI JSON"), "{}", out.stderr);
}

#[test]
fn the_tick_that_reaches_a_budget_opens_a_spend_gate_and_should_run_skips() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--budget-usd",
        "1",
        "--budget-tokens",
        "1.5M",
        "--budget-window",
        "1d",
    ])
    .ok();
    // These turns change no files: stall detection would stop the third.
    env.loopx(&["goal", "set", "main", "--stall-after", "0"])
        .ok();
    let goal = env.git(&["show", "refs/loopx/state:goals/main.toml"]);
    assert!(
        goal.contains("[budget.goal]\nusd = 1.0\ntokens = 1500000\nwindow = \"1d\"\n"),
        "{goal}"
    );
    let shown = env.loopx(&["goal", "show", "main"]).ok();
    assert!(
        shown
            .stdout
            .contains("\nbudget: $1.00, 1.5M tokens per 1d\n"),
        "{}",
        shown.stdout
    );
    // Agents may not set budgets.
    env.agent("agent-a", &["goal", "set", "main", "--budget-usd", "100"])
        .code(3);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 1000, "cost_usd": 0.6}"#,
    )
    .ok();
    let turn = token(&env, "agent-a");
    let out = settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 1000, "cost_usd": 0.4}"#,
    )
    .ok();
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(
        subject.contains("budget reached: gate g-"),
        "{subject}\n{}",
        out.stdout
    );
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert!(v.to_string().len() < 1024, "{v}");
    assert_eq!(v["reason"]["code"], "budget-exhausted", "{v}");
    assert_eq!(v["reason"]["budget"]["spent_usd"], 1.0);
    assert_eq!(v["reason"]["budget"]["budget_usd"], 1.0);
    assert_eq!(v["reason"]["budget"]["spent_tokens"], 2000);
    assert_eq!(v["reason"]["budget"]["scope"], "goal");
    let gate = v["reason"]["gate"].as_str().unwrap().to_owned();
    let g = env.loopx(&["gate", "show", &gate, "--json"]).ok().json();
    assert_eq!(g["kind"], "spend");
    // agent-b skips too; the agent cannot answer the gate.
    let b = env.agent("agent-b", &["quota", "should-run"]).code(3);
    assert!(b.stdout.starts_with("skip: budget-exhausted — goal main reached its budget ($1.00 of $1.00, 2000 of 1.5M tokens in 1d)"), "{}", b.stdout);
    env.agent("agent-a", &["gate", "answer", &gate, "continue-once"])
        .code(3);
    // Status and the brief show it.
    let s = env.loopx(&["status"]).ok();
    assert!(
        s.stdout
            .contains("budget main goal: $1.00 of $1.00, 2000 of 1.5M tokens spent per 1d"),
        "{}",
        s.stdout
    );
    // Continue once: one more turn, until its usage lands.
    env.loopx(&["gate", "answer", &gate, "continue-once"]).ok();
    let turn = token(&env, "agent-a");
    let out = settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 10, "cost_usd": 0.01}"#,
    )
    .ok();
    assert!(
        out.stdout.contains("budget goal: $0.00 of $1.00"),
        "{}",
        out.stdout
    );
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "budget-exhausted", "{v}");
    let again = v["reason"]["gate"].as_str().unwrap().to_owned();
    assert_ne!(again, gate);
    // A raised budget answers the gate; work goes on.
    let out = env
        .loopx(&["goal", "set", "main", "--budget-usd", "5"])
        .ok();
    assert!(
        out.stdout.contains(&format!("answered {again}")),
        "{}",
        out.stdout
    );
    let g = env.loopx(&["gate", "show", &again, "--json"]).ok().json();
    assert_eq!(g["answer"]["choice"], "raised", "{g}");
    env.agent("agent-a", &["quota", "should-run"]).ok();
}

#[test]
fn an_agent_budget_blocks_only_that_agent() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.add("Write the docs", &[]);
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--budget-tokens",
        "1k",
        "--budget-agent",
        "agent-a",
    ])
    .ok();
    env.loopx(&["goal", "set", "main", "--budget-agent", "agent-a"])
        .code(2);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 900, "output_tokens": 100}"#,
    )
    .ok();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "budget-exhausted", "{v}");
    assert_eq!(v["reason"]["budget"]["scope"], "agent:agent-a");
    env.agent("agent-b", &["quota", "should-run"]).ok();
    // Stop: the gate closes, the skip stays until the budget is raised.
    let gate = v["reason"]["gate"].as_str().unwrap().to_owned();
    env.loopx(&["gate", "answer", &gate, "stop"]).ok();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    assert_eq!(v["reason"]["code"], "budget-exhausted", "{v}");
    assert!(v["reason"].get("gate").is_none(), "{v}");
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--budget-tokens",
        "0",
        "--budget-agent",
        "agent-a",
    ])
    .ok();
    env.agent("agent-a", &["quota", "should-run"]).ok();
}

#[test]
fn usage_totals_agree_across_machines_after_sync_without_double_counting() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    let t = env.add("Write the parser", &[]);
    // Neither machine alone reaches $2.10; together they do.
    env.loopx(&["goal", "set", "main", "--budget-usd", "2.10"])
        .ok();
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    let u = b.add("Write the docs");
    // agent-a works on the first machine, agent-b on b; each records its
    // turn's usage, then a larger report of it, before any sync.
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let ta = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &ta,
        &t,
        r#"{"input_tokens": 1000, "cost_usd": 1.5}"#,
    )
    .ok();
    env.agent(
        "agent-a",
        &[
            "quota",
            "spend-slot",
            "--turn",
            &ta,
            "--usage",
            r#"{"input_tokens": 1200, "cost_usd": 2}"#,
        ],
    )
    .ok();
    b.agent("agent-b", &["todo", "claim", &u]).ok();
    let tb = b
        .agent("agent-b", &["quota", "should-run", "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .unwrap()
        .to_owned();
    settle_advanced(
        |a| b.agent("agent-b", a),
        &tb,
        &u,
        r#"{"input_tokens": 500, "cost_usd": 0.25}"#,
    )
    .ok();
    // b replays its ticks onto the first machine's; both sync twice.
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    // The same report again after sync, on b: nothing.
    let ticks = b.git(&["rev-list", "--count", "refs/loopx/state"]);
    b.agent(
        "agent-b",
        &[
            "quota",
            "spend-slot",
            "--turn",
            &tb,
            "--usage",
            r#"{"input_tokens": 500, "cost_usd": 0.25}"#,
        ],
    )
    .ok();
    assert_eq!(b.git(&["rev-list", "--count", "refs/loopx/state"]), ticks);
    let status = |out: Output| out.json()["budgets"].clone();
    let here = status(env.loopx(&["status", "--json"]).ok());
    let there = status(b.loopx(&["status", "--json"]).ok());
    assert_eq!(here, there);
    assert_eq!(here[0]["spent_usd"], 2.25, "{here}");
    assert_eq!(here[0]["spent_tokens"], 1700, "{here}");
    // The replayed record that reached the budget opened its gate, the same
    // on both machines.
    let gate_of = |v: serde_json::Value| v["reason"]["gate"].as_str().map(str::to_owned);
    let a_says = gate_of(
        env.agent("agent-a", &["quota", "should-run", "--json"])
            .code(3)
            .json(),
    );
    let b_says = gate_of(
        b.agent("agent-b", &["quota", "should-run", "--json"])
            .code(3)
            .json(),
    );
    assert!(a_says.is_some());
    assert_eq!(a_says, b_says);
    assert_eq!(env.machine().tree(), b.tree());
    env.loopx(&["verify"]).ok();
    b.loopx(&["verify"]).ok();
}

/// Runs `loopx hook claude-code EVENT` with `payload` on stdin.
fn claude_hook(env: &TestEnv, event: &str, payload: &str) -> Output {
    crate::common::run_stdin(
        env.command().args(["hook", "claude-code", event]),
        payload.as_bytes(),
    )
    .ok()
}

#[test]
fn the_claude_stop_hook_records_the_transcripts_new_messages_once() {
    let env = TestEnv::with_board();
    env.add("Write the parser", &[]);
    let transcript = env.root().join("session.jsonl");
    let payload = |event: &str| {
        serde_json::json!({
            "session_id": "5b1e7c1a-3f0e-4c52-9f3e-6a1d2b7c9e10",
            "transcript_path": transcript,
            "cwd": env.repo,
            "hook_event_name": event,
            "stop_hook_active": false,
        })
        .to_string()
    };
    claude_hook(&env, "SessionStart", &payload("SessionStart"));
    let line = |id: &str, input: u64, read: u64, output: u64| {
        format!(
            "{}\n",
            serde_json::json!({"type": "assistant", "message": {"id": id, "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": input, "cache_read_input_tokens": read, "output_tokens": output}}})
        )
    };
    let user = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n";
    std::fs::write(
        &transcript,
        format!(
            "{user}{}{}",
            line("msg_1", 100, 900, 10),
            line("msg_1", 100, 900, 50)
        ),
    )
    .unwrap();
    let ticks = env.ticks();
    claude_hook(&env, "Stop", &payload("Stop"));
    assert_eq!(env.ticks(), ticks + 1, "the Stop recorded the usage");
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(subject.contains("+1000 in, +50 out, +$0.00"), "{subject}");
    // A Stop with nothing new writes nothing.
    claude_hook(&env, "Stop", &payload("Stop"));
    assert_eq!(env.ticks(), ticks + 1);
    // New messages (and a line still being written) since: only those.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        format!(
            "{}{{\"type\":\"assistant\",\"mess",
            line("msg_2", 2000, 0, 300)
        )
        .as_bytes(),
    )
    .unwrap();
    claude_hook(&env, "Stop", &payload("Stop"));
    assert_eq!(env.ticks(), ticks + 2);
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(subject.contains("+2000 in, +300 out"), "{subject}");
    // An hour on, the session's usage goes to a new entry.
    env.advance(3700);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        format!("ssage\":{{}}}}\n{}", line("msg_3", 10, 0, 1)).as_bytes(),
    )
    .unwrap();
    claude_hook(&env, "Stop", &payload("Stop"));
    assert_eq!(env.ticks(), ticks + 3);
    let q = env.loopx(&["quota", "status", "--json"]).ok().json();
    let row = q["quota"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"].as_str().unwrap().starts_with("claude-code-"))
        .unwrap()
        .clone();
    assert_eq!(
        row["usage"]["turns"], 2,
        "one entry per session and hour: {row}"
    );
    assert_eq!(row["usage"]["input_tokens"], 3010);
    assert_eq!(row["usage"]["output_tokens"], 351);
    assert_eq!(row["usage"]["cached_input_tokens"], 900);
    assert_eq!(row["usage"]["estimated"], true);
    // 100 × $3 + 900 × $0.30 + 50 × $15, then 2000 × $3 + 300 × $15, then
    // 10 × $3 + 1 × $15, per million.
    assert_eq!(row["usage"]["cost_usd"], 0.011865);
}

#[test]
fn budgets_and_their_gates_are_signed_human_acts() {
    use crate::common::keys::{have_openssh, keygen, sign_with, trust};
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let m = env.machine();
    let t = env.add("Write the parser", &[]);
    let ada = keygen(&env, "ada");
    trust(&m, "ada", &ada);
    // Unsigned, a budget is refused like every human act.
    let out = m
        .loopx(&["--json", "goal", "set", "main", "--budget-usd", "1"])
        .code(3);
    assert_eq!(out.json()["error"]["code"], "unsigned", "{}", out.stdout);
    sign_with(&m, &ada);
    crate::common::keys::announce(&m, "ada", &ada);
    m.loopx(&["goal", "set", "main", "--budget-usd", "1"]).ok();
    let body = env.git(&["log", "-1", "--format=%B", "refs/loopx/state"]);
    assert!(body.contains("\nsignature = "), "{body}");
    // The agent's record that reaches it needs no signature; the gate it
    // opens takes a signed answer.
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 10, "cost_usd": 1.25}"#,
    )
    .ok();
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3)
        .json();
    let gate = v["reason"]["gate"].as_str().unwrap().to_owned();
    // Raising the budget answers it, signed with the goal.set.
    m.loopx(&["goal", "set", "main", "--budget-usd", "2"]).ok();
    let g = m.loopx(&["gate", "show", &gate, "--json"]).ok().json();
    assert_eq!(g["answer"]["choice"], "raised", "{g}");
    assert!(g["answer"]["signature"].is_string(), "{g}");
    m.loopx(&["verify"]).ok();
}

/// The spend gate offers the raise command beside its answers (status on
/// the screen, in JSON and on the page); `raised` is refused until the
/// budget is above the spend, with the command as the hint, and taken
/// once it is.
#[test]
fn a_budget_gate_shows_its_raise_command_and_takes_raised_once_raised() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--budget-usd",
        "1",
        "--stall-after",
        "0",
    ])
    .ok();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 1000, "cost_usd": 1.2}"#,
    )
    .ok();
    let v = env.loopx(&["status", "--json"]).ok().json();
    let gate = v["gates"][0]["id"].as_str().unwrap().to_owned();
    // Spent $1.20 against $1: the spend plus the budget, whole dollars.
    let raise = "loopx goal set main --budget-usd 3";
    assert_eq!(v["gates"][0]["raise"], raise, "{v}");
    assert_eq!(v["budgets"][0]["raise"], raise, "{v}");
    let s = env.loopx(&["status"]).ok().stdout;
    assert!(
        s.contains(&format!("    or raise the budget: {raise}\n")),
        "{s}"
    );
    let page = env.root().join("page.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<pre data-raise=\"1\"><code><span class=\"nw\">loopx</span> <span class=\"nw\">goal</span> <span class=\"nw\">set</span> <span class=\"nw\">main</span> <span class=\"nw\">--budget-usd</span> <span class=\"nw\">3</span></code></pre>"),
        "{html}"
    );
    // Not raised yet: `raised` is refused, and the hint says how.
    let out = env.loopx(&["gate", "answer", &gate, "raised"]).code(3);
    assert!(out.stderr.contains("has not been raised"), "{}", out.stderr);
    assert!(out.stderr.contains(&format!("`{raise}`")), "{}", out.stderr);
    let out = env
        .loopx(&["gate", "answer", &gate, "raised", "--json"])
        .code(3);
    assert_eq!(out.error_code(), "bad-choice");
    // The printed command raises it, which answers the gate `raised`.
    let words: Vec<&str> = raise.split(' ').skip(1).collect();
    env.loopx(&words).ok();
    let g = env.loopx(&["gate", "show", &gate, "--json"]).ok().json();
    assert_eq!(g["answer"]["choice"], "raised", "{g}");
    // Lowered again, a new gate opens; once the spend has left the window
    // (the budget is above it again), `raised` closes it by hand.
    env.loopx(&["goal", "set", "main", "--budget-usd", "1"])
        .ok();
    let v = env.loopx(&["status", "--json"]).ok().json();
    let again = v["gates"][0]["id"].as_str().unwrap().to_owned();
    assert_ne!(again, gate);
    env.advance(25 * 3600);
    let v = env.loopx(&["status", "--json"]).ok().json();
    let close = format!("loopx gate answer {again} --choice raised");
    assert_eq!(v["gates"][0]["raise"], close.as_str(), "{v}");
    let s = env.loopx(&["status"]).ok().stdout;
    assert!(
        s.contains(&format!("    the budget was raised: {close}\n")),
        "{s}"
    );
    env.loopx(&["gate", "answer", &again, "--choice", "raised"])
        .ok();
    let g = env.loopx(&["gate", "show", &again, "--json"]).ok().json();
    assert_eq!(g["answer"]["choice"], "raised", "{g}");
    // Only a budget gate takes it.
    env.loopx(&[
        "gate",
        "open",
        "--question",
        "Which parser?",
        "--option",
        "pest",
        "--option",
        "nom",
    ])
    .ok();
    let other = env.loopx(&["status", "--json"]).ok().json()["gates"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = env
        .loopx(&["gate", "answer", &other, "raised", "--json"])
        .code(2);
    assert_eq!(out.error_code(), "bad-choice");
}

/// Tokens of a model no price names are never "$0.00": status, the
/// budget, the page and the digest say how many turns they cannot count
/// and for which model. A newer model of a priced family is unpriced too.
#[test]
fn unpriced_turns_show_wherever_money_does() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let u = env.add("Test the parser", &[]);
    env.loopx(&[
        "goal",
        "set",
        "main",
        "--budget-usd",
        "5",
        "--stall-after",
        "0",
    ])
    .ok();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-b", &["todo", "claim", &u]).ok();
    let turn = token(&env, "agent-a");
    settle_advanced(
        |a| env.agent("agent-a", a),
        &turn,
        &t,
        r#"{"input_tokens": 1000, "cost_usd": 1.0}"#,
    )
    .ok();
    for model in ["claude-opus-5-5", "claude-opus-4-8"] {
        let turn = token(&env, "agent-b");
        let out = settle_advanced(
            |a| env.agent("agent-b", a),
            &turn,
            &u,
            &format!(r#"{{"input_tokens": 200000, "output_tokens": 1000, "model": "{model}"}}"#),
        )
        .ok();
        assert!(
            out.stderr.contains(&format!("no price for model {model}"))
                && out
                    .stderr
                    .contains(&format!("`loopx settings set --price {model}=IN/OUT`")),
            "{}",
            out.stderr
        );
    }
    let note = "plus 2 turns unpriced (models claude-opus-4-8, claude-opus-5-5)";
    // The brief's budget says what it leaves out.
    let brief = env
        .agent(
            "agent-b",
            &[
                "refresh-state",
                "--outcome",
                "advanced",
                "--todo",
                &u,
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(brief["brief"]["budget"][0]["unpriced_turns"], 2, "{brief}");
    let s = env.loopx(&["status"]).ok().stdout;
    assert!(
        s.contains(&format!(
            "budget main goal: $1.00 of $5.00 spent per 1d, {note}\n"
        )),
        "{s}"
    );
    let v = env.loopx(&["status", "--json"]).ok().json();
    assert_eq!(v["budgets"][0]["unpriced_turns"], 2, "{v}");
    assert_eq!(
        v["budgets"][0]["unpriced_models"],
        serde_json::json!(["claude-opus-4-8", "claude-opus-5-5"])
    );
    let page = env.root().join("page.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!(
            "<span class=\"bad\" data-unpriced=\"2\">{note}</span>"
        )),
        "{html}"
    );
    // agent-b spent nothing anyone could price: no "$0.00" beside its
    // tokens, on the page or in the digest.
    let agent_b = &html[html.find("<tr id=\"agent-agent-b\"").unwrap()..];
    let agent_b = &agent_b[..agent_b.find("</tr>").unwrap()];
    assert!(
        agent_b.contains("2 turns unpriced (models claude-opus-4-8, claude-opus-5-5)")
            && !agent_b.contains("$0.00"),
        "{agent_b}"
    );
    let d = env.loopx(&["digest", "--since", "1d"]).ok().stdout;
    assert!(
        d.contains(
            "  agent-b  2 turns unpriced (models claude-opus-4-8, claude-opus-5-5), 402k tokens\n"
        ),
        "{d}"
    );
    assert!(d.contains("  agent-a  $1.00, 1000 tokens\n"), "{d}");
    let j = env
        .loopx(&["digest", "--since", "1d", "--json"])
        .ok()
        .json();
    assert_eq!(j["spent"]["agent-b"]["unpriced_turns"], 2, "{j}");
    assert_eq!(j["spent"]["agent-b"]["usd"], 0.0, "{j}");
}

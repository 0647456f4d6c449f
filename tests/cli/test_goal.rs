use crate::common::{TestEnv, assert_text};

#[test]
fn goals_are_added_listed_shown_and_set_by_humans() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    assert_text(
        &env.loopx(&["goal", "add", "main", "--objective", "Ship the parser"])
            .ok()
            .stdout,
        "Added goal main.\n",
    );
    env.loopx(&["goal", "add", "docs", "--objective", "Write the docs"])
        .ok();
    assert_text(
        &env.loopx(&["goal", "list"]).ok().stdout,
        "docs  active    0 open  Write the docs\nmain  active    0 open  Ship the parser\n",
    );
    let out = env
        .loopx(&[
            "goal",
            "set",
            "main",
            "--status",
            "paused",
            "--scope",
            "src/**",
            "--guard",
            "no force pushes",
            "--quota-slots",
            "10",
            "--quota-window",
            "12h",
        ])
        .ok();
    assert_text(
        &out.stdout,
        "Updated goal main: status=paused scope guards quota-slots=10 quota-window=12h.\n",
    );
    assert_text(
        &env.loopx(&["goal", "show", "main"]).ok().stdout,
        "goal main  (paused)\nobjective: Ship the parser\nquota: 10 slots per 12h per agent\ncreated 2024-12-02T09:01:00Z by Ada Lovelace\nscope: src/**\nguard: no force pushes\n",
    );
    assert_text(
        &env.git(&["show", "refs/loopx/state:goals/main.toml"]),
        r#"id = "main"
objective = "Ship the parser"
status = "paused"
scope = ["src/**"]
guards = ["no force pushes"]
created_at = "2024-12-02T09:01:00Z"
created_by = "human:Ada Lovelace <ada@example.com>"
updated_at = "2024-12-02T09:04:00Z"

[quota]
slots = 10
window = "12h"
"#,
    );
    let v = env.loopx(&["goal", "list", "--json"]).ok().json();
    assert_eq!(v["goals"][1]["id"], "main");
    assert_eq!(v["goals"][1]["status"], "paused");
    let v = env.loopx(&["goal", "show", "main", "--json"]).ok().json();
    assert_eq!(v["quota"]["slots"], 10);
    assert_eq!(v["guards"][0], "no force pushes");
}

#[test]
fn agents_may_not_add_or_change_goals() {
    let env = TestEnv::with_board();
    let before = env.tip();
    let out = env
        .agent("agent-a", &["goal", "add", "x", "--objective", "y"])
        .code(3);
    assert_text(
        &out.stderr,
        "error: only a human may add a goal; agent-a is an agent\nhint: ask a human to run it, from a shell with no --agent, LOOPX_AGENT or agent-runtime session\n",
    );
    env.agent("agent-a", &["goal", "set", "main", "--status", "done"])
        .code(3);
    // --agent on the command line counts as well as the environment.
    env.loopx(&[
        "--agent", "agent-a", "goal", "set", "main", "--status", "done",
    ])
    .code(3);
    assert_eq!(env.tip(), before);
}

#[test]
fn goal_refusals_say_what_to_do() {
    let env = TestEnv::with_board();
    let before = env.tip();
    let out = env
        .loopx(&["goal", "add", "main", "--objective", "again"])
        .code(3);
    assert_text(
        &out.stderr,
        "error: goal main already exists\nhint: change it with `loopx goal set main …`\n",
    );
    let out = env.loopx(&["goal", "set", "main"]).code(2);
    assert!(
        out.stderr
            .starts_with("error: goal set needs something to change\n"),
        "{}",
        out.stderr
    );
    let out = env
        .loopx(&["goal", "set", "nope", "--status", "done"])
        .code(1);
    assert_text(
        &out.stderr,
        "error: there is no goal nope\nhint: `loopx goal list` shows the goals\n",
    );
    let out = env
        .loopx(&["goal", "add", "../x", "--objective", "y"])
        .code(2);
    assert!(
        out.stderr
            .contains("must start with a lowercase letter or digit"),
        "{}",
        out.stderr
    );
    env.loopx(&["goal", "set", "main", "--quota-slots", "0"])
        .code(2);
    env.loopx(&["goal", "set", "main", "--quota-window", "soon"])
        .code(2);
    env.loopx(&["goal", "add", "y", "--objective", "   "])
        .code(2);
    assert_eq!(env.tip(), before);
}

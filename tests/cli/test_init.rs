use crate::common::{TestEnv, assert_text};

#[test]
fn init_creates_the_state_ref_and_nothing_else() {
    let env = TestEnv::new();
    let out = env.loopx(&["init"]).ok();
    assert_text(
        &out.stdout,
        "Initialized loopx state on refs/loopx/state.\nNext: add a goal with `loopx goal add ID --objective TEXT`.\n",
    );
    assert_eq!(env.ticks(), 1);
    assert_text(
        &env.git(&["ls-tree", "-r", "--name-only", "refs/loopx/state"]),
        "loopx.toml\n",
    );
    assert_text(
        &env.git(&["show", "refs/loopx/state:loopx.toml"]),
        "format = 7\n\n[settings]\nlease = \"45m\"\nclock_skew = \"30s\"\n",
    );
    // HEAD, the index, the worktree and refs/heads are untouched.
    assert_text(
        &env.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/loopx/state\n",
    );
    assert_text(&env.git(&["status", "--porcelain"]), "");
}

#[test]
fn init_with_a_goal_and_its_json() {
    let env = TestEnv::new();
    let out = env
        .loopx(&[
            "init",
            "--goal",
            "main",
            "--objective",
            "Ship it",
            "--format",
            "json",
        ])
        .ok();
    let v = out.json();
    assert_eq!(v["ref"], "refs/loopx/state");
    assert_eq!(v["goal"], "main");
    assert_eq!(v["tick"], 1);
    assert_eq!(v["op"], "init");
    assert_eq!(v["subject"], "init with goal main");
    assert_eq!(v["commit"].as_str().map(str::len), Some(40));
    assert_text(
        &env.git(&["ls-tree", "-r", "--name-only", "refs/loopx/state"]),
        "goals/main.toml\nloopx.toml\n",
    );
}

#[test]
fn init_twice_refuses_and_changes_nothing() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    let before = env.tip();
    let out = env
        .loopx(&["init", "--goal", "x", "--objective", "y"])
        .code(3);
    assert_text(
        &out.stderr,
        "error: refs/loopx/state already holds a loopx state (tick 1)\nhint: nothing was changed; `loopx status` shows it\n",
    );
    assert_eq!(env.tip(), before);
}

#[test]
fn the_commit_message_reads_as_a_story_and_carries_the_op() {
    let env = TestEnv::new();
    env.loopx(&["init", "--goal", "main", "--objective", "Ship it"])
        .ok();
    let msg = env.git(&["log", "-1", "--format=%B", "refs/loopx/state"]);
    assert_text(
        &env.normalize(&msg),
        r#"init with goal main — Ada Lovelace

id = "o-f8568bbd4a5c3439"
at = "2024-12-02T09:00:00Z"
actor = "human:Ada Lovelace <ada@example.com>"

[change]
op = "init"
goal = "main"
objective = "Ship it"

Loopx-Op: init
Loopx-Human: Ada Lovelace <ada@example.com>
Loopx-Tick: 1
Loopx-Format: 7

"#,
    );
    assert_text(
        &env.git(&[
            "log",
            "-1",
            "--format=%an <%ae>|%cn <%ce>|%aI",
            "refs/loopx/state",
        ]),
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>|2024-12-02T09:00:00Z\n",
    );
    // git itself reads the trailers.
    assert_text(
        &env.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Loopx-Op,valueonly)",
            "refs/loopx/state",
        ]),
        "init\n\n",
    );
}

#[test]
fn loopx_ref_config_moves_the_state() {
    let env = TestEnv::new();
    env.git(&["config", "loopx.ref", "refs/loopx/other"]);
    env.loopx(&["init"]).ok();
    assert_text(
        &env.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/loopx/other\n",
    );
    env.git(&["config", "loopx.ref", "not-a-ref"]);
    let out = env.loopx(&["status"]).code(2);
    assert!(
        out.stderr
            .contains("git config loopx.ref = \"not-a-ref\" is not a full ref name"),
        "{}",
        out.stderr
    );
    // Never a branch: the project's history is not the state's.
    let main_before = env.git(&["for-each-ref", "refs/heads"]);
    for name in [
        "refs/heads/main",
        "refs/tags/v1",
        "refs/loopx/synced/origin",
    ] {
        env.git(&["config", "loopx.ref", name]);
        let out = env.loopx(&["init"]).code(2);
        assert!(
            out.stderr.contains(&format!(
                "git config loopx.ref = \"{name}\" is not under refs/loopx/, or is one of loopx's own refs"
            )),
            "{}",
            out.stderr
        );
    }
    assert_eq!(env.git(&["for-each-ref", "refs/heads"]), main_before);
}

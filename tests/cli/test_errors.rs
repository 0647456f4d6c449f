use crate::common::{TestEnv, assert_text};

#[test]
fn outside_a_repository() {
    let env = TestEnv::empty();
    let out = env.loopx(&["status"]).code(1);
    assert!(
        out.stderr.starts_with(
            "error: $TMP/repo is not inside a git repository"
                .replace("$TMP", &env.root().to_string_lossy())
                .as_str()
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "hint: run loopx inside a git repository (`git init` makes one), or pass -C PATH"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn without_a_state() {
    let env = TestEnv::new();
    let out = env.loopx(&["todo", "list"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no loopx state here (refs/loopx/state does not exist)\nhint: create it with `loopx init`, or get a team's state with `loopx sync` (from git config loopx.remote, else origin)\n",
    );
}

#[test]
fn errors_in_json_mode_are_json_on_stdout() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env
        .agent("agent-b", &["todo", "claim", &t, "--format", "json"])
        .code(4);
    let v = out.json();
    assert_eq!(v["error"]["code"], "claimed");
    assert_eq!(v["error"]["exit"], 4);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent-a holds it")
    );
    assert!(
        v["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("agent-a won it")
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let env = TestEnv::new();
    env.loopx(&["frobnicate"]).code(2);
    env.loopx(&["todo", "add"]).code(2);
    let out = env.loopx(&["--help"]).ok();
    assert!(out.stdout.contains("Usage: loopx"), "{}", out.stdout);
    let out = env.loopx(&["--version"]).ok();
    assert!(out.stdout.starts_with("loopx "), "{}", out.stdout);
    let out = env.loopx(&["status", "-C", "/nonexistent/dir"]).code(1);
    assert!(out.stderr.contains("/nonexistent/dir"), "{}", out.stderr);
}

#[test]
fn a_bad_clock_is_a_usage_error() {
    let env = TestEnv::new();
    let out = crate::common::run(env.command().env("LOOPX_NOW", "tomorrow").args(["init"])).code(2);
    assert!(
        out.stderr
            .contains("LOOPX_NOW: \"tomorrow\" is not an RFC 3339 time"),
        "{}",
        out.stderr
    );
    assert_eq!(env.tip(), None);
}

#[test]
fn a_corrupt_state_file_is_named() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    // Someone commits a broken file onto the ref with plain git.
    let path = format!("todos/{}/{t}.toml", &t[2..4]);
    let commit = env.commit_file(&path, b"id = \"t-\nbroken");
    let out = env.loopx(&["status"]).code(1);
    assert!(
        out.stderr.starts_with(&format!("error: the state file {path} is corrupt: TOML parse error at line 2, column 7: key with no value")),
        "{}",
        out.stderr
    );
    // A write refuses too and moves nothing.
    env.loopx(&["todo", "add", "B"]).code(1);
    assert_eq!(env.tip().as_deref(), Some(commit.as_str()));
}

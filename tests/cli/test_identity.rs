use crate::common::{TestEnv, assert_text, run};

#[test]
fn a_human_without_a_git_identity_is_refused_as_git_refuses() {
    let env = TestEnv::new();
    env.git(&["config", "--unset", "user.name"]);
    env.git(&["config", "--unset", "user.email"]);
    // Every human act is refused, the first and every later one, until an
    // identity is set: nothing is written as "unknown human".
    for _ in 0..2 {
        let out = env
            .loopx(&["--json", "init", "--goal", "main", "--objective", "x"])
            .code(1);
        assert_eq!(out.error_code(), "no-identity", "{}", out.stdout);
        let hint = out.json()["error"]["hint"].to_string();
        assert!(
            hint.contains("git config --global user.name")
                && hint.contains("git config --global user.email"),
            "{hint}"
        );
        assert!(
            out.stderr.contains("please tell me who you are"),
            "{}",
            out.stderr
        );
    }
    assert!(env.tip().is_none(), "nothing was written");
    // Reads still work; an agent's acts need no human identity.
    env.git(&["config", "user.name", "Ada Lovelace"]);
    env.git(&["config", "user.email", "ada@example.com"]);
    env.loopx(&["init", "--goal", "main", "--objective", "x"])
        .ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    env.git(&["config", "--unset", "user.name"]);
    env.git(&["config", "--unset", "user.email"]);
    env.loopx(&["status"]).ok();
    let refused = env.loopx(&["--json", "todo", "add", "A"]).code(1);
    assert_eq!(refused.error_code(), "no-identity");
    env.agent("agent-a", &["todo", "add", "A"]).ok();
    assert_text(
        &env.git(&["log", "-1", "--format=%an <%ae>", "refs/loopx/state"]),
        "agent-a <agent-a@agents.loopx.invalid>\n",
    );
}

#[test]
fn the_author_is_the_acting_agent() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    assert_text(
        &env.git(&[
            "log",
            "-1",
            "--format=%an <%ae> / %cn <%ce>%n%(trailers:key=Loopx-Agent,valueonly)",
            "refs/loopx/state",
        ]),
        "agent-a <agent-a@agents.loopx.invalid> / Ada Lovelace <ada@example.com>\nagent-a\n\n",
    );
}

#[test]
fn agent_runtime_markers_name_the_agent() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    // Claude Code with a session id: the derived id, registered first.
    let session = |c: &mut std::process::Command| {
        c.env("CLAUDECODE", "1")
            .env("CLAUDE_CODE_SESSION_ID", "1A2B3C4D-aaaa-bbbb");
    };
    let mut c = env.command();
    session(&mut c);
    run(c.args([
        "agent",
        "register",
        "claude-code-6f5ababf",
        "--runtime",
        "claude-code",
    ]))
    .ok();
    let mut c = env.command();
    session(&mut c);
    let out = run(c.args(["todo", "claim", &t])).ok();
    assert!(out.stdout.starts_with("Claimed"), "{}", out.stdout);
    assert_text(
        &env.git(&["log", "-1", "--format=%an", "refs/loopx/state"]),
        "claude-code-6f5ababf\n",
    );
    // An agent with a marker but no session id is refused for writes…
    let mut c = env.command();
    let out = run(c.env("GEMINI_CLI", "1").args(["todo", "add", "B"])).code(3);
    assert_text(
        &out.stderr,
        "error: this shell runs under gemini (GEMINI_CLI is set) but its session id is not available, so loopx cannot tell which agent is acting\nhint: set LOOPX_AGENT to the agent's id (or pass --agent ID)\n",
    );
    // …and may still read.
    let mut c = env.command();
    run(c.env("GEMINI_CLI", "1").args(["status"])).ok();
    // A marker makes a caller an agent: human-only actions are refused.
    let mut c = env.command();
    session(&mut c);
    run(c.args(["goal", "add", "x", "--objective", "y"])).code(3);
}

#[test]
fn the_committer_and_a_human_author_follow_gits_identity_rules() {
    let env = TestEnv::with_board();
    let last = || {
        env.git(&[
            "log",
            "-1",
            "--format=%an <%ae> / %cn <%ce>",
            "refs/loopx/state",
        ])
    };
    // committer.* wins over user.* for the committer only.
    env.git(&["config", "committer.name", "Build Bot"]);
    env.add("A", &[]);
    assert_text(
        &last(),
        "Ada Lovelace <ada@example.com> / Build Bot <ada@example.com>\n",
    );
    // The environment wins over the config, as in git.
    run(env
        .command()
        .env("GIT_AUTHOR_NAME", "Grace Hopper")
        .env("GIT_AUTHOR_EMAIL", "grace@example.com")
        .env("GIT_COMMITTER_NAME", "CI")
        .env("GIT_COMMITTER_EMAIL", "ci@example.com")
        .args(["todo", "add", "B"]))
    .ok();
    assert_text(
        &last(),
        "Grace Hopper <grace@example.com> / CI <ci@example.com>\n",
    );
    // EMAIL stands in for a missing user.email.
    env.git(&["config", "--unset", "user.email"]);
    run(env
        .command()
        .env("EMAIL", "ada@home.example")
        .args(["todo", "add", "C"]))
    .ok();
    assert_text(
        &last(),
        "Ada Lovelace <ada@home.example> / Build Bot <ada@home.example>\n",
    );
}

#[test]
fn identity_variables_that_are_not_utf8_are_usage_errors_never_a_human() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let before = env.tip();
    let bad = std::ffi::OsStr::from_bytes(b"1\xff");
    for var in [
        "CLAUDECODE",
        "LOOPX_AGENT",
        "CODEX_THREAD_ID",
        "CLAUDE_CODE_SESSION_ID",
    ] {
        let mut c = env.command();
        let out = run(c.env(var, bad).args(["todo", "update", &t, "--note", "x"])).code(2);
        assert!(
            out.stderr
                .contains(&format!("{var} is set but is not valid UTF-8")),
            "{var}: {}",
            out.stderr
        );
    }
    assert_eq!(env.tip(), before, "nothing was written");
}
